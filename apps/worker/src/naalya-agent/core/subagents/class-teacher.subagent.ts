import { SPECIALIST_PROFILES } from '@naalya/agent-tools';
import { buildRoleTools } from '../tools/build-agent-tools.js';
import { CLASS_TEACHER_SYSTEM_PROMPT } from './class-teacher.prompt.js';
import type { SubagentFactory } from './subagent.types.js';

export const classTeacherSubagent: SubagentFactory = (context, toolCaller, deps) => ({
  name: 'class_teacher',
  description: `${SPECIALIST_PROFILES.class_teacher.persona}, the ${SPECIALIST_PROFILES.class_teacher.title}. ${SPECIALIST_PROFILES.class_teacher.summary}`,
  systemPrompt: CLASS_TEACHER_SYSTEM_PROMPT,
  tools: buildRoleTools('class_teacher', toolCaller, context.runMode.mode),
  model: deps.modelFor('class_teacher'),
});
