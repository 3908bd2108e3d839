import { createHash, randomUUID } from 'node:crypto';
import {
  identityFromUserDetails,
  type AgentCallScope,
  type AgentToolRequest,
  type AgentUserDetails,
  type AnyAgentTool,
} from '@naalya/agent-tools';
import type { DataSource } from 'typeorm';
import type { DemoData, DemoPersona } from '../app/core/database/seed/demo-seed.js';
import { signDispatchToken } from '../app/naalya-ai/agent-runs/dispatch-token.js';

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
  tokenTtlSeconds?: number;
  /** Sign with another key (a forger's). */
  signingKey?: string;
};

const derivedUuid = (seed: string): string => {
  const hex = createHash('sha256').update(seed).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
};

/** Every persona's standing test run: one thread, one run in status running, ids derived from the user id. */
export const personaRun = (userId: string) => ({ runId: derivedUuid(`run:${userId}`), threadId: derivedUuid(`thread:${userId}`) });

/**
 * Records a running run for every demo user (createTestApp calls it after seeding), as dispatch records a run before
 * it mints the context: so a token dispatchEnvelope signs for a persona names a run in flight, like a real one.
 */
export const ensureDispatchRuns = async (owner: DataSource, demo: DemoData): Promise<void> => {
  const personas = [...demo.schools.flatMap((school) => Object.values(school.personas)), demo.platformAdmin];
  for (const persona of personas) {
    const { runId, threadId } = personaRun(persona.id);
    await owner.query(
      `INSERT INTO agent_threads (id, school_id, owner_id, title) VALUES ($1, $2, $3, 'Test dispatch') ON CONFLICT DO NOTHING`,
      [threadId, persona.schoolId, persona.id],
    );
    await owner.query(
      `INSERT INTO agent_runs (id, thread_id, school_id, owner_id, status, message) VALUES ($1, $2, $3, $4, 'running', 'Test dispatch')
       ON CONFLICT DO NOTHING`,
      [runId, threadId, persona.schoolId, persona.id],
    );
  }
};

/**
 * Builds every envelope tests and fixtures send, exactly as dispatch and the worker's proxy will: identity
 * from the persona's user details, scope from the run mode, meta with a fresh call id, a deadline and the
 * dispatch token the server would have minted for that identity and scope on the persona's running run.
 * Later additions to the envelope change this one place.
 */
export const dispatchEnvelope = <A>(
  persona: DemoPersona,
  _tool: AnyAgentTool,
  args: A,
  options: DispatchOptions = {},
): AgentToolRequest<A> => {
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
  const dispatchToken = signDispatchToken(options.signingKey ?? TEST_DISPATCH_SIGNING_KEY, {
    identity,
    scope,
    ...(options.run ?? personaRun(persona.id)),
    exp: Math.floor(Date.now() / 1000) + (options.tokenTtlSeconds ?? 3600),
  });
  return {
    identity,
    scope,
    args,
    meta: {
      callId: options.callId ?? randomUUID(),
      deadline: options.deadline ?? Date.now() + (options.timeoutMs ?? 15_000),
      dispatchToken,
    },
  };
};
