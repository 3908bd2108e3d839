// A plain amqplib RPC client that publishes exactly as the worker's RmqRpcClient does: TCP_NODELAY, direct reply-to
// (noAck, as it must be), through the tools exchange (the one thing the worker's broker user may write), mandatory,
// the caller's user_id, a non-persistent JSON request with an expiration, and the body Nest's ClientRMQ publishes
// ({ pattern, data, id }). `route: 'default-exchange'` sends it straight to the queue through the default exchange,
// not mandatory, as the bench did before the worker lost write access to amq.default: variant (a₀), the price of that
// route at the broker.
import { randomUUID } from 'node:crypto';
import amqplib from 'amqplib';
import { DIRECT_REPLY_TO, brokerCredentialsOf, rmqNames } from '@naalya/rmq';

export const createRawClient = async ({ url, queue, timeoutMs = 15_000, route = 'tools-exchange' }) => {
  const connection = await amqplib.connect(url, { noDelay: true, clientProperties: { connection_name: 'naalya-bench-raw-client' } });
  const channel = await connection.createChannel();
  const pending = new Map();
  const settle = (id, outcome) => {
    const entry = pending.get(id);
    if (!entry) return;
    pending.delete(id);
    clearTimeout(entry.timer);
    outcome(entry);
  };
  await channel.consume(
    DIRECT_REPLY_TO,
    (message) => {
      if (!message) return;
      settle(message.properties.correlationId, (entry) => {
        const reply = JSON.parse(message.content.toString('utf8'));
        if (reply.err) entry.reject(new Error(JSON.stringify(reply.err)));
        else entry.resolve(reply.response);
      });
    },
    { noAck: true },
  );
  channel.on('return', (message) => settle(message.properties.correlationId, (entry) => entry.reject(new Error(`returned: no queue for ${queue}`))));
  const userId = brokerCredentialsOf(url).user;
  const exchange = route === 'default-exchange' ? '' : rmqNames(queue).toolsExchange;
  const call = (pattern, data) =>
    new Promise((resolve, reject) => {
      const id = randomUUID();
      const timer = setTimeout(() => settle(id, (entry) => entry.reject(new Error(`timeout ${pattern}`))), timeoutMs);
      pending.set(id, { resolve, reject, timer });
      channel.publish(exchange, queue, Buffer.from(JSON.stringify({ pattern, data, id })), {
        replyTo: DIRECT_REPLY_TO,
        correlationId: id,
        expiration: String(timeoutMs),
        persistent: false,
        ...(route === 'default-exchange' ? {} : { contentType: 'application/json', mandatory: true }),
        userId,
      });
    });
  const close = async () => {
    await channel.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
  };
  return { call, close };
};
