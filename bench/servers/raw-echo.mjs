// Variant (a), the transport baseline: plain amqplib with the project's delivery guarantees. TCP_NODELAY, the
// project's prefetch, manual ack published only after the reply, reply on the delivering channel to the direct
// reply-to address, Nest's reply shape. The handler echoes the envelope back.
import { serveRawRpc } from '../lib/raw-rpc-server.mjs';

await serveRawRpc({
  connectionName: 'naalya-bench-raw-echo',
  handle: (packet) => ({ id: packet.id, response: { data: packet.data, scopeContext: 'echo' }, isDisposed: true }),
});
