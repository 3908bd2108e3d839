import { Inject, Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { serverMetrics } from '../../core/observability/server-metrics.js';

export const RETENTION_KINDS = ['runs', 'run_events', 'approvals', 'ledger', 'audit'] as const;
export type RetentionKind = (typeof RETENTION_KINDS)[number];
export type RetentionCounts = Record<RetentionKind, number>;

/**
 * Batches one purge runs before it yields to the next interval: a backlog (a first purge after years, a lowered
 * setting) is worked off over several intervals instead of holding a pool connection for minutes.
 */
const MAX_ROUNDS_PER_PURGE = 50;

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));
const zero = (): RetentionCounts => ({ runs: 0, run_events: 0, approvals: 0, ledger: 0, audit: 0 });

/**
 * Deletes what has outlived its retention setting, every RETENTION_PURGE_INTERVAL_MS on every replica. The work is one
 * SECURITY DEFINER function (migration RetentionPurge): the app role sees one owner's rows at a time and the server has
 * no owner URL. Each call is its own statement and transaction, deleting at most RETENTION_PURGE_BATCH rows of each
 * kind taken FOR UPDATE SKIP LOCKED, so replicas purging at once share the work without waiting on each other or
 * deleting a row twice; the purge repeats while some kind came back full.
 */
@Injectable()
export class RetentionPurge implements BeforeApplicationShutdown {
  private readonly logger = new Logger(RetentionPurge.name);
  private timer: NodeJS.Timeout | undefined;
  private purging: Promise<RetentionCounts> | null = null;
  private stopping = false;

  constructor(
    private readonly dataSource: DataSource,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  start(): void {
    this.stopping = false;
    this.timer ??= setInterval(
      () => void this.purge().catch((error: unknown) => this.logger.error(`Retention purge failed: ${describe(error)}`)),
      this.config.RETENTION_PURGE_INTERVAL_MS,
    );
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.purging?.catch(() => undefined);
  }

  /** One purge (never two at once on an instance); resolves to the rows it deleted of each kind. */
  purge(): Promise<RetentionCounts> {
    this.purging ??= this.purgeOnce()
      .then(
        (totals) => {
          serverMetrics.retentionPurges.inc({ outcome: 'ok' });
          return totals;
        },
        (error: unknown) => {
          serverMetrics.retentionPurges.inc({ outcome: 'failed' });
          throw error;
        },
      )
      .finally(() => (this.purging = null));
    return this.purging;
  }

  private async purgeOnce(): Promise<RetentionCounts> {
    const totals = zero();
    const batch = this.config.RETENTION_PURGE_BATCH;
    for (let round = 0; round < MAX_ROUNDS_PER_PURGE && !this.stopping; round += 1) {
      const rows = (await this.dataSource.query(`SELECT kind, deleted FROM retention_purge($1, $2, $3, $4, $5, $6)`, [
        this.config.RUN_EVENT_RETENTION_DAYS,
        this.config.AGENT_RUN_RETENTION_DAYS,
        this.config.APPROVAL_RETENTION_DAYS,
        this.config.TOOL_CALL_LEDGER_RETENTION_DAYS,
        this.config.AUDIT_RETENTION_DAYS,
        batch,
      ])) as { kind: RetentionKind; deleted: number }[];
      let full = false;
      for (const { kind, deleted } of rows) {
        totals[kind] += deleted;
        // Counted per batch, as committed: a purge that fails later still deleted these.
        serverMetrics.retentionPurged.inc({ kind }, deleted);
        if (deleted >= batch) full = true;
      }
      if (!full) break;
    }
    const deleted = RETENTION_KINDS.filter((kind) => totals[kind] > 0).map((kind) => `${kind} ${totals[kind]}`);
    if (deleted.length > 0) this.logger.log(`Retention purge deleted: ${deleted.join(', ')}.`);
    return totals;
  }
}
