// The built server with one protection switched off, for the battery's sabotage tests only: the same modules and
// bootstrap as apps/server/dist/main.js, assembled with Nest's testing module so a provider or the transport can be
// replaced from outside. Production code has no switch for any of this. The weakening is named by RELIABILITY_WEAKENING (see stack.ts).
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { ServerRMQ } from '@nestjs/microservices';
import { RPC_AGENT_TOOLS, requiresConfirmation } from '@naalya/agent-tools';
import { runInRmqMessageFrame } from '@naalya/rmq';
import {
  APP_ENTITIES,
  AgentRunEventStore,
  AgentThreadsService,
  AppModule,
  AuditLogService,
  BrokerStatus,
  RunSweeper,
  ToolCallLedgerService,
  ToolCallQuota,
  ToolExecutor,
  AUDIT_ROW_INSERT,
  auditRowValues,
  canonicalHash,
  connectToolTransport,
  createAppDataSource,
  currentManager,
  loadServerConfig,
  nestLogLevels,
  registerDataSource,
  startAgentRunMessaging,
} from '@naalya/server/testing';
import { Test } from '@nestjs/testing';
import pg from 'pg';
import { Observable, isObservable } from 'rxjs';

const config = loadServerConfig();

/** Runs one statement as the database's owner on a connection of its own, before the server starts (a weakening's DDL). */
const asOwner = async (sql) => {
  const owner = new pg.Client({ connectionString: config.DATABASE_OWNER_URL });
  await owner.connect();
  try {
    await owner.query(sql);
  } finally {
    await owner.end();
  }
};

let ownerPool;
/** Runs an audit row's insert on an owner connection of its own, committed at once; resolves to the row's id. */
const auditOutside = async (auditRow) => {
  ownerPool ??= new pg.Pool({ connectionString: config.DATABASE_OWNER_URL, max: 4 });
  const { rows } = await ownerPool.query(AUDIT_ROW_INSERT, auditRow);
  return rows[0].id;
};

