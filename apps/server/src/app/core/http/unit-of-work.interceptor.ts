import {
  ForbiddenException,
  Injectable,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { from, lastValueFrom, type Observable } from 'rxjs';
import { AppAbilityFactory } from '../authorization/app-ability.factory.js';
import type { PermissionGate } from '../authorization/app-ability.js';
import { permissionDeniedMessage } from '../authorization/permission-denied.js';
import { runWithAbility } from '../authorization/permission-scope.store.js';
import { REQUIRE_PERMISSIONS } from '../authorization/require-permissions.decorator.js';
import { IdentityService } from '../auth/identity.service.js';
import type { AuthenticatedRequest } from '../auth/jwt-auth.guard.js';
import { UserType } from '@naalya/access';
import {
  NO_TENANT_SCOPE_ERROR,
  PLATFORM_WRITE_NEEDS_SCHOOL_ERROR,
  hasNoTenantScope,
  inTenantScope,
  tenantJwtFor,
} from '../tenancy/tenant-scope.js';
import { withCode } from './error-code.js';
import { assertTargetSchoolExists, assertWellFormedTargetSchool, targetSchoolOf } from './target-school.js';

/**
 * The REST unit of work: one transaction in the caller's tenant frame, the caller reloaded fresh, the
 * ability rebuilt inside it and the route's @RequirePermissions checked. Guards run before interceptors
 * and cannot see the frame, so the permission check lives here.
 */
@Injectable()
export class UnitOfWorkInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly abilityFactory: AppAbilityFactory,
    private readonly identityService: IdentityService,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    if (!request.user) return next.handle();
    const jwt = request.user;
    const gate = this.reflector.get<PermissionGate | undefined>(REQUIRE_PERMISSIONS, context.getHandler());
    return from(
      (async () => {
        if (hasNoTenantScope(jwt)) throw withCode('NO_TENANT_SCOPE', new ForbiddenException(NO_TENANT_SCOPE_ERROR));
        const targetSchoolId = targetSchoolOf(request);
        // Anyone but a platform admin is refused for sending the header at all, before its form is looked at.
        const tenantJwt = tenantJwtFor(jwt, targetSchoolId);
        if (targetSchoolId) assertWellFormedTargetSchool(targetSchoolId);
        if (request.method !== 'GET' && jwt.type === UserType.PLATFORM_ADMIN && !tenantJwt.schoolId) {
          throw withCode('PLATFORM_WRITE_NEEDS_SCHOOL', new ForbiddenException(PLATFORM_WRITE_NEEDS_SCHOOL_ERROR));
        }
        request.tenantUser = tenantJwt;
        return inTenantScope(tenantJwt, async () => {
          if (targetSchoolId) await assertTargetSchoolExists();
          const permissions = await this.identityService.assertCurrentWithPermissions(jwt);
          const ability = this.abilityFactory.fromPermissions(tenantJwt, permissions);
          if (gate && !ability.can(gate.action, gate.resource)) throw new ForbiddenException(permissionDeniedMessage(gate));
          return runWithAbility(ability, () => lastValueFrom(next.handle(), { defaultValue: undefined }));
        });
      })(),
    );
  }
}
