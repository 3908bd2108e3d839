import { Inject, Injectable } from '@nestjs/common';
import { ERROR_SENTENCES } from '@naalya/agent-tools';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';

const WINDOW_MS = 60_000;

export const SCHOOL_QUOTA_ERROR = ERROR_SENTENCES.SCHOOL_QUOTA_EXCEEDED;
export const USER_QUOTA_ERROR = ERROR_SENTENCES.USER_QUOTA_EXCEEDED;

type Window = { start: number; count: number };

/**
 * Tool calls per minute, per school and per user, counted in this process's memory (fixed one-minute windows).
 *
 * Why memory and not PostgreSQL: a counter row per school would be updated by every call of that school, so every
 * concurrent call of one school would queue on that row's lock inside its transaction (the opposite of what prefetch
 * buys), and even reads would write. The limit is a flood brake, not billing: with R server replicas a school gets at
 * most R times its limit, and a restart forgets the current minute. Counted only for calls whose dispatch token is
 * valid, so a forger cannot spend a school's allowance.
 */
@Injectable()
export class ToolCallQuota {
  private readonly windows = new Map<string, Window>();

  constructor(@Inject(SERVER_CONFIG) private readonly config: ServerConfig) {}

  /** Takes one call from both allowances, or none and says which is spent. */
  take(schoolKey: string, userId: string, now: number = Date.now()): 'SCHOOL_QUOTA_EXCEEDED' | 'USER_QUOTA_EXCEEDED' | null {
    const school = this.current(`school:${schoolKey}`, now);
    const user = this.current(`user:${userId}`, now);
    if (school.count >= this.config.TOOL_CALLS_PER_MINUTE_PER_SCHOOL) return 'SCHOOL_QUOTA_EXCEEDED';
    if (user.count >= this.config.TOOL_CALLS_PER_MINUTE_PER_USER) return 'USER_QUOTA_EXCEEDED';
    school.count += 1;
    user.count += 1;
    return null;
  }

  private current(key: string, now: number): Window {
    let window = this.windows.get(key);
    if (!window || now - window.start >= WINDOW_MS) {
      if (this.windows.size > 10_000) this.prune(now);
      window = { start: now, count: 0 };
      this.windows.set(key, window);
    }
    return window;
  }

  private prune(now: number): void {
    for (const [key, window] of this.windows) if (now - window.start >= WINDOW_MS) this.windows.delete(key);
  }
}
