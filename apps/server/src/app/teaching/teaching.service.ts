import { subject } from '@casl/ability';
import { BadRequestException, ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { Action, Resource, UserType } from '@naalya/access';
import { CampusService } from '../campuses/campus.service.js';
import { ClassEntity } from '../classes/class.entity.js';
import { ClassroomAccessService } from '../classes/classroom-access.service.js';
import { currentAbility } from '../core/authorization/permission-scope.store.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { currentManager, currentSchoolId, repo } from '../core/tenancy/tenant-context.js';
import { UserEntity } from '../core/identity/user.entity.js';
import { SubjectEntity } from '../subjects/subject.entity.js';
import { subjectTeacherAssignmentQuestion } from './subject-teacher-assignment.confirmation.js';
import { TeachingAssignmentEntity } from './teaching-assignment.entity.js';
import { lockUntilCommit } from '../core/database/advisory-lock.js';

export type ListMyTeachingAssignmentsDto = { campusId?: string };
export type AssignSubjectTeacherDto = { classId: string; subjectId: string; staffId: string; campusId?: string };

export type TeachingAssignmentSummary = {
  id: string;
  subjectId: string;
  subjectName: string;
  classId: string;
  className: string;
  campusId: string;
};

@Injectable()
export class TeachingService {
  constructor(
    private readonly access: ClassroomAccessService,
    private readonly campusService: CampusService,
  ) {}

  /** What the caller teaches: jwt.sub is the teacher. */
  async listMine(dto: ListMyTeachingAssignmentsDto, jwt: JwtPayload): Promise<TeachingAssignmentSummary[]> {
    const campusId = await this.campusService.narrowTo(dto.campusId);
    const query = currentManager()
      .createQueryBuilder(TeachingAssignmentEntity, 'assignment')
      .innerJoin(SubjectEntity, 'subject', 'subject.id = assignment.subject_id')
      .innerJoin(ClassEntity, 'stream', 'stream.id = assignment.class_id')
      .select(['assignment.id AS id', 'subject.id AS "subjectId"', 'subject.name AS "subjectName"'])
      .addSelect(['stream.id AS "classId"', 'stream.name AS "className"', 'stream.campus_id AS "campusId"'])
      .where('assignment.teacher_id = :teacher', { teacher: jwt.sub })
      .orderBy('stream.name', 'ASC')
      .addOrderBy('subject.name', 'ASC');
    if (campusId) query.andWhere('stream.campus_id = :campusId', { campusId });
    return query.getRawMany<TeachingAssignmentSummary>();
  }

  /** One teacher per subject per stream: assigning replaces whoever taught it. Checked on the class's campus. */
  async assign(dto: AssignSubjectTeacherDto, _jwt: JwtPayload): Promise<TeachingAssignmentEntity> {
    const { stream, subjectRow, teacher } = await this.assignable(dto);
    const assignments = repo(TeachingAssignmentEntity);
    // One row per class and subject, inserted the first time: concurrent assignments would both insert.
    await lockUntilCommit(`teaching-assignment:${stream.id}:${subjectRow.id}`);
    const existing = await assignments.findOneBy({ classId: stream.id, subjectId: subjectRow.id });
    if (existing) {
      existing.teacherId = teacher.id;
      return assignments.save(existing);
    }
    return assignments.save(
      assignments.create({ schoolId: currentSchoolId(), classId: stream.id, subjectId: subjectRow.id, teacherId: teacher.id }),
    );
  }

  /** assign_subject_teacher's confirmation: who teaches it now and who will, refused exactly as the assignment would be. */
  async confirmAssignment(dto: AssignSubjectTeacherDto, _jwt: JwtPayload): Promise<string> {
    const { stream, subjectRow, teacher } = await this.assignable(dto);
    const current = await currentManager()
      .createQueryBuilder(TeachingAssignmentEntity, 'assignment')
      .innerJoin(UserEntity, 'teacher', 'teacher.id = assignment.teacher_id')
      .select(['teacher.id AS id', 'teacher.full_name AS "fullName"'])
      .where('assignment.class_id = :classId AND assignment.subject_id = :subjectId', { classId: stream.id, subjectId: subjectRow.id })
      .getRawOne<{ id: string; fullName: string }>();
    return subjectTeacherAssignmentQuestion({
      teacherName: teacher.fullName,
      subjectName: subjectRow.name,
      className: stream.name,
      currentTeacherName: current?.fullName ?? null,
      alreadyTeaches: current?.id === teacher.id,
    });
  }

  private async assignable(dto: AssignSubjectTeacherDto): Promise<{ stream: ClassEntity; subjectRow: SubjectEntity; teacher: UserEntity }> {
    const stream = await this.access.findClass(dto.classId, await this.campusService.narrowTo(dto.campusId));
    if (!currentAbility().can(Action.ASSIGN, subject(Resource.TEACHING_ASSIGNMENT, { campusId: stream.campusId }))) {
      throw new ForbiddenException('You cannot assign teachers on that campus.');
    }
    const subjectRow = await repo(SubjectEntity).findOneBy({ id: dto.subjectId });
    if (!subjectRow) throw new NotFoundException('Subject not found.');
    const teacher = await repo(UserEntity).findOneBy({ id: dto.staffId, userType: UserType.STAFF });
    if (!teacher) throw new NotFoundException('Staff member not found.');
    if (!teacher.isActive) throw new BadRequestException(`${teacher.fullName} is deactivated and cannot be assigned.`);
    return { stream, subjectRow, teacher };
  }

  /** Asserts the caller teaches this subject (or, without one, some subject) in this class; returns those assignments. */
  async assertTeaches(classId: string, subjectId: string | undefined, jwt: JwtPayload): Promise<TeachingAssignmentEntity[]> {
    const assignments = await repo(TeachingAssignmentEntity).findBy(
      subjectId ? { classId, subjectId, teacherId: jwt.sub } : { classId, teacherId: jwt.sub },
    );
    if (assignments.length === 0) {
      throw new ForbiddenException(subjectId ? 'You do not teach that subject in this class.' : 'You do not teach this class.');
    }
    return assignments;
  }
}
