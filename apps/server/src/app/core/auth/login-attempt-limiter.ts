import { hash } from 'node:crypto';
import { HttpException, HttpStatus, Inject, Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { HTTP_ERROR_SENTENCES } from '@naalya/access';
import { DataSource } from 'typeorm';
import { SERVER_CONFIG, type ServerConfig } from '../config/server-config.js';
import { withCode } from '../http/error-code.js';

type LimiterConfig = Pick<ServerConfig, 'LOGIN_ATTEMPTS_PER_ACCOUNT' | 'LOGIN_ATTEMPTS_PER_ADDRESS' | 'LOGIN_ATTEMPT_WINDOW_SECONDS'>;

export const loginAttemptsExceeded = () =>
  withCode('LOGIN_ATTEMPTS_EXCEEDED', new HttpException(HTTP_ERROR_SENTENCES.LOGIN_ATTEMPTS_EXCEEDED, HttpStatus.TOO_MANY_REQUESTS));

/**
 * The counters hold a hash, not the email or the address: the table is read by no one, but a database dump would
 * otherwise list who tried to sign in from where.
 */
const counterKey = (kind: 'account' | 'address', value: string): string => hash('sha256', `${kind}:${value}`, 'base64url');

/**
 * Counts login attempts per account and per client address in PostgreSQL (migration 1764662400014), so every replica
 * spends one allowance. Each take is one autocommit statement outside any unit of work: login has no tenant, and the
 * counter must stay counted even when the login itself then fails.
 */
@Injectable()
export class LoginAttemptLimiter implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(LoginAttemptLimiter.name);
  private pruneTimer: NodeJS.Timeout | undefined;

  constructor(
    @Inject(SERVER_CONFIG) private readonly config: LimiterConfig,
    private readonly dataSource: DataSource,
  ) {}

  onApplicationBootstrap(): void {
    // Once a window: rows of past windows are never read again, and each replica's prune is idempotent.
    this.pruneTimer = setInterval(
      () => void this.prune().catch((error: unknown) => this.logger.warn(`Pruning past login-attempt windows failed: ${String(error)}`)),
      this.config.LOGIN_ATTEMPT_WINDOW_SECONDS * 1000,
    );
    this.pruneTimer.unref();
  }

  beforeApplicationShutdown(): void {
    clearInterval(this.pruneTimer);
    this.pruneTimer = undefined;
  }

  /**
   * Counts one attempt for the address, then for the account; throws 429 when either is spent. The address is taken
   * first so that one client trying many accounts is stopped even while each account is still within its limit.
   */
  async take(email: string, address: string, now: number = Date.now()): Promise<void> {
    const window = this.windowOf(now);
    if (!(await this.takeOne(counterKey('address', address), window, this.config.LOGIN_ATTEMPTS_PER_ADDRESS))) throw loginAttemptsExceeded();
    if (!(await this.takeOne(counterKey('account', email), window, this.config.LOGIN_ATTEMPTS_PER_ACCOUNT))) throw loginAttemptsExceeded();
  }

  /** After a successful login: the account's count starts afresh (the address's stays, or one client could reset it with its own account). */
  async succeeded(email: string): Promise<void> {
    await this.dataSource.query(`SELECT refund_login_attempts($1)`, [counterKey('account', email)]);
  }

  /** Deletes the counters of windows before the current one; resolves to how many went. */
  async prune(now: number = Date.now()): Promise<number> {
    const [row] = (await this.dataSource.query(`SELECT prune_login_attempts($1) AS deleted`, [this.windowOf(now)])) as { deleted: number }[];
    return row?.deleted ?? 0;
  }

  private windowOf(now: number): number {
    return Math.floor(now / 1000 / this.config.LOGIN_ATTEMPT_WINDOW_SECONDS);
  }

  private async takeOne(key: string, window: number, limit: number): Promise<boolean> {
    const [row] = (await this.dataSource.query(`SELECT take_login_attempt($1, $2, $3) AS taken`, [key, window, limit])) as { taken: boolean | null }[];
    return row?.taken === true;
  }
}
