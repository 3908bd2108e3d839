import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, makeTestCertificates, serviceUser, type TestCertificates } from '@naalya/test-stack';
import { createAppDataSource } from './data-source.js';

// A throwaway PostgreSQL cluster (initdb + pg_ctl on PATH) on a free port that accepts TLS connections only, with a
// certificate for localhost/127.0.0.1 from a CA the test makes. The apps take no TLS option of their own: node-pg
// reads sslmode and sslrootcert from the URL (pg-connection-string), for TypeORM's pool, the notifier's client and
// the worker's checkpoint pool alike.
const PG_CTL_TIMEOUT_SECONDS = '20';

let dir: string;
let port: number;
let certificates: TestCertificates;
let otherCa: TestCertificates;

const run = (program: string, args: string[]) => execFileSync(program, args, { stdio: ['ignore', 'ignore', 'pipe'], ...serviceUser() });

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'naalya-pg-tls-'));
  const data = join(dir, 'data');
  certificates = makeTestCertificates(dir);
  otherCa = makeTestCertificates(dir, 'other-');
  // PostgreSQL refuses a key others can read.
  chmodSync(certificates.keyFile, 0o600);
  const user = serviceUser();
  if (user) for (const name of ['', ...readdirSync(dir)]) chownSync(join(dir, name), user.uid, user.gid);
  run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '--no-instructions']);
  // TLS only: a connection without it matches no rule and is refused.
  writeFileSync(join(data, 'pg_hba.conf'), 'hostssl all all 127.0.0.1/32 trust\nhostssl all all 127.0.0.2/32 trust\n');
  return freePort().then((free) => {
    port = free;
    const options = [
      `-p ${port}`,
      `-c listen_addresses='127.0.0.1,127.0.0.2'`,
      `-c unix_socket_directories='${dir}'`,
      '-c ssl=on',
      `-c ssl_cert_file='${certificates.certFile}'`,
      `-c ssl_key_file='${certificates.keyFile}'`,
      '-c fsync=off',
    ].join(' ');
    run('pg_ctl', ['start', '-D', data, '-w', '-t', PG_CTL_TIMEOUT_SECONDS, '-l', join(dir, 'postgres.log'), '-o', options]);
  });
});

afterAll(() => {
  if (!dir) return;
  try {
    run('pg_ctl', ['stop', '-D', join(dir, 'data'), '-m', 'immediate', '-w', '-t', PG_CTL_TIMEOUT_SECONDS]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const urlFor = (host: string, query: string) => `postgres://postgres@${host}:${port}/postgres?${query}`;
const verifyFull = (host = 'localhost', caFile = certificates.caFile) => urlFor(host, `sslmode=verify-full&sslrootcert=${encodeURIComponent(caFile)}`);

const tlsOf = async (connectionString: string) => {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ ssl: boolean }>(`SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`);
    return rows[0].ssl;
  } finally {
    await client.end().catch(() => undefined);
  }
};

describe('PostgreSQL with sslmode=verify-full', () => {
  it("the app's data source (TypeORM) connects over TLS from the URL alone", async () => {
    const dataSource = createAppDataSource({ url: verifyFull(), entities: [], poolSize: 1 });
    await dataSource.initialize();
    try {
      const [row] = (await dataSource.query(`SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`)) as { ssl: boolean }[];
      expect(row.ssl).toBe(true);
    } finally {
      await dataSource.destroy();
    }
  });

  it('a plain node-pg client (the notifier, the checkpoint pool) connects over TLS, by name and by IP address', async () => {
    expect(await tlsOf(verifyFull('localhost'))).toBe(true);
    expect(await tlsOf(verifyFull('127.0.0.1'))).toBe(true);
  });

  it('refuses a server whose certificate another CA signed', async () => {
    await expect(tlsOf(verifyFull('localhost', otherCa.caFile))).rejects.toThrow(/self[- ]signed certificate|unable to verify/);
  });

  it('refuses a server whose certificate names another host (the "full" in verify-full)', async () => {
    await expect(tlsOf(verifyFull('127.0.0.2'))).rejects.toThrow(/not in the cert's list|does not match/);
  });

  it('sabotage: without TLS the test server refuses the connection, so the checks above ran over TLS', async () => {
    await expect(tlsOf(urlFor('localhost', 'sslmode=disable'))).rejects.toThrow(/no encryption/);
  });
});
