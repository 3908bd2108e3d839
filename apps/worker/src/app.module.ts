import { Module, type DynamicModule } from '@nestjs/common';
import { WORKER_CONFIG, type WorkerConfig } from './app/config/worker-config.js';
import { AGENT_TOOL_CALLER } from './naalya-agent/core/tools/agent-tool-caller.js';
import {
  AGENT_TOOL_SERVICE_OPTIONS,
  AgentToolService,
  type AgentToolServiceOptions,
} from './naalya-agent/core/tools/agent-tool.service.js';

// The config is loaded and validated before Nest starts, so a bad environment never reaches a provider.
@Module({})
export class AppModule {
  static forRoot(config: WorkerConfig): DynamicModule {
    const toolServiceOptions: AgentToolServiceOptions = {
      rabbitmqUrl: config.rabbitmqUrl,
      toolsQueue: config.queues.toolsQueue,
      timeoutMs: config.toolCallTimeoutMs,
    };
    return {
      module: AppModule,
      providers: [
        { provide: WORKER_CONFIG, useValue: config },
        { provide: AGENT_TOOL_SERVICE_OPTIONS, useValue: toolServiceOptions },
        AgentToolService,
        { provide: AGENT_TOOL_CALLER, useExisting: AgentToolService },
      ],
      exports: [WORKER_CONFIG, AGENT_TOOL_CALLER],
    };
  }
}
