export * from './api.js';
export * from './processes.js';
export * from './stack.js';
