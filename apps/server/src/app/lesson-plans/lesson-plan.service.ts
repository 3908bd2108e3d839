import { subject } from '@casl/ability';
import { ConflictException, ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { Action, Resource, UserType } from '@naalya/access';
import { CampusService } from '../campuses/campus.service.js';
import { ClassEntity } from '../classes/class.entity.js';
import { campusFilter, campusReach } from '../core/authorization/campus-reach.js';
import { currentAbility } from '../core/authorization/permission-scope.store.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { currentManager, currentSchoolId, repo } from '../core/tenancy/tenant-context.js';
import { UserEntity } from '../core/identity/user.entity.js';
import { SubjectEntity } from '../subjects/subject.entity.js';
import { TeachingAssignmentEntity } from '../teaching/teaching-assignment.entity.js';
import { lessonPlanApprovalQuestion } from './lesson-plan-approval.confirmation.js';
import { LessonPlanEntity, type LessonPlanStatus } from './lesson-plan.entity.js';

export type CreateLessonPlanDto = { teachingAssignmentId: string; title: string; weekOf: string; objectives: string };
export type ListLessonPlansDto = { status?: LessonPlanStatus };
export type ListPendingLessonPlansDto = { campusId?: string };
export type ApproveLessonPlanDto = { lessonPlanId: string; comment?: string; campusId?: string };

export type LessonPlanSummary = {
  id: string;
  title: string;
  weekOf: string;
  status: LessonPlanStatus;
  subjectName: string;
  className: string;
  campusId: string;
  teacherName: string;
};

const alreadyReviewed = (status: LessonPlanStatus) => new ConflictException(`That lesson plan is already ${status}.`);

@Injectable()
export class LessonPlanService {
  constructor(private readonly campusService: CampusService) {}

  /** Only on the caller's own teaching assignment; someone else's reads as not found. */
  async create(dto: CreateLessonPlanDto, jwt: JwtPayload): Promise<LessonPlanEntity> {
    const assignment = await repo(TeachingAssignmentEntity).findOneBy({ id: dto.teachingAssignmentId, teacherId: jwt.sub });
    if (!assignment) throw new NotFoundException('Teaching assignment not found among yours.');
    const plans = repo(LessonPlanEntity);
    return plans.save(
      plans.create({
        schoolId: currentSchoolId(),
        teachingAssignmentId: assignment.id,
        title: dto.title,
        weekOf: dto.weekOf,
        objectives: dto.objectives,
        status: 'pending',
        createdBy: jwt.sub,
      }),
    );
  }

  /** The caller's own plans. */
  async listMine(dto: ListLessonPlansDto, jwt: JwtPayload): Promise<LessonPlanSummary[]> {
    const query = this.summaries().where('plan.created_by = :me', { me: jwt.sub });
    if (dto.status) query.andWhere('plan.status = :status', { status: dto.status });
    return query.getRawMany<LessonPlanSummary>();
  }

  /** Plans awaiting review on the campuses the caller's LIST LESSON_PLAN rules reach. */
  async listPending(dto: ListPendingLessonPlansDto, _jwt: JwtPayload): Promise<LessonPlanSummary[]> {
    const requested = await this.campusService.narrowTo(dto.campusId);
    const campuses = campusFilter(campusReach(currentAbility(), { action: Action.LIST, resource: Resource.LESSON_PLAN }), requested);
    const query = this.summaries().where(`plan.status = 'pending'`);
    if (campuses !== 'all') query.andWhere('stream.campus_id IN (:...campuses)', { campuses });
    return query.getRawMany<LessonPlanSummary>();
  }

  /** The rule is checked on the plan's campus; nobody approves their own plan. */
  async approve(dto: ApproveLessonPlanDto, jwt: JwtPayload): Promise<LessonPlanEntity> {
    const found = await this.approvable(dto, jwt);
    const plans = repo(LessonPlanEntity);
    // Conditional: a concurrent approval that committed after the read above leaves this one nothing to update (the row
    // lock makes it wait, then re-check the status), so exactly one approval wins and is audited.
    const { affected } = await plans.update(
      { id: found.id, status: 'pending' },
      { status: 'approved', reviewedBy: jwt.sub, reviewedAt: new Date(), reviewComment: dto.comment ?? null },
    );
    if (affected !== 1) throw alreadyReviewed((await plans.findOneByOrFail({ id: found.id })).status);
    return plans.findOneByOrFail({ id: found.id });
  }

  /** approve_lesson_plan's confirmation: the plan as the caller may see it, refused exactly as the approval would be. */
  async confirmApproval(dto: ApproveLessonPlanDto, jwt: JwtPayload): Promise<string> {
    return lessonPlanApprovalQuestion(await this.approvable(dto, jwt), dto.comment);
  }

  private async approvable(dto: ApproveLessonPlanDto, jwt: JwtPayload): Promise<LessonPlanSummary> {
    const campusId = await this.campusService.narrowTo(dto.campusId);
    const found = await this.summaries()
      .addSelect('plan.created_by AS "createdBy"')
      .where('plan.id = :id', { id: dto.lessonPlanId })
      .getRawOne<LessonPlanSummary & { createdBy: string }>();
    if (!found || (campusId && found.campusId !== campusId)) throw new NotFoundException('Lesson plan not found.');
    if (!currentAbility().can(Action.APPROVE, subject(Resource.LESSON_PLAN, { campusId: found.campusId }))) {
      throw new ForbiddenException('You cannot approve lesson plans on that campus.');
    }
    if (found.createdBy === jwt.sub) throw new ForbiddenException('You cannot approve your own lesson plan.');
    // A review is an act of the school's own staff: it names a reviewer who belongs to the school.
    if (jwt.type !== UserType.STAFF) throw new ForbiddenException("Lesson plans are reviewed by the school's own staff.");
    if (found.status !== 'pending') throw alreadyReviewed(found.status);
    return found;
  }

  private summaries() {
    return currentManager()
      .createQueryBuilder(LessonPlanEntity, 'plan')
      .innerJoin(TeachingAssignmentEntity, 'assignment', 'assignment.id = plan.teaching_assignment_id')
      .innerJoin(SubjectEntity, 'subject', 'subject.id = assignment.subject_id')
      .innerJoin(ClassEntity, 'stream', 'stream.id = assignment.class_id')
      .innerJoin(UserEntity, 'teacher', 'teacher.id = plan.created_by')
      .select(['plan.id AS id', 'plan.title AS title', `to_char(plan.week_of, 'YYYY-MM-DD') AS "weekOf"`, 'plan.status AS status'])
      .addSelect(['subject.name AS "subjectName"', 'stream.name AS "className"', 'stream.campus_id AS "campusId"'])
      .addSelect('teacher.full_name AS "teacherName"')
      .orderBy('plan.week_of', 'ASC');
  }
}
