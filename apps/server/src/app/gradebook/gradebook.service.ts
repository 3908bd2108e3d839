import { BadRequestException, Injectable, NotFoundException } from '@nestjs/common';
import { Action, Resource } from '@naalya/access';
import { In } from 'typeorm';
import { CampusEntity } from '../campuses/campus.entity.js';
import { CampusService } from '../campuses/campus.service.js';
import { ClassEntity } from '../classes/class.entity.js';
import { ClassroomAccessService } from '../classes/classroom-access.service.js';
import { StudentEntity } from '../classes/student.entity.js';
import { campusFilter, campusReach } from '../core/authorization/campus-reach.js';
import { currentAbility } from '../core/authorization/permission-scope.store.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { currentManager, currentSchoolId, repo } from '../core/tenancy/tenant-context.js';
import { SubjectEntity } from '../subjects/subject.entity.js';
import { TeachingService } from '../teaching/teaching.service.js';
import { MarkEntity } from './mark.entity.js';
import { TermEntity } from './term.entity.js';

export type GetGradebookDto = { classId: string; subjectId?: string; termId?: string; campusId?: string };
export type RecordMarksDto = {
  classId: string;
  subjectId: string;
  termId?: string;
  marks: { studentId: string; score: number }[];
  campusId?: string;
};
export type ResultsSummaryDto = { termId?: string; campusId?: string };

export type Gradebook = {
  classId: string;
  className: string;
  term: { id: string; name: string };
  subjects: { subjectId: string; subjectName: string; marks: { studentId: string; fullName: string; score: number | null }[] }[];
};

export type MarksRecorded = { teachingAssignmentId: string; classId: string; subjectId: string; termId: string; recorded: number };

export type ResultsSummaryRow = {
  classId: string;
  className: string;
  campusName: string;
  subjectName: string;
  average: number;
  marks: number;
};

@Injectable()
export class GradebookService {
  constructor(
    private readonly access: ClassroomAccessService,
    private readonly campusService: CampusService,
    private readonly teaching: TeachingService,
  ) {}

  /** Only the subjects the caller teaches in this class: a subject teacher never sees the whole class's marks. */
  async getGradebook(dto: GetGradebookDto, jwt: JwtPayload): Promise<Gradebook> {
    const stream = await this.access.findClass(dto.classId, await this.campusService.narrowTo(dto.campusId));
    const assignments = await this.teaching.assertTeaches(stream.id, dto.subjectId, jwt);
    const term = await this.term(dto.termId);
    const subjectIds = assignments.map((assignment) => assignment.subjectId);
    const [subjects, students, marks] = [
      await repo(SubjectEntity).find({ where: { id: In(subjectIds) }, order: { name: 'ASC' } }),
      await repo(StudentEntity).find({ where: { classId: stream.id }, order: { fullName: 'ASC' } }),
      await repo(MarkEntity).findBy({ subjectId: In(subjectIds), termId: term.id, studentId: In(await this.studentIds(stream.id)) }),
    ];
    return {
      classId: stream.id,
      className: stream.name,
      term: { id: term.id, name: term.name },
      subjects: subjects.map((subjectRow) => ({
        subjectId: subjectRow.id,
        subjectName: subjectRow.name,
        marks: students.map((student) => {
          const mark = marks.find((candidate) => candidate.studentId === student.id && candidate.subjectId === subjectRow.id);
          return { studentId: student.id, fullName: student.fullName, score: mark ? Number(mark.score) : null };
        }),
      })),
    };
  }

  /** Several marks, one call: the whole set is written in the call's one transaction, or none of it. */
  async recordMarks(dto: RecordMarksDto, jwt: JwtPayload): Promise<MarksRecorded> {
    const stream = await this.access.findClass(dto.classId, await this.campusService.narrowTo(dto.campusId));
    const [assignment] = await this.teaching.assertTeaches(stream.id, dto.subjectId, jwt);
    const term = await this.term(dto.termId);
    const studentIds = [...new Set(dto.marks.map((mark) => mark.studentId))];
    if (studentIds.length !== dto.marks.length) throw new BadRequestException('Each student may have one mark per call.');
    const enrolled = await repo(StudentEntity).countBy({ id: In(studentIds), classId: stream.id });
    if (enrolled !== studentIds.length) throw new BadRequestException('Some of those students are not in this class.');
    await currentManager()
      .createQueryBuilder()
      .insert()
      .into(MarkEntity)
      .values(
        dto.marks.map((mark) => ({
          schoolId: currentSchoolId(),
          studentId: mark.studentId,
          subjectId: assignment.subjectId,
          termId: term.id,
          score: mark.score.toFixed(2),
          recordedBy: jwt.sub,
        })),
      )
      .orUpdate(['score', 'recorded_by', 'recorded_at'], ['student_id', 'subject_id', 'term_id'])
      .execute();
    return { teachingAssignmentId: assignment.id, classId: stream.id, subjectId: assignment.subjectId, termId: term.id, recorded: dto.marks.length };
  }

  /** Averages per stream and subject, narrowed to the campuses the caller's READ RESULT rules reach. */
  async resultsSummary(dto: ResultsSummaryDto, _jwt: JwtPayload): Promise<{ term: string; rows: ResultsSummaryRow[] }> {
    const requested = await this.campusService.narrowTo(dto.campusId);
    const campuses = campusFilter(campusReach(currentAbility(), { action: Action.READ, resource: Resource.RESULT }), requested);
    const term = await this.term(dto.termId);
    const query = currentManager()
      .createQueryBuilder(MarkEntity, 'mark')
      .innerJoin(StudentEntity, 'student', 'student.id = mark.student_id')
      .innerJoin(ClassEntity, 'stream', 'stream.id = student.class_id')
      .innerJoin(CampusEntity, 'campus', 'campus.id = stream.campus_id')
      .innerJoin(SubjectEntity, 'subject', 'subject.id = mark.subject_id')
      .select(['stream.id AS "classId"', 'stream.name AS "className"', 'campus.name AS "campusName"', 'subject.name AS "subjectName"'])
      .addSelect(['round(avg(mark.score), 1)::float AS average', 'count(*)::int AS marks'])
      .where('mark.term_id = :termId', { termId: term.id })
      .groupBy('stream.id, campus.name, subject.name')
      .orderBy('stream.name', 'ASC')
      .addOrderBy('subject.name', 'ASC');
    if (campuses !== 'all') query.andWhere('stream.campus_id IN (:...campuses)', { campuses });
    return { term: term.name, rows: await query.getRawMany<ResultsSummaryRow>() };
  }

  private async term(termId: string | undefined): Promise<TermEntity> {
    const term = await repo(TermEntity).findOneBy(termId ? { id: termId } : { isCurrent: true });
    if (!term) throw new NotFoundException(termId ? 'Term not found.' : 'There is no current term.');
    return term;
  }

  private async studentIds(classId: string): Promise<string[]> {
    return (await repo(StudentEntity).find({ select: { id: true }, where: { classId } })).map((student) => student.id);
  }
}
