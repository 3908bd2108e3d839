import type { z } from 'zod';
import type { AgentRunModeName, AnyAgentTool } from './define-agent-tool.js';
import type { AgentToolRole } from './agent-tool-role.js';
import type { AgentToolRequest } from './agent-tool-envelope.js';
import { getSchoolBrandingTool, updateSchoolBrandingTool } from './tools/branding.tools.js';
import { listCampusesTool } from './tools/campuses.tools.js';
import { listClassStudentsTool, listMyClassesTool, recordAttendanceTool } from './tools/classes.tools.js';
import { getGradebookTool, getResultsSummaryTool, recordMarksTool } from './tools/gradebook.tools.js';
import {
  approveLessonPlanTool,
  createLessonPlanTool,
  listLessonPlansTool,
  listPendingLessonPlansTool,
} from './tools/lesson-plans.tools.js';
import { listStaffTool } from './tools/staff.tools.js';
import { listSubjectsTool } from './tools/subjects.tools.js';
import {
  addDepartmentMemberTool,
  createDepartmentTool,
  deleteDepartmentTool,
  listDepartmentsTool,
} from './tools/department.tools.js';
import { assignSubjectTeacherTool, listMyTeachingAssignmentsTool } from './tools/teaching.tools.js';
import { getToolCallOutcomeTool } from './tools/tool-calls.tools.js';

/** Every RPC tool. Adding a tool is adding its definition here; the worker needs no change. */
export const RPC_AGENT_TOOLS = [
  listStaffTool,
  listDepartmentsTool,
  createDepartmentTool,
  deleteDepartmentTool,
  addDepartmentMemberTool,
  getSchoolBrandingTool,
  updateSchoolBrandingTool,
  listCampusesTool,
  listSubjectsTool,
  listMyClassesTool,
  listClassStudentsTool,
  recordAttendanceTool,
  listMyTeachingAssignmentsTool,
  assignSubjectTeacherTool,
  getGradebookTool,
  recordMarksTool,
  getResultsSummaryTool,
  createLessonPlanTool,
  listLessonPlansTool,
  listPendingLessonPlansTool,
  approveLessonPlanTool,
  getToolCallOutcomeTool,
] as const satisfies readonly AnyAgentTool[];

type RegisteredTool = (typeof RPC_AGENT_TOOLS)[number];

/** The RabbitMQ pattern of every registered tool. */
export type AgentToolEvent = RegisteredTool['event'];

/** The envelope each event carries, with `args` typed from that tool's schema input. */
export type AgentToolPayload = {
  [E in AgentToolEvent]: AgentToolRequest<z.input<Extract<RegisteredTool, { event: E }>['schema']>>;
};

const offeredIn = (definition: AnyAgentTool, mode: AgentRunModeName) =>
  !definition.modes || definition.modes.includes(mode);

/** The tools offered in a run mode (of RPC_AGENT_TOOLS, or of another list: a test's probes). */
export const toolsForMode = (mode: AgentRunModeName, registry: readonly AnyAgentTool[] = RPC_AGENT_TOOLS): AnyAgentTool[] =>
  registry.filter((definition) => offeredIn(definition, mode));

/** One specialist's RPC tools in a run mode: those tagged with the role, plus the shared ones. */
export const toolsForRole = (
  role: AgentToolRole,
  mode: AgentRunModeName,
  registry: readonly AnyAgentTool[] = RPC_AGENT_TOOLS,
): AnyAgentTool[] => toolsForMode(mode, registry).filter((definition) => definition.shared || definition.roles?.includes(role));
