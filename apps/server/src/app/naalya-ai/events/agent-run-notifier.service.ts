import { Inject, Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import pg from 'pg';
import { SERVER_CONFIG, databaseListenUrl, type ServerConfig } from '../../core/config/server-config.js';

/** The channel the agent_run_events insert trigger notifies on, with the payload `<run id>:<seq>`. */
export const AGENT_RUN_EVENTS_CHANNEL = 'agent_run_events';

/** Called with the seq just stored, or null when notifications may have been missed (re-read from the table). */
export type RunEventListener = (seq: number | null) => void;

const RECONNECT_DELAY_MS = 1_000;

/**
 * One dedicated PostgreSQL connection per server instance LISTENing for stored run events, whoever stored them (any
 * instance's ingest, or anything else that inserts), and waking the streams this instance holds for that run. The
 * notification only says "look again": streams read the events themselves, as their caller, under RLS. Connected on
 * the first subscription; after a lost connection it reconnects and wakes every stream, since notifications sent
 * in between are gone. It connects to DATABASE_LISTEN_URL: a LISTEN through a transaction pooler is silently lost.
 */
@Injectable()
export class AgentRunNotifier implements BeforeApplicationShutdown {
  private readonly logger = new Logger(AgentRunNotifier.name);
  private readonly listeners = new Map<string, Set<RunEventListener>>();
  private readonly shutdown = new AbortController();
  private client: pg.Client | null = null;
  private listening: Promise<void> | null = null;
  private reconnectTimer: NodeJS.Timeout | undefined;

  constructor(@Inject(SERVER_CONFIG) private readonly config: ServerConfig) {}

  /** Aborted when the application shuts down: streams end so the HTTP server can close. */
  get shutdownSignal(): AbortSignal {
    return this.shutdown.signal;
  }

  /** Resolves once this instance is LISTENing, so nothing stored after it resolves can be missed. */
  async subscribe(runId: string, listener: RunEventListener): Promise<() => void> {
    await this.ensureListening();
    let runListeners = this.listeners.get(runId);
    if (!runListeners) this.listeners.set(runId, (runListeners = new Set()));
    runListeners.add(listener);
    return () => {
      runListeners.delete(listener);
      if (runListeners.size === 0 && this.listeners.get(runId) === runListeners) this.listeners.delete(runId);
    };
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.shutdown.abort();
    clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    this.listening = null;
    await client?.end().catch(() => undefined);
  }

  private ensureListening(): Promise<void> {
    if (this.shutdown.signal.aborted) return Promise.reject(new Error('The server is shutting down.'));
    this.listening ??= this.connect().catch((error: unknown) => {
      this.listening = null;
      throw error;
    });
    return this.listening;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: databaseListenUrl(this.config), application_name: 'naalya-run-events-listener' });
    client.on('notification', (message) => this.dispatch(message.payload));
    client.on('error', (error) => this.onLost(client, error));
    client.on('end', () => this.onLost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${AGENT_RUN_EVENTS_CHANNEL}`);
    } catch (error) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      throw error;
    }
    this.client = client;
  }

  private dispatch(payload: string | undefined): void {
    const [runId, seqText] = (payload ?? '').split(':');
    const seq = Number(seqText);
    if (!runId || !Number.isInteger(seq)) return;
    for (const listener of this.listeners.get(runId) ?? []) listener(seq);
  }

  private onLost(client: pg.Client, error?: Error): void {
    if (this.client !== client) return;
    this.client = null;
    this.listening = null;
    if (this.shutdown.signal.aborted) return;
    this.logger.warn(`The run events listener lost its connection${error ? `: ${error.message}` : ''}. Reconnecting.`);
    client.end().catch(() => undefined);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => {
      if (this.shutdown.signal.aborted || this.listeners.size === 0) return;
      this.ensureListening().then(
        () => this.wakeAll(),
        (error: unknown) => {
          this.logger.warn(`Reconnecting the run events listener failed: ${error instanceof Error ? error.message : String(error)}`);
          this.scheduleReconnect();
        },
      );
    }, RECONNECT_DELAY_MS);
  }

  private wakeAll(): void {
    for (const runListeners of this.listeners.values()) for (const listener of runListeners) listener(null);
  }
}
