// The streaming baseline: the least a server can do to store run events and stream them out, with the same input as
// the real ingest (RunEventBatch messages from the same publisher, on a queue declared as the server's, single active
// consumer, same prefetch) and the same output (server-sent events with the seq as id, Last-Event-ID honoured). Per
// batch: one statement, a multi-row INSERT and its NOTIFY (one implicit transaction), acked once it has committed; one
// LISTEN connection wakes the run's streams, which read the new rows and write them. Nothing else: no run row, no RLS,
// no auth, no idempotency, no validation; a run's seq is counted in memory (this process is the table's only writer).
import { createServer } from 'node:http';
import amqplib from 'amqplib';
import pg from 'pg';

const { RABBITMQ_URL, BENCH_QUEUE, BENCH_PREFETCH, DATABASE_URL, DATABASE_POOL_SIZE } = process.env;
export const BASELINE_TABLE = 'bench_stream_events';
const CHANNEL = 'bench_stream_events';
const READ_LIMIT = 200; // the server's SSE read batch

const pool = new pg.Pool({ connectionString: DATABASE_URL, max: Number(DATABASE_POOL_SIZE) });
const listener = new pg.Client({ connectionString: DATABASE_URL });
await listener.connect();
await listener.query(`LISTEN ${CHANNEL}`);

/** runId → the streams waiting on it (their wake functions). */
const streams = new Map();
listener.on('notification', ({ payload }) => {
  const runId = payload?.slice(0, payload.indexOf(':'));
  for (const wake of streams.get(runId) ?? []) wake();
});

/** runId → the run's last stored seq; dropped with the run's last event. */
const lastSeq = new Map();
/** runId → the promise of its last store: a run's batches are stored one after another, runs in parallel. */
const chains = new Map();

const store = async ({ runId, events }) => {
  const first = (lastSeq.get(runId) ?? 0) + 1;
  const last = first + events.length - 1;
  // One statement, so one round trip and one implicit transaction: the rows and their notification commit together.
  await pool.query(
    `WITH stored AS (
       INSERT INTO ${BASELINE_TABLE} (run_id, seq, type, payload)
       SELECT $1, $2 + e.ordinality - 1, e.value ->> 'type', e.value FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY e
       RETURNING 1)
     SELECT pg_notify($4, $5) FROM (SELECT count(*) FROM stored) n`,
    [runId, first, JSON.stringify(events), CHANNEL, `${runId}:${last}`],
  );
  const ended = events.some((event) => event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR');
  if (ended) lastSeq.delete(runId);
  else lastSeq.set(runId, last);
};

const connection = await amqplib.connect(RABBITMQ_URL, { noDelay: true, clientProperties: { connection_name: 'naalya-bench-sse-baseline' } });
const channel = await connection.createChannel();
await channel.prefetch(Number(BENCH_PREFETCH), false);
await channel.consume(
  BENCH_QUEUE,
  (message) => {
    if (!message) return;
    const runId = message.fields.routingKey;
    let batch;
    try {
      batch = { runId, events: JSON.parse(message.content.toString('utf8')).events };
    } catch {
      channel.nack(message, false, false);
      return;
    }
    const next = (chains.get(runId) ?? Promise.resolve()).then(() => store(batch)).then(
      () => channel.ack(message),
      (error) => {
        console.error(`sse-baseline: storing a batch of run ${runId} failed: ${error.message}`);
        channel.nack(message, false, false);
      },
    );
    chains.set(runId, next);
    next.then(() => chains.get(runId) === next && chains.delete(runId));
  },
  { noAck: false },
);

const write = (response, chunk) => (response.write(chunk) ? undefined : new Promise((resolve) => response.once('drain', resolve)));

/** GET /runs/:runId/events: the stored events after Last-Event-ID, then live ones, until the run's last event. */
const stream = async (runId, afterSeq, response) => {
  let dirty = true;
  let wake;
  const poke = () => {
    dirty = true;
    wake?.();
  };
  let waiting = streams.get(runId);
  if (!waiting) streams.set(runId, (waiting = new Set()));
  waiting.add(poke);
  let closed = false;
  response.on('close', () => {
    closed = true;
    wake?.();
  });
  try {
    response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    // Headers out now: the client counts the stream as open (subscribed) from here.
    response.flushHeaders();
    let last = afterSeq;
    for (let ended = false; !ended && !closed; ) {
      if (!dirty) {
        await new Promise((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      dirty = false;
      const { rows } = await pool.query(`SELECT seq, type, payload FROM ${BASELINE_TABLE} WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [
        runId,
        last,
        READ_LIMIT,
      ]);
      for (const row of rows) {
        await write(response, `id: ${row.seq}\nevent: ${row.type}\ndata: ${JSON.stringify(row.payload)}\n\n`);
        last = row.seq;
        ended ||= row.type === 'RUN_FINISHED' || row.type === 'RUN_ERROR';
      }
      if (rows.length === READ_LIMIT) dirty = true;
    }
  } finally {
    waiting.delete(poke);
    if (waiting.size === 0 && streams.get(runId) === waiting) streams.delete(runId);
    response.end();
  }
};

const http = createServer((request, response) => {
  const match = /^\/runs\/([0-9a-f-]{36})\/events$/.exec(request.url ?? '');
  const lastEventId = Number(request.headers['last-event-id'] ?? 0);
  if (request.method !== 'GET' || !match || !Number.isInteger(lastEventId) || lastEventId < 0) {
    response.writeHead(400).end();
    return;
  }
  stream(match[1], lastEventId, response).catch((error) => {
    console.error(`sse-baseline: the stream of run ${match[1]} failed: ${error.message}`);
    response.destroy();
  });
});
http.keepAliveTimeout = 60_000;
await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
process.send?.({ port: http.address().port });

process.on('SIGTERM', async () => {
  http.close();
  await channel.close().catch(() => undefined);
  await connection.close().catch(() => undefined);
  await listener.end().catch(() => undefined);
  await pool.end().catch(() => undefined);
  process.exit(0);
});
