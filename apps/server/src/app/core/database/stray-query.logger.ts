import { Logger as NestLogger } from '@nestjs/common';
import type { Logger, QueryRunner } from 'typeorm';
import { currentRunner, isInFrame } from '../tenancy/tenant-context.js';

/**
 * Flags any query issued inside a unit of work on a connection other than the frame's: such a query
 * runs with no tenant set (RLS silently returns nothing) and can deadlock the pool.
 */
export class StrayQueryLogger implements Logger {
  private readonly logger = new NestLogger('Database');
  readonly strays: string[] = [];

  logQuery(query: string, _parameters?: unknown[], queryRunner?: QueryRunner): void {
    // Inside a frame, any runner but its own (none made yet included) is outside its transaction.
    if (isInFrame() && queryRunner !== currentRunner()) {
      this.strays.push(query);
      this.logger.error(`Query outside the unit of work's transaction: ${query.slice(0, 200)}`);
    }
  }
  logQueryError(error: string | Error, query: string): void {
    this.logger.debug?.(`Query failed (${error instanceof Error ? error.message : error}): ${query.slice(0, 200)}`);
  }
  logQuerySlow(time: number, query: string): void {
    this.logger.warn(`Slow query (${time} ms): ${query.slice(0, 200)}`);
  }
  logSchemaBuild(): void {
    // Schema changes go through migrations only; synchronize is off.
  }
  logMigration(message: string): void {
    this.logger.log(message);
  }
  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') this.logger.warn(String(message));
  }
}
