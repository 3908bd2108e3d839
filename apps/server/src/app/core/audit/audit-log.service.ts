import { Injectable } from '@nestjs/common';
import type { ActionAuditAction, AuditSource } from '@naalya/access';
import type { JwtPayload } from '../auth/jwt-payload.js';
import { repo } from '../tenancy/tenant-context.js';
import { AuditLogEntity } from './audit-log.entity.js';

export type AuditEntry = {
  action: ActionAuditAction;
  resourceType: string;
  resourceId?: string;
  source: AuditSource;
  callId?: string;
};

@Injectable()
export class AuditLogService {
  /**
   * Writes in the caller's unit of work, so the row commits or rolls back with the change it describes.
   * The school comes from the (rebuilt) JWT: a platform admin's write is recorded in its target school.
   */
  async record(jwt: JwtPayload, entry: AuditEntry): Promise<string> {
    if (!jwt.schoolId) throw new Error('An audited write needs a school.');
    // insert(), not save(): the same INSERT … RETURNING statement without the persistence machinery (subjects, change
    // maps, entity merge) that save() runs for a row that is only ever inserted.
    const { identifiers } = await repo(AuditLogEntity).insert({
      schoolId: jwt.schoolId,
      actorId: jwt.sub,
      actorType: jwt.type,
      action: entry.action,
      resourceType: entry.resourceType,
      resourceId: entry.resourceId ?? null,
      source: entry.source,
      callId: entry.callId ?? null,
    });
    return (identifiers[0] as { id: string }).id;
  }
}
