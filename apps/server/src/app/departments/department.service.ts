import { subject } from '@casl/ability';
import { BadRequestException, ConflictException, ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { Action, Resource, UserType } from '@naalya/access';
import { In } from 'typeorm';
import { CampusEntity } from '../campuses/campus.entity.js';
import { CampusService } from '../campuses/campus.service.js';
import { campusFilter, campusReach } from '../core/authorization/campus-reach.js';
import { currentAbility } from '../core/authorization/permission-scope.store.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { currentManager, currentSchoolId, repo } from '../core/tenancy/tenant-context.js';
import { UserEntity } from '../staff/user.entity.js';
import { DepartmentMemberEntity } from './department-member.entity.js';
import { DepartmentEntity } from './department.entity.js';

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
    const query = currentManager()
      .createQueryBuilder(DepartmentEntity, 'department')
      .leftJoin(CampusEntity, 'campus', 'campus.id = department.campus_id')
      .select(['department.id AS id', 'department.name AS name', 'department.campus_id AS "campusId"'])
      .addSelect('campus.name AS "campusName"')
      .orderBy('department.name', 'ASC');
    if (campuses !== 'all') query.where('department.campus_id IN (:...campuses)', { campuses });
    const departments = await query.getRawMany<Omit<DepartmentSummary, 'members'>>();
    if (departments.length === 0) return [];

    const members = await currentManager()
      .createQueryBuilder(DepartmentMemberEntity, 'member')
      .innerJoin(UserEntity, 'user', 'user.id = member.user_id')
      .select(['member.department_id AS "departmentId"', 'member.user_id AS "staffId"'])
      .addSelect(['user.full_name AS "fullName"', 'member.is_head AS "isHead"'])
      .where({ departmentId: In(departments.map((department) => department.id)) })
      .orderBy('user.full_name', 'ASC')
      .getRawMany<{ departmentId: string; staffId: string; fullName: string; isHead: boolean }>();
    return departments.map((department) => ({
      ...department,
      members: members
        .filter((member) => member.departmentId === department.id)
        .map(({ staffId, fullName, isHead }) => ({ staffId, fullName, isHead })),
    }));
  }

  /** The rule is checked on the new instance, so a campus-limited admin can create only on their campus. */
  async create(dto: CreateDepartmentDto, _jwt: JwtPayload): Promise<DepartmentEntity> {
    const campusId = dto.campusId ? (await this.campusService.findVisible(dto.campusId)).id : null;
    if (!currentAbility().can(Action.CREATE, subject(Resource.DEPARTMENT, { campusId }))) {
      throw new ForbiddenException(
        campusId ? 'You cannot create departments on that campus.' : 'You cannot create school-wide departments; pick a campus.',
      );
    }
    try {
      return await repo(DepartmentEntity).save(repo(DepartmentEntity).create({ schoolId: currentSchoolId(), name: dto.name.trim(), campusId }));
    } catch (error) {
      if ((error as { code?: string }).code === UNIQUE_VIOLATION) {
        throw new ConflictException(`A department called "${dto.name.trim()}" already exists there.`);
      }
      throw error;
    }
  }

  /** Relationship first: the head may delete; otherwise DELETE DEPARTMENT on this department is the fallback. */
  async remove(departmentId: string, jwt: JwtPayload): Promise<string> {
    const department = await this.findVisible(departmentId);
    if (!(await this.isHead(department.id, jwt)) && !currentAbility().can(Action.DELETE, subject(Resource.DEPARTMENT, { ...department }))) {
      throw new ForbiddenException('Only the head of this department or an administrator can delete it.');
    }
    await repo(DepartmentEntity).delete({ id: department.id });
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
    if (dto.asHead) await members.update({ departmentId: department.id, isHead: true }, { isHead: false });
    const existing = await members.findOneBy({ departmentId: department.id, userId: staff.id });
    const isHead = dto.asHead || (existing?.isHead ?? false);
    if (existing) await members.update({ departmentId: department.id, userId: staff.id }, { isHead });
    else await members.insert({ departmentId: department.id, userId: staff.id, schoolId: department.schoolId, isHead });
    return { departmentId: department.id, staffId: staff.id, isHead };
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
