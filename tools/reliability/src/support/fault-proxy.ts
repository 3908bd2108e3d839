import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of the shared RabbitMQ or PostgreSQL: the battery points the server at it and breaks the path
 * here, so the shared services themselves are never restarted or slowed for the other suites on the machine.
 *
 * - `cutAll()`: every open connection drops at once (what the clients see when the broker or database restarts).
 * - `outage(ms)`: cut, then refuse every new connection for `ms` (the service is down), then accept again.
 * - `cutAtCommit(pattern, { commits })` (PostgreSQL only): on the first connection whose current transaction sent a
 *   statement matching `pattern`, drop the connection at its COMMIT. With `commits: true` the COMMIT is forwarded
 *   first: the database commits and the client cannot know it did (the unknown commit outcome of a real network
 *   failure). With `commits: false` it never arrives: the transaction rolls back, and the client cannot know that either.
 */
export type FaultProxy = {
  readonly port: number;
  /** `url` with its host and port replaced by the proxy's. */
  rewrite: (url: string) => string;
  cutAll: () => number;
  outage: (ms: number) => Promise<void>;
  /** Begins an outage that lasts until the returned function is called. */
  down: () => () => void;
  /** Resolves when the trap fired. */
  cutAtCommit: (pattern: RegExp, options: { commits: boolean }) => Promise<void>;
  /** Connections currently open through the proxy. */
  open: () => number;
  close: () => Promise<void>;
};

type Pair = { client: Socket; upstream: Socket; frontend?: PgFrontendReader };

/**
 * Reads the PostgreSQL frontend protocol from the client's bytes: one startup packet without a type byte, then
 * messages of a type byte and a length. Only simple queries ('Q') and parses ('P') carry SQL text.
 */
class PgFrontendReader {
  private buffer = Buffer.alloc(0);
  private started = false;
  /** SQL sent since the last BEGIN, so a COMMIT can be matched to what its transaction did. */
  transactionText = '';

  /** Feeds bytes; true when one of the complete messages in them was a COMMIT. */
  feed(chunk: Buffer): boolean {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    let sawCommit = false;
    for (;;) {
      if (!this.started) {
        if (this.buffer.length < 4) break;
        const length = this.buffer.readInt32BE(0);
        if (this.buffer.length < length) break;
        const code = this.buffer.readInt32BE(4);
        this.buffer = this.buffer.subarray(length);
        // An SSL or GSS request is answered before the real startup packet, which also has no type byte.
        if (code !== 80877103 && code !== 80877104) this.started = true;
        continue;
      }
      if (this.buffer.length < 5) break;
      const length = this.buffer.readInt32BE(1);
      if (this.buffer.length < length + 1) break;
      const type = String.fromCharCode(this.buffer[0]);
      const body = this.buffer.subarray(5, length + 1);
      this.buffer = this.buffer.subarray(length + 1);
      const sql = type === 'Q' ? body.toString('utf8') : type === 'P' ? body.subarray(body.indexOf(0) + 1).toString('utf8') : undefined;
      if (sql === undefined) continue;
      if (/^\s*(BEGIN|START TRANSACTION)/i.test(sql)) this.transactionText = '';
      if (/^\s*COMMIT/i.test(sql)) sawCommit = true;
      else this.transactionText += `${sql}\n`;
    }
    return sawCommit;
  }
}

export const startFaultProxy = async (target: { host: string; port: number }, options: { postgres?: boolean } = {}): Promise<FaultProxy> => {
  const pairs = new Set<Pair>();
  let refusing = false;
  let commitTrap: { pattern: RegExp; commits: boolean; fired: () => void } | undefined;

  const drop = (pair: Pair) => {
    pair.client.destroy();
    pair.upstream.destroy();
    pairs.delete(pair);
  };

  const server: Server = createServer({ noDelay: true }, (client) => {
    if (refusing) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect({ ...target, noDelay: true });
    const pair: Pair = { client, upstream, ...(options.postgres ? { frontend: new PgFrontendReader() } : {}) };
    pairs.add(pair);
    client.on('data', (chunk: Buffer) => {
      const committing = pair.frontend?.feed(chunk) ?? false;
      const trap = commitTrap;
      if (committing && trap && trap.pattern.test(pair.frontend?.transactionText ?? '')) {
        commitTrap = undefined;
        // Forwarded, the COMMIT reaches the database and the connection ends behind it: the backend commits, then reads
        // EOF. Held back, the backend sees the connection end inside the transaction and rolls it back.
        if (trap.commits) upstream.end(chunk);
        else upstream.destroy();
        client.destroy();
        pairs.delete(pair);
        trap.fired();
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('error', () => drop(pair));
    upstream.on('error', () => drop(pair));
    client.on('close', () => drop(pair));
    upstream.on('close', () => drop(pair));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('The fault proxy has no port');
  const port = address.port;

  const cutAll = () => {
    const count = pairs.size;
    for (const pair of [...pairs]) {
      pair.client.resetAndDestroy();
      pair.upstream.destroy();
      pairs.delete(pair);
    }
    return count;
  };

  const down = () => {
    refusing = true;
    cutAll();
    return () => {
      refusing = false;
    };
  };

  return {
    port,
    rewrite: (url) => {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.toString();
    },
    cutAll,
    down,
    outage: async (ms) => {
      const up = down();
      await new Promise((resolve) => setTimeout(resolve, ms));
      up();
    },
    cutAtCommit: (pattern, trap) => {
      if (!options.postgres) throw new Error('cutAtCommit needs a PostgreSQL proxy');
      return new Promise<void>((resolve) => {
        commitTrap = { pattern, commits: trap.commits, fired: resolve };
      });
    },
    open: () => pairs.size,
    close: async () => {
      cutAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