/** Each weakening: providers to replace, and which transport consumes the tool queue (default: the server's own). */
const WEAKENINGS = {
  // No idempotency ledger: a redelivered or repeated call id runs again. The write's audit row, which rides in the
  // ledger's statement (ToolCallLedgerService.record), is still written in the call's transaction, alone.
  'no-ledger': {
    providers: [
      [
        ToolCallLedgerService,
        {
          claim: async () => undefined,
          lookup: async () => undefined,
          record: async (_callId, _event, _hash, _jwt, _result, _runId, auditRow) =>
            auditRow ? (await currentManager().query(AUDIT_ROW_INSERT, auditRow))[0]?.id : undefined,
        },
      ],
    ],
  },
  // The audit row on its own connection, committed at once: outside the call's unit of work. A write's audit row rides
  // in the ledger's statement (ToolCallLedgerService.record), so that is where it is taken out; any other goes through
  // AuditLogService.record.
  'audit-outside-transaction': {
    providers: [[AuditLogService, { record: async (jwt, entry) => auditOutside(auditRowValues(jwt, entry)) }]],
    afterCompile: async (moduleRef) => {
      const ledger = moduleRef.get(ToolCallLedgerService);
      const record = ledger.record.bind(ledger);
      ledger.record = async (callId, event, hash, jwt, result, runId, auditRow) => {
        const auditId = auditRow ? await auditOutside(auditRow) : undefined;
        await record(callId, event, hash, jwt, result, runId);
        return auditId;
      };
    },
  },
  // Nest's stock RMQ server with its default noAck: every call is acknowledged on delivery (reliability.md, finding 1).
  'ack-on-delivery': { providers: [], transport: 'stock' },
  // The project's transport without its publisher check: a message from any broker user is served.
  'any-publisher': { providers: [], transport: 'any-publisher' },
  // Connected to PostgreSQL as the owner, a superuser row-level security does not apply to (the startup check that
  // refuses such a role, assertRowLevelSecurityApplies, is what this DataSource skips).
  'rls-bypassed': {
    providers: [],
    setup: async () => {
      const { DataSource } = await import('typeorm');
      const dataSource = createAppDataSource({ url: config.DATABASE_OWNER_URL, entities: APP_ENTITIES, poolSize: config.DATABASE_POOL_SIZE, statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS });
      await dataSource.initialize();
      registerDataSource(dataSource);
      return [[DataSource, dataSource]];
    },
  },
  // Every tool's strict argument schema made lenient (unknown keys stripped instead of refused), in place, so the
  // handlers and execute() use it unknowingly.
  'lenient-schemas': {
    providers: [],
    setup: async () => {
      for (const tool of RPC_AGENT_TOOLS) {
        const lenient = tool.schema.strip();
        tool.schema.safeParse = (value, params) => lenient.safeParse(value, params);
      }
      return [];
    },
  },
  // Confirmation not required: before execute() runs a tool that needs it, the server records the caller's approval
  // of exactly that call itself (replacing whatever the user answered).
  'auto-approve': {
    providers: [],
    afterCompile: async (moduleRef) => {
      const pool = new pg.Pool({ connectionString: config.DATABASE_OWNER_URL, max: 2 });
      const executor = moduleRef.get(ToolExecutor);
      const execute = executor.execute.bind(executor);
      executor.execute = async (payload, schema, posture, fn) => {
        const tool = RPC_AGENT_TOOLS.find((candidate) => candidate.schema === schema);
        const args = schema.safeParse(payload?.args);
        // v2.<kid>.<claims>.<mac>: the claims are the third part.
        const token = String(payload?.meta?.dispatchToken ?? '').split('.')[2];
        if (tool && requiresConfirmation(tool) && args.success && token) {
          const claims = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
          const { callId } = payload.meta;
          await pool.query(`DELETE FROM tool_call_approvals WHERE thread_id = $1 AND call_id = $2`, [claims.threadId, callId]);
          await pool.query(
            `INSERT INTO tool_call_approvals (school_id, thread_id, run_id, interrupt_id, call_id, event, args_hash, user_id, approved, answer, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, true, 'yes', now() + interval '15 minutes')`,
            [claims.identity.schoolId, claims.threadId, claims.runId, `auto-${callId}`, callId, tool.event, canonicalHash(args.data), claims.identity.sub],
          );
        }
        return execute(payload, schema, posture, fn);
      };
    },
  },
  // No per-school or per-user quota: every call is let through.
  'no-quota': { providers: [[ToolCallQuota, { take: async () => null, admit: async () => ({ charged: false, refusal: null, window: 0 }), giveBack: () => undefined }]] },
  // No sweeper: nothing takes back a step whose lease expired (a dead worker's), so its run stays running and its
  // thread locked. (Its other duty, starting queued runs, still happens when a run ends through the ingest.)
  'no-sweeper': {
    providers: [],
    afterCompile: async (moduleRef) => {
      moduleRef.get(RunSweeper).start = () => undefined;
    },
  },
  // AGENT_RUN_MAX_ATTEMPTS without a bound (the configuration refuses more than 20): a step that fails on every
  // attempt is dispatched again for ever.
  'unbounded-attempts': {
    providers: [],
    configure: (serverConfig) => {
      serverConfig.AGENT_RUN_MAX_ATTEMPTS = Number.MAX_SAFE_INTEGER;
    },
  },
  // No fencing by epoch: execute()'s run-in-flight check looks at the run's status, owner and thread only (not the
  // token's epoch, nor the lease), and the run events ingest stores an event of any step of a run, current or not,
  // running or ended. A step taken back from a frozen worker can then still write through it.
  'no-fencing': {
    providers: [],
    afterCompile: async (moduleRef) => {
      const executor = moduleRef.get(ToolExecutor);
      executor.runInFlight = (opened, claims) =>
        opened?.run_status === 'running' && opened.run_owner_id === claims.identity.sub && opened.run_thread_id === claims.threadId;
      moduleRef.get(AgentRunEventStore).isFenced = () => false;
    },
  },
  // execute()'s run-in-flight check without its lock: the run's row read by open_tool_call (through
  // agent_run_dispatch_state, redefined in the phase's own database without FOR KEY SHARE), so the call's transaction
  // holds no lock on it: a cancel no longer waits for a write already inside its transaction, and the write commits
  // after the cancel has answered (without being listed in its committed writes).
  'unlocked-run-check': {
    providers: [],
    setup: async () => {
      await asOwner(`
        CREATE OR REPLACE FUNCTION agent_run_dispatch_state(p_run_id uuid)
          RETURNS TABLE (status text, owner_id uuid, thread_id uuid, epoch integer, lease_live boolean)
          LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
          AS $$ SELECT r.status, r.owner_id, r.thread_id, r.epoch, r.kind = 'direct' OR r.lease_expires_at > now()
                  FROM public.agent_runs r WHERE r.id = p_run_id $$`);
      return [];
    },
  },
  // Starts without their guard: the thread is read without its row lock, and the one-active-run index is dropped from
  // the database, so concurrent messages on a thread each find it free and each start a run.
  'no-thread-lock': {
    providers: [],
    setup: async () => {
      await asOwner('DROP INDEX IF EXISTS uq_agent_runs_one_active_per_thread');
      return [];
    },
    afterCompile: async (moduleRef) => {
      const threads = moduleRef.get(AgentThreadsService);
      const ownedThread = threads.ownedThread.bind(threads);
      threads.ownedThread = (threadId, caller) => ownedThread(threadId, caller);
    },
  },
};

