import { SPECIALIST_PROFILES } from '@naalya/agent-tools';
import { buildRoleTools } from '../tools/build-agent-tools.js';
import { SUBJECT_TEACHER_SYSTEM_PROMPT } from './subject-teacher.prompt.js';
import type { SubagentFactory } from './subagent.types.js';

export const subjectTeacherSubagent: SubagentFactory = (context, toolCaller, deps) => ({
  name: 'subject_teacher',
  description: `${SPECIALIST_PROFILES.subject_teacher.persona}, the ${SPECIALIST_PROFILES.subject_teacher.title}. ${SPECIALIST_PROFILES.subject_teacher.summary}`,
  systemPrompt: SUBJECT_TEACHER_SYSTEM_PROMPT,
  tools: buildRoleTools('subject_teacher', toolCaller, context.runMode.mode),
  model: deps.modelFor('subject_teacher'),
});
