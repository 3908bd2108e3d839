import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';

/** A port free on 127.0.0.1 right now, for a throwaway service the test starts. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

/**
 * PostgreSQL's programs and PgBouncer refuse to run as root: as root a test runs them as the postgres user (which must
 * own their files); as anyone else, as itself.
 */
export const serviceUser = (): { uid: number; gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined;
  const [uid, gid] = ['-u', '-g'].map((flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim()));
  return { uid, gid };
};
