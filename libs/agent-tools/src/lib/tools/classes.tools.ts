import { z } from 'zod';
import { campusIdArg, defineAgentTool } from '../define-agent-tool.js';
import { resultId, resultName } from '../tool-result.js';

const classId = z.guid().describe('The id of the class (stream), as list_my_classes returns it.');

export const listMyClassesTool = defineAgentTool({
  name: 'list_my_classes',
  event: 'list.my-classes',
  description: 'List the classes the user is class teacher of, with their campus and number of students.',
  schema: z.strictObject({ campusId: campusIdArg }),
  result: z.array(
    z.strictObject({
      id: resultId('class'),
      name: resultName(),
      campusId: resultId('campus'),
      campusName: z.string(),
      studentCount: z.number().int(),
    }),
  ),
  roles: ['class_teacher'],
  campusScoped: true,
});

export const listClassStudentsTool = defineAgentTool({
  name: 'list_class_students',
  event: 'list.class-students',
  description: 'List the students of one class. Only its class teacher or a director of studies may see them.',
  schema: z.strictObject({ classId, campusId: campusIdArg }),
  result: z.array(z.strictObject({ id: resultId('student'), fullName: resultName(), admissionNumber: z.string() })),
  roles: ['class_teacher', 'dos'],
  campusScoped: true,
});

export const recordAttendanceTool = defineAgentTool({
  name: 'record_attendance',
  event: 'record.attendance',
  description:
    "Record the day's register for one of the user's classes: each student present, absent, late or excused. Recording again for a student replaces that day's entry.",
  schema: z.strictObject({
    classId,
    date: z.iso.date().describe('The day of the register, as YYYY-MM-DD.'),
    entries: z
      .array(
        z.strictObject({
          studentId: z.guid().describe('The id of the student, as list_class_students returns it.'),
          status: z.enum(['present', 'absent', 'late', 'excused']),
        }),
      )
      .min(1)
      .max(200),
    campusId: campusIdArg,
  }),
  result: z.strictObject({ classId: resultId('class'), date: z.iso.date(), recorded: z.number().int(), absent: z.number().int() }),
  roles: ['class_teacher'],
  campusScoped: true,
  streamOnSuccess: (args) => ({
    name: 'attendance.recorded',
    label: `Attendance recorded for ${args.entries.length} students`,
    resourceType: 'attendance',
    resourceId: args.classId,
  }),
});
