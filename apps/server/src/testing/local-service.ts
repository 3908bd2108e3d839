// Moved to @naalya/test-stack, where `npm run test:cluster` uses them too; the server's tests keep this path.
export { freePort, serviceUser } from '@naalya/test-stack';
