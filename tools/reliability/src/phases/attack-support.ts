import { createHash, randomUUID } from 'node:crypto';
import {
  identityFromUserDetails,
  canonicalJson,
  isMutatingEvent,
  type AgentCallScope,
  type AgentIdentity,
  type AgentRuntimeContext,
  type AgentToolRequest,
  type AgentToolResult,
  type AnyAgentTool,
} from '@naalya/agent-tools';
import type pg from 'pg';
import { dispatchTokenBody, signDispatchToken } from '@naalya/server/testing';
import { type CallOutcome, type EffectProbe, type ReliabilityStack } from '../support/index.js';
import { openRawPublisher, readReply } from './raw-publisher.js';
import { PERSONA_EMAILS, type PersonaKey, type Query, type SchoolWorld } from './seeded-world.js';

/** What the attack phases share: the server's token signer, contexts per persona, probes. */

const queues = new WeakMap<pg.Client, Promise<unknown>>();

/**
 * The owner's queries one after another: phases check effects from many concurrent calls, and a pg client given a
 * query while another runs only queues it by a path pg has deprecated.
 */
const serially = <T>(owner: pg.Client, work: () => Promise<T>): Promise<T> => {
  const next = (queues.get(owner) ?? Promise.resolve()).then(work, work);
  queues.set(owner, next.catch(() => undefined));
  return next;
};

export const queryOf =
  (owner: pg.Client): Query =>
  async <R>(sql: string, parameters: unknown[] = []) =>
    (await serially(owner, () => owner.query(sql, parameters))).rows as R[];

export type DispatchClaims = { identity: AgentIdentity; scope: AgentCallScope; runId: string; threadId: string; epoch: number; exp: number };

/** The epoch a dispatch token was minted for (its claims are readable; only the signature is secret). */
export const epochOf = (dispatchToken: string | undefined): number => {
  const claims = JSON.parse(Buffer.from(dispatchTokenBody(String(dispatchToken)) ?? '', 'base64url').toString('utf8') || '{}') as { epoch?: unknown };
  return typeof claims.epoch === 'number' ? claims.epoch : 0;
};

/** Signs dispatch claims as the server does (its own function), with its key or a forger's. */
export const loadSigner = async (stack: ReliabilityStack): Promise<(claims: DispatchClaims, key?: string) => string> => {
  const serverKey = stack.env['DISPATCH_SIGNING_KEY'];
  if (!serverKey) throw new Error('The stack has no DISPATCH_SIGNING_KEY.');
  return (claims, key = serverKey) => signDispatchToken(key, claims);
};

export const emailOf = (school: SchoolWorld, persona: PersonaKey) => `${PERSONA_EMAILS[persona]}@${school.slug}.school`;

/** Real dispatches (each opens a running run), minted once per persona, school and mode and reused by every call. */
export const contextCache = (stack: ReliabilityStack) => {
  const cache = new Map<string, Promise<AgentRuntimeContext>>();
  return (email: string, body: Record<string, unknown> = {}): Promise<AgentRuntimeContext> => {
    const key = `${email} ${JSON.stringify(body)}`;
    let context = cache.get(key);
    if (!context) {
      context = stack.contextFor(email, body);
      cache.set(key, context);
    }
    return context;
  };
};

export const identityOf = (context: AgentRuntimeContext): AgentIdentity => identityFromUserDetails(context.userDetails);

/** The sha256 of a call's canonical arguments: what an approval and the worker's confirmation bind to. */
export const argsHash = (args: unknown): string => createHash('sha256').update(canonicalJson(args)).digest('hex');

/**
 * Effects by marker: the unique text a write of an attack would leave (a department name, a motto, a lesson plan
 * title). One probe for all of them, so a forged call of any of these tools that ran is found.
 */
export const markerEffects =
  (owner: pg.Client): EffectProbe =>
  async (markers) => {
    const { rows } = await owner.query<{ marker: string; count: string }>(
      `SELECT marker, count(*) FROM (
         SELECT name AS marker FROM departments WHERE name = ANY($1)
         UNION ALL SELECT motto FROM school_branding WHERE motto = ANY($1)
         UNION ALL SELECT title FROM lesson_plans WHERE title = ANY($1)
       ) found GROUP BY marker`,
      [markers],
    );
    return new Map(rows.map((row) => [row.marker, Number(row.count)]));
  };

