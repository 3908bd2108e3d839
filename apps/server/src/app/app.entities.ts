import { SchoolBrandingEntity } from './branding/school-branding.entity.js';
import { CampusEntity } from './campuses/campus.entity.js';
import { AttendanceEntity } from './classes/attendance.entity.js';
import { ClassEntity } from './classes/class.entity.js';
import { StudentEntity } from './classes/student.entity.js';
import { AuditLogEntity } from './core/audit/audit-log.entity.js';
import { IDENTITY_ENTITIES } from './core/identity/identity.entities.js';
import { DepartmentMemberEntity } from './departments/department-member.entity.js';
import { DepartmentEntity } from './departments/department.entity.js';
import { MarkEntity } from './gradebook/mark.entity.js';
import { TermEntity } from './gradebook/term.entity.js';
import { LessonPlanEntity } from './lesson-plans/lesson-plan.entity.js';
import { AGENT_RUN_ENTITIES } from './naalya-ai/agent-runs.entities.js';
import { ToolCallLedgerEntity } from './naalya-ai/tools/tool-call-ledger.entity.js';
import { SubjectEntity } from './subjects/subject.entity.js';
import { DirectorOfStudiesAppointmentEntity } from './teaching/director-of-studies-appointment.entity.js';
import { TeachingAssignmentEntity } from './teaching/teaching-assignment.entity.js';

/**
 * Every entity the app's DataSource maps, from every floor. Listed here, above the floors, because core's
 * database plumbing must not know the domain: the app hands this list to CoreModule.forRoot.
 */
export const APP_ENTITIES = [
  ...IDENTITY_ENTITIES,
  AuditLogEntity,
  CampusEntity,
  DepartmentEntity,
  DepartmentMemberEntity,
  SchoolBrandingEntity,
  SubjectEntity,
  ClassEntity,
  StudentEntity,
  TeachingAssignmentEntity,
  TermEntity,
  MarkEntity,
  AttendanceEntity,
  LessonPlanEntity,
  DirectorOfStudiesAppointmentEntity,
  ToolCallLedgerEntity,
  ...AGENT_RUN_ENTITIES,
];
