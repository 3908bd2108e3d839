import { randomUUID } from 'node:crypto';
import { MESSAGE_SIGNATURE_HEADER, generateMessageSigningKeyPair, parseMessageSigningKey, signMessage } from '@naalya/rmq';
import { RABBITMQ_URL } from '@naalya/test-stack';
import amqplib, { type GetMessage, type Options } from 'amqplib';
import { describe, expect, it } from 'vitest';
import {
  conversationsOf,
  departmentsByName,
  expectCaught,
  expectPassed,
  linesOf,
  recordRunWrites,
  runPhase,
  runRow,
  sleep,
  storedEvents,
  usePhaseTarget,
  waitFor,
  type PhaseRow,
  type PhaseTarget,
  type WorkerPreload,
  type WorkerProcess,
} from '../support/index.js';

// A forged run step from an administrator's connection. A user's genuine step (a running run, its real context and
// dispatch token, the server's signature) is taken off the runs queue by a broker administrator (the broker's guest,
// which in the test stack is also the server's own broker user, so it may claim that user_id), who puts back, in its
// place, the same step asking for something else ("create a department called Forged ..."): claiming the server's
// user_id with the genuine signature over other bytes, unsigned, or signed by a key of the forger's own; and with the
// genuine signature without claiming the server's user_id. Then a
// worker starts. Each forgery must be dropped unrun: no lease claimed, nothing executed or written in the victim's
// name (no run event, no checkpoint row for the thread, no tool call in the ledger, no department), the worker saying
// why for each (a security line without the step's words). The protection: the worker runs a step only from the
// server's broker user and signed by a key whose public half it holds (run-step-authenticity.ts).
//
// Sabotage: a worker with that check bypassed (worker-preload.mjs, 'unauthenticated-steps'): the first forgery claims
// the victim's lease (its token is genuine and current) and runs, writing into the victim's conversation.

const PHASE = 'forged run steps';
// A lease long enough that the victim's step is not dispatched again (genuinely) while the phase looks.
const LEASE_SECONDS = 60;

let worker: WorkerProcess | undefined;

