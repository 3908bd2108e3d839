import { Inject, Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { ERROR_SENTENCES } from '@naalya/agent-tools';
import { DataSource } from 'typeorm';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';

const WINDOW_MS = 60_000;

/** How often each replica deletes past minutes' counters (the delete is idempotent, so replicas need no coordination). */
const PRUNE_INTERVAL_MS = WINDOW_MS;

/** Memory store only: past this many keys, the past minutes' entries are dropped before a new one is added. */
const MEMORY_PRUNE_THRESHOLD = 10_000;

export const SCHOOL_QUOTA_ERROR = ERROR_SENTENCES.SCHOOL_QUOTA_EXCEEDED;
export const USER_QUOTA_ERROR = ERROR_SENTENCES.USER_QUOTA_EXCEEDED;

export type QuotaRefusal = 'SCHOOL_QUOTA_EXCEEDED' | 'USER_QUOTA_EXCEEDED';

/**
 * The minute a call counts in: fixed windows on the epoch, so every replica puts a call in the same one as long as
 * their clocks agree (the dispatch tokens' expiry already assumes synchronised clocks; a second of skew moves a few
 * calls across a boundary, which a flood brake tolerates).
 */
export const quotaWindow = (now: number): number => Math.floor(now / WINDOW_MS);

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * Tool calls per minute, per school and per user (fixed one-minute windows), counted only for calls whose dispatch
 * token is valid, so a forger cannot spend a school's allowance. A call over either limit is refused and counts
 * nowhere.
 *
 * TOOL_CALL_QUOTA_STORE=postgres (the default) counts in PostgreSQL, so every server replica spends one allowance: one
 * autocommit statement per call, before the call's unit of work, that takes both counters or neither
 * (take_tool_call_quota, migration 1764662400009). Its row locks last that statement only; a counter row updated inside
 * the call's transaction would queue every concurrent call of a school behind the one holding it until its commit.
 *
 * TOOL_CALL_QUOTA_STORE=memory counts in this process only: with R replicas a school gets R times its limit, and a
 * restart forgets the minute. For a single server and as the bench's baseline.
 */
@Injectable()
export class ToolCallQuota implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ToolCallQuota.name);
  private readonly memory = new Map<string, { window: number; count: number }>();
  private pruneTimer: NodeJS.Timeout | undefined;

  constructor(
    @Inject(SERVER_CONFIG) private readonly config: Pick<ServerConfig, 'TOOL_CALLS_PER_MINUTE_PER_SCHOOL' | 'TOOL_CALLS_PER_MINUTE_PER_USER' | 'TOOL_CALL_QUOTA_STORE'>,
    private readonly dataSource: DataSource,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.TOOL_CALL_QUOTA_STORE !== 'postgres') return;
    this.pruneTimer = setInterval(
      () => void this.prune().catch((error: unknown) => this.logger.warn(`Pruning past tool-call quota windows failed: ${describe(error)}`)),
      PRUNE_INTERVAL_MS,
    );
    this.pruneTimer.unref();
  }

  beforeApplicationShutdown(): void {
    clearInterval(this.pruneTimer);
    this.pruneTimer = undefined;
  }

  /** Takes one call from both allowances, or none and says which is spent. */
  async take(schoolKey: string, userId: string, now: number = Date.now()): Promise<QuotaRefusal | null> {
    const window = quotaWindow(now);
    if (this.config.TOOL_CALL_QUOTA_STORE === 'memory') return this.takeInMemory(`school:${schoolKey}`, `user:${userId}`, window);
    const [row] = (await this.dataSource.query(`SELECT take_tool_call_quota($1, $2, $3, $4, $5) AS refusal`, [
      `school:${schoolKey}`,
      `user:${userId}`,
      window,
      this.config.TOOL_CALLS_PER_MINUTE_PER_SCHOOL,
      this.config.TOOL_CALLS_PER_MINUTE_PER_USER,
    ])) as { refusal: QuotaRefusal | null }[];
    return row.refusal;
  }

  /** Deletes the counters of minutes before the previous one (safe on every replica at once); resolves to how many went. */
  async prune(now: number = Date.now()): Promise<number> {
    if (this.config.TOOL_CALL_QUOTA_STORE === 'memory') {
      this.pruneMemory(quotaWindow(now));
      return 0;
    }
    const [row] = (await this.dataSource.query(`SELECT prune_tool_call_quota($1) AS deleted`, [quotaWindow(now) - 1])) as { deleted: number }[];
    return row.deleted;
  }

  private takeInMemory(schoolKey: string, userKey: string, window: number): QuotaRefusal | null {
    const school = this.memoryCounter(schoolKey, window);
    const user = this.memoryCounter(userKey, window);
    if (school.count >= this.config.TOOL_CALLS_PER_MINUTE_PER_SCHOOL) return 'SCHOOL_QUOTA_EXCEEDED';
    if (user.count >= this.config.TOOL_CALLS_PER_MINUTE_PER_USER) return 'USER_QUOTA_EXCEEDED';
    school.count += 1;
    user.count += 1;
    return null;
  }

  private memoryCounter(key: string, window: number): { window: number; count: number } {
    let counter = this.memory.get(key);
    if (!counter || counter.window !== window) {
      if (this.memory.size > MEMORY_PRUNE_THRESHOLD) this.pruneMemory(window);
      counter = { window, count: 0 };
      this.memory.set(key, counter);
    }
    return counter;
  }

  private pruneMemory(window: number): void {
    for (const [key, counter] of this.memory) if (counter.window < window) this.memory.delete(key);
  }
}
