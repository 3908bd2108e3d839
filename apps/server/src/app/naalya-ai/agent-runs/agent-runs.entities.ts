import { AgentRunEventEntity } from './agent-run-event.entity.js';
import { AgentRunEntity } from './agent-run.entity.js';
import { AgentThreadEntity } from './agent-thread.entity.js';

export const AGENT_RUN_ENTITIES = [AgentThreadEntity, AgentRunEntity, AgentRunEventEntity];
