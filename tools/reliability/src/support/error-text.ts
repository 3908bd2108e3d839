import { ERROR_SENTENCES, isToolErrorCode } from '@naalya/agent-tools';

/**
 * What an error the model can read may look like: one plain sentence or a few, as the server and the worker word them.
 * Anything that looks like a stack frame, SQL, a driver or broker message, a host and port, or a file path means an
 * internal error reached the model unmasked.
 */
const DENIED: readonly [string, RegExp][] = [
  ['stack frame', /\n\s*at\s|\bat\s+(async\s+)?\S+\s+\(\S*:\d+:\d+\)|<anonymous>/],
  ['file path', /(^|[\s'"(=])(\/[\w.@-]+){2,}|\b[A-Za-z]:\\|\.(m?[jt]s|cjs|node):\d+|node_modules|file:\/\//],
  ['host or port', /\b\d{1,3}(\.\d{1,3}){3}\b|\blocalhost\b|\[::1?\]|:\d{2,5}\b|\b(amqps?|postgres(ql)?):\/\//i],
  ['SQL', /\b(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|WHERE|RETURNING|ON\s+CONFLICT)\b/],
  ['SQL', /\b(relation|column|constraint|table)\s+"|violates|duplicate key|syntax error at|\bpg_\w+|current_setting|school_id|tool_call_ledger|audit_log/i],
  ['driver or broker message', /\b(E(CONNREFUSED|CONNRESET|PIPE|TIMEDOUT|HOSTUNREACH|NOTFOUND))\b|QueryFailedError|TypeORM|PRECONDITION_FAILED|ACCESS_REFUSED|NOT_FOUND - |Connection terminated|terminating connection|canceling statement|\b[A-Z]\w*Error\b|\bError:|\[object Object\]/],
];

/**
 * The reason `text` may not be shown to the model, or null when it is an allowed error text. With its `code`: the code
 * must be a published one, and a code whose sentence is fixed must come with exactly that sentence.
 */
export const maskingViolation = (text: string, code?: unknown): string | null => {
  if (code !== undefined) {
    if (!isToolErrorCode(code)) return 'unknown code';
    const fixed: string | undefined = (ERROR_SENTENCES as Partial<Record<string, string>>)[code];
    if (fixed !== undefined && text !== fixed) return `not the sentence of ${code}`;
  }
  if (text.length === 0) return 'empty';
  if (text.length > 1_000) return 'too long';
  if (/[\r\n\t]/.test(text)) return 'not one line';
  // Validation messages end without a full stop ("Invalid tool arguments: name: Too small..."): only the start is fixed.
  if (!/^[A-Z"]/.test(text)) return 'not a sentence';
  for (const [reason, pattern] of DENIED) if (pattern.test(text)) return reason;
  return null;
};
