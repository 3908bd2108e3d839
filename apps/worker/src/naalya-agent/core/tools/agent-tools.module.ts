import { Module, type DynamicModule } from '@nestjs/common';
import { WORKER_CONFIG, type WorkerConfig } from '../../../app/config/worker-config.js';
import { AGENT_TOOL_CALLER } from './agent-tool-caller.js';
import { AGENT_TOOL_SERVICE_OPTIONS, AgentToolService, type AgentToolServiceOptions } from './agent-tool.service.js';

// The tool hop alone (AgentToolService behind the AgentToolCaller port): what the demo's call runner
// needs, without the runs consumer, the checkpoint database or the run events exchange.
@Module({})
export class AgentToolsModule {
  static forRoot(config: WorkerConfig): DynamicModule {
    const toolServiceOptions: AgentToolServiceOptions = {
      rabbitmqUrl: config.rabbitmqUrl,
      toolsQueue: config.queues.toolsQueue,
      timeoutMs: config.toolCallTimeoutMs,
    };
    return {
      module: AgentToolsModule,
      providers: [
        { provide: WORKER_CONFIG, useValue: config },
        { provide: AGENT_TOOL_SERVICE_OPTIONS, useValue: toolServiceOptions },
        AgentToolService,
        { provide: AGENT_TOOL_CALLER, useExisting: AgentToolService },
      ],
      // AgentToolService itself too: the run lease is another request on the same tools client.
      exports: [WORKER_CONFIG, AGENT_TOOL_CALLER, AgentToolService],
    };
  }
}
