import { createHash, randomUUID } from 'node:crypto';
import {
  CONFIRMATION_ANSWERS,
  identityFromUserDetails,
  isApprovalAnswer,
  requiresConfirmation,
  type AgentCallScope,
  type AgentToolRequest,
  type AgentUserDetails,
  type AnyAgentTool,
} from '@naalya/agent-tools';
import type { DataSource } from 'typeorm';
import type { DemoData, DemoPersona } from '../app/seed/demo-seed.js';
import { signDispatchToken } from '../app/naalya-ai/dispatch/dispatch-token.js';
import { canonicalHash } from '../app/naalya-ai/tools/canonical-hash.js';

/** TOOL_APPROVAL_TTL_SECONDS unset: the lifetime resume gives an approval in every test server. */
const DEFAULT_APPROVAL_TTL_SECONDS = 15 * 60;

/** The signing key of every test server (testConfig); dispatchEnvelope signs with it as dispatch does. */
export const TEST_DISPATCH_SIGNING_KEY = 'test-dispatch-key-test-dispatch-key-0000';

export type DispatchOptions = {
  /** Campus mode pins this campus, as dispatch does for a chat opened on one campus. */
  campusId?: string;
  /** School mode for a platform admin: the school chosen at dispatch. */
  targetSchoolId?: string;
  callId?: string;
  deadline?: number;
  timeoutMs?: number;
  /** The run the token names; by default the persona's own running test run (see ensureDispatchRuns). */
  run?: { runId: string; threadId: string };
  /** Seconds from now until the token expires (negative: already expired). */
  /** The run's dispatch epoch the token carries: 0 for the persona's direct test run; a dispatched run's current one otherwise. */
  epoch?: number;
  tokenTtlSeconds?: number;
  /** Sign with another key (a forger's). */
  signingKey?: string;
  /**
   * For a tool that needs confirmation, the user's answer recorded as resume records it. By default the persona
   * approves exactly these arguments on the envelope's run; each field changes one binding, and 'none' records nothing.
   */
  approval?: 'none' | ApprovalOptions;
};

export type ApprovalOptions = {
  /** The arguments the user saw and approved, when they differ from the ones sent. */
  args?: unknown;
  /** Who answered. */
  by?: DemoPersona;
  /** The run (and its thread) the confirmation was asked in. */
  run?: { runId: string; threadId: string };
  /** Seconds from now until the approval expires (negative: already expired). */
  ttlSeconds?: number;
  answer?: string;
};

const derivedUuid = (seed: string): string => {
  const hex = createHash('sha256').update(seed).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
};

/** Every persona's standing test run: one thread, one run in status running, ids derived from the user id. */
export const personaRun = (userId: string) => ({ runId: derivedUuid(`run:${userId}`), threadId: derivedUuid(`thread:${userId}`) });

// The owner connection of this test file's database, kept by ensureDispatchRuns so that dispatchEnvelope can record
// approvals as resume does; each test file runs in its own process with its own test app.
let owner: DataSource | undefined;

/**
 * Records a running run for every demo user (createTestApp calls it after seeding), as dispatch records a run before
 * it mints the context: so a token dispatchEnvelope signs for a persona names a run in flight, like a real one.
 */
export const ensureDispatchRuns = async (ownerDataSource: DataSource, demo: DemoData): Promise<void> => {
  owner = ownerDataSource;
  const personas = [...demo.schools.flatMap((school) => Object.values(school.personas)), demo.platformAdmin];
  for (const persona of personas) {
    const { runId, threadId } = personaRun(persona.id);
    await ownerDataSource.query(
      `INSERT INTO agent_threads (id, school_id, owner_id, title) VALUES ($1, $2, $3, 'Test dispatch') ON CONFLICT DO NOTHING`,
      [threadId, persona.schoolId, persona.id],
    );
    await ownerDataSource.query(
      `INSERT INTO agent_runs (id, thread_id, school_id, owner_id, status, message, kind, expires_at)
       VALUES ($1, $2, $3, $4, 'running', 'Test dispatch', 'direct', now() + interval '1 day')
       ON CONFLICT DO NOTHING`,
      [runId, threadId, persona.schoolId, persona.id],
    );
  }
};

// What resume records when the user answers a confirmation (recordConfirmationAnswer), written as the owner.
const recordApproval = async (
  persona: DemoPersona,
  tool: AnyAgentTool,
  args: unknown,
  callId: string,
  run: { runId: string; threadId: string },
  approval: ApprovalOptions,
): Promise<void> => {
  if (!owner) throw new Error('dispatchEnvelope records approvals on the test app database: create the test app first.');
  const approved = approval.args ?? args;
  // The server hashes the arguments it parsed (defaults filled in, strings trimmed), so the approval hashes the same.
  const parsed = tool.schema.safeParse(approved);
  const by = approval.by ?? persona;
  const at = approval.run ?? run;
  await owner.query(
    `INSERT INTO tool_call_approvals (school_id, thread_id, run_id, interrupt_id, call_id, event, args_hash, user_id, approved, answer, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now() + make_interval(secs => $11))
     ON CONFLICT (thread_id, call_id) DO NOTHING`,
    [
      by.schoolId,
      at.threadId,
      at.runId,
      `test-confirmation-${callId}`,
      callId,
      tool.event,
      canonicalHash(parsed.success ? parsed.data : approved),
      by.id,
      isApprovalAnswer(approval.answer ?? CONFIRMATION_ANSWERS.approve),
      approval.answer ?? CONFIRMATION_ANSWERS.approve,
      approval.ttlSeconds ?? DEFAULT_APPROVAL_TTL_SECONDS,
    ],
  );
};

/**
 * Builds every envelope tests and fixtures send, exactly as dispatch and the worker's proxy will: identity
 * from the persona's user details, scope from the run mode, meta with a fresh call id, a deadline and the
 * dispatch token the server would have minted for that identity and scope on the persona's running run; and,
 * for a tool that needs confirmation, the persona's approval of exactly these arguments, as resume records it.
 * Later additions to the envelope change this one place.
 */
export const dispatchEnvelope = async <A>(
  persona: DemoPersona,
  tool: AnyAgentTool,
  args: A,
  options: DispatchOptions = {},
): Promise<AgentToolRequest<A>> => {
  const userDetails: AgentUserDetails = {
    id: persona.id,
    userType: persona.type,
    schoolId: persona.schoolId,
    campusId: persona.campusId,
    fullName: persona.fullName,
    email: persona.email,
  };
  const scope: AgentCallScope = options.campusId
    ? { mode: 'campus', campusId: options.campusId }
    : options.targetSchoolId
      ? { mode: 'school', targetSchoolId: options.targetSchoolId }
      : { mode: 'school' };
  const identity = identityFromUserDetails(userDetails);
  const run = options.run ?? personaRun(persona.id);
  const callId = options.callId ?? randomUUID();
  const dispatchToken = signDispatchToken(options.signingKey ?? TEST_DISPATCH_SIGNING_KEY, {
    identity,
    scope,
    ...run,
    // The persona's test run is a direct run (no lease, epoch 0), as POST /agent/context opens.
    epoch: options.epoch ?? 0,
    exp: Math.floor(Date.now() / 1000) + (options.tokenTtlSeconds ?? 3600),
  });
  if (requiresConfirmation(tool) && options.approval !== 'none') {
    await recordApproval(persona, tool, args, callId, run, options.approval ?? {});
  }
  return {
    identity,
    scope,
    args,
    meta: {
      callId,
      deadline: options.deadline ?? Date.now() + (options.timeoutMs ?? 15_000),
      dispatchToken,
    },
  };
};
