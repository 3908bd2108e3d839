import { HTTP_ERROR_CODES, HTTP_ERROR_SENTENCES } from '@naalya/access';
import type { AgentToolResult } from './agent-tool-envelope.js';

/**
 * The stable code beside every error sentence an agent surface produces. The model reads the sentence; the worker, the
 * Hub, the chat client and the tests tell the kinds apart by the code alone, so a sentence can be reworded freely.
 */

/**
 * A tool call's `{ error, code }`. A service's refusal (an HTTP exception) keeps the code it would have on a REST
 * route, so the HTTP codes are tool codes too.
 */
export const TOOL_ERROR_CODES = [
  ...HTTP_ERROR_CODES,
  // The server's execute(), in the order it checks.
  'IDENTITY_MISSING',
  'ENVELOPE_MALFORMED',
  'TOOL_MISMATCH',
  'DISPATCH_REFUSED',
  'SCHOOL_QUOTA_EXCEEDED',
  'USER_QUOTA_EXCEEDED',
  'INVALID_ARGUMENTS',
  'CALL_ID_REUSED',
  'CONFIRMATION_REQUIRED',
  'DEADLINE_PASSED',
  'TOOL_FAILED',
  'OUTCOME_UNKNOWN',
  'NO_RECORDED_OUTCOME',
  // The worker, before or instead of the hop.
  'CONTEXT_MISSING',
  'CONFIRMATION_DECLINED',
  'TOOL_TIMED_OUT',
  'PLATFORM_UNREACHABLE',
] as const;
export type ToolErrorCode = (typeof TOOL_ERROR_CODES)[number];

/** What the conversation routes (/agent/threads...) add to the HTTP codes. */
export const CONVERSATION_ERROR_CODES = [
  ...HTTP_ERROR_CODES,
  'THREAD_NOT_FOUND',
  'RUN_NOT_FOUND',
  'RUN_IN_PROGRESS',
  'UNKNOWN_INTERRUPT',
  'ALREADY_ANSWERED',
  'STALE_INTERRUPT',
  // An answer to a question that expired (the run ended with QUESTION_EXPIRED, or is about to).
  'QUESTION_EXPIRED',
  // A resume's edits name an argument the tool does not let a person change, or the call was edited too often.
  'EDIT_NOT_ALLOWED',
  // The resume's edits are not valid arguments of the tool (the same sentence as a call with them).
  'INVALID_ARGUMENTS',
  'INVALID_LAST_EVENT_ID',
  'QUESTION_PENDING',
  'RUN_QUEUE_FULL',
  'DIRECT_RUN_LIMIT',
  'THREAD_LIMIT',
  'RUNS_IN_FLIGHT_LIMIT',
  'EVENT_STREAM_LIMIT',
  // A new message is refused while the school's day is spent: the same code and sentence as the run it would end.
  'SCHOOL_TOKEN_BUDGET_SPENT',
] as const;
export type ConversationErrorCode = (typeof CONVERSATION_ERROR_CODES)[number];

/** A RUN_ERROR event's code: why the worker ended a run step. */
export const RUN_ERROR_CODES = [
  'RUN_FAILED',
  'STEP_TIMED_OUT',
  'TOO_MANY_STEPS',
  'WAITING_FOR_ANSWER',
  'NOTHING_PENDING',
  // The server's, not a worker's: it decides a run is over.
  'RUN_ABANDONED',
  'STEP_DEAD_LETTERED',
  'QUESTION_EXPIRED',
  'AGENT_UNAVAILABLE',
  // The language model: the worker names what went wrong, never the provider's own text (it may hold a key or a URL).
  'MODEL_UNREACHABLE',
  'MODEL_RATE_LIMITED',
  'MODEL_REJECTED_CREDENTIALS',
  'MODEL_FAILED',
  'MODEL_TIMED_OUT',
  'STEP_TOKEN_BUDGET_SPENT',
  // The server's: the school's data choice and its daily token budget.
  'MODEL_NOT_ALLOWED',
  'SCHOOL_TOKEN_BUDGET_SPENT',
] as const;
export type RunErrorCode = (typeof RUN_ERROR_CODES)[number];

