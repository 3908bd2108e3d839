import { eligibleAgentRoles, type AgentRuntimeContext, type AgentToolRole } from '@naalya/agent-tools';
import type { AgentToolCaller } from '../tools/agent-tool-caller.js';
import { classTeacherSubagent } from './class-teacher.subagent.js';
import { dosSubagent } from './dos.subagent.js';
import { subjectTeacherSubagent } from './subject-teacher.subagent.js';
import type { DelegateSubAgent, SubagentDeps, SubagentFactory } from './subagent.types.js';

// Keyed by the AgentToolRole union: a new role cannot be added to the contract without the type checker
// demanding its factory here.
export const SUBAGENT_FACTORIES: Record<AgentToolRole, SubagentFactory> = {
  class_teacher: classTeacherSubagent,
  subject_teacher: subjectTeacherSubagent,
  dos: dosSubagent,
};

// eligibleAgentRoles (resolved by the server from the caller's hats) decides who registers this turn; the
// model cannot add a specialist. Registration order follows it.
export const selectSubagents = (context: AgentRuntimeContext, toolCaller: AgentToolCaller, deps: SubagentDeps): DelegateSubAgent[] =>
  eligibleAgentRoles(context.capabilities).map((role) => SUBAGENT_FACTORIES[role](context, toolCaller, deps));
