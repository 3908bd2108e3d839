import type { ConsumeMessage } from 'amqplib';
import { Messaging, SpanKind, extractTraceContext, failSpan, injectTraceContext, startSpan, tracingEnabled, type Context, type Span } from '@naalya/telemetry';

/**
 * The AMQP hop's spans, written here once for every publisher and consumer of the platform (the contrib amqplib
 * instrumentation covers only amqplib below 1.0). Messaging semantic conventions: a PRODUCER span per publish or call,
 * a CONSUMER `process` span per delivery, parented on the producer through W3C `traceparent` in the message headers.
 *
 * The headers sit beside the body, never inside it: nothing signed (the run step's signature, the dispatch token in a
 * tool call's envelope) covers or contains them, and nothing reads them but extractTraceContext, which only chooses
 * a span's parent. A forged traceparent can at most attach a span to someone else's trace id; it decides nothing.
 *
 * With tracing off every function returns undefined or its input unchanged, at the cost of one boolean test.
 */

const SYSTEM = 'rabbitmq';

/** The destination a publish names: the exchange, or the queue for the default exchange. */
const destinationOf = (exchange: string, routingKey: string): string => exchange || routingKey;

export type PublishSpanDetails = { messageId?: string; correlationId?: string; bodySize: number };

/** A PRODUCER span for one publish (or one RPC call, until its reply); undefined with tracing off. */
export const startPublishSpan = (exchange: string, routingKey: string, details: PublishSpanDetails): Span | undefined => {
  // Before any attribute is built: with tracing off a publish allocates nothing here.
  if (!tracingEnabled()) return undefined;
  const destination = destinationOf(exchange, routingKey);
  return startSpan(`publish ${destination}`, {
    kind: SpanKind.PRODUCER,
    attributes: {
      [Messaging.SYSTEM]: SYSTEM,
      [Messaging.OPERATION_TYPE]: 'send',
      [Messaging.OPERATION_NAME]: 'publish',
      [Messaging.DESTINATION_NAME]: destination,
      [Messaging.RABBITMQ_ROUTING_KEY]: routingKey,
      [Messaging.MESSAGE_BODY_SIZE]: details.bodySize,
      ...(details.messageId === undefined ? {} : { [Messaging.MESSAGE_ID]: details.messageId }),
      ...(details.correlationId === undefined ? {} : { [Messaging.MESSAGE_CONVERSATION_ID]: details.correlationId }),
    },
  });
};

/** The message's headers with the producer span's traceparent added (unchanged without a span). */
export const withTraceHeaders = (headers: Record<string, unknown> | undefined, span: Span | undefined): Record<string, unknown> | undefined =>
  span ? injectTraceContext(headers ?? {}, span) : headers;

/** Ends a producer span once the publish settled; a failure is recorded by its kind (refused, timeout...). */
export const endPublishSpan = (span: Span | undefined, error?: unknown): void => {
  if (!span) return;
  if (error !== undefined) failSpan(span, error, failureOf(error));
  span.end();
};

const failureOf = (error: unknown): string | undefined => {
  const failure = (error as { failure?: unknown } | null)?.failure;
  return typeof failure === 'string' ? failure : undefined;
};

export type ProcessSpan = { span: Span; parent: Context };

/** A CONSUMER span for one delivery, child of the publisher's span when the message carries its traceparent. */
export const startProcessSpan = (queue: string, pattern: string, message: ConsumeMessage): ProcessSpan | undefined => {
  // Before the headers are read: with tracing off a delivery allocates nothing here.
  if (!tracingEnabled()) return undefined;
  const parent = extractTraceContext(message.properties.headers as Record<string, unknown> | undefined);
  const span = startSpan(
    `process ${queue}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        [Messaging.SYSTEM]: SYSTEM,
        [Messaging.OPERATION_TYPE]: 'process',
        [Messaging.OPERATION_NAME]: 'process',
        [Messaging.DESTINATION_NAME]: queue,
        [Messaging.RABBITMQ_ROUTING_KEY]: message.fields.routingKey,
        [Messaging.RABBITMQ_DELIVERY_TAG]: message.fields.deliveryTag,
        [Messaging.MESSAGE_BODY_SIZE]: message.content.length,
        // The handler's pattern (the tool's event, or the run pattern): which work this delivery was.
        'naalya.rmq.pattern': pattern,
        ...(typeof message.properties.messageId === 'string' ? { [Messaging.MESSAGE_ID]: message.properties.messageId } : {}),
        ...(typeof message.properties.correlationId === 'string' ? { [Messaging.MESSAGE_CONVERSATION_ID]: message.properties.correlationId } : {}),
      },
    },
    parent,
  );
  return span ? { span, parent } : undefined;
};
