import { SPECIALIST_PROFILES } from '@naalya/agent-tools';
import { buildRoleTools } from '../tools/build-agent-tools.js';
import { DOS_SYSTEM_PROMPT } from './dos.prompt.js';
import type { SubagentFactory } from './subagent.types.js';

export const dosSubagent: SubagentFactory = (context, toolCaller, deps) => ({
  name: 'dos',
  description: `${SPECIALIST_PROFILES.dos.persona}, the ${SPECIALIST_PROFILES.dos.title}. ${SPECIALIST_PROFILES.dos.summary}`,
  systemPrompt: DOS_SYSTEM_PROMPT,
  tools: buildRoleTools('dos', toolCaller, context.runMode.mode),
  model: deps.modelFor('dos'),
});
