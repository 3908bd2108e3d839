import { z } from 'zod';
import { campusIdArg, defineAgentTool } from '../define-agent-tool.js';
import { resultId, resultName } from '../tool-result.js';

const departmentId = z.guid().describe('The id of the department, as list_departments returns it.');

export const listDepartmentsTool = defineAgentTool({
  name: 'list_departments',
  event: 'list.departments',
  description: 'List the departments of the school, or of one campus, with their campus, members and head.',
  schema: z.strictObject({ campusId: campusIdArg }),
  result: z.array(
    z.strictObject({
      id: resultId('department'),
      name: resultName(),
      campusId: resultId('campus').nullable(),
      campusName: z.string().nullable(),
      members: z.array(z.strictObject({ staffId: resultId('staff'), fullName: resultName(), isHead: z.boolean() })),
    }),
  ),
  campusScoped: true,
});

export const createDepartmentTool = defineAgentTool({
  name: 'create_department',
  event: 'create.department',
  description:
    'Create a department on a campus. In a chat pinned to a campus the department is created on that campus.',
  schema: z.strictObject({
    name: z.string().trim().min(2).max(80).describe('The department name, for example "Sciences".'),
    campusId: campusIdArg,
  }),
  result: z.strictObject({
    id: resultId('department'),
    schoolId: resultId('school'),
    campusId: resultId('campus').nullable(),
    name: resultName(),
    createdAt: z.iso.datetime(),
  }),
  campusScoped: true,
  streamOnSuccess: (args) => ({ name: 'department.created', label: `Department "${args.name}" created`, resourceType: 'department' }),
});

export const deleteDepartmentTool = defineAgentTool({
  name: 'delete_department',
  event: 'delete.department',
  description: 'Delete a department and its member list. Only the head of the department or an administrator may do it.',
  schema: z.strictObject({ departmentId }),
  // The id of the department it deleted: nothing else of it is left to show.
  result: resultId('department'),
  confirm: {},
  streamOnSuccess: (args) => ({
    name: 'department.deleted',
    label: 'Department deleted',
    resourceType: 'department',
    resourceId: args.departmentId,
  }),
});

export const addDepartmentMemberTool = defineAgentTool({
  name: 'add_department_member',
  event: 'add.department-member',
  description:
    'Add a staff member to a department, optionally as its head. Only the head of the department or an administrator may do it.',
  schema: z.strictObject({
    departmentId,
    staffId: z.guid().describe('The id of the staff member, as list_staff returns it.'),
    asHead: z.boolean().default(false).describe('Make this person the head of the department.'),
  }),
  result: z.strictObject({ departmentId: resultId('department'), staffId: resultId('staff'), isHead: z.boolean() }),
  streamOnSuccess: (args) => ({
    name: 'department.member-added',
    label: args.asHead ? 'Department head set' : 'Department member added',
    resourceType: 'department',
    resourceId: args.departmentId,
  }),
});
