import { In } from 'typeorm';
import { toolError, type AgentCallScope, type AgentIdentity, type AgentToolResult } from '@naalya/agent-tools';
import { CampusEntity } from '../../campuses/campus.entity.js';
import type { AppAbility, PermissionGate } from '../../core/authorization/app-ability.js';
import { campusReach } from '../../core/authorization/campus-reach.js';
import { permissionDeniedMessage } from '../../core/authorization/permission-denied.js';
import { runWithAbility } from '../../core/authorization/permission-scope.store.js';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { repo } from '../../core/tenancy/tenant-context.js';
import { NO_TENANT_SCOPE_ERROR, hasNoTenantScope, inTenantScope } from '../../core/tenancy/tenant-scope.js';
import { toToolError } from './tool-error.js';

export { NO_TENANT_SCOPE_ERROR, hasNoTenantScope, inTenantScope };

export type ToolScopeResult<T> = AgentToolResult<T>;

/**
 * iat/exp are synthetic: ability resolution only reads sub, type, schoolId and campusId. Built field by field, not
 * spread: the parsed envelope's object copied generically was a measurable share of a tool call's CPU.
 */
export const toJwtPayload = (identity: AgentIdentity): JwtPayload => ({
  sub: identity.sub,
  type: identity.type,
  schoolId: identity.schoolId,
  campusId: identity.campusId,
  iat: 0,
  exp: 0,
});

/**
 * Pins the tenant and puts the rebuilt ability in the store. Relationship tools get it too: a service's
 * admin fallback that found no ability would otherwise fail open on this untrusted seam.
 */
const runWithAmbientAbility = <T>(jwt: JwtPayload, ability: AppAbility, fn: () => Promise<T>): Promise<T> =>
  inTenantScope(jwt, () => runWithAbility(ability, fn));

const campusNames = async (campusIds: string[]): Promise<string> => {
  const campuses = await repo(CampusEntity).find({ where: { id: In(campusIds) }, order: { name: 'ASC' } });
  const names = campuses.map((campus) => campus.name);
  return names.length === 1 ? `the ${names[0]} campus` : `the ${names.slice(0, -1).join(', ')} and ${names.at(-1)} campuses`;
};

/**
 * One plain sentence on the reach of the caller's rules for this gate; never rule internals, ids or other schools. A
 * school-wide reach needs no campus names, and is answered without a promise.
 */
const describeScopeContext = (ctx: { jwt: JwtPayload; ability: AppAbility; scope: AgentCallScope }, gate: PermissionGate): string | Promise<string> => {
  const reach = campusReach(ctx.ability, gate);
  if (ctx.scope.mode === 'campus') return campusNames([ctx.scope.campusId]).then((names) => `This covers ${names} only, the campus this chat is pinned to.`);
  if (reach.kind === 'campuses') return campusNames(reach.campusIds).then((names) => `Your access covers ${names} only.`);
  return ctx.jwt.schoolId ? 'Your access covers the whole school.' : 'Your access covers every school on the platform.';
};

/** CASL-gated tools: the gate equals the REST route's @RequirePermissions pair; denied means fn never runs. */
export const runInToolScope = async <T>(
  ctx: { jwt: JwtPayload; ability: AppAbility; scope: AgentCallScope },
  gate: PermissionGate,
  fn: () => Promise<T>,
): Promise<ToolScopeResult<T>> => {
  if (!ctx.ability.can(gate.action, gate.resource)) return { error: permissionDeniedMessage(gate), code: 'PERMISSION_DENIED' };
  if (hasNoTenantScope(ctx.jwt)) return toolError('NO_TENANT_SCOPE');
  try {
    const data = await runWithAmbientAbility(ctx.jwt, ctx.ability, fn);
    const scopeContext = describeScopeContext(ctx, gate);
    return { data, scopeContext: typeof scopeContext === 'string' ? scopeContext : await scopeContext };
  } catch (error) {
    return toToolError(error, `${gate.action}:${gate.resource}`);
  }
};

/** Relationship tools: the service resolves the caller from jwt.sub and asserts the relationship itself. */
export const runInRelationshipToolScope = async <T>(
  jwt: JwtPayload,
  ability: AppAbility,
  scopeNote: string,
  fn: () => Promise<T>,
): Promise<ToolScopeResult<T>> => {
  if (hasNoTenantScope(jwt)) return toolError('NO_TENANT_SCOPE');
  try {
    return { data: await runWithAmbientAbility(jwt, ability, fn), scopeContext: scopeNote };
  } catch (error) {
    return toToolError(error, 'relationship');
  }
};
