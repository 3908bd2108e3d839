import { SchoolBrandingEntity } from '../../branding/school-branding.entity.js';
import { AttendanceEntity } from '../../classes/attendance.entity.js';
import { ClassEntity } from '../../classes/class.entity.js';
import { StudentEntity } from '../../classes/student.entity.js';
import { MarkEntity } from '../../gradebook/mark.entity.js';
import { TermEntity } from '../../gradebook/term.entity.js';
import { LessonPlanEntity } from '../../lesson-plans/lesson-plan.entity.js';
import { SubjectEntity } from '../../subjects/subject.entity.js';
import { DirectorOfStudiesAppointmentEntity } from '../../teaching/director-of-studies-appointment.entity.js';
import { TeachingAssignmentEntity } from '../../teaching/teaching-assignment.entity.js';

export const SCHOOL_DOMAIN_ENTITIES = [
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
];
