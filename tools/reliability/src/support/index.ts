/**
 * The reliability battery's support: how a phase is written.
 *
 * A phase is one file `src/phases/<phase>.reliability-spec.ts` (run by `npm run test:reliability`, one file at a time,
 * never by `npm test`). It exports nothing the others need and holds:
 *
 * 1. The phase itself, a function of its target: `(target: PhaseTarget, size) => Promise<PhaseRow>`, built on
 *    `runPhase(name, target, async ({ stack, caller, record, check, add }) => { ... }, { effects })`. Inside it:
 *    - send calls as the worker does with `caller.call(tool, args, context)` (the worker's own proxy and client, its
 *      broker user, timeout and expiration; contexts from `stack.contextFor(email, body)` are real dispatches) or
 *      `caller.send(tool, caller.envelope(...))` to send one envelope as is (again, or altered);
 *    - `record()` every outcome the model would see; give a write a unique `effectKey` (for example the department
 *      name it creates) and pass an `effects` probe (`departmentsByName(stack.owner)`) so the reconciler can count its
 *      domain rows; without one, the ledger row stands for the effect;
 *    - break things through `stack.broker` / `stack.database` (fault proxies: `cutAll`, `outage`, `down`,
 *      `cutAtCommit`), `stack.server().stop('SIGKILL')` and `stack.startServer()`, or the owner connection;
 *    - for runs (the server's leases, cancel, double-texting): talk as a user with `conversationsOf(stack, email)`
 *      (threads, messages with a multitask strategy, cancel), read the run's row and stored events as the owner
 *      (`runRow`, `storedEvents`, `awaitRun`), hold a write in its transaction with `holdTableLock`, and stop, freeze
 *      (`worker.child.kill('SIGSTOP')`) or restart workers; a fault inside the worker process is a preload
 *      (`stack.startWorker(env, { preload })`, worker-preload.mjs). Then `recordRunWrites(record, owner, runIds)`
 *      gives the reconciler every write those runs committed, as the conversation reported it;
 *    - `check(ok, detail)` what only the phase can judge (timeliness, reconnection), `add({ leaked: n }, detail)`
 *      what only it can count.
 *    After the body the reconciler compares the outcomes with the ledger, the audit log and the domain rows (lost,
 *    duplicated, ghost, recovered, unexpected), checks every error text against the allowlist (unmasked) and returns
 *    the row with its verdict. A failed protection is a FAIL row, never a thrown error.
 * 2. Its test on the real target: `const target = usePhaseTarget({ timeoutMs })` in the file's `describe` (its own stack
 *    with the server started, `worker: true` if the phase needs the worker process, and a caller; torn down after the
 *    file), then run the phase at full size and `expectPassed(row)` (the row goes in the table, the failures in the
 *    assertion message).
 * 3. Its sabotage test: the same phase, small, against a target with the protection it checks switched off
 *    (`restartWeakened(target.stack, weakening)`: a weakened server entry point; a worker started with a weakening
 *    preloaded; or a weakened caller, configuration or database setting; never a switch in production code), then
 *    `expectCaught(row, 'what was switched off')`. Say in the file why that sabotage is the honest one.
 *
 * Keep a phase's wall time in budget: the whole battery stays within 12 minutes on an idle 2-core machine (CI allows it
 * that long); a worker takes seconds to start, so a phase keeps the ones it has (leases of a few seconds, not 30).
 */
export * from './caller.js';
export * from './conversation.js';
export * from './db-lock.js';
export * from './error-text.js';
export * from './fault-proxy.js';
export * from './phase-row.js';
export * from './reconcile.js';
export * from './resolve-unknowns.js';
export * from './run-phase.js';
export * from './stack.js';
export * from './phase-suite.js';
export * from './runs.js';
export * from './lesson-plan-writes.js';
