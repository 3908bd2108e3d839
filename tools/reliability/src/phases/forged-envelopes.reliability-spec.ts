import { RPC_AGENT_TOOLS, createDepartmentTool, listDepartmentsTool, listStaffTool, updateSchoolBrandingTool, type AgentRuntimeContext, type AgentToolRequest, type AnyAgentTool } from '@naalya/agent-tools';
import { PUBLISHER_REFUSED_ERROR, rmqNames } from '@naalya/rmq';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  expectCaught,
  expectPassed,
  inParallel,
  restartWeakened,
  runPhase,
  sleep,
  usePhaseTarget,
  type PhaseRow,
  type PhaseTarget,
} from '../support/index.js';
import { contextCache, epochOf, failureSampler, identityOf, loadSigner, markerEffects, outcomeOf, queryOf } from './attack-support.js';
import { domainFingerprint, fingerprintChanges } from './domain-fingerprint.js';
import { FORGED_KINDS, forgedMessage, matchesRefusal, type BaseCall, type ForgeContext, type ForgedMessage } from './forged-envelopes.kinds.js';
import { consumeDeadLetters, createBrokerIntruder, openRawPublisher, readReply, type RawOutcome } from './raw-publisher.js';

// Forged envelopes: thirteen kinds of message that did not come from the worker's dispatch as sent (forged-envelopes.kinds.ts:
// another publisher, missing, tampered, expired or foreign token, identity swapped, a write's envelope replayed to
// another tool, oversized, non-JSON, wrong types, prototype-pollution keys, past deadline, unknown pattern), each in
// `variants` generated variants. The protections: the transport admits only the worker's broker user and dead-letters
// what it cannot parse, serve or size; execute() parses the envelope strictly, verifies the dispatch token against the
// envelope and a run in flight, refuses a call id already used for another request, and refuses a call past its
// deadline. Every variant must be refused with the sentence its kind expects, settled the way its kind expects
// (answered and acked, dead-lettered, or refused by the broker), and change nothing: no ledger row, no audit row, no
// domain row (a fingerprint of every domain table before and after), no data in any reply.
//
// Sabotage: the same server with the transport's publisher check switched off (weakened-server.mjs, 'any-publisher':
// the tool transport built without requireUserId). A genuine envelope published by another broker user then runs.
// That is the one forgery here whose envelope is perfect, so only the publisher check stands between it and a write.

const PHASE = 'forged envelopes';

export type ForgedSize = { variants: number; seed: number; concurrency: number };

type Sent = { message: ForgedMessage; correlationId: string; outcome: RawOutcome; started: number };

