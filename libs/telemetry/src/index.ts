export * from './lib/conventions.js';
export * from './lib/spans.js';
export * from './lib/start-tracing.js';
