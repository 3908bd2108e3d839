// Loaded into the built worker before its entry point (NODE_OPTIONS=--import=<this file>, see stack.ts startWorker),
// for the battery only: a fault a phase injects into the worker process, or one of its protections switched off for a
// sabotage test. It patches the worker's own modules in place (the same files apps/worker/dist/main.js imports, so the
// same module instances); production code has no switch for any of this. Chosen by RELIABILITY_WORKER_PRELOAD.
import 'reflect-metadata';

const RUNS = new URL('../../../../apps/worker/dist/naalya-agent/runs/', import.meta.url);
const load = (file) => import(new URL(file, RUNS).href);
const say = (line) => process.stderr.write(`[worker-preload] ${line}\n`);

const PRELOADS = {
  // A step that kills every worker that runs it: once the server has granted the step's lease (so a stale copy of the
  // step, whose claim is refused, is dropped as usual), a start step whose message carries RELIABILITY_POISON_MARKER
  // ends the process at once, as a crash in the graph or a native module would: no event, no acknowledgement.
  'poison-step': async () => {
    const marker = process.env.RELIABILITY_POISON_MARKER;
    if (!marker) throw new Error('poison-step needs RELIABILITY_POISON_MARKER');
    const { AgentRunExecutor } = await load('agent-run.executor.js');
    const runStep = AgentRunExecutor.prototype.runStep;
    AgentRunExecutor.prototype.runStep = function (request, ...rest) {
      if (request.kind === 'start' && request.message.includes(marker)) {
        say(`poison step of run ${request.context.run.runId}: exiting`);
        process.exit(70);
      }
      return runStep.call(this, request, ...rest);
    };
  },

  // A worker without good will towards its lease: once its step has started it keeps going and keeps publishing,
  // whatever its lease says (its own clock, a refused renew). It stands for a freeze that lands between the worker's
  // own lease check and the publish or call after it, stretched to the whole step, so every event the step still has in
  // hand when it wakes reaches the server: only the server's fencing (the epoch in the step's token) can refuse them.
  // Its checkpoint writes stay fenced by its clock: the server cannot fence those (they go to PostgreSQL directly), and
  // the phase is about what the server must refuse.
  'late-talker': async () => {
    const { StepLease } = await load('step-lease.js');
    const { FencedCheckpointSaver } = await load('fenced-checkpoint-saver.js');
    let checkpointing = 0;
    const assertHeld = FencedCheckpointSaver.prototype.assertHeld;
    FencedCheckpointSaver.prototype.assertHeld = function () {
      checkpointing += 1;
      try {
        return assertHeld.call(this);
      } finally {
        checkpointing -= 1;
      }
    };
    // The checkpointer asks the real question (without marking the lease lost); everything else is told "held".
    StepLease.prototype.held = function () {
      if (checkpointing > 0) return this.loss === undefined && this.now() - this.grantedAt < this.leaseMs;
      return true;
    };
    Object.defineProperty(StepLease.prototype, 'lost', {
      configurable: true,
      get() {
        return checkpointing > 0 ? this.loss : undefined;
      },
    });
    // A refused renew is noted (the checkpointer sees it) but aborts nothing.
    StepLease.prototype.lose = function (loss) {
      if (this.loss) return;
      this.loss = loss;
      this.stop();
      say(`run ${this.options.runId}: lease lost (${loss}); talking on regardless`);
    };
  },

  // The run step authentication switched off: every step is admitted, whoever published it and whatever it is signed
  // with (or not). For the sabotage test of the forged run steps phase.
  'unauthenticated-steps': async () => {
    try {
      const { RunStepAuthenticity } = await load('run-step-authenticity.js');
      RunStepAuthenticity.prototype.admits = () => true;
    } catch {
      // A worker without the check has nothing to switch off.
      say('this worker has no run step authentication to switch off');
    }
  },
};

const preload = PRELOADS[process.env.RELIABILITY_WORKER_PRELOAD];
if (!preload) {
  console.error(`Unknown worker preload "${process.env.RELIABILITY_WORKER_PRELOAD}"; one of: ${Object.keys(PRELOADS).join(', ')}`);
  process.exit(2);
}
await preload();
say(`${process.env.RELIABILITY_WORKER_PRELOAD} loaded`);
