import { AgentRunEventEntity } from './events/agent-run-event.entity.js';
import { AgentRunEntity } from './runs/agent-run.entity.js';
import { AgentThreadEntity } from './threads/agent-thread.entity.js';

export const AGENT_RUN_ENTITIES = [AgentThreadEntity, AgentRunEntity, AgentRunEventEntity];
