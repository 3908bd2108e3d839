export * from './lib/rmq-names.js';
