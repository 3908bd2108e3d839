import { HttpException, Logger } from '@nestjs/common';
import { httpErrorCodeForStatus } from '@naalya/access';
import { ERROR_SENTENCES, INVALID_ARGUMENTS_PREFIX, isToolErrorCode, toolError, type AgentToolError } from '@naalya/agent-tools';
import { errorCodeOf } from '../../core/http/error-code.js';
import { CommitOutcomeUnknownError } from '../../core/tenancy/tenant-context.js';
import { CallStillRunningError } from './tool-call-ledger.service.js';

const logger = new Logger('AgentTools');

/**
 * What arguments a tool's schema refused: each issue with its path, one sentence with a full stop (zod's own issue
 * messages end without one). A call with them and a person's edit to them get the same sentence.
 */
export const invalidArgumentsSentence = (issues: readonly { path: PropertyKey[]; message: string }[]): string =>
  `${INVALID_ARGUMENTS_PREFIX}${issues.map((issue) => (issue.path.length ? `${issue.path.map(String).join('.')}: ${issue.message}` : issue.message)).join('; ')}.`;

export const MASKED_TOOL_ERROR = ERROR_SENTENCES.TOOL_FAILED;
export const OUTCOME_UNKNOWN_ERROR = ERROR_SENTENCES.OUTCOME_UNKNOWN;

/**
 * HttpException messages are expected refusals the model can act on, with the code they have on a REST route;
 * anything else is a bug, logged with its context here and masked for the model.
 */
export const toToolError = (error: unknown, context?: string): AgentToolError => {
  if (error instanceof HttpException) {
    const code = errorCodeOf(error);
    return { error: error.message, code: isToolErrorCode(code) ? code : httpErrorCodeForStatus(error.getStatus()) };
  }
  if (error instanceof CallStillRunningError) {
    logger.warn({ msg: `Agent tool call still running in another delivery${context ? ` (${context})` : ''}`, err: error.message });
    return toolError('OUTCOME_UNKNOWN');
  }
  if (error instanceof CommitOutcomeUnknownError) {
    logger.error({ msg: `Agent tool commit outcome unknown${context ? ` (${context})` : ''}`, err: error.cause });
    return toolError('OUTCOME_UNKNOWN');
  }
  logger.error({ msg: `Agent tool failed${context ? ` (${context})` : ''}`, err: error instanceof Error ? error.stack : error });
  return toolError('TOOL_FAILED');
};
