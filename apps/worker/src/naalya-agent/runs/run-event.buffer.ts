import { RUN_EVENT_BATCH_MAX, type AgentRunEvent, type RunEventBatch } from '@naalya/agent-tools';

/** What travels with every batch of a step: the step's dispatch token, so the server stores only its current epoch's events. */
export type RunEventMeta = { dispatchToken: string };

/**
 * Where run events go, a batch per message: the RabbitMQ publisher in production, an array in tests. Resolves once the
 * batch is safely with the broker; the buffer never has two batches of a step out at once, so order is kept.
 */
export type RunEventSink = { publish(batch: RunEventBatch, meta: RunEventMeta): Promise<void> };

/** Publishing failed: the step cannot report anything, so the message must not be acknowledged as handled. */
export class RunEventPublishError extends Error {
  override readonly name = 'RunEventPublishError';
}

/**
 * The JSON bytes one batch may carry: half the run-events ingest's 1 MiB message limit, leaving room for the batch's
 * envelope. A single event larger than this goes alone.
 */
export const RUN_EVENT_BATCH_MAX_BYTES = 512 * 1024;

/** Events (and their bytes) that may wait behind a slow broker before the producer is made to wait. */
export const RUN_EVENT_PENDING_MAX = 4 * RUN_EVENT_BATCH_MAX;
export const RUN_EVENT_PENDING_MAX_BYTES = 4 * 1024 * 1024;

/** The worker's default linger (RUN_EVENTS_LINGER_MS). */
export const RUN_EVENTS_LINGER_MS_DEFAULT = 25;

export type RunEventBufferOptions = {
  sink: RunEventSink;
  meta: RunEventMeta;
  runId: string;
  /** Checked before each batch goes out: false drops what waits (a step without its lease publishes nothing). */
  mayPublish: () => boolean;
  maxBatchEvents?: number;
  maxBatchBytes?: number;
  maxPendingEvents?: number;
  maxPendingBytes?: number;
  /**
   * How long the first event after an idle spell waits for company before it goes (0: at once). A model's tokens come
   * every few tens of ms, each in its own message without it: the run-events ingest then pays a message and a stream
   * wake-up per token, which at 64 runs streaming at once is the cost that matters. flush() never waits for it.
   */
  lingerMs?: number;
};

type Queued = { event: AgentRunEvent; bytes: number };

/**
 * One step's run events on their way to the broker. At most one batch is being published at a time: an event pushed
 * while the broker is idle goes out after the linger (at once without one), with whatever came meanwhile; events pushed
 * while a batch waits for its confirm gather and go together as the next batch, up to the batch bounds, so batches
 * form under load by themselves. What
 * waits is bounded: past it, `push` waits for the broker (backpressure), so a slow broker slows the model's consumer
 * rather than growing memory. A failed publish fails the step: every later `push` and `flush` throws it.
 */
export class RunEventBuffer {
  private readonly queue: Queued[] = [];
  private queuedBytes = 0;
  private inFlight: Promise<void> | undefined;
  private failure: RunEventPublishError | undefined;
  private roomWaiters: (() => void)[] = [];
  private lingering: NodeJS.Timeout | undefined;
  private readonly maxBatchEvents: number;
  private readonly maxBatchBytes: number;
  private readonly maxPendingEvents: number;
  private readonly maxPendingBytes: number;

  constructor(private readonly options: RunEventBufferOptions) {
    this.maxBatchEvents = Math.min(options.maxBatchEvents ?? RUN_EVENT_BATCH_MAX, RUN_EVENT_BATCH_MAX);
    this.maxBatchBytes = options.maxBatchBytes ?? RUN_EVENT_BATCH_MAX_BYTES;
    this.maxPendingEvents = options.maxPendingEvents ?? RUN_EVENT_PENDING_MAX;
    this.maxPendingBytes = options.maxPendingBytes ?? RUN_EVENT_PENDING_MAX_BYTES;
  }

  /**
   * Queues the event (published at once if nothing is in flight and there is no linger, else with the next batch);
   * waits only while too much is queued.
   */
  async push(event: AgentRunEvent): Promise<void> {
    if (this.failure) throw this.failure;
    const bytes = Buffer.byteLength(JSON.stringify(event));
    this.queue.push({ event, bytes });
    this.queuedBytes += bytes;
    const lingerMs = this.options.lingerMs ?? 0;
    if (lingerMs > 0 && !this.inFlight && this.queue.length < this.maxBatchEvents) {
      this.lingering ??= setTimeout(() => {
        this.lingering = undefined;
        this.pump();
      }, lingerMs);
    } else this.pump();
    while (!this.failure && (this.queue.length > this.maxPendingEvents || this.queuedBytes > this.maxPendingBytes)) {
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
    }
    if (this.failure) throw this.failure;
  }

  /** Resolves once every event pushed so far is confirmed by the broker (or dropped, without the lease). */
  async flush(): Promise<void> {
    this.stopLingering();
    while (!this.failure && (this.inFlight || this.queue.length > 0)) {
      this.pump();
      if (!this.inFlight) break;
      await this.inFlight;
    }
    if (this.failure) throw this.failure;
  }

  private stopLingering(): void {
    clearTimeout(this.lingering);
    this.lingering = undefined;
  }

  private pump(): void {
    if (this.inFlight || this.failure || this.queue.length === 0) return;
    this.stopLingering();
    if (!this.options.mayPublish()) {
      this.drop();
      return;
    }
    const events: AgentRunEvent[] = [];
    let bytes = 0;
    while (this.queue.length > 0 && events.length < this.maxBatchEvents) {
      const next = this.queue[0];
      if (events.length > 0 && bytes + next.bytes > this.maxBatchBytes) break;
      this.queue.shift();
      this.queuedBytes -= next.bytes;
      events.push(next.event);
      bytes += next.bytes;
    }
    this.wakeProducers();
    this.inFlight = this.options.sink.publish({ events }, this.options.meta).then(
      () => {
        this.inFlight = undefined;
        this.pump();
      },
      (error: unknown) => {
        this.inFlight = undefined;
        this.failure = new RunEventPublishError(
          `Run ${this.options.runId}: publishing ${events.length} event(s) from ${events[0].type} failed: ${error instanceof Error ? error.message : String(error)}`,
        );
        this.drop();
      },
    );
  }

  private drop(): void {
    this.stopLingering();
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.wakeProducers();
  }

  private wakeProducers(): void {
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const wake of waiters) wake();
  }
}
