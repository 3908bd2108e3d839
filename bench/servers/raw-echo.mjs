// Variant (a), the transport baseline: plain amqplib with the project's delivery guarantees. TCP_NODELAY, the
// project's prefetch, manual ack published only after the reply, reply on the delivering channel to the direct
// reply-to address, Nest's reply shape. The handler echoes the envelope back.
import amqplib from 'amqplib';

const { RABBITMQ_URL, BENCH_QUEUE, BENCH_PREFETCH } = process.env;
const connection = await amqplib.connect(RABBITMQ_URL, { noDelay: true, clientProperties: { connection_name: 'naalya-bench-raw-echo' } });
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
    const reply = { id: packet.id, response: { data: packet.data, scopeContext: 'echo' }, isDisposed: true };
    channel.sendToQueue(String(replyTo), Buffer.from(JSON.stringify(reply)), { correlationId });
    channel.ack(message);
  },
  { noAck: false },
);
process.send?.('ready');
process.on('SIGTERM', async () => {
  await channel.close().catch(() => undefined);
  await connection.close().catch(() => undefined);
  process.exit(0);
});
