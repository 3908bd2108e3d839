import type { LoggerService } from '@nestjs/common';

/** Where a provider's API lists its models: a cheap request that any reachable server answers, even with a 401. */
const PROBE_PATHS: Record<string, { defaultBase: string; path: string }> = {
  openai: { defaultBase: 'https://api.openai.com/v1', path: '/models' },
  anthropic: { defaultBase: 'https://api.anthropic.com', path: '/v1/models' },
};

export type ModelServerProbeOptions = {
  agentModel: string;
  baseUrl?: string;
  logger: LoggerService;
  /** How long one probe may take (default 3 s). */
  timeoutMs?: number;
  /** How long an answer is reused (default 15 s): readiness is polled, the model server must not be. */
  cacheMs?: number;
  fetchImpl?: typeof fetch;
  now?: () => number;
};

/** What the readiness check says of the model server; `probed: false` when there is nothing to probe. */
export type ModelServerState = { reachable: boolean; probed: boolean };

/**
 * Whether the model server AGENT_MODEL names can be reached: any HTTP answer is reachable (a 401 or 404 says a server
 * is there; the credentials are the run's business, reported as MODEL_REJECTED_CREDENTIALS), a connection error or no
 * answer in time is not. The scripted model, and a provider with no known listing endpoint, are not probed. A change
 * is logged once, without the URL.
 */
export class ModelServerProbe {
  private cached: { state: ModelServerState; at: number } | undefined;
  private inFlight: Promise<ModelServerState> | undefined;
  private readonly url: string | undefined;

  constructor(private readonly options: ModelServerProbeOptions) {
    const provider = options.agentModel.includes(':') ? options.agentModel.slice(0, options.agentModel.indexOf(':')) : undefined;
    const entry = provider ? PROBE_PATHS[provider] : undefined;
    this.url = entry ? `${(options.baseUrl ?? entry.defaultBase).replace(/\/+$/, '')}${entry.path}` : undefined;
  }

  async state(): Promise<ModelServerState> {
    if (!this.url) return { reachable: true, probed: false };
    const now = (this.options.now ?? Date.now)();
    if (this.cached && now - this.cached.at < (this.options.cacheMs ?? 15_000)) return this.cached.state;
    this.inFlight ??= this.probe(this.url).finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async probe(url: string): Promise<ModelServerState> {
    const fetchImpl = this.options.fetchImpl ?? fetch;
    let reachable: boolean;
    try {
      const response = await fetchImpl(url, { method: 'GET', signal: AbortSignal.timeout(this.options.timeoutMs ?? 3_000) });
      await response.body?.cancel().catch(() => undefined);
      reachable = true;
    } catch {
      reachable = false;
    }
    const before = this.cached?.state.reachable;
    if (before !== reachable && (before !== undefined || !reachable)) {
      if (reachable) this.options.logger.log(`The model server for "${this.options.agentModel}" is reachable again.`);
      else this.options.logger.warn(`The model server for "${this.options.agentModel}" cannot be reached; runs will end with MODEL_UNREACHABLE until it is back.`);
    }
    const state = { reachable, probed: true };
    this.cached = { state, at: (this.options.now ?? Date.now)() };
    return state;
  }
}
