import { Injectable } from '@nestjs/common';
import { Action, Resource } from '@naalya/access';
import { campusFilter, campusReach } from '../core/authorization/campus-reach.js';
import { currentAbility } from '../core/authorization/permission-scope.store.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { repo } from '../core/tenancy/tenant-context.js';
import { SubjectEntity } from './subject.entity.js';

@Injectable()
export class SubjectService {
  /**
   * The school's subjects, or, for rules limited to some campuses, the subjects taught there: a subject belongs to the
   * whole school, and is on a campus through a teaching assignment to a class of that campus.
   */
  async list(_jwt: JwtPayload): Promise<Pick<SubjectEntity, 'id' | 'name' | 'code'>[]> {
    const campuses = campusFilter(campusReach(currentAbility(), { action: Action.LIST, resource: Resource.SUBJECT }), undefined);
    const query = repo(SubjectEntity).createQueryBuilder('subject').select(['subject.id', 'subject.name', 'subject.code']).orderBy('subject.name', 'ASC');
    if (campuses !== 'all') {
      query.where(
        `EXISTS (SELECT 1 FROM teaching_assignments assignment JOIN classes stream ON stream.id = assignment.class_id
                  WHERE assignment.subject_id = subject.id AND stream.campus_id IN (:...campuses))`,
        { campuses },
      );
    }
    return query.getMany();
  }
}
