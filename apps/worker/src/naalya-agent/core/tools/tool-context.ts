import {
  ERROR_SENTENCES,
  agentRuntimeContextSchema,
  identityFromUserDetails,
  type AgentCallScope,
  type AgentIdentity,
  type AgentRuntimeContext,
} from '@naalya/agent-tools';

type RuntimeWithContext = { context?: unknown };

// What one dispatch context resolves to: the context itself, the caller's identity and the call scope. Every tool
// call of a run reads the same three from the same context object.
type ResolvedContext = { context: AgentRuntimeContext; identity: AgentIdentity; scope: AgentCallScope };

// A run hands the same context object to every tool call, and parsing it again cost every call several microseconds
// (bench/, variant (b)). Keyed by that object: a rebuilt context is a new key and is parsed anew, and an object edited in
// place after its first call keeps its first verdict (the identity minted at dispatch). Identity and call scope are
// derived once with the parse, so the proxy's per-call read of each is a WeakMap lookup, not a rebuild. The result is frozen;
// the input is not, since it belongs to LangGraph's config (freezing it broke confirmation resumes in the e2e tests).
const resolvedContexts = new WeakMap<object, ResolvedContext | null>();

const deepFreeze = <T>(value: T): T => {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
};

// Campus mode pins campusId here, so campus-scoped handlers read it from the envelope and ignore a
// model-supplied id. School mode carries only the target school minted at dispatch (platform admins).
export const callScopeFromContext = ({ runMode }: AgentRuntimeContext): AgentCallScope => {
  if (runMode.mode === 'campus') return { mode: 'campus', campusId: runMode.campus.id };
  return runMode.targetSchoolId === undefined
    ? { mode: 'school' }
    : { mode: 'school', targetSchoolId: runMode.targetSchoolId };
};

// The proxy never trusts model arguments for "who is calling" or "which campus": it reads the
// context the server minted at dispatch, and a malformed one reads as no context at all.
const resolve = (runtime: RuntimeWithContext): ResolvedContext | null => {
  const context = runtime?.context;
  if (typeof context !== 'object' || context === null) return null;
  let resolved = resolvedContexts.get(context);
  if (resolved === undefined) {
    const parsed = agentRuntimeContextSchema.safeParse(context);
    resolved = parsed.success
      ? deepFreeze({ context: parsed.data, identity: identityFromUserDetails(parsed.data.userDetails), scope: callScopeFromContext(parsed.data) })
      : null;
    resolvedContexts.set(context, resolved);
  }
  return resolved;
};

export const resolveRuntimeContext = (runtime: RuntimeWithContext): AgentRuntimeContext | null => resolve(runtime)?.context ?? null;

export const resolveIdentity = (runtime: RuntimeWithContext): AgentIdentity | null => resolve(runtime)?.identity ?? null;

export const resolveCallScope = (runtime: RuntimeWithContext): AgentCallScope | null => resolve(runtime)?.scope ?? null;

// For shaping what Rover offers (display), never for deciding whether a tool may run: the server decides.
export const resolvePermissions = (runtime: RuntimeWithContext) => resolveRuntimeContext(runtime)?.userPermissions ?? [];

export const CONTEXT_MISSING_ERROR = ERROR_SENTENCES.CONTEXT_MISSING;