/**
 * A call's outcome as the reconciler counts it, for calls that did not go through the worker's client (raw
 * forgeries). A data reply is 'ok' (it ran), no reply at all 'unknown', anything else 'refused'.
 */
export const outcomeOf = (input: {
  tool: AnyAgentTool | undefined;
  callId: string;
  result: AgentToolResult | undefined;
  error?: string;
  started: number;
  effectKey?: string;
}): CallOutcome => {
  const error = input.error ?? (input.result && 'error' in input.result ? input.result.error : undefined);
  // No tool result came back (a transport refusal, or nothing): the worker's own client reads that as unreachable.
  const code = input.result && 'error' in input.result ? input.result.code : 'PLATFORM_UNREACHABLE';
  const kind = input.result && 'data' in input.result ? 'ok' : input.result === undefined && input.error === undefined ? 'unknown' : 'refused';
  return {
    callId: input.callId,
    tool: input.tool?.name ?? 'none',
    event: input.tool?.event ?? 'none',
    mutating: input.tool ? isMutatingEvent(input.tool.event) : false,
    kind,
    ...(error === undefined ? {} : { error, code }),
    result: input.result ?? { error: error ?? 'no reply', code },
    ms: Date.now() - input.started,
    ...(input.effectKey ? { effectKey: input.effectKey } : {}),
  };
};

/** Examples of what went wrong, a few per reason, for the row's failure lines. */
export const failureSampler = (perReason = 3) => {
  const seen = new Map<string, string[]>();
  return {
    note: (reason: string, example: string) => {
      const examples = seen.get(reason) ?? [];
      examples.push(example);
      seen.set(reason, examples);
    },
    lines: () => [...seen].map(([reason, examples]) => `${examples.length} × ${reason}; e.g. ${examples.slice(0, perReason).join(' | ')}`),
    count: () => [...seen.values()].reduce((sum, examples) => sum + examples.length, 0),
  };
};

/**
 * Records the user's answer to a confirmation as the server's resume records it (same table, same binding: thread,
 * call id, event, hash of the parsed arguments, user), written here as the owner because these phases attack
 * execute()'s check, not the conversation that asks. `expiresInSeconds` below zero gives an approval already expired.
 */
export const recordApproval = async (
  owner: pg.Client,
  approval: { context: AgentRuntimeContext; callId: string; tool: AnyAgentTool; args: unknown; userId?: string; approved?: boolean; expiresInSeconds?: number },
): Promise<void> => {
  const parsed = approval.tool.schema.parse(approval.args) as unknown;
  await queryOf(owner)(
    `INSERT INTO tool_call_approvals (school_id, thread_id, run_id, interrupt_id, call_id, event, args_hash, user_id, approved, answer, expires_at)
     VALUES ($11, $1, $2, $3, $4, $5, $6, $7, $8, $9, now() + make_interval(secs => $10))`,
    [
      approval.context.run.threadId,
      approval.context.run.runId,
      `rel-${approval.callId}`,
      approval.callId,
      approval.tool.event,
      argsHash(parsed),
      approval.userId ?? approval.context.userDetails.id,
      approval.approved ?? true,
      approval.approved === false ? 'no' : 'yes',
      approval.expiresInSeconds ?? 900,
      // A platform administrator's answers are school-less rows, as the server records them.
      approval.context.userDetails.schoolId,
    ],
  );
};

/**
 * Sends envelopes as the worker's client puts them on the wire (Nest's packet, the worker's validated user_id, direct
 * reply-to) from a publisher far lighter than Nest's client, for phases whose volume would otherwise make this process,
 * not the server, what is measured. Semantic errors come back untouched either way; no reply is 'unknown'.
 */
export const openWireSender = async (stack: ReliabilityStack) => {
  const publisher = await openRawPublisher(stack.workerBrokerUrl, stack.toolsQueue);
  const userId = new URL(stack.workerBrokerUrl).username;
  return {
    send: async (tool: AnyAgentTool, envelope: AgentToolRequest, timeoutMs = 15_000): Promise<CallOutcome> => {
      const started = Date.now();
      const body = Buffer.from(JSON.stringify({ pattern: tool.event, data: envelope, id: randomUUID() }));
      const reply = readReply((await publisher.publish(body, { userId, timeoutMs })).outcome);
      return outcomeOf({ tool, callId: envelope.meta.callId, result: reply.result, ...(reply.result || reply.text === undefined ? {} : { error: reply.text }), started });
    },
    close: () => publisher.close(),
  };
};
