import type { ActionAuditAction } from '@naalya/access';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import type { PermissionGate } from '../../core/authorization/app-ability.js';

/** The audit row a successful write emits; `resourceId` must accept the handler's result type. */
export type ToolAuditDescriptor<T> = {
  action: ActionAuditAction;
  resourceType: string;
  resourceId?: (result: T) => string;
  /**
   * The resource's display name from the result, for a write whose result carries the very name the audit row would
   * otherwise read back by id in its own statement (audit_resource_name: a department's name, a lesson plan's title).
   */
  resourceName?: (result: T) => string;
  /**
   * For a write that removes its resource (a delete): the resource's id from the arguments, so its display name is
   * read before the call and the audit row still names what was removed.
   */
  target?: (args: Record<string, unknown>) => string | undefined;
};

/**
 * A confirmable tool's renderer, from its domain service: the confirmation question written from the records as the
 * caller may see them (name and owner of the resource, what it is now, what the call changes), without ids. It runs the
 * same checks as the call, so a resource the caller may not see is refused exactly as the call would be.
 */
export type ToolConfirmation<A> = (args: A, jwt: JwtPayload) => Promise<string>;

/**
 * The whole legal surface: a CASL gate copied from the REST route, or a relationship the service
 * enforces itself. A gateless casl posture, a gated relationship one, or any other auth does not compile.
 * `confirmation` is required of a tool whose definition has `confirm` (execute() refuses to run one without it).
 */
export type ToolPosture<T, A = never> =
  | { auth: 'casl'; gate: PermissionGate; audit?: ToolAuditDescriptor<T>; scopeNote?: never; confirmation?: ToolConfirmation<A> }
  | { auth: 'relationship'; scopeNote?: string; audit?: ToolAuditDescriptor<T>; gate?: never; confirmation?: ToolConfirmation<A> };
