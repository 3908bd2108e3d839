import { SetMetadata } from '@nestjs/common';
import type { ActionAuditAction } from '@naalya/access';

export const AUDIT = 'naalya:audit';

export type HttpAuditDescriptor = {
  action: ActionAuditAction;
  resourceType: string;
  resourceId?: (result: unknown, params: Record<string, string>) => string | undefined;
  /** For a route that removes its resource: its id from the path, so its name is read before the handler runs. */
  target?: (params: Record<string, string>) => string | undefined;
};

/** HTTP only: tool calls describe their audit row in their posture instead. */
export const Audit = (descriptor: HttpAuditDescriptor) => SetMetadata(AUDIT, descriptor);
