import { ForbiddenException, Injectable } from '@nestjs/common';
import { UserEntity } from '../../staff/user.entity.js';
import { repo } from '../tenancy/tenant-context.js';
import type { JwtPayload } from './jwt-payload.js';

export const IDENTITY_REFUSED_ERROR = 'Your account is not active or has changed. Sign in again.';

/**
 * Tokens and envelopes can outlive the facts they carry. Inside the unit of work the caller is
 * reloaded by `sub`; deactivated, moved or retyped users are refused (fail closed).
 */
@Injectable()
export class IdentityService {
  async assertCurrent(jwt: JwtPayload): Promise<UserEntity> {
    const user = await repo(UserEntity).findOneBy({ id: jwt.sub });
    if (
      !user ||
      !user.isActive ||
      user.userType !== jwt.type ||
      user.schoolId !== (jwt.schoolId ?? null) ||
      user.campusId !== (jwt.campusId ?? null)
    ) {
      throw new ForbiddenException(IDENTITY_REFUSED_ERROR);
    }
    return user;
  }
}
