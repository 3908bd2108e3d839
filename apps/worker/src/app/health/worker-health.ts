import { Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { ModelServerProbe } from './model-server.probe.js';
import { WorkerHealthServer } from './worker-health.server.js';

export type WorkerHealthDeps = {
  /** Where to listen; undefined: no endpoint (WORKER_HEALTH_PORT 0 or empty). */
  listen: { host: string; port: number } | undefined;
  model: { agentModel: string; baseUrl?: string };
  brokerConnected: () => boolean;
  checkpointsAnswer: (timeoutMs: number) => Promise<boolean>;
};

const CHECKPOINT_TIMEOUT_MS = 2_000;

/**
 * /health and /ready for the worker, started once the app is up and closed with it. Ready: the broker connection is up,
 * the checkpoint database answers, and the model server AGENT_MODEL names can be reached (probed at most every 15 s).
 */
export class WorkerHealth implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('WorkerHealth');
  private server: WorkerHealthServer | undefined;

  constructor(private readonly deps: WorkerHealthDeps) {}

  async onApplicationBootstrap(): Promise<void> {
    const { listen } = this.deps;
    if (!listen) return;
    const probe = new ModelServerProbe({ ...this.deps.model, logger: this.logger });
    this.server = new WorkerHealthServer({
      ...listen,
      logger: this.logger,
      checks: [
        { name: 'broker', check: async () => ({ ok: this.deps.brokerConnected() }) },
        { name: 'checkpointDatabase', check: async () => ({ ok: await this.deps.checkpointsAnswer(CHECKPOINT_TIMEOUT_MS) }) },
        {
          name: 'model',
          check: async () => {
            const { reachable, probed } = await probe.state();
            return { ok: reachable, model: this.deps.model.agentModel, probed };
          },
        },
      ],
    });
    await this.server.listen();
  }

  async onModuleDestroy(): Promise<void> {
    await this.server?.close();
  }
}