/**
 * Nest's stock RMQ server (its default noAck), running each handler in the message frame the project's transport gives
 * it, with the pattern the stock server found the handler under: execute() refuses a call outside a frame, and the
 * weakening is acknowledging on delivery, not that. As the project's transport does, a handler's cold Observable (what
 * Nest's interceptors return) is subscribed inside the frame too, since the work runs on subscription. The stock server
 * has no time limit, so the frame is never aborted.
 */
class StockServerWithFrames extends ServerRMQ {
  getHandlerByPattern(pattern) {
    const handler = super.getHandlerByPattern(pattern);
    if (!handler) return handler;
    const inFrame = async (data, context) => {
      const { properties, fields, content } = context.getMessage();
      const frame = { pattern, properties, fields, content, signal: new AbortController().signal, aborted: false, logIds: {} };
      const result = await runInRmqMessageFrame(frame, () => handler(data, context));
      return isObservable(result) ? new Observable((subscriber) => runInRmqMessageFrame(frame, () => result.subscribe(subscriber))) : result;
    };
    return Object.assign(inFrame, { isEventHandler: handler.isEventHandler, extras: handler.extras, next: handler.next });
  }
}

const weakening = WEAKENINGS[process.env.RELIABILITY_WEAKENING];
if (!weakening) {
  console.error(`Unknown weakening "${process.env.RELIABILITY_WEAKENING}"; one of: ${Object.keys(WEAKENINGS).join(', ')}`);
  process.exit(2);
}

weakening.configure?.(config);
let builder = Test.createTestingModule({ imports: [AppModule.forRoot(config)] });
for (const [token, value] of [...weakening.providers, ...((await weakening.setup?.()) ?? [])]) builder = builder.overrideProvider(token).useValue(value);
const moduleRef = await builder.compile();
await weakening.afterCompile?.(moduleRef);
const app = moduleRef.createNestApplication({ abortOnError: false, logger: nestLogLevels(config.LOG_LEVEL) });
app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
if (weakening.transport === 'stock') {
  app.connectMicroservice({
    strategy: new StockServerWithFrames({
      urls: [config.RABBITMQ_URL],
      queue: config.AGENT_TOOLS_QUEUE,
      noAssert: true,
      prefetchCount: config.DATABASE_POOL_SIZE,
    }),
  });
} else if (weakening.transport === 'any-publisher') {
  // The server's own tool transport without a broker user to require: connectToolTransport passes WORKER_BROKER_USER
  // as the transport's requireUserId, and the transport checks no publisher without one.
  connectToolTransport(app, { ...config, WORKER_BROKER_USER: undefined });
} else {
  connectToolTransport(app, config);
}
await app.startAllMicroservices();
// The stock server reports nothing to /ready, which waits for the broker: it is connected once it listens.
if (weakening.transport === 'stock') app.get(BrokerStatus).report(true);
await startAgentRunMessaging(app);
await app.listen(config.HTTP_PORT, '127.0.0.1');
new Logger('Server').log(`Weakened server (${process.env.RELIABILITY_WEAKENING}) on ${await app.getUrl()}`);
