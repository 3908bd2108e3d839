export * from './lib/user-type.js';
export * from './lib/action.js';
export * from './lib/resource.js';
export * from './lib/audit.js';
export * from './lib/rest-shapes.js';
export * from './lib/http-errors.js';
export * from './lib/production-secrets.js';
