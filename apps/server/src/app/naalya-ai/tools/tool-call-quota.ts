import { Inject, Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { ERROR_SENTENCES } from '@naalya/agent-tools';
import { DataSource } from 'typeorm';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';

const WINDOW_MS = 60_000;

/** How often each replica deletes past minutes' counters (the delete is idempotent, so replicas need no coordination). */
const PRUNE_INTERVAL_MS = WINDOW_MS;

/** Past this many keys in memory, the past minutes' entries are dropped before a new one is added. */
const MEMORY_PRUNE_THRESHOLD = 10_000;

/**
 * The most calls of one key a process reserves from PostgreSQL at once (the database gives less near the limit: at most
 * a sixteenth of what is left). 32: one statement per 32 calls of a busy school or user, and at most 31 calls a
 * process can hold unspent when the minute ends.
 */
export const QUOTA_RESERVATION_BLOCK = 32;

export const SCHOOL_QUOTA_ERROR = ERROR_SENTENCES.SCHOOL_QUOTA_EXCEEDED;
export const USER_QUOTA_ERROR = ERROR_SENTENCES.USER_QUOTA_EXCEEDED;

export type QuotaRefusal = 'SCHOOL_QUOTA_EXCEEDED' | 'USER_QUOTA_EXCEEDED';

/** What admit() made of a call: counted now, a repeat of one this process counted already, or refused. */
export type Admission = { charged: boolean; refusal: QuotaRefusal | null; window: number };

/**
 * Call ids this process remembers having counted: a worker sends an interrupted call again under the same id, and the
 * repeat must not cost the school a second call. Bounded, so a flood of distinct ids cannot grow it without limit (past
 * the bound the oldest go first, and a repeat of one of them is counted again: a strict error, never a loose one).
 */
export const ADMITTED_CALL_IDS_MAX = 50_000;

/** Long enough for every re-send of a call (they end at its deadline, plus the clock-skew allowance). */
const ADMITTED_GRACE_MS = 2_000;
/** The longest a call id is remembered, whatever deadline it claims (the worker's timeout is at most 5 min, 15 s by default). */
const ADMITTED_TTL_MAX_MS = 120_000;

/**
 * The minute a call counts in: fixed windows on the epoch, so every replica puts a call in the same one as long as
 * their clocks agree (the dispatch tokens' expiry already assumes synchronised clocks; a second of skew moves a few
 * calls across a boundary, which a flood brake tolerates).
 */
export const quotaWindow = (now: number): number => Math.floor(now / WINDOW_MS);

/** Whole seconds until the minute a call counted in ends: when a refused caller may try again (Retry-After). */
export const secondsLeftInWindow = (now: number): number => Math.max(1, Math.ceil(((quotaWindow(now) + 1) * WINDOW_MS - now) / 1000));

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** One key's minute in this process: calls in hand (memory store: calls counted), and whether the shared count is spent. */
type Counter = { window: number; count: number; spent: boolean; reserving: Promise<void> | null };

/**
 * Tool calls per minute, per school and per user (fixed one-minute windows), counted only for calls whose dispatch
 * token is valid, so a forger cannot spend a school's allowance. A call over either limit is refused and spends
 * nothing of the other.
 *
 * TOOL_CALL_QUOTA_STORE=postgres (the default) shares the count between every server replica: a process reserves
 * blocks of calls from a counter row per key and minute (reserve_tool_call_quota, migration 1764662400009, its own
 * autocommit statement before the call's unit of work) and spends them in memory, so most calls make no round trip
 * and the row is touched once per block. The blocks never sum past the limit, so all replicas together allow at most
 * the limit; near it blocks are single calls. What a process holds unspent when the minute ends is not used by anyone
 * (at most a sixteenth of what was left when it reserved): a flood brake may err on the strict side. A counter row
 * updated inside the call's transaction instead would queue every concurrent call of a school behind the one holding
 * it until its commit.
 *
 * TOOL_CALL_QUOTA_STORE=memory counts in this process only: with R replicas a school gets R times its limit, and a
 * restart forgets the minute. For a single server and as the bench's baseline.
 */
@Injectable()
export class ToolCallQuota implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ToolCallQuota.name);
  private readonly counters = new Map<string, Counter>();
  /** Call id to when it may be forgotten (epoch ms), in insertion order. */
  private readonly admitted = new Map<string, number>();
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

  /**
   * Takes one call from both allowances, or none and says which is spent. Answered without a promise when both have
   * calls in hand (most calls): on Node 20 every promise a tool call makes costs hooks and garbage.
   */
  take(schoolKey: string, userId: string, now: number = Date.now()): QuotaRefusal | null | Promise<QuotaRefusal | null> {
    const window = quotaWindow(now);
    const school = `school:${schoolKey}`;
    const user = `user:${userId}`;
    if (this.config.TOOL_CALL_QUOTA_STORE === 'memory') return this.takeInMemory(school, user, window);
    const schoolInHand = this.counter(school, window);
    const userInHand = this.counter(user, window);
    if (schoolInHand.count > 0 && userInHand.count > 0) {
      schoolInHand.count -= 1;
      userInHand.count -= 1;
      return null;
    }
    return this.takeShared(school, user, window);
  }

  /** take() when a key has no call in hand: from the shared count, reserving a block where needed. */
  private async takeShared(school: string, user: string, window: number): Promise<QuotaRefusal | null> {
    if (!(await this.spend(school, window, this.config.TOOL_CALLS_PER_MINUTE_PER_SCHOOL))) return 'SCHOOL_QUOTA_EXCEEDED';
    if (!(await this.spend(user, window, this.config.TOOL_CALLS_PER_MINUTE_PER_USER))) {
      // The school's call goes back to this process's hand, not to the database: it was reserved here and is spent here.
      this.counter(school, window).count += 1;
      return 'USER_QUOTA_EXCEEDED';
    }
    return null;
  }

  /**
   * One call from a keyed allowance of `limit` a minute besides the school's and the user's (an MCP client's, per
   * token), counted in the same store with the same windows; false once it is spent.
   */
  async takeOne(key: string, limit: number, now: number = Date.now()): Promise<boolean> {
    const window = quotaWindow(now);
    if (this.config.TOOL_CALL_QUOTA_STORE !== 'memory') return this.spend(key, window, limit);
    const counter = this.counter(key, window);
    if (counter.count >= limit) return false;
    counter.count += 1;
    return true;
  }

  /**
   * take() once per call id in this process: a repeat of a call id it counted (until that call's deadline has passed)
   * is admitted without counting. A repeat reaching another replica is counted there, and given back by giveBack()
   * when the ledger answers it: one call costs one, wherever its copies land.
   */
  admit(callId: string, deadline: number, schoolKey: string, userId: string, now: number = Date.now()): Admission | Promise<Admission> {
    const forgetAt = this.admitted.get(callId);
    const window = quotaWindow(now);
    if (forgetAt !== undefined && forgetAt > now) return { charged: false, refusal: null, window };
    const admitted = (refusal: QuotaRefusal | null): Admission => {
      if (refusal) return { charged: false, refusal, window };
      this.remember(callId, now + Math.min(ADMITTED_TTL_MAX_MS, Math.max(0, deadline - now) + ADMITTED_GRACE_MS), now);
      return { charged: true, refusal: null, window };
    };
    const taken = this.take(schoolKey, userId, now);
    return taken instanceof Promise ? taken.then(admitted) : admitted(taken);
  }

  /**
   * Returns a call admit() counted to both allowances of the minute it was counted in (this process's hand, where it was
   * taken), for a call that turned out to be a repeat answered from the ledger: its first copy already paid. A call of
   * a past minute is not given back: that minute is over, and the new one's calls in hand were all reserved for it.
   */
  giveBack(admission: Admission, schoolKey: string, userId: string, now: number = Date.now()): void {
    const window = quotaWindow(now);
    if (!admission.charged || admission.window !== window) return;
    const school = this.counter(`school:${schoolKey}`, window);
    const user = this.counter(`user:${userId}`, window);
    const delta = this.config.TOOL_CALL_QUOTA_STORE === 'memory' ? -1 : 1;
    school.count = Math.max(0, school.count + delta);
    user.count = Math.max(0, user.count + delta);
  }

  private remember(callId: string, forgetAt: number, now: number): void {
    this.admitted.delete(callId);
    if (this.admitted.size >= ADMITTED_CALL_IDS_MAX) {
      for (const [id, at] of this.admitted) if (at <= now) this.admitted.delete(id);
      // Still full of live ids: the oldest go (insertion order).
      for (const id of this.admitted.keys()) {
        if (this.admitted.size < ADMITTED_CALL_IDS_MAX) break;
        this.admitted.delete(id);
      }
    }
    this.admitted.set(callId, forgetAt);
  }

  /** Deletes the counters of minutes before the previous one (safe on every replica at once); resolves to how many went. */
  async prune(now: number = Date.now()): Promise<number> {
    this.pruneMemory(quotaWindow(now));
    if (this.config.TOOL_CALL_QUOTA_STORE === 'memory') return 0;
    const [row] = (await this.dataSource.query(`SELECT prune_tool_call_quota($1) AS deleted`, [quotaWindow(now) - 1])) as { deleted: number }[];
    return row.deleted;
  }

  /** One call of this key's minute from the calls in hand, reserving a block first when none is left; false once the shared count is spent. */
  private async spend(key: string, window: number, limit: number): Promise<boolean> {
    for (;;) {
      const counter = this.counter(key, window);
      if (counter.count > 0) {
        counter.count -= 1;
        return true;
      }
      // The shared count only grows within a minute: once it gave nothing, it gives nothing until the next one.
      if (counter.spent) return false;
      // One reservation at a time per key: the calls waiting meanwhile share its block, then look again.
      counter.reserving ??= this.reserve(key, window, limit).then(
        (granted) => {
          counter.count += granted;
          counter.spent = granted === 0;
          counter.reserving = null;
        },
        (error: unknown) => {
          counter.reserving = null;
          throw error;
        },
      );
      await counter.reserving;
    }
  }

  private async reserve(key: string, window: number, limit: number): Promise<number> {
    const [row] = (await this.dataSource.query(`SELECT reserve_tool_call_quota($1, $2, $3, $4) AS granted`, [key, window, limit, QUOTA_RESERVATION_BLOCK])) as {
      granted: number;
    }[];
    return row.granted;
  }

  private takeInMemory(school: string, user: string, window: number): QuotaRefusal | null {
    const schoolCounter = this.counter(school, window);
    const userCounter = this.counter(user, window);
    if (schoolCounter.count >= this.config.TOOL_CALLS_PER_MINUTE_PER_SCHOOL) return 'SCHOOL_QUOTA_EXCEEDED';
    if (userCounter.count >= this.config.TOOL_CALLS_PER_MINUTE_PER_USER) return 'USER_QUOTA_EXCEEDED';
    schoolCounter.count += 1;
    userCounter.count += 1;
    return null;
  }

  /** This key's counter for the minute; a counter of a past minute is replaced (its calls in hand lapse with it). */
  private counter(key: string, window: number): Counter {
    let counter = this.counters.get(key);
    if (!counter || counter.window !== window) {
      if (this.counters.size > MEMORY_PRUNE_THRESHOLD) this.pruneMemory(window);
      counter = { window, count: 0, spent: false, reserving: null };
      this.counters.set(key, counter);
    }
    return counter;
  }

  private pruneMemory(window: number): void {
    for (const [key, counter] of this.counters) if (counter.window < window && !counter.reserving) this.counters.delete(key);
  }
}