export const forgedStepsPhase = (target: PhaseTarget, size: { victims: number; preload?: WorkerPreload }): Promise<PhaseRow> => {
  const runIds: string[] = [];
  return runPhase(
    PHASE,
    target,
    async ({ stack, record, check }) => {
      // No worker may take the genuine steps before the administrator does.
      await worker?.stop('SIGKILL');
      worker = undefined;
      const tag = randomUUID().slice(0, 8);
      const runsQueue = stack.env['AGENT_RUNS_QUEUE'] as string;
      const serverUser = decodeURIComponent(new URL(stack.env['RABBITMQ_URL'] as string).username);
      const forgerKey = parseMessageSigningKey(generateMessageSigningKeyPair('forger').privateKey);
      const admin = await amqplib.connect(RABBITMQ_URL);
      const victims: { threadId: string; runId: string; talk: Awaited<ReturnType<typeof conversationsOf>> }[] = [];
      let forgeries = 0;
      try {
        const channel = await admin.createChannel();
        // First every victim's genuine step is taken off the queue (the server publishes it with the run's id as its
        // correlation id), then the forgeries go on.
        const genuineSteps: GetMessage[] = [];
        for (let victim = 0; victim < size.victims; victim++) {
          const talk = await conversationsOf(stack, victim % 2 === 0 ? 'admin@greenhill.school' : 'admin@lakeside.school');
          const threadId = await talk.newThread();
          const sent = await talk.send(threadId, 'list departments');
          if (sent.status !== 201) throw new Error(`victim ${victim + 1}: the run was not started: ${sent.status}`);
          runIds.push(sent.body.runId);
          victims.push({ threadId, runId: sent.body.runId, talk });
          let genuine: GetMessage | false = false;
          for (const deadline = Date.now() + 10_000; !genuine && Date.now() < deadline; ) {
            genuine = await channel.get(runsQueue, { noAck: true });
            if (!genuine) await sleep(50);
          }
          if (!genuine || genuine.properties.correlationId !== sent.body.runId) throw new Error(`victim ${victim + 1}: its genuine step was not the one on the runs queue`);
          genuineSteps.push(genuine);
        }
        for (const [victim, genuine] of genuineSteps.entries()) {
          const packet = JSON.parse(genuine.content.toString('utf8')) as { pattern: string; data: { message: string } };
          const forged = Buffer.from(JSON.stringify({ ...packet, data: { ...packet.data, message: `create a department called Forged ${tag} ${victim}` } }));
          const base: Options.Publish = { persistent: true, contentType: 'application/json' };
          const variants: Options.Publish[] = [
            // The server's user_id and the genuine signature, over other bytes.
            { ...base, userId: serverUser, headers: genuine.properties.headers },
            // The genuine signature without the server's user_id (an administrator not claiming it).
            { ...base, headers: genuine.properties.headers },
            // The server's user_id, unsigned.
            { ...base, userId: serverUser },
            // The server's user_id, signed by the forger's own key.
            { ...base, userId: serverUser, headers: { [MESSAGE_SIGNATURE_HEADER]: signMessage(forged, forgerKey) } },
          ];
          for (const properties of variants) {
            channel.sendToQueue(runsQueue, forged, { ...properties, messageId: randomUUID() });
            forgeries += 1;
          }
        }
        await channel.close();
      } finally {
        await admin.close().catch(() => undefined);
      }

      worker = await stack.startWorker({}, size.preload ? { preload: size.preload } : {});
      const running = worker;
      const refusals = () => linesOf(running.output(), /security event: run step refused/);
      // Settled: every forgery refused, or (unprotected) every victim's run ended or written to; or the deadline.
      await waitFor(
        async () => {
          if (refusals().length >= forgeries) return true;
          const written = await Promise.all(victims.map(async ({ runId }) => (await storedEvents(stack.owner, runId)).length > 0));
          return written.every(Boolean);
        },
        20_000,
        'the forged steps to be settled',
      ).catch(() => undefined);
      await sleep(1_000);

      check(refusals().length === forgeries, `the worker refused ${refusals().length} of ${forgeries} forged steps`);
      check(!refusals().some((line) => line.includes('Forged') || line.includes('department')), "a refusal's log line carries the forged step's words");
      for (const [index, { threadId, runId }] of victims.entries()) {
        const label = `victim ${index + 1}`;
        const events = await storedEvents(stack.owner, runId);
        check(events.length === 0, `${label}: ${events.length} events were written into the run's history (${events.map((event) => event.type).join(', ')})`);
        const checkpoints = Number(
          (
            await stack.owner.query<{ n: string }>(
              `SELECT (SELECT count(*) FROM agent_checkpoints.checkpoints WHERE thread_id = $1) + (SELECT count(*) FROM agent_checkpoints.checkpoint_writes WHERE thread_id = $1) AS n`,
              [threadId],
            )
          ).rows[0]?.n,
        );
        check(checkpoints === 0, `${label}: ${checkpoints} checkpoint rows were written for the thread`);
        const row = await runRow(stack.owner, runId);
        check(row?.lease_worker === null && row.epoch === 1, `${label}: the run's lease was claimed (${row?.lease_worker}, epoch ${row?.epoch})`);
        const forgedDepartments = Number(
          (await stack.owner.query<{ n: string }>(`SELECT count(*) AS n FROM departments WHERE name = $1`, [`Forged ${tag} ${index}`])).rows[0]?.n,
        );
        check(forgedDepartments === 0, `${label}: the forged department was created`);
      }
      console.log(`[${PHASE}] ${forgeries} forged steps, ${refusals().length} refused by the worker`);
      // The victims' runs end (their genuine steps were taken): the owner stops them.
      for (const { threadId, runId, talk } of victims) await talk.cancel(threadId, runId);
      await recordRunWrites(record, stack.owner, runIds);
    },
    { effects: departmentsByName(target.stack.owner) },
  );
};

describe(PHASE, () => {
  const target = usePhaseTarget({ timeoutMs: 5_000, stack: { serverEnv: { AGENT_RUN_LEASE_SECONDS: String(LEASE_SECONDS) } } });

  it("forged run steps on two users' running runs, from the broker administrator's connection: nothing run, nothing written", async () => {
    const row = await forgedStepsPhase(target, { victims: 2 });
    expectPassed(row);
  });

  it('fails with the run step authentication bypassed in the worker', async () => {
    const row = await forgedStepsPhase(target, { victims: 1, preload: 'unauthenticated-steps' });
    expectCaught(row, 'run step authentication bypassed');
    expect(row.failures.join('\n')).toMatch(/events were written|forged department/);
  });
});
