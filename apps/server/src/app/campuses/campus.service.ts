import { Injectable, NotFoundException } from '@nestjs/common';
import { Action, Resource, type CampusSummary } from '@naalya/access';
import { In } from 'typeorm';
import { campusFilter, campusReach } from '../core/authorization/campus-reach.js';
import { currentAbility } from '../core/authorization/permission-scope.store.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { repo } from '../core/tenancy/tenant-context.js';
import { CampusEntity } from './campus.entity.js';

@Injectable()
export class CampusService {
  /** Resolved inside the tenant frame: another school's campus reads as not found, never as forbidden. */
  async findVisible(campusId: string): Promise<CampusEntity> {
    const campus = await repo(CampusEntity).findOneBy({ id: campusId });
    if (!campus) throw new NotFoundException('Campus not found.');
    return campus;
  }

  /** A campus the call is narrowed to (pinned by campus mode or named by the model), checked to be in this school. */
  async narrowTo(campusId: string | undefined): Promise<string | undefined> {
    return campusId ? (await this.findVisible(campusId)).id : undefined;
  }

  /**
   * The campuses the caller's LIST CAMPUS rules reach: a rule limited to `campusId` (a campus's own id, for this
   * resource) lists that campus only.
   */
  async list(_jwt: JwtPayload): Promise<CampusSummary[]> {
    const campuses = campusFilter(campusReach(currentAbility(), { action: Action.LIST, resource: Resource.CAMPUS }), undefined);
    return repo(CampusEntity).find({
      select: { id: true, name: true },
      where: campuses === 'all' ? {} : { id: In(campuses) },
      order: { name: 'ASC' },
    });
  }
}
