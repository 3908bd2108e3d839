import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuditSource } from '@naalya/access';
import { defer, mergeMap, type Observable } from 'rxjs';
import type { AuthenticatedRequest } from '../auth/jwt-auth.guard.js';
import { AUDIT, type HttpAuditDescriptor } from './audit.decorator.js';
import { AuditLogService } from './audit-log.service.js';

type AuditedRequest = AuthenticatedRequest & {
  params: Record<string, string>;
  method: string;
  body?: unknown;
  route?: { path?: string };
};

/** "POST /departments/:departmentId/members": the route's pattern, never its ids, so the filter groups one route. */
const routeOf = (request: AuditedRequest): string => `${request.method} ${request.route?.path ?? 'unknown'}`;

/**
 * What a REST write changed: its path parameters and its body. The handler validated the body strictly (parseDto) and
 * the write succeeded, so the body holds exactly the validated fields.
 */
const changesOf = (request: AuditedRequest): Record<string, unknown> => ({
  ...request.params,
  ...(request.body && typeof request.body === 'object' && !Array.isArray(request.body) ? (request.body as Record<string, unknown>) : {}),
});

/** Runs inside the unit of work opened by UnitOfWorkInterceptor, so the audit row shares the write's transaction. */
@Injectable()
export class AuditInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly auditLog: AuditLogService,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const descriptor = this.reflector.get<HttpAuditDescriptor | undefined>(AUDIT, context.getHandler());
    if (context.getType() !== 'http' || !descriptor) return next.handle();
    const request = context.switchToHttp().getRequest<AuditedRequest>();
    // A delete removes the row its display name is read from: read it first, in the same unit of work.
    // Deferred: read when the chain is subscribed, inside the unit of work, never ahead of it.
    const targetId = descriptor.target?.(request.params);
    const nameBefore = defer(async () => (targetId ? this.auditLog.resourceName(descriptor.resourceType, targetId) : null));
    return nameBefore.pipe(
      mergeMap((resourceName) => next.handle().pipe(
        mergeMap(async (result) => {
          if (!request.tenantUser) throw new Error('@Audit needs the unit of work to have opened first.');
          await this.auditLog.record(request.tenantUser, {
            action: descriptor.action,
            resourceType: descriptor.resourceType,
            resourceId: descriptor.resourceId?.(result, request.params),
            source: AuditSource.HTTP,
            route: routeOf(request),
            resourceName,
            changes: changesOf(request),
          });
          return result;
        }),
      )),
    );
  }
}
