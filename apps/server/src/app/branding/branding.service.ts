import { BadRequestException, Injectable } from '@nestjs/common';
import { Action, Resource } from '@naalya/access';
import { assertSchoolWideReach } from '../core/authorization/campus-reach.js';
import { currentAbility } from '../core/authorization/permission-scope.store.js';
import { lockUntilCommit } from '../core/database/advisory-lock.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { currentScope, repo } from '../core/tenancy/tenant-context.js';
import { SchoolBrandingEntity } from './school-branding.entity.js';

export type UpdateBrandingDto = { displayName?: string; motto?: string | null; primaryColor?: string; logoUrl?: string | null };

export type SchoolBranding = Pick<SchoolBrandingEntity, 'schoolId' | 'displayName' | 'motto' | 'primaryColor' | 'logoUrl'>;

/** Branding belongs to a school: the caller's own, read from the unit of work's tenant, never from an argument. */
@Injectable()
export class BrandingService {
  async get(_jwt: JwtPayload): Promise<SchoolBranding> {
    const schoolId = this.schoolId();
    const branding = await repo(SchoolBrandingEntity).findOneBy({ schoolId });
    return branding
      ? { schoolId, displayName: branding.displayName, motto: branding.motto, primaryColor: branding.primaryColor, logoUrl: branding.logoUrl }
      : { schoolId, displayName: 'Your school', motto: null, primaryColor: '#1f6feb', logoUrl: null };
  }

  async update(dto: UpdateBrandingDto, jwt: JwtPayload): Promise<SchoolBranding> {
    // The branding is the whole school's: a rule limited to a campus does not reach it.
    assertSchoolWideReach(currentAbility(), { action: Action.UPDATE, resource: Resource.BRANDING });
    const schoolId = this.schoolId();
    // A school's first branding is an insert, with no row to lock: concurrent updates would both insert (a unique
    // violation) or merge over each other's fields.
    await lockUntilCommit(`school-branding:${schoolId}`);
    const current = await this.get(jwt);
    await repo(SchoolBrandingEntity).save({ ...current, ...dto, schoolId });
    return this.get(jwt);
  }

  private schoolId(): string {
    const scope = currentScope();
    if (scope.kind !== 'school') throw new BadRequestException('Pick a school first: branding belongs to one school.');
    return scope.schoolId;
  }
}
