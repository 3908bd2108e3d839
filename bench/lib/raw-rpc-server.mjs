// The raw amqplib side of variants (a) and (e): the project's delivery guarantees with nothing else. TCP_NODELAY,
// the project's prefetch, manual ack sent only after the reply, the reply on the delivering channel to the direct
// reply-to address in Nest's reply shape, a non-JSON body dead-lettered. `handle` maps a packet to its reply body.
import amqplib from 'amqplib';
import './cpu-reporter.mjs';

export const serveRawRpc = async ({ connectionName, handle, onClose = async () => undefined }) => {
  const { RABBITMQ_URL, BENCH_QUEUE, BENCH_PREFETCH } = process.env;
  const connection = await amqplib.connect(RABBITMQ_URL, { noDelay: true, clientProperties: { connection_name: connectionName } });
  const channel = await connection.createChannel();
  await channel.prefetch(Number(BENCH_PREFETCH), false);
  await channel.consume(
    BENCH_QUEUE,
    (message) => {
      if (!message) return;
      const { replyTo, correlationId } = message.properties;
      let packet;
      try {
        packet = JSON.parse(message.content.toString('utf8'));
      } catch {
        channel.nack(message, false, false);
        return;
      }
      const send = (body) => {
        channel.sendToQueue(String(replyTo), Buffer.from(JSON.stringify(body)), { correlationId });
        channel.ack(message);
      };
      // A synchronous handler (the echo baseline) replies in the same tick, as plain amqplib code would.
      const body = handle(packet);
      if (body instanceof Promise) body.then(send);
      else send(body);
    },
    { noAck: false },
  );
  process.send?.('ready');
  process.on('SIGTERM', async () => {
    await channel.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
    await onClose();
    process.exit(0);
  });
};
