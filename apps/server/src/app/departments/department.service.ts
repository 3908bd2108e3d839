import { subject } from '@casl/ability';
import { BadRequestException, ConflictException, ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { Action, Resource, UserType } from '@naalya/access';
import { CampusService } from '../campuses/campus.service.js';
import { campusFilter, campusReach } from '../core/authorization/campus-reach.js';
import { currentAbility } from '../core/authorization/permission-scope.store.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { currentManager, currentSchoolId, frameQuery, repo } from '../core/tenancy/tenant-context.js';
import { UserEntity } from '../core/identity/user.entity.js';
import { departmentRemovalQuestion } from './department-removal.confirmation.js';
import { DepartmentMemberEntity } from './department-member.entity.js';
import { DepartmentEntity } from './department.entity.js';
import { lockUntilCommit } from '../core/database/advisory-lock.js';

export type ListDepartmentsDto = { campusId?: string };
export type CreateDepartmentDto = { name: string; campusId?: string };
export type AddDepartmentMemberDto = { departmentId: string; staffId: string; asHead: boolean };

export type DepartmentSummary = {
  id: string;
  name: string;
  campusId: string | null;
  campusName: string | null;
  members: { staffId: string; fullName: string; isHead: boolean }[];
};

export type DepartmentMembership = { departmentId: string; staffId: string; isHead: boolean };

const UNIQUE_VIOLATION = '23505';

@Injectable()
export class DepartmentService {
  constructor(private readonly campusService: CampusService) {}

  async list(dto: ListDepartmentsDto, _jwt: JwtPayload): Promise<DepartmentSummary[]> {
    if (dto.campusId) await this.campusService.findVisible(dto.campusId);
    const campuses = campusFilter(
      campusReach(currentAbility(), { action: Action.LIST, resource: Resource.DEPARTMENT }),
      dto.campusId,
    );
    // Plain SQL on the frame's connection: building it with the QueryBuilder cost more CPU than the database spent
    // running it (bench/results, profile by package), on every list_departments call. One statement, the members
    // aggregated per department (by name, as they are listed), under the same row-level security as a join of its own.
    return frameQuery<DepartmentSummary>(
      `SELECT department.id, department.name, department.campus_id AS "campusId", campus.name AS "campusName",
              COALESCE((SELECT json_agg(json_build_object('staffId', member.user_id, 'fullName', staff.full_name, 'isHead', member.is_head)
                                        ORDER BY staff.full_name)
                          FROM department_members member JOIN users staff ON staff.id = member.user_id
                         WHERE member.department_id = department.id), '[]'::json) AS members
         FROM departments department LEFT JOIN campuses campus ON campus.id = department.campus_id
        WHERE $1::uuid[] IS NULL OR department.campus_id = ANY($1::uuid[])
        ORDER BY department.name`,
      [campuses === 'all' ? null : campuses],
    );
  }

  /** The rule is checked on the new instance, so a campus-limited admin can create only on their campus. */
  async create(dto: CreateDepartmentDto, _jwt: JwtPayload): Promise<DepartmentEntity> {
    const campusId = dto.campusId ? (await this.campusService.findVisible(dto.campusId)).id : null;
    if (!currentAbility().can(Action.CREATE, subject(Resource.DEPARTMENT, { campusId }))) {
      throw new ForbiddenException(
        campusId ? 'You cannot create departments on that campus.' : 'You cannot create school-wide departments; pick a campus.',
      );
    }
    const schoolId = currentSchoolId();
    const name = dto.name.trim();
    try {
      // Plain SQL, as list(): the repository's insert() (metadata walk, property-name rewriting by regular expression,
      // merging the returned columns) cost more server CPU than the INSERT itself on every create_department call
      // (bench/results/profile-write-*.md). The row is fixed: the id and created_at are the table's defaults.
      const [{ id, createdAt }] = await frameQuery<{ id: string; createdAt: Date }>(
        `INSERT INTO departments (school_id, campus_id, name) VALUES ($1, $2, $3) RETURNING id, created_at AS "createdAt"`,
        [schoolId, campusId, name],
      );
      return Object.assign(new DepartmentEntity(), { id, schoolId, campusId, name, createdAt });
    } catch (error) {
      if ((error as { code?: string }).code === UNIQUE_VIOLATION) {
        throw new ConflictException(`A department called "${name}" already exists there.`);
      }
      throw error;
    }
  }

  /** Relationship first: the head may delete; otherwise DELETE DEPARTMENT on this department is the fallback. */
  async remove(departmentId: string, jwt: JwtPayload): Promise<string> {
    const department = await this.removable(departmentId, jwt);
    // A concurrent delete that committed after the read above leaves nothing here: the loser reads as not found, unaudited.
    const { affected } = await repo(DepartmentEntity).delete({ id: department.id });
    if (affected !== 1) throw new NotFoundException('Department not found.');
    return department.id;
  }

  /** Same rule as delete, with UPDATE DEPARTMENT as the fallback. One head per department: a new head replaces the old. */
  async addMember(dto: AddDepartmentMemberDto, jwt: JwtPayload): Promise<DepartmentMembership> {
    const department = await this.findVisible(dto.departmentId);
    if (!(await this.isHead(department.id, jwt)) && !currentAbility().can(Action.UPDATE, subject(Resource.DEPARTMENT, { ...department }))) {
      throw new ForbiddenException('Only the head of this department or an administrator can change its members.');
    }
    const staff = await repo(UserEntity).findOneBy({ id: dto.staffId, userType: UserType.STAFF });
    if (!staff) throw new NotFoundException('Staff member not found.');
    if (!staff.isActive) throw new BadRequestException(`${staff.fullName} is deactivated and cannot join a department.`);

    const members = repo(DepartmentMemberEntity);
    // Membership is read, then inserted or updated, and one head replaces another: a department's member changes run
    // one at a time, or concurrent ones insert the same member twice or two heads (unique violations).
    await lockUntilCommit(`department-members:${department.id}`);
    if (dto.asHead) await members.update({ departmentId: department.id, isHead: true }, { isHead: false });
    const existing = await members.findOneBy({ departmentId: department.id, userId: staff.id });
    const isHead = dto.asHead || (existing?.isHead ?? false);
    if (existing) await members.update({ departmentId: department.id, userId: staff.id }, { isHead });
    else await members.insert({ departmentId: department.id, userId: staff.id, schoolId: department.schoolId, isHead });
    return { departmentId: department.id, staffId: staff.id, isHead };
  }

  /** delete_department's confirmation: the department as the caller may see it, refused exactly as the delete would be. */
  async confirmRemoval(departmentId: string, jwt: JwtPayload): Promise<string> {
    const department = await this.removable(departmentId, jwt);
    const [facts] = (await currentManager().query(
      `SELECT campus.name AS "campusName", count(member.user_id)::int AS "memberCount",
              max(staff.full_name) FILTER (WHERE member.is_head) AS "headName"
         FROM departments department
         LEFT JOIN campuses campus ON campus.id = department.campus_id
         LEFT JOIN department_members member ON member.department_id = department.id
         LEFT JOIN users staff ON staff.id = member.user_id
        WHERE department.id = $1
        GROUP BY campus.name`,
      [department.id],
    )) as [{ campusName: string | null; memberCount: number; headName: string | null }];
    return departmentRemovalQuestion({ name: department.name, ...facts });
  }

  private async removable(departmentId: string, jwt: JwtPayload): Promise<DepartmentEntity> {
    const department = await this.findVisible(departmentId);
    if (!(await this.isHead(department.id, jwt)) && !currentAbility().can(Action.DELETE, subject(Resource.DEPARTMENT, { ...department }))) {
      throw new ForbiddenException('Only the head of this department or an administrator can delete it.');
    }
    return department;
  }

  private async findVisible(departmentId: string): Promise<DepartmentEntity> {
    const department = await repo(DepartmentEntity).findOneBy({ id: departmentId });
    if (!department) throw new NotFoundException('Department not found.');
    return department;
  }

  private async isHead(departmentId: string, jwt: JwtPayload): Promise<boolean> {
    return repo(DepartmentMemberEntity).existsBy({ departmentId, userId: jwt.sub, isHead: true });
  }
}
