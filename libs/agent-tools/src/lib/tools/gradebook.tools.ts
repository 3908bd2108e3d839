import { z } from 'zod';
import { campusIdArg, defineAgentTool } from '../define-agent-tool.js';
import { resultId, resultName } from '../tool-result.js';

const classId = z.guid().describe('The id of the class (stream), as list_my_teaching_assignments returns it.');
const termId = z.guid().optional().describe('The term; leave it out for the current term.');

export const getGradebookTool = defineAgentTool({
  name: 'get_gradebook',
  event: 'get.gradebook',
  description: "Show the marks of a class for the subjects the user teaches there (never other teachers' subjects).",
  schema: z.strictObject({
    classId,
    subjectId: z.guid().optional().describe('One subject the user teaches in the class; leave it out for all of them.'),
    termId,
    campusId: campusIdArg,
  }),
  result: z.strictObject({
    classId: resultId('class'),
    className: resultName(),
    term: z.strictObject({ id: resultId('term'), name: resultName() }),
    subjects: z.array(
      z.strictObject({
        subjectId: resultId('subject'),
        subjectName: resultName(),
        // null: a student of the class with no mark yet in this subject.
        marks: z.array(z.strictObject({ studentId: resultId('student'), fullName: resultName(), score: z.number().nullable() })),
      }),
    ),
  }),
  // Students by subjects: the shape is an object, but a teacher reads it as a mark sheet, not a record.
  view: 'grid',
  roles: ['subject_teacher'],
  campusScoped: true,
});

export const recordMarksTool = defineAgentTool({
  name: 'record_marks',
  event: 'record.marks',
  description: 'Record marks out of 100 for students of a class in a subject the user teaches. Recording again replaces a mark.',
  schema: z.strictObject({
    classId,
    subjectId: z.guid().describe('The subject, one the user teaches in this class.'),
    termId,
    marks: z
      .array(
        z.strictObject({
          studentId: z.guid().describe('The id of the student.'),
          score: z.number().min(0).max(100).describe('The mark out of 100.'),
        }),
      )
      .min(1)
      .max(200),
    campusId: campusIdArg,
  }),
  result: z.strictObject({
    teachingAssignmentId: resultId('teaching_assignment'),
    classId: resultId('class'),
    subjectId: resultId('subject'),
    termId: resultId('term'),
    recorded: z.number().int(),
  }),
  roles: ['subject_teacher'],
  campusScoped: true,
  streamOnSuccess: (args) => ({
    name: 'marks.recorded',
    label: `${args.marks.length} marks recorded`,
    resourceType: 'marks',
  }),
});

export const getResultsSummaryTool = defineAgentTool({
  name: 'get_results_summary',
  event: 'get.results-summary',
  description: 'Summarise results: the average mark per class and subject for a term.',
  schema: z.strictObject({ termId, campusId: campusIdArg }),
  result: z.strictObject({
    term: z.string(),
    rows: z.array(
      z.strictObject({
        classId: resultId('class'),
        className: resultName(),
        campusName: z.string(),
        subjectName: resultName(),
        average: z.number(),
        marks: z.number().int(),
      }),
    ),
  }),
  // Classes by subjects, one average in each cell: read across, as a grid.
  view: 'grid',
  roles: ['dos'],
  campusScoped: true,
});