export type ErrorCode = ToolErrorCode | ConversationErrorCode | RunErrorCode;

/** The sentence of each code whose sentence is fixed; the others name what went wrong (an argument, a tool's event). */
export const ERROR_SENTENCES = {
  ...HTTP_ERROR_SENTENCES,
  IDENTITY_MISSING: 'Missing tool-call identity.',
  ENVELOPE_MALFORMED: 'The tool call was malformed, so it cannot run securely. Do not retry.',
  TOOL_MISMATCH: 'This tool call could not be matched to its tool, so nothing was run. Do not retry; tell the user what you were trying to do.',
  DISPATCH_REFUSED:
    'This tool call could not be verified as part of a conversation in progress, so it was not run. Do not retry; tell the user to send their message again.',
  SCHOOL_QUOTA_EXCEEDED:
    'Your school has reached its limit of assistant actions for this minute, so this was not run. Do not retry now; tell the user to wait a minute and try again.',
  USER_QUOTA_EXCEEDED:
    'You have reached your limit of assistant actions for this minute, so this was not run. Do not retry now; tell the user to wait a minute and try again.',
  CALL_ID_REUSED: 'This call id was already used for a different request, so it was not run. Do not retry this call.',
  CONFIRMATION_REQUIRED:
    "This action needs the user's confirmation of exactly these details, and they have not given it for this call, so nothing was done. Do not retry it on your own; if the user still wants it, call the tool again so they are asked to confirm.",
  DEADLINE_PASSED:
    'This tool call arrived after its deadline, so it was not run. Do not retry; tell the user the platform was too slow to answer.',
  TOOL_FAILED: 'That action could not be completed. Do not retry; tell the user what you were trying to do.',
  OUTCOME_UNKNOWN:
    'The platform could not confirm whether that change was saved. Do not retry; tell the user to check before trying again.',
  NO_RECORDED_OUTCOME:
    'No completed change with this call id was found for you. If it timed out moments ago it may still be running, so check once more shortly; otherwise it was not saved.',
  // "Do not retry" matters: agents self-retry error results, which would turn a missing context into a loop.
  CONTEXT_MISSING: 'User context is unavailable for this tool call, so it cannot run securely. Do not retry.',
  CONFIRMATION_DECLINED:
    'The user did not approve this, so it was not done and nothing was sent to the platform. Do not retry it; ask the user what they would like instead.',
  THREAD_NOT_FOUND: 'Thread not found.',
  RUN_NOT_FOUND: 'Run not found.',
  RUN_IN_PROGRESS: 'This thread already has a run in progress or waiting for an answer. Wait for it to finish, or answer its question.',
  UNKNOWN_INTERRUPT: 'No question with this id was asked in this thread.',
  ALREADY_ANSWERED: 'This question has already been answered.',
  STALE_INTERRUPT: 'This question is no longer waiting for an answer: its run has moved on.',
  INVALID_LAST_EVENT_ID: 'Last-Event-ID must be the id of an event of this stream.',
  RUN_FAILED: 'The assistant could not finish this step because of an internal problem. Please try again.',
  STEP_TIMED_OUT: 'This step took too long and was stopped. Please try again.',
  TOO_MANY_STEPS: 'The assistant took too many steps on this request and stopped. Try a simpler request.',
  WAITING_FOR_ANSWER: 'This conversation is waiting for an answer to a question. Answer it before sending a new message.',
  NOTHING_PENDING: 'Nothing in this conversation is waiting for an answer.',
  QUESTION_PENDING:
    'This conversation is waiting for an answer to a question. Answer it, or send your message with "interrupt" to stop the current run.',
  RUN_QUEUE_FULL: 'Too many messages are already waiting in this conversation. Wait for them to start, or stop the current run.',
  DIRECT_RUN_LIMIT: 'You have too many direct tool sessions open. Close one before opening another.',
  THREAD_LIMIT: 'You have too many conversations. Continue one of them instead of starting another.',
  RUNS_IN_FLIGHT_LIMIT: 'You have too many messages being worked on at once. Wait for one to finish, or stop one, before sending another.',
  EVENT_STREAM_LIMIT: 'You have too many live views of conversations open. Close one before opening another.',
  RUN_ABANDONED: 'The assistant stopped responding while working on this message, so it was stopped. Please send it again.',
  STEP_DEAD_LETTERED: 'The assistant failed on this message several times, so it was stopped. Please send it again or rephrase it.',
  QUESTION_EXPIRED: 'This question expired before it was answered, so nothing was done and the run ended. Send a new message to ask again.',
  AGENT_UNAVAILABLE: 'The assistant cannot be reached right now. Try again in a moment.',
  MODEL_UNREACHABLE: "The assistant's language model could not be reached, so this step stopped. Please try again in a few minutes.",
  MODEL_RATE_LIMITED: "The assistant's language model is too busy right now, so this step stopped. Please try again in a minute.",
  MODEL_REJECTED_CREDENTIALS:
    "The assistant's language model refused the platform's credentials, so nothing was sent. A platform administrator must check the model settings.",
  MODEL_FAILED: "The assistant's language model returned an error, so this step stopped. Please try again.",
  MODEL_TIMED_OUT: "The assistant's language model took too long to answer, so this step stopped. Please try again.",
  STEP_TOKEN_BUDGET_SPENT: 'This request used more of the language model than one request may, so it was stopped. Try a narrower request.',
  MODEL_NOT_ALLOWED:
    "Your school has not allowed its data to be sent to the language model this platform uses, so nothing was sent. A platform administrator can change the school's choice.",
  SCHOOL_TOKEN_BUDGET_SPENT:
    "Your school has used today's allowance of the assistant's language model, so this was stopped. It renews at midnight (UTC).",
} as const satisfies Partial<Record<ErrorCode, string>>;

