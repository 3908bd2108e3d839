import type { LogLevel, Logger as NestLogger, LoggerService } from '@nestjs/common';
import { pino, type DestinationStream, type Level, type Logger } from 'pino';
import { currentLogContext } from './log-context.js';
import type { LogFormat } from './metrics-config.js';

/** Nest's levels in pino's names ("log" is pino's info, "verbose" its trace). */
const PINO_LEVEL: Record<LogLevel, Level> = { fatal: 'fatal', error: 'error', warn: 'warn', log: 'info', debug: 'debug', verbose: 'trace' };
const NEST_LEVELS: readonly LogLevel[] = ['verbose', 'debug', 'log', 'warn', 'error', 'fatal'];

/** Keys whose values never reach a log line, wherever a caller put them. */
const REDACTED = ['password', 'token', 'authorization', 'secret', 'dispatchToken', 'apiKey'].flatMap((key) => [key, `*.${key}`]);

export type PinoLoggerOptions = {
  /** `app` on every line: the server's and the worker's lines are told apart in one log store. */
  app: string;
  format: LogFormat;
  /** The Nest levels written (as the apps' LOG_LEVEL settings give them); the rest are dropped. */
  levels: readonly LogLevel[];
  /** Where lines go: stdout (synchronously, so the last lines before an exit are not lost) unless a test gives its own. */
  destination?: DestinationStream;
};

/**
 * Whether the logger a Nest Logger writes through writes `level` lines, for a line worth building only when it is
 * written (one per tool call at debug). Asked of that logger (PinoLoggerService knows its levels; Nest's static
 * Logger.isLevelEnabled answers true for any custom logger); one that cannot say is taken to write it, and with logging
 * off there is none.
 */
export const writesLevel = (logger: NestLogger, level: LogLevel): boolean => {
  // None with logging off (Nest's `logger: false`): nothing is written.
  const installed = logger.localInstance as Partial<Pick<PinoLoggerService, 'isLevelEnabled'>> | undefined;
  return installed ? (installed.isLevelEnabled?.(level) ?? true) : false;
};

const looksLikeStack = (value: string): boolean => /\n\s+at /.test(value);

/**
 * Nest's LoggerService over pino (nestjs-pino does not install with Nest 12): Nest and every `new Logger(context)` in
 * the apps write through it, as JSON a line or as a readable line, each with the runId, callId and traceId in effect.
 */
export class PinoLoggerService implements LoggerService {
  readonly pino: Logger;
  private enabled: Set<LogLevel>;

  constructor(options: PinoLoggerOptions) {
    this.enabled = new Set(options.levels);
    const destination = options.destination ?? pino.destination({ fd: 1, sync: true });
    this.pino = pino(
      {
        // Every level: which ones are written is decided here by Nest's list, which need not be contiguous.
        level: 'trace',
        base: { app: options.app, pid: process.pid },
        timestamp: pino.stdTimeFunctions.isoTime,
        messageKey: 'msg',
        // Read at each line, so ids set with withLogContext (and a tracer's source) reach lines written deep inside.
        mixin: () => currentLogContext(),
        redact: { paths: REDACTED, censor: '[redacted]' },
        formatters: { level: (label) => ({ level: label }) },
      },
      options.format === 'pretty' ? prettyStream(destination) : destination,
    );
  }

  log(message: unknown, ...params: unknown[]): void {
    this.write('log', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.write('verbose', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  setLogLevels(levels: LogLevel[]): void {
    this.enabled = new Set(levels);
  }

  isLevelEnabled(level: LogLevel): boolean {
    return this.enabled.has(level);
  }

  /**
   * Nest's calling convention: the context is the last string argument (a Logger appends its own); an error's stack
   * comes before it. A message that is an object (`{ msg, ...details }`) gives its fields to the line.
   */
  private write(level: LogLevel, message: unknown, params: unknown[]): void {
    if (!this.enabled.has(level)) return;
    const rest = [...params];
    let context: string | undefined;
    const last = rest.at(-1);
    if (typeof last === 'string' && !(level === 'error' && looksLikeStack(last) && rest.length === 1)) context = rest.pop() as string;
    const fields: Record<string, unknown> = context ? { context } : {};
    let text: string;
    if (message instanceof Error) {
      text = message.message;
      fields['err'] = message;
    } else if (message !== null && typeof message === 'object') {
      const { msg, message: inner, ...details } = message as Record<string, unknown>;
      Object.assign(fields, details);
      text = typeof msg === 'string' ? msg : typeof inner === 'string' ? inner : '';
    } else {
      text = String(message);
    }
    const stack = rest.find((param): param is string => typeof param === 'string' && looksLikeStack(param));
    if (stack) fields['stack'] = stack;
    const extra = rest.filter((param) => param !== stack);
    if (extra.length > 0) fields['params'] = extra;
    this.pino[PINO_LEVEL[level]](fields, text);
  }
}

/** The Nest levels at and above `level`, in Nest's order of severity. */
export const nestLevelsFrom = (level: LogLevel): LogLevel[] => NEST_LEVELS.slice(NEST_LEVELS.indexOf(level));

const LEVEL_WIDTH = 5;
const SHOWN_FIRST = ['runId', 'callId', 'traceId'];
const NOT_SHOWN = new Set(['level', 'time', 'msg', 'app', 'pid', 'context', 'stack', 'err', ...SHOWN_FIRST]);

/** A JSON line as a person reads it: time, level, [context], message, the ids, then the other fields as key=value. */
export const prettyLine = (line: string): string => {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const time = typeof entry['time'] === 'string' ? entry['time'].slice(11, 23) : '';
  const level = String(entry['level'] ?? '').toUpperCase().padEnd(LEVEL_WIDTH);
  const context = entry['context'] ? `[${String(entry['context'])}] ` : '';
  const pairs = [...SHOWN_FIRST, ...Object.keys(entry).filter((key) => !NOT_SHOWN.has(key))]
    .filter((key) => entry[key] !== undefined)
    .map((key) => `${key}=${typeof entry[key] === 'string' ? entry[key] : JSON.stringify(entry[key])}`);
  const err = entry['err'] as { stack?: string } | undefined;
  const stack = typeof entry['stack'] === 'string' ? entry['stack'] : err?.stack;
  return `${time} ${level} ${context}${String(entry['msg'] ?? '')}${pairs.length ? ` ${pairs.join(' ')}` : ''}${stack ? `\n${stack}` : ''}\n`;
};

const prettyStream = (destination: DestinationStream): DestinationStream => ({
  write: (chunk: string) => {
    for (const line of chunk.split('\n')) if (line) destination.write(prettyLine(line));
  },
});
