import { Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthService } from './auth.service.js';
import type { JwtPayload } from './jwt-payload.js';

export const IS_PUBLIC = 'naalya:public';

export type AuthenticatedRequest = {
  method: string;
  headers: Record<string, string | string[] | undefined>;
  user?: JwtPayload;
  /** The identity the unit of work runs as (a platform admin pinned to a target school); set by UnitOfWorkInterceptor. */
  tenantUser?: JwtPayload;
};

/** HTTP only, and authentication only: permissions are checked inside the unit of work by the interceptor. */
@Injectable()
export class JwtAuthGuard implements CanActivate {
  constructor(
    private readonly authService: AuthService,
    private readonly reflector: Reflector,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()]);
    if (isPublic) return true;
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const [scheme, token] = String(request.headers['authorization'] ?? '').split(' ');
    if (scheme !== 'Bearer' || !token) throw new UnauthorizedException('Sign in first.');
    request.user = this.authService.verify(token);
    return true;
  }
}
