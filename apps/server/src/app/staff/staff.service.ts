import { Injectable } from '@nestjs/common';
import { Action, Resource, UserType } from '@naalya/access';
import { CampusEntity } from '../campuses/campus.entity.js';
import { CampusService } from '../campuses/campus.service.js';
import { campusFilter, campusReach } from '../core/authorization/campus-reach.js';
import { currentAbility } from '../core/authorization/permission-scope.store.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { currentManager } from '../core/tenancy/tenant-context.js';
import { UserEntity } from '../core/identity/user.entity.js';

export type ListStaffDto = { campusId?: string };

export type StaffSummary = {
  id: string;
  fullName: string;
  email: string;
  campusId: string | null;
  campusName: string | null;
  isActive: boolean;
};

@Injectable()
export class StaffService {
  constructor(private readonly campusService: CampusService) {}

  /** Campus-limited rules narrow the query, not just the type check. */
  async list(dto: ListStaffDto, _jwt: JwtPayload): Promise<StaffSummary[]> {
    if (dto.campusId) await this.campusService.findVisible(dto.campusId);
    const campuses = campusFilter(campusReach(currentAbility(), { action: Action.LIST, resource: Resource.STAFF }), dto.campusId);
    const query = currentManager()
      .createQueryBuilder(UserEntity, 'user')
      .leftJoin(CampusEntity, 'campus', 'campus.id = user.campus_id')
      .select(['user.id AS id', 'user.full_name AS "fullName"', 'user.email AS email', 'user.campus_id AS "campusId"'])
      .addSelect(['campus.name AS "campusName"', 'user.is_active AS "isActive"'])
      .where('user.user_type = :staff', { staff: UserType.STAFF })
      .orderBy('user.full_name', 'ASC');
    if (campuses !== 'all') query.andWhere('user.campus_id IN (:...campuses)', { campuses });
    return query.getRawMany<StaffSummary>();
  }
}
