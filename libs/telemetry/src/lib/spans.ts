import {
  INVALID_SPAN_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  createContextKey,
  isSpanContextValid,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanOptions,
} from '@opentelemetry/api';
import { ERROR_TYPE } from './conventions.js';

export { SpanKind, type Attributes, type Context, type Span };

/**
 * Whether startTracing registered a provider. Every helper below checks it first, so with tracing off nothing is
 * created, not even the API's no-op spans, and a request pays one boolean test (bench/results/tracing.md).
 */
let enabled = false;

export const tracingEnabled = (): boolean => enabled;

/** Set by startTracing (and by tests that register their own provider); not for application code. */
export const setTracingEnabled = (value: boolean): void => {
  enabled = value;
};

/** Handed to work when tracing is off: setting attributes or ending it does nothing. */
const NO_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

const tracer = () => trace.getTracer('naalya');

/** The trace the current code runs in, as 32 hex digits; undefined with tracing off or outside any span. */
export const currentTraceId = (): string | undefined => {
  if (!enabled) return undefined;
  const spanContext = trace.getActiveSpan()?.spanContext();
  return spanContext && isSpanContextValid(spanContext) ? spanContext.traceId : undefined;
};

/** A span the caller ends; undefined with tracing off. Its parent is `parent` or the active context. */
export const startSpan = (name: string, options: SpanOptions = {}, parent?: Context): Span | undefined =>
  enabled ? tracer().startSpan(name, options, parent ?? context.active()) : undefined;

/** Runs `work` with `span` as the active span (so its children and currentTraceId see it); plainly without one. */
export const withActiveSpan = <T>(span: Span | undefined, work: () => T, parent?: Context): T =>
  span ? context.with(trace.setSpan(parent ?? context.active(), span), work) : work();

/** Marks a span failed with the error's class (not its message: it may carry user input). */
export const failSpan = (span: Span | undefined, error: unknown, type?: string): void => {
  if (!span) return;
  const errorType = type ?? (error instanceof Error ? error.name : typeof error);
  span.setAttribute(ERROR_TYPE, errorType);
  span.setStatus({ code: SpanStatusCode.ERROR });
};

/** Runs `work` inside a new active span, ended when it settles; a thrown error or rejection marks it failed. */
export const inSpan = async <T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T> | T): Promise<T> => {
  const span = startSpan(name, options);
  if (!span) return work(NO_SPAN);
  try {
    return await withActiveSpan(span, () => work(span));
  } catch (error) {
    failSpan(span, error);
    throw error;
  } finally {
    span.end();
  }
};

/**
 * W3C trace context of `span` (or the active one) added to message headers. Carried beside a message, never inside
 * what is signed, and read back only to parent spans: no decision depends on it (a publisher can write anything there).
 */
export const injectTraceContext = (headers: Record<string, unknown>, span?: Span): Record<string, unknown> => {
  if (!enabled) return headers;
  const carrier: Record<string, string> = {};
  propagation.inject(span ? trace.setSpan(context.active(), span) : context.active(), carrier);
  return { ...headers, ...carrier };
};

/** The context a message's headers carry (traceparent, tracestate), or the active one when they carry none. */
export const extractTraceContext = (headers: Record<string, unknown> | undefined): Context => {
  const carrier: Record<string, string> = {};
  for (const key of ['traceparent', 'tracestate']) {
    const value = headers?.[key];
    // Buffers or numbers are ignored: only a string can be a W3C header, and a malformed one yields a fresh trace.
    if (typeof value === 'string' && value.length <= 512) carrier[key] = value;
  }
  return propagation.extract(context.active(), carrier);
};

const AGENT_KEY = createContextKey('naalya.agent');

/** The agent (Rover or a specialist) whose work the current code does, as set by withAgent. */
export const currentAgent = (): string | undefined => (enabled ? (context.active().getValue(AGENT_KEY) as string | undefined) : undefined);

/** Runs `work` as `agent`'s: spans started inside it (its model and tool calls) name that agent. */
export const withAgent = <T>(agent: string, work: () => T): T => (enabled ? context.with(context.active().setValue(AGENT_KEY, agent), work) : work());
