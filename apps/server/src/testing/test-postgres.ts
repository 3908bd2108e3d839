import pg from 'pg';

/** A superuser on the local cluster: creates the per-run databases. Tests never run their checks as it. */
export const TEST_OWNER_URL = process.env['TEST_DATABASE_OWNER_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** The app role tests connect as: NOSUPERUSER, NOBYPASSRLS, not the owner, so row-level security is real. */
export const TEST_APP_ROLE = { name: 'naalya_app_test', password: 'naalya_app_test' };

export const urlFor = (database: string, role?: { name: string; password: string }) => {
  const url = new URL(TEST_OWNER_URL);
  url.pathname = `/${database}`;
  if (role) {
    url.username = role.name;
    url.password = role.password;
  }
  return url.toString();
};

export const withOwnerClient = async <T>(fn: (client: pg.Client) => Promise<T>, database = 'postgres'): Promise<T> => {
  const client = new pg.Client({ connectionString: urlFor(database) });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
};
