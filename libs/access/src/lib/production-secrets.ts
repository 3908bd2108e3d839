/**
 * Secrets a production process must not start with. Anyone can read the repository, so a value published in it
 * (.env.example's working local defaults, docker-compose.yml's earlier defaults, deploy/.env.compose.example's
 * placeholders) is no secret: a login token signed with .env.example's JWT_SECRET reads a school's data as its
 * administrator. With NODE_ENV=production both apps check their own secrets here before anything else and refuse to
 * start, naming the variable (never echoing its value).
 *
 * libs/access/src/lib/production-secrets.spec.ts ties this list to those files, so a new published value cannot be
 * forgotten here.
 */
export const PUBLISHED_SECRETS: readonly string[] = [
  // .env.example: JWT_SECRET, DISPATCH_SIGNING_KEY and the passwords inside its URLs.
  'local-development-secret-change-me-0123456789',
  'local-dispatch-signing-key-change-me-0123456789',
  'naalya_app_local',
  'naalya_server_local',
  'naalya_worker_local',
  'naalya_checkpoint_local',
  'naalya_mcp_local',
  'guest',
  // .env.example's comments: the shape of a management URL.
  'password',
  // docker-compose.yml before its secrets came from the environment (still in the repository's history).
  'change-me-in-production-0123456789abcdef',
  'change-me-in-production-dispatch-0123456789',
  'postgres',
  'naalya_admin_local',
  // deploy/.env.compose.example's placeholders.
  'replace-me-jwt-secret-at-least-32-characters',
  'replace-me-dispatch-key-at-least-32-characters',
  'replace-me-postgres-superuser-password',
  'replace-me-app-role-password',
  'replace-me-checkpoint-role-password',
  'replace-me-broker-admin-password',
  'replace-me-server-broker-password',
  'replace-me-worker-broker-password',
  'replace-me-mcp-broker-password',
];

/** HMAC keys (JWT, dispatch tokens): 256 bits of a random string's worth, as the config's own minimum. */
export const MIN_SIGNING_KEY_LENGTH = 32;
/** A password inside a database or broker URL. */
export const MIN_URL_PASSWORD_LENGTH = 16;

/**
 * How each checked variable holds its secret. `signing-key`: the value itself (or what follows `kid:` when it names a
 * key id); `private-key`: an asymmetric key `kid:base64`, whose length is fixed by its algorithm, so only its key
 * material is compared; `url-passwords`: the password of each URL (a cluster lists several, comma-separated).
 */
export type SecretKind = 'signing-key' | 'private-key' | 'url-passwords';

export type SecretSpec = { readonly name: string; readonly kind: SecretKind; readonly optional?: boolean };

export const SERVER_PRODUCTION_SECRETS: readonly SecretSpec[] = [
  { name: 'JWT_SECRET', kind: 'signing-key' },
  // Keys still verified while a key is rotated ("kid:secret", comma-separated): a published one there would still let
  // anyone sign a token the server accepts.
  { name: 'JWT_PREVIOUS_SECRETS', kind: 'signing-key', optional: true },
  { name: 'DISPATCH_SIGNING_KEY', kind: 'signing-key' },
  { name: 'DISPATCH_PREVIOUS_SIGNING_KEYS', kind: 'signing-key', optional: true },
  { name: 'RUN_SIGNING_KEY', kind: 'private-key' },
  { name: 'DATABASE_URL', kind: 'url-passwords' },
  { name: 'DATABASE_LISTEN_URL', kind: 'url-passwords', optional: true },
  { name: 'RABBITMQ_URL', kind: 'url-passwords' },
  // The MCP door's broker user: a published password there would let anyone publish tool calls as the door.
  { name: 'MCP_RABBITMQ_URL', kind: 'url-passwords', optional: true },
];

export const WORKER_PRODUCTION_SECRETS: readonly SecretSpec[] = [
  { name: 'CHECKPOINT_DATABASE_URL', kind: 'url-passwords' },
  { name: 'RABBITMQ_URL', kind: 'url-passwords' },
];

const published = new Set(PUBLISHED_SECRETS);

/** The secret part of `kid:secret` (a key id is letters, digits, "_" or "-"), or undefined when there is none. */
const afterKeyId = (value: string): string | undefined => /^[A-Za-z0-9_-]{1,64}:(.+)$/s.exec(value)?.[1];

const urlPasswords = (value: string): Array<string | undefined> =>
  value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      try {
        const password = new URL(entry).password;
        return password ? decodeURIComponent(password) : undefined;
      } catch {
        // Not a URL: the app's own schema says so with its reason; nothing to compare here.
        return undefined;
      }
    });

const problemOf = (spec: SecretSpec, value: string): string | undefined => {
  switch (spec.kind) {
    case 'signing-key': {
      // The value, its secret after a key id, and the same for each comma-separated entry: a key list kept while keys
      // rotate ("new,old") must not carry a published key either.
      const entries = [value, ...value.split(',').map((entry) => entry.trim())];
      const parts = entries.flatMap((entry) => [entry, afterKeyId(entry)]).filter((part): part is string => part !== undefined);
      if (parts.some((part) => published.has(part))) return 'is a value published in the repository';
      const secret = afterKeyId(value) ?? value;
      if (secret.length < MIN_SIGNING_KEY_LENGTH) return `must be at least ${MIN_SIGNING_KEY_LENGTH} characters`;
      return undefined;
    }
    case 'private-key': {
      const material = afterKeyId(value) ?? value;
      return published.has(value) || published.has(material) ? 'is a key published in the repository' : undefined;
    }
    case 'url-passwords': {
      const passwords = urlPasswords(value);
      if (passwords.some((password) => password !== undefined && published.has(password))) return 'has a password published in the repository';
      if (passwords.some((password) => password === undefined)) return 'has no password';
      if (passwords.some((password) => (password ?? '').length < MIN_URL_PASSWORD_LENGTH)) {
        return `has a password shorter than ${MIN_URL_PASSWORD_LENGTH} characters`;
      }
      return undefined;
    }
  }
};

/** The checks apply when NODE_ENV is production (the images set it); development keeps .env.example's working defaults. */
export const isProduction = (env: Record<string, string | undefined>): boolean => env['NODE_ENV']?.trim() === 'production';

/**
 * One line per secret that must be replaced before a production start, `NAME reason`, in the order of `specs`; empty when
 * every secret is fine or NODE_ENV is not production. A variable that is missing is the app's own schema's to report.
 */
export const productionSecretProblems = (specs: readonly SecretSpec[], env: Record<string, string | undefined>): string[] => {
  if (!isProduction(env)) return [];
  const problems: string[] = [];
  for (const spec of specs) {
    const value = env[spec.name]?.trim();
    if (!value) continue;
    const problem = problemOf(spec, value);
    if (problem) problems.push(`${spec.name} ${problem}: NODE_ENV is production, so set a secret of your own`);
  }
  return problems;
};
