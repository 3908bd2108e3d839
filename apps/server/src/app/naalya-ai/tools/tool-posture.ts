import type { ActionAuditAction } from '@naalya/access';
import type { PermissionGate } from '../../core/authorization/app-ability.js';

/** The audit row a successful write emits; `resourceId` must accept the handler's result type. */
export type ToolAuditDescriptor<T> = {
  action: ActionAuditAction;
  resourceType: string;
  resourceId?: (result: T) => string;
  /**
   * For a write that removes its resource (a delete): the resource's id from the arguments, so its display name is
   * read before the call and the audit row still names what was removed.
   */
  target?: (args: Record<string, unknown>) => string | undefined;
};

/**
 * The whole legal surface: a CASL gate copied from the REST route, or a relationship the service
 * enforces itself. A gateless casl posture, a gated relationship one, or any other auth does not compile.
 */
export type ToolPosture<T> =
  | { auth: 'casl'; gate: PermissionGate; audit?: ToolAuditDescriptor<T>; scopeNote?: never }
  | { auth: 'relationship'; scopeNote?: string; audit?: ToolAuditDescriptor<T>; gate?: never };
