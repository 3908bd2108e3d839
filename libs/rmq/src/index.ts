export * from './lib/rmq-names.js';
export * from './lib/rmq-topology.js';
export * from './lib/current-rmq-message.js';
export * from './lib/rmq-packet.js';
export * from './lib/ack-after-reply.transport.js';
export * from './lib/rmq-rpc-client.js';
export * from './lib/rmq-access.js';
export * from './lib/rmq-connection.js';
