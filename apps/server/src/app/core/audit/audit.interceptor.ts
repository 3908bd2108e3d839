import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuditSource } from '@naalya/access';
import { mergeMap, type Observable } from 'rxjs';
import type { AuthenticatedRequest } from '../auth/jwt-auth.guard.js';
import { AUDIT, type HttpAuditDescriptor } from './audit.decorator.js';
import { AuditLogService } from './audit-log.service.js';

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
    const request = context.switchToHttp().getRequest<AuthenticatedRequest & { params: Record<string, string> }>();
    return next.handle().pipe(
      mergeMap(async (result) => {
        if (!request.tenantUser) throw new Error('@Audit needs the unit of work to have opened first.');
        await this.auditLog.record(request.tenantUser, {
          action: descriptor.action,
          resourceType: descriptor.resourceType,
          resourceId: descriptor.resourceId?.(result, request.params),
          source: AuditSource.HTTP,
        });
        return result;
      }),
    );
  }
}