export const forgedEnvelopesPhase = (target: PhaseTarget, size: ForgedSize): Promise<PhaseRow> =>
  runPhase(
    PHASE,
    target,
    async ({ stack, caller, record, check, add }) => {
      const sign = await loadSigner(stack);
      const contextFor = contextCache(stack);
      const query = queryOf(stack.owner);
      const emails = ['admin@greenhill.school', 'admin@lakeside.school', 'teacher@greenhill.school', 'teacher@lakeside.school', 'platform@naalya.school'];
      const contexts = await Promise.all(emails.map((email) => contextFor(email)));
      const bySub = new Map<string, AgentRuntimeContext>(contexts.map((context) => [context.userDetails.id, context]));
      const [adminA, adminB] = contexts as [AgentRuntimeContext, AgentRuntimeContext];
      const schoolIds = (await query<{ id: string }>(`SELECT id::text FROM schools ORDER BY id`)).map((row) => row.id);
      const campusIds = (await query<{ id: string }>(`SELECT id::text FROM campuses ORDER BY id`)).map((row) => row.id);

      const baseOf = (context: AgentRuntimeContext, tool: AnyAgentTool, args: (marker: string) => Record<string, unknown>, marks: boolean) => (marker: string): BaseCall => ({
        identity: identityOf(context),
        scope: { mode: 'school' },
        tool,
        args: args(marker),
        ...(marks ? { marker } : {}),
      });
      const baseCalls = [
        baseOf(adminA, createDepartmentTool, (name) => ({ name }), true),
        baseOf(adminB, createDepartmentTool, (name) => ({ name }), true),
        baseOf(adminA, updateSchoolBrandingTool, (motto) => ({ motto }), true),
        baseOf(adminB, listStaffTool, () => ({}), false),
      ];

      const genuine: ForgeContext['genuine'] = (call, options = {}) => {
        const context = bySub.get(call.identity.sub);
        if (!context) throw new Error(`No context minted for ${call.identity.sub}`);
        const envelope = caller.envelope(call.tool, call.args, context) as AgentToolRequest;
        const weakened = options.tokenTtlSeconds !== undefined || options.signingKey !== undefined || options.run !== undefined;
        const dispatchToken = weakened
          ? sign(
              {
                identity: identityOf(context),
                scope: { mode: 'school' },
                ...(options.run ?? context.run),
                // The genuine step's epoch: a forged token must be refused for what the kind forges, not a missing claim.
                epoch: epochOf(context.dispatchToken),
                exp: Math.floor(Date.now() / 1000) + (options.tokenTtlSeconds ?? 3600),
              },
              options.signingKey,
            )
          : envelope.meta.dispatchToken;
        return { ...envelope, meta: { ...envelope.meta, dispatchToken, ...(options.deadline === undefined ? {} : { deadline: options.deadline }) } };
      };

      // Real writes first, so the replay kind has envelopes whose call ids the ledger knows.
      const originals = await inParallel(Math.max(3, Math.ceil(size.variants / 10)), 4, async (index) => {
        const name = `Replayable ${size.seed}-${index}-${Date.now()}`;
        const envelope = caller.envelope(createDepartmentTool, { name }, adminA) as AgentToolRequest;
        const outcome = record({ ...(await caller.send(createDepartmentTool, envelope)), effectKey: name });
        return { tool: createDepartmentTool as AnyAgentTool, envelope, ok: outcome.kind === 'ok' };
      });
      check(originals.every((original) => original.ok), 'a genuine write made for the replay kind did not run');

      const context: ForgeContext = {
        baseCalls,
        genuine,
        identities: contexts.map(identityOf),
        schoolIds,
        campusIds,
        completedWrites: originals.filter((original) => original.ok),
        tools: RPC_AGENT_TOOLS,
        maxMessageBytes: 1024 * 1024,
        texts: { publisherRefused: PUBLISHER_REFUSED_ERROR },
      };
      const generators = forgedMessage(context);
      const messages = FORGED_KINDS.flatMap((kind, index) => fc.sample(generators[kind], { numRuns: size.variants, seed: size.seed + index }));

      const intruder = await createBrokerIntruder(stack.workerBrokerUrl);
      const asWorker = await openRawPublisher(stack.workerBrokerUrl, stack.toolsQueue);
      const asIntruder = await openRawPublisher(intruder.url, stack.toolsQueue);
      const before = await domainFingerprint(stack.owner);
      // The dead-letter queue is bounded (its oldest dropped past 64 MiB), and the oversized forgeries alone are more
      // than that: it is consumed while the messages go out, so none is dropped before it is counted.
      const deadLetterQueue = rmqNames(stack.toolsQueue).deadLetterQueue;
      const deadLetters = await consumeDeadLetters(stack.env['RABBITMQ_URL']!, deadLetterQueue);
      const dead = deadLetters.ids;
      let sent: Sent[];
      try {
        sent = await inParallel(messages.length, size.concurrency, async (index) => {
          const message = messages[index]!;
          const started = Date.now();
          const { publisher } = message;
          const { correlationId, outcome } =
            publisher.as === 'worker'
              ? await asWorker.publish(message.body, { userId: new URL(stack.workerBrokerUrl).username, timeoutMs: 10_000 })
              : await asIntruder.publish(message.body, {
                  ...(publisher.userId === 'own' ? { userId: intruder.user } : publisher.userId === 'worker' ? { userId: new URL(stack.workerBrokerUrl).username } : {}),
                  timeoutMs: 10_000,
                });
          return { message, correlationId, outcome, started };
        });
        // Dead-lettering follows the reply on the server's side: wait until every message that must be there is.
        const mustBeDead = new Set(sent.filter((entry) => entry.message.expect.settlement === 'dead-lettered').map((entry) => entry.correlationId));
        for (let waited = 0; waited < 5_000 && [...mustBeDead].some((id) => !dead.has(id)); waited += 250) await sleep(250);
      } finally {
        await deadLetters.stop();
        await asWorker.close();
        await asIntruder.close();
        await intruder.remove();
      }

      const problems = failureSampler();
      const toolByEvent = new Map<string, AnyAgentTool>(RPC_AGENT_TOOLS.map((tool) => [tool.event, tool]));
      for (const { message, correlationId, outcome, started } of sent) {
        const reply = readReply(outcome);
        const label = `${message.kind}: ${message.variant}`;
        const pattern = (() => {
          try {
            return (JSON.parse(message.body.toString('utf8')) as { pattern?: unknown }).pattern;
          } catch {
            return undefined;
          }
        })();
        const tool = typeof pattern === 'string' ? toolByEvent.get(pattern) : undefined;
        // A replay carries the call id of a write that did run: counted under its own id, so the original is not
        // taken for a ghost; whether the replay changed anything is what the fingerprint below answers.
        const replay = message.kind === 'replayed-to-another-tool';
        record(
          outcomeOf({
            tool: replay ? undefined : tool,
            callId: replay ? `${message.callId}#replay-${correlationId}` : (message.callId ?? correlationId),
            result: reply.result,
            ...(reply.result === undefined && reply.text !== undefined ? { error: reply.text } : {}),
            ...(outcome.settled === 'broker-refused' ? { error: 'Refused by the broker.' } : {}),
            started,
            ...(message.marker ? { effectKey: message.marker } : {}),
          }),
        );
        if (reply.ran) {
          add({ unexpected: 1 });
          problems.note('a forgery ran and got data back', label);
          continue;
        }
        const actual = outcome.settled === 'broker-refused' ? 'broker-refused' : dead.has(correlationId) ? 'dead-lettered' : outcome.settled === 'answered' ? 'answered' : 'no-reply';
        if (actual !== message.expect.settlement) problems.note(`settled as ${actual}, expected ${message.expect.settlement}`, label);
        if (message.expect.settlement !== 'broker-refused' && !matchesRefusal(reply, message.expect.refusals)) {
          problems.note('refused with an unexpected code or sentence', `${label} → ${reply.result && 'error' in reply.result ? `${reply.result.code}: ` : ''}${reply.text?.slice(0, 120) ?? 'nothing'}`);
        }
      }
      for (const line of problems.lines()) check(false, line);

      const changes = fingerprintChanges(before, await domainFingerprint(stack.owner));
      if (changes.length) add({ unexpected: changes.length }, `domain tables changed while only forgeries were sent: ${changes.join(', ')}`);

      const perKind = new Map<string, number>();
      for (const message of messages) perKind.set(message.kind, (perKind.get(message.kind) ?? 0) + 1);
      check(
        FORGED_KINDS.every((kind) => (perKind.get(kind) ?? 0) >= size.variants),
        `fewer than ${size.variants} variants for ${FORGED_KINDS.filter((kind) => (perKind.get(kind) ?? 0) < size.variants).join(', ')}`,
      );
      // The server survived all of it and still serves (no crash, no polluted prototype changing a genuine answer).
      check(stack.server().child.exitCode === null, 'the server process exited during the forgeries');
      const canary = await caller.call(listDepartmentsTool, {}, adminA);
      check(canary.kind === 'ok' && !JSON.stringify(canary.result).includes('polluted'), `a genuine call after the forgeries did not answer normally: ${JSON.stringify(canary.result).slice(0, 200)}`);
    },
    { effects: markerEffects(target.stack.owner) },
  );

describe(PHASE, () => {
  const target = usePhaseTarget({ timeoutMs: 15_000 });

  it(`${FORGED_KINDS.length} kinds × 100 variants: every forgery refused as its kind expects, dead-lettered where it must be, nothing runs`, async () => {
    const row = await forgedEnvelopesPhase(target, { variants: 100, seed: 7_001, concurrency: 16 });
    expectPassed(row);
    expect(row.calls).toBeGreaterThanOrEqual(FORGED_KINDS.length * 100);
  });

  it('fails with the transport admitting any publisher (requireUserId off)', async () => {
    await restartWeakened(target.stack, 'any-publisher');
    const row = await forgedEnvelopesPhase(target, { variants: 6, seed: 7_002, concurrency: 8 });
    expectCaught(row, 'the tool transport admits any broker user');
    expect(row.failures.join('\n')).toMatch(/other-publisher/);
  });
});
