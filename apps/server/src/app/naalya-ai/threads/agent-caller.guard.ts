import {
  ForbiddenException,
  Injectable,
  UnauthorizedException,
  UseGuards,
  applyDecorators,
  createParamDecorator,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { AuthService } from '../../core/auth/auth.service.js';
import { Public } from '../../core/auth/current-user.decorator.js';
import type { AuthenticatedRequest } from '../../core/auth/jwt-auth.guard.js';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { withCode } from '../../core/http/error-code.js';
import { NO_TENANT_SCOPE_ERROR, hasNoTenantScope, inTenantScope } from '../../core/tenancy/tenant-scope.js';

type AgentRequest = AuthenticatedRequest & { agentCaller?: JwtPayload };

/** Authenticates the bearer token exactly as the global guard does, into `agentCaller` instead of `user`. */
@Injectable()
export class AgentCallerGuard implements CanActivate {
  constructor(private readonly authService: AuthService) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<AgentRequest>();
    const [scheme, token] = String(request.headers['authorization'] ?? '').split(' ');
    if (scheme !== 'Bearer' || !token) throw new UnauthorizedException('Sign in first.');
    request.agentCaller = this.authService.verify(token);
    return true;
  }
}

/**
 * Agent routes open their own short units of work instead of the REST one, for two reasons: a stream of run
 * events must hold no transaction open for its whole life (DESIGN section 4), and a platform admin's threads
 * are school-less rows written from their own unscoped frame, which the REST unit of work refuses for writes.
 * The REST unit of work wraps exactly the requests the global guard authenticated into `request.user`, so the
 * global guard stands aside here (`Public`) and AgentCallerGuard authenticates the same token, still required.
 */
export const AgentRoutes = () => applyDecorators(Public(), UseGuards(AgentCallerGuard));

export const AgentCaller = createParamDecorator((_: unknown, context: ExecutionContext): JwtPayload => {
  const caller = context.switchToHttp().getRequest<AgentRequest>().agentCaller;
  if (!caller) throw new Error('AgentCaller used on a route without AgentRoutes().');
  return caller;
});

/**
 * One short unit of work as the caller: staff pinned to their school, a platform admin unscoped (their own
 * school-less rows, and reads across schools). Fails closed for a non-platform user without a school.
 */
export const asCaller = <T>(caller: JwtPayload, fn: () => Promise<T>): Promise<T> => {
  if (hasNoTenantScope(caller)) return Promise.reject(withCode('NO_TENANT_SCOPE', new ForbiddenException(NO_TENANT_SCOPE_ERROR)));
  return inTenantScope(caller, fn);
};
