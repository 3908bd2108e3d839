/**
 * The stable code an HTTP error body carries beside its message. Clients tell error kinds apart by this code, never by
 * the sentence, which is free to be reworded. The first group follows the status alone; the rest name a refusal whose
 * sentence is fixed.
 */
export const HTTP_ERROR_CODES = [
  'INVALID_REQUEST',
  'UNAUTHENTICATED',
  'PERMISSION_DENIED',
  'NOT_FOUND',
  'CONFLICT',
  'PAYLOAD_TOO_LARGE',
  'TOO_MANY_REQUESTS',
  'INTERNAL_ERROR',
  'UNAVAILABLE',
  'IDENTITY_REFUSED',
  'NO_TENANT_SCOPE',
  'PLATFORM_WRITE_NEEDS_SCHOOL',
  'LOGIN_ATTEMPTS_EXCEEDED',
  'MCP_TOKEN_LIMIT',
  'MCP_SESSION_LIMIT',
  'MCP_CLIENT_RATE_LIMITED',
] as const;
export type HttpErrorCode = (typeof HTTP_ERROR_CODES)[number];

export const HTTP_ERROR_SENTENCES = {
  IDENTITY_REFUSED: 'Your account is not active or has changed. Sign in again.',
  NO_TENANT_SCOPE: 'No school context for this user.',
  PLATFORM_WRITE_NEEDS_SCHOOL: 'A platform administrator can only change a school chosen for this session. Pick the school first.',
  LOGIN_ATTEMPTS_EXCEEDED: 'Too many sign-in attempts. Wait a few minutes before trying again.',
  MCP_TOKEN_LIMIT: 'You have as many connected apps as allowed. Revoke one you no longer use first.',
  MCP_SESSION_LIMIT: 'You have as many MCP sessions open as allowed. End one (or let an unused one time out) before opening another.',
  MCP_CLIENT_RATE_LIMITED:
    'This connected app has reached its limit of tool calls for this minute, so this one was not run. Wait as long as Retry-After says, then try again.',
} as const satisfies Partial<Record<HttpErrorCode, string>>;

/** The code of an error nothing more specific was said about: what its status means. */
export const httpErrorCodeForStatus = (status: number): HttpErrorCode => {
  switch (status) {
    case 401:
      return 'UNAUTHENTICATED';
    case 403:
      return 'PERMISSION_DENIED';
    case 404:
      return 'NOT_FOUND';
    case 409:
      return 'CONFLICT';
    case 413:
      return 'PAYLOAD_TOO_LARGE';
    case 429:
      return 'TOO_MANY_REQUESTS';
    case 503:
      return 'UNAVAILABLE';
    default:
      return status >= 500 ? 'INTERNAL_ERROR' : 'INVALID_REQUEST';
  }
};

/** Every HTTP error body: Nest's own fields, and the code. `C` narrows the codes a route family can answer. */
export type HttpErrorBody<C extends string = HttpErrorCode> = {
  statusCode: number;
  message: string | string[];
  error?: string;
  code: C;
};
