import { HttpException, Logger } from '@nestjs/common';
import { CommitOutcomeUnknownError } from '../../core/tenancy/tenant-context.js';

const logger = new Logger('AgentTools');

export const MASKED_TOOL_ERROR =
  'That action could not be completed. Do not retry; tell the user what you were trying to do.';

export const OUTCOME_UNKNOWN_ERROR =
  'The platform could not confirm whether that change was saved. Do not retry; tell the user to check before trying again.';

/**
 * HttpException messages are expected refusals the model can act on; anything else is a bug, logged
 * with its context here and masked for the model.
 */
export const toToolError = (error: unknown, context?: string): string => {
  if (error instanceof HttpException) return error.message;
  if (error instanceof CommitOutcomeUnknownError) {
    logger.error({ msg: `Agent tool commit outcome unknown${context ? ` (${context})` : ''}`, err: error.cause });
    return OUTCOME_UNKNOWN_ERROR;
  }
  logger.error({ msg: `Agent tool failed${context ? ` (${context})` : ''}`, err: error instanceof Error ? error.stack : error });
  return MASKED_TOOL_ERROR;
};
