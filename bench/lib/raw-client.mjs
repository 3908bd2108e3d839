// A plain amqplib RPC client with the project's settings: TCP_NODELAY, direct reply-to (noAck, as it must be),
// a non-persistent request with an expiration, and the body Nest's ClientRMQ publishes ({ pattern, data, id }).
import { randomUUID } from 'node:crypto';
import amqplib from 'amqplib';

const DIRECT_REPLY_TO = 'amq.rabbitmq.reply-to';

export const createRawClient = async ({ url, queue, timeoutMs = 15_000 }) => {
  const connection = await amqplib.connect(url, { noDelay: true, clientProperties: { connection_name: 'naalya-bench-raw-client' } });
  const channel = await connection.createChannel();
  const pending = new Map();
  await channel.consume(
    DIRECT_REPLY_TO,
    (message) => {
      if (!message) return;
      const entry = pending.get(message.properties.correlationId);
      if (!entry) return;
      pending.delete(message.properties.correlationId);
      clearTimeout(entry.timer);
      const reply = JSON.parse(message.content.toString('utf8'));
      if (reply.err) entry.reject(new Error(JSON.stringify(reply.err)));
      else entry.resolve(reply.response);
    },
    { noAck: true },
  );
  const userId = new URL(url).username || undefined;
  const call = (pattern, data) =>
    new Promise((resolve, reject) => {
      const id = randomUUID();
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`timeout ${pattern}`));
      }, timeoutMs);
      pending.set(id, { resolve, reject, timer });
      channel.sendToQueue(queue, Buffer.from(JSON.stringify({ pattern, data, id })), {
        replyTo: DIRECT_REPLY_TO,
        correlationId: id,
        expiration: String(timeoutMs),
        persistent: false,
        ...(userId ? { userId: decodeURIComponent(userId) } : {}),
      });
    });
  const close = async () => {
    await channel.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
  };
  return { call, close };
};
