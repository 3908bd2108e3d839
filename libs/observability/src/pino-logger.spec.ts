import { ConsoleLogger, Logger } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import type { DestinationStream } from 'pino';
import { addLogContextSource, currentLogContext, withLogContext } from './log-context.js';
import { PinoLoggerService, nestLevelsFrom, prettyLine, writesLevel } from './pino-logger.service.js';

const capture = () => {
  const lines: string[] = [];
  const destination: DestinationStream = { write: (chunk: string) => void lines.push(...chunk.split('\n').filter(Boolean)) };
  return { lines, destination, json: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
};

describe('PinoLoggerService', () => {
  it('writes one JSON object a line with the level, context, app and the ids in effect', async () => {
    const out = capture();
    const logger = new PinoLoggerService({ app: 'server', format: 'json', levels: nestLevelsFrom('log'), destination: out.destination });
    logger.log('outside', 'Ctx');
    await withLogContext({ runId: 'run-1' }, async () => {
      await Promise.resolve();
      withLogContext({ callId: 'call-1' }, () => logger.warn('inside', 'Tools'));
    });
    const [outside, inside] = out.json();
    expect(outside).toMatchObject({ level: 'info', msg: 'outside', context: 'Ctx', app: 'server' });
    expect(outside).not.toHaveProperty('runId');
    expect(inside).toMatchObject({ level: 'warn', msg: 'inside', context: 'Tools', runId: 'run-1', callId: 'call-1' });
    expect(typeof inside['time']).toBe('string');
  });

  it("follows Nest's conventions: an error's stack before its context, an object message's fields, the enabled levels", () => {
    const out = capture();
    const logger = new PinoLoggerService({ app: 'worker', format: 'json', levels: nestLevelsFrom('warn'), destination: out.destination });
    const stack = new Error('boom').stack as string;
    logger.error('failed', stack, 'Worker');
    logger.error({ msg: 'tool failed', err: 'cause', kind: 'x', password: 'hunter2' }, 'AgentTools');
    logger.log('not written at warn');
    logger.debug('nor this');
    const [first, second] = out.json();
    expect(out.lines).toHaveLength(2);
    expect(first).toMatchObject({ level: 'error', msg: 'failed', context: 'Worker', stack });
    expect(second).toMatchObject({ msg: 'tool failed', err: 'cause', kind: 'x', context: 'AgentTools', password: '[redacted]' });
    logger.setLogLevels(['log']);
    logger.log('now written');
    expect(out.json()[2]).toMatchObject({ msg: 'now written' });
  });

  it('takes ids from an added source (a tracer), the closer withLogContext ids winning, until removed', () => {
    const remove = addLogContextSource(() => ({ traceId: 'trace-1', runId: 'from-source' }));
    try {
      expect(currentLogContext()).toEqual({ traceId: 'trace-1', runId: 'from-source' });
      withLogContext({ runId: 'run-2' }, () => expect(currentLogContext()).toEqual({ traceId: 'trace-1', runId: 'run-2' }));
    } finally {
      remove();
    }
    expect(currentLogContext()).toEqual({});
  });

  it('a failing source does not stop the line', () => {
    const remove = addLogContextSource(() => {
      throw new Error('tracer not ready');
    });
    try {
      const out = capture();
      new PinoLoggerService({ app: 'a', format: 'json', levels: ['log'], destination: out.destination }).log('still written');
      expect(out.json()[0]).toMatchObject({ msg: 'still written' });
    } finally {
      remove();
    }
  });

  it('pretty: one readable line with time, level, context, message and the ids, not JSON', () => {
    const out = capture();
    const logger = new PinoLoggerService({ app: 'server', format: 'pretty', levels: ['log'], destination: out.destination });
    withLogContext({ runId: 'run-3', callId: 'call-3' }, () => logger.log({ msg: 'Tool call done', tool: 'list_subjects' }, 'AgentTools'));
    expect(out.lines).toHaveLength(1);
    expect(out.lines[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}\[AgentTools\] Tool call done runId=run-3 callId=call-3 tool=list_subjects$/);
    expect(prettyLine('not json')).toBe('not json');
  });

  it("writesLevel answers from the installed logger's own levels, which Nest's static check cannot see", () => {
    const out = capture();
    const toolCalls = new Logger('ToolCalls');
    Logger.overrideLogger(new PinoLoggerService({ app: 'server', format: 'json', levels: nestLevelsFrom('log'), destination: out.destination }));
    try {
      expect([writesLevel(toolCalls, 'debug'), writesLevel(toolCalls, 'log')]).toEqual([false, true]);
      Logger.overrideLogger(new PinoLoggerService({ app: 'server', format: 'json', levels: nestLevelsFrom('debug'), destination: out.destination }));
      expect(writesLevel(toolCalls, 'debug')).toBe(true);
      Logger.overrideLogger(false);
      expect(writesLevel(toolCalls, 'log')).toBe(false);
    } finally {
      Logger.overrideLogger(new ConsoleLogger());
    }
  });
});
