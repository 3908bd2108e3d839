// Moved to @naalya/test-stack, where `npm run test:cluster` uses it too; the server's tests keep this path.
export { startPgBouncer, type TestPgBouncer } from '@naalya/test-stack';
