import { AsyncLocalStorage } from 'node:async_hooks';
import type { ConsumeMessageFields, MessageProperties } from 'amqplib';

/** The delivery a handler is running for, as the transport saw it. */
export type RmqMessageFrame = {
  /** The normalised pattern the handler was found under. */
  readonly pattern: string;
  /** `userId` (validated by the broker), `expiration`, `correlationId`, `headers`... */
  readonly properties: MessageProperties;
  /** `redelivered`, `deliveryTag`, `routingKey`... */
  readonly fields: ConsumeMessageFields;
  /** The message body exactly as delivered: what a signature over the body (message-signature.ts) is checked against. */
  readonly content: Buffer;
  /**
   * Aborted when the transport gives up on the message (its time limit passed, or shutdown outlived the drain),
   * so long work can stop and roll back instead of committing after the caller was told it failed.
   */
  readonly signal: AbortSignal;
  /** Whether `signal` is aborted, read without creating it: an AbortSignal per message costs measurable CPU (bench/). */
  readonly aborted: boolean;
  /**
   * Ids the handler learns of its message (a tool call's callId, then its runId once proven), for every log line
   * written while it runs: kept on the frame the transport already holds rather than in a log context of its own, as
   * each AsyncLocalStorage in use adds work to every promise the process creates (bench/README.md).
   */
  readonly logIds: Record<string, string>;
};

const rmqMessageStorage = new AsyncLocalStorage<RmqMessageFrame>();

/** The frame of the message being handled, or undefined outside a handler run by AckAfterReplyTransport. */
export const currentRmqMessage = (): RmqMessageFrame | undefined => rmqMessageStorage.getStore();

/** `run()` and never `enterWith()`: the latter leaks the frame into sibling work (nodejs/node#35286). */
export const runInRmqMessageFrame = <T>(frame: RmqMessageFrame, work: () => T): T => rmqMessageStorage.run(frame, work);
