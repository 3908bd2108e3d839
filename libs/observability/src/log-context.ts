import { AsyncLocalStorage } from 'node:async_hooks';

/** What every log line written inside a unit of work carries, so one run's or one tool call's lines can be found. */
export type LogContext = { runId?: string; callId?: string; traceId?: string };

const storage = new AsyncLocalStorage<LogContext>();
const sources: (() => LogContext)[] = [];

/**
 * Runs `work` with these ids added to the enclosing ones. `run()`, never `enterWith()`: the latter leaks the context
 * into sibling work (nodejs/node#35286).
 */
export const withLogContext = <T>(context: LogContext, work: () => T): T => storage.run({ ...storage.getStore(), ...definedOnly(context) }, work);

/**
 * Adds ids that live elsewhere (the tracing helper's current trace id): read at each log line, so this library needs
 * no dependency on the tracer. Returns a function that removes the source again.
 */
export const addLogContextSource = (source: () => LogContext): (() => void) => {
  sources.push(source);
  return () => {
    const index = sources.indexOf(source);
    if (index >= 0) sources.splice(index, 1);
  };
};

/** The ids in effect here: the sources' first, then the ones set with withLogContext (the more specific). */
export const currentLogContext = (): LogContext => {
  let context: LogContext = {};
  for (const source of sources) {
    try {
      context = { ...context, ...definedOnly(source()) };
    } catch {
      // A failing source must never take a log line down with it.
    }
  }
  return { ...context, ...definedOnly(storage.getStore() ?? {}) };
};

const definedOnly = (context: LogContext): LogContext =>
  Object.fromEntries(Object.entries(context).filter(([, value]) => typeof value === 'string' && value !== '')) as LogContext;
