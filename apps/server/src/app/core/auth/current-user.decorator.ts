import { SetMetadata, createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { AuthenticatedRequest } from './jwt-auth.guard.js';
import { IS_PUBLIC } from './jwt-auth.guard.js';
import type { JwtPayload } from './jwt-payload.js';

export const CurrentUser = createParamDecorator(
  (_: unknown, context: ExecutionContext): JwtPayload => {
    const user = context.switchToHttp().getRequest<AuthenticatedRequest>().user;
    if (!user) throw new Error('CurrentUser used on a route without authentication.');
    return user;
  },
);

export const Public = () => SetMetadata(IS_PUBLIC, true);
