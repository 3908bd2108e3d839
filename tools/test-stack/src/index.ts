export * from './api.js';
export * from './local-service.js';
export * from './pgbouncer.js';
export * from './processes.js';
export * from './stack.js';
export * from './test-ca.js';
