import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { ActionAuditAction, AuditResourceType } from '@naalya/access';
import { listClassStudentsTool, listMyClassesTool, recordAttendanceTool, type AgentToolPayload } from '@naalya/agent-tools';
import { ClassService, type AttendanceRecord } from '../../../classes/class.service.js';
import { ClassroomAccessService } from '../../../classes/classroom-access.service.js';
import { ToolExecutor } from '../tool-executor.js';

export type ListMyClassesPayload = AgentToolPayload[typeof listMyClassesTool.event];
export type ListClassStudentsPayload = AgentToolPayload[typeof listClassStudentsTool.event];
export type RecordAttendancePayload = AgentToolPayload[typeof recordAttendanceTool.event];

/** A director of studies reaches more than their own class, so the default note would understate it. */
export const CLASS_STUDENTS_SCOPE_NOTE = 'This covers one class you are the class teacher of, or one on a campus where you direct studies.';

/** Class teaching is a relationship: the services resolve the caller from jwt.sub and assert it. */
@Controller()
export class ClassesToolsController {
  constructor(
    private readonly executor: ToolExecutor,
    private readonly classService: ClassService,
    private readonly classroomAccess: ClassroomAccessService,
  ) {}

  @MessagePattern(listMyClassesTool.event)
  listMyClasses(@Payload() payload: ListMyClassesPayload) {
    return this.executor.execute(payload, listMyClassesTool.schema, { auth: 'relationship' }, (dto, jwt) => this.classService.listMine(dto, jwt));
  }

  /** The relationship is asserted before anything is loaded: class teacher, or a director of studies over the campus. */
  @MessagePattern(listClassStudentsTool.event)
  listClassStudents(@Payload() payload: ListClassStudentsPayload) {
    return this.executor.execute(payload, listClassStudentsTool.schema, { auth: 'relationship', scopeNote: CLASS_STUDENTS_SCOPE_NOTE }, async (dto, jwt) => {
      await this.classroomAccess.assertClassStudentReadAccess(dto.classId, jwt, dto.campusId);
      return this.classService.listStudents(dto, jwt);
    });
  }

  @MessagePattern(recordAttendanceTool.event)
  recordAttendance(@Payload() payload: RecordAttendancePayload) {
    return this.executor.execute(
      payload,
      recordAttendanceTool.schema,
      {
        auth: 'relationship',
        audit: {
          action: ActionAuditAction.RECORD,
          resourceType: AuditResourceType.ATTENDANCE,
          resourceId: (result: AttendanceRecord) => result.classId,
        },
      },
      (dto, jwt) => this.classService.recordAttendance(dto, jwt),
    );
  }
}
