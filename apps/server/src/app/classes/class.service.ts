import { BadRequestException, Injectable } from '@nestjs/common';
import { In } from 'typeorm';
import { CampusService } from '../campuses/campus.service.js';
import { CampusEntity } from '../campuses/campus.entity.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { currentManager, currentSchoolId, repo } from '../core/tenancy/tenant-context.js';
import { AttendanceEntity, type AttendanceStatus } from './attendance.entity.js';
import { ClassEntity } from './class.entity.js';
import { ClassroomAccessService } from './classroom-access.service.js';
import { StudentEntity } from './student.entity.js';

export type ListMyClassesDto = { campusId?: string };
export type ListClassStudentsDto = { classId: string; campusId?: string };
export type RecordAttendanceDto = {
  classId: string;
  date: string;
  entries: { studentId: string; status: AttendanceStatus }[];
  campusId?: string;
};

export type ClassSummary = { id: string; name: string; campusId: string; campusName: string; studentCount: number };
export type AttendanceRecord = { classId: string; date: string; recorded: number; absent: number };

@Injectable()
export class ClassService {
  constructor(
    private readonly access: ClassroomAccessService,
    private readonly campusService: CampusService,
  ) {}

  /** The caller's own classes: jwt.sub is the class teacher, never an argument. */
  async listMine(dto: ListMyClassesDto, jwt: JwtPayload): Promise<ClassSummary[]> {
    const campusId = await this.campusService.narrowTo(dto.campusId);
    const query = currentManager()
      .createQueryBuilder(ClassEntity, 'stream')
      .innerJoin(CampusEntity, 'campus', 'campus.id = stream.campus_id')
      .leftJoin(StudentEntity, 'student', 'student.class_id = stream.id')
      .select(['stream.id AS id', 'stream.name AS name', 'stream.campus_id AS "campusId"', 'campus.name AS "campusName"'])
      .addSelect('count(student.id)::int AS "studentCount"')
      .where('stream.class_teacher_id = :teacher', { teacher: jwt.sub })
      .groupBy('stream.id, campus.name')
      .orderBy('stream.name', 'ASC');
    if (campusId) query.andWhere('stream.campus_id = :campusId', { campusId });
    return query.getRawMany<ClassSummary>();
  }

  async listStudents(dto: ListClassStudentsDto, jwt: JwtPayload): Promise<{ id: string; fullName: string; admissionNumber: string }[]> {
    const stream = await this.access.assertClassStudentReadAccess(dto.classId, jwt, await this.campusService.narrowTo(dto.campusId));
    return repo(StudentEntity).find({
      select: { id: true, fullName: true, admissionNumber: true },
      where: { classId: stream.id },
      order: { fullName: 'ASC' },
    });
  }

  /** One register per class and day: recording again for a student replaces that day's status. */
  async recordAttendance(dto: RecordAttendanceDto, jwt: JwtPayload): Promise<AttendanceRecord> {
    const stream = await this.access.assertClassTeacher(dto.classId, jwt, await this.campusService.narrowTo(dto.campusId));
    const studentIds = [...new Set(dto.entries.map((entry) => entry.studentId))];
    if (studentIds.length !== dto.entries.length) throw new BadRequestException('Each student may appear once in a register.');
    const enrolled = await repo(StudentEntity).countBy({ id: In(studentIds), classId: stream.id });
    if (enrolled !== studentIds.length) throw new BadRequestException('Some of those students are not in this class.');
    await currentManager()
      .createQueryBuilder()
      .insert()
      .into(AttendanceEntity)
      .values(
        dto.entries.map((entry) => ({
          schoolId: currentSchoolId(),
          studentId: entry.studentId,
          classId: stream.id,
          onDate: dto.date,
          status: entry.status,
          recordedBy: jwt.sub,
        })),
      )
      .orUpdate(['status', 'recorded_by', 'class_id'], ['student_id', 'on_date'])
      .execute();
    return {
      classId: stream.id,
      date: dto.date,
      recorded: dto.entries.length,
      absent: dto.entries.filter((entry) => entry.status === 'absent').length,
    };
  }
}
