import { randomUUID } from 'node:crypto';
import {
  identityFromUserDetails,
  type AgentCallScope,
  type AgentToolRequest,
  type AgentUserDetails,
  type AnyAgentTool,
} from '@naalya/agent-tools';
import type { DemoPersona } from '../app/core/database/seed/demo-seed.js';

export type DispatchOptions = {
  /** Campus mode pins this campus, as dispatch does for a chat opened on one campus. */
  campusId?: string;
  /** School mode for a platform admin: the school chosen at dispatch. */
  targetSchoolId?: string;
  callId?: string;
  deadline?: number;
  timeoutMs?: number;
};

/**
 * Builds every envelope tests and fixtures send, exactly as dispatch and the worker's proxy will: identity
 * from the persona's user details, scope from the run mode, meta with a fresh call id and a deadline.
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
  return {
    identity: identityFromUserDetails(userDetails),
    scope,
    args,
    meta: {
      callId: options.callId ?? randomUUID(),
      deadline: options.deadline ?? Date.now() + (options.timeoutMs ?? 15_000),
    },
  };
};
