import { Logger, Module, type DynamicModule } from '@nestjs/common';
import type { WorkerConfig } from './app/config/worker-config.js';
import { WorkerHealth } from './app/health/worker-health.js';
import { CHECKPOINT_STORE_OPTIONS, CheckpointStore, type CheckpointStoreOptions } from './naalya-agent/core/checkpoint/checkpoint-store.js';
import { createChatModel, modelIdentity } from './naalya-agent/core/model/chat-model.factory.js';
import { AGENT_TOOL_CALLER, type AgentToolCaller } from './naalya-agent/core/tools/agent-tool-caller.js';
import { AgentToolService } from './naalya-agent/core/tools/agent-tool.service.js';
import { AgentToolsModule } from './naalya-agent/core/tools/agent-tools.module.js';
import { AgentRunConsumer } from './naalya-agent/runs/agent-run.consumer.js';
import { AgentRunExecutor } from './naalya-agent/runs/agent-run.executor.js';
import { RunLeaseClient } from './naalya-agent/runs/run-lease.client.js';
import { RunUsageClient } from './naalya-agent/runs/run-usage.client.js';
import { RUN_EVENT_PUBLISHER_OPTIONS, RunEventPublisher, type RunEventPublisherOptions } from './naalya-agent/runs/run-event.publisher.js';
import { RunStepAuthenticity } from './naalya-agent/runs/run-step-authenticity.js';
import { ThreadDeletionConsumer } from './naalya-agent/runs/thread-deletion.consumer.js';

// The worker: the runs consumer, its executor, the run events publisher, the checkpoints and the tool hop.
// The config is loaded and validated before Nest starts, so a bad environment never reaches a provider.
@Module({})
export class AppModule {
  static forRoot(config: WorkerConfig): DynamicModule {
    const publisherOptions: RunEventPublisherOptions = { rabbitmqUrl: config.rabbitmqUrl, exchange: config.queues.runEventsExchange };
    const checkpointOptions: CheckpointStoreOptions = {
      databaseUrl: config.checkpoint.databaseUrl,
      retentionDays: config.checkpoint.retentionDays,
      poolSize: config.runs.concurrency + 1,
    };
    return {
      module: AppModule,
      imports: [AgentToolsModule.forRoot(config)],
      controllers: [AgentRunConsumer, ThreadDeletionConsumer],
      providers: [
        { provide: RunStepAuthenticity, useValue: new RunStepAuthenticity(config.runSteps) },
        { provide: RUN_EVENT_PUBLISHER_OPTIONS, useValue: publisherOptions },
        RunEventPublisher,
        { provide: CHECKPOINT_STORE_OPTIONS, useValue: checkpointOptions },
        CheckpointStore,
        {
          provide: WorkerHealth,
          inject: [AgentToolService, CheckpointStore],
          useFactory: (tools: AgentToolService, checkpoints: CheckpointStore) =>
            new WorkerHealth({
              listen: config.health,
              model: { agentModel: config.agentModel, baseUrl: config.agentModelBaseUrl },
              brokerConnected: () => tools.connected,
              checkpointsAnswer: (timeoutMs) => checkpoints.answers(timeoutMs),
            }),
        },
        {
          // The run lease rides the tools client: one connection, and the only exchange the worker's user may write.
          provide: RunLeaseClient,
          inject: [AgentToolService],
          useFactory: (tools: AgentToolService) => {
            // Every claim names the model the run's data would go to: the server holds it against the school's choice.
            const model = modelIdentity({ agentModel: config.agentModel, baseUrl: config.agentModelBaseUrl });
            const leases = new RunLeaseClient(tools, model);
            new Logger(RunLeaseClient.name).log(`Run leases are claimed as worker "${leases.workerId}" for model "${model.model}"${model.selfHosted ? ' (self-hosted)' : ''}`);
            return leases;
          },
        },
        {
          // The usage reports too, by the lease holder.
          provide: RunUsageClient,
          inject: [AgentToolService, RunLeaseClient],
          useFactory: (tools: AgentToolService, leases: RunLeaseClient) => new RunUsageClient(tools, leases.workerId, config.agentModel),
        },
        {
          provide: AgentRunExecutor,
          inject: [AGENT_TOOL_CALLER, CheckpointStore, RunEventPublisher, RunLeaseClient, RunUsageClient],
          useFactory: (toolCaller: AgentToolCaller, checkpoints: CheckpointStore, events: RunEventPublisher, leases: RunLeaseClient, usage: RunUsageClient) =>
            new AgentRunExecutor({
              toolCaller,
              checkpointer: checkpoints.saver,
              events,
              leases,
              usage,
              eventLingerMs: config.runs.eventLingerMs,
              chatModel: (speaker) =>
                createChatModel(
                  {
                    agentModel: config.agentModel,
                    providerKeys: config.providerKeys,
                    baseUrl: config.agentModelBaseUrl,
                    scriptedStreamDelayMs: config.scriptedStreamDelayMs,
                    modelRequests: config.modelRequests,
                  },
                  speaker,
                ),
            }),
        },
      ],
    };
  }
}
