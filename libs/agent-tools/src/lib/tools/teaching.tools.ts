import { z } from 'zod';
import { campusIdArg, defineAgentTool } from '../define-agent-tool.js';
import { resultId, resultName } from '../tool-result.js';

export const listMyTeachingAssignmentsTool = defineAgentTool({
  name: 'list_my_teaching_assignments',
  event: 'list.teaching-assignments',
  description: 'List the subjects the user teaches and to which classes.',
  schema: z.strictObject({ campusId: campusIdArg }),
  result: z.array(
    z.strictObject({
      id: resultId('teaching_assignment'),
      subjectId: resultId('subject'),
      subjectName: resultName(),
      classId: resultId('class'),
      className: resultName(),
      campusId: resultId('campus'),
    }),
  ),
  roles: ['subject_teacher'],
  campusScoped: true,
});

export const assignSubjectTeacherTool = defineAgentTool({
  name: 'assign_subject_teacher',
  event: 'assign.teaching-assignment',
  description: 'Make a member of staff the teacher of a subject in a class, replacing whoever taught it there.',
  schema: z.strictObject({
    classId: z.guid().describe('The id of the class (stream).'),
    subjectId: z.guid().describe('The id of the subject, as list_subjects returns it.'),
    staffId: z.guid().describe('The id of the teacher, as list_staff returns it.'),
    campusId: campusIdArg,
  }),
  result: z.strictObject({
    id: resultId('teaching_assignment'),
    schoolId: resultId('school'),
    teacherId: resultId('staff'),
    subjectId: resultId('subject'),
    classId: resultId('class'),
  }),
  roles: ['dos'],
  campusScoped: true,
  confirm: { editable: ['staffId'] },
  streamOnSuccess: (args) => ({
    name: 'teaching-assignment.assigned',
    label: 'Subject teacher assigned',
    resourceType: 'teaching_assignment',
    resourceId: args.classId,
  }),
});