/** A code whose sentence is fixed. */
export type FixedErrorCode = keyof typeof ERROR_SENTENCES;

/** The start of every INVALID_ARGUMENTS sentence, which goes on to name the arguments. */
export const INVALID_ARGUMENTS_PREFIX = 'Invalid tool arguments: ';

/** A tool's error result with a fixed sentence. */
export const toolError = <C extends FixedErrorCode & ToolErrorCode>(code: C): { error: (typeof ERROR_SENTENCES)[C]; code: C } => ({
  error: ERROR_SENTENCES[code],
  code,
});

const TOOL_CODES: ReadonlySet<string> = new Set(TOOL_ERROR_CODES);
export const isToolErrorCode = (value: unknown): value is ToolErrorCode => typeof value === 'string' && TOOL_CODES.has(value);

/** Whether a reply off the wire has a call's answer's shape (data with its scope sentence, or a coded error). */
export const isAgentToolResult = (reply: unknown): reply is AgentToolResult => {
  if (typeof reply !== 'object' || reply === null) return false;
  const candidate = reply as Record<string, unknown>;
  return (typeof candidate['error'] === 'string' && isToolErrorCode(candidate['code'])) || ('data' in candidate && typeof candidate['scopeContext'] === 'string');
};

/** The worker's transport failures: the call may or may not have reached the platform. */
export const TRANSPORT_ERROR_CODES: readonly ToolErrorCode[] = ['TOOL_TIMED_OUT', 'PLATFORM_UNREACHABLE'];

/** The platform could not say whether the call ran: its answer was lost in transport, or its commit was not confirmed. */
export const OUTCOME_UNKNOWN_CODES: readonly ToolErrorCode[] = ['OUTCOME_UNKNOWN', ...TRANSPORT_ERROR_CODES];
