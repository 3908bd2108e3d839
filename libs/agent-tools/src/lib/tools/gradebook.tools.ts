import { z } from 'zod';
import { campusIdArg, defineAgentTool } from '../define-agent-tool.js';

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
  roles: ['dos'],
  campusScoped: true,
});
