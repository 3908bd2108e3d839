import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@nestjs/common';
import type { DataSource, EntityManager, EntityTarget, ObjectLiteral, QueryRunner, Repository } from 'typeorm';
import { transactionTimeoutsOf } from '../database/transaction-timeouts.js';

/** A frame is pinned to one school, or unscoped (platform admins read across schools). */
export type TenantScope = { kind: 'school'; schoolId: string } | { kind: 'unscoped' };

type Frame = {
  scope: TenantScope;
  actorId: string;
  /** The pooled driver connection, once the frame has it: see frameQuery. */
  connection: FrameConnection | undefined;
  /**
   * TypeORM's query runner on that connection, made when a service first asks for the manager: a tool call's own
   * statements (frameQuery) need none, and making one per unit of work was CPU on every call.
   */
  runner: QueryRunner | undefined;
  rollbackOnly: boolean;
  /** What other layers bind to this unit of work (the rebuilt ability): see unitOfWorkSlot. */
  slots: Map<symbol, unknown>;
};

/** Raised when COMMIT itself failed: the write may or may not have been persisted. */
export class CommitOutcomeUnknownError extends Error {
  constructor(cause: unknown) {
    super('The database did not confirm the commit; the outcome is unknown.', { cause });
  }
}

const frames = new AsyncLocalStorage<Frame>();
const frameLog = new Logger('UnitOfWork');
let registeredDataSource: DataSource | undefined;

/** The app's data source; registered once at startup so free functions like withSchool can open frames. */
export const registerDataSource = (dataSource: DataSource): void => {
  registeredDataSource = dataSource;
};

const dataSource = (): DataSource => {
  if (!registeredDataSource) throw new Error('No data source registered: the database module has not started.');
  return registeredDataSource;
};

/** The open frame. Throws outside one: every query must belong to a unit of work with a known tenant. */
export const currentFrame = (): Frame => {
  const frame = frames.getStore();
  if (!frame) {
    throw new Error('No tenant frame: database access outside withSchool/runUnscoped. Open a unit of work first.');
  }
  return frame;
};

/** The school the open frame is pinned to; throws in an unscoped frame, which has none. */
export const currentSchoolId = (): string => {
  const { scope } = currentFrame();
  if (scope.kind !== 'school') throw new Error('This unit of work is not pinned to a school.');
  return scope.schoolId;
};

export const currentScope = (): TenantScope => currentFrame().scope;

/** The frame's transaction manager: the only way services reach the database. */
export const currentManager = (): EntityManager => runnerOf(currentFrame()).manager;

/**
 * TypeORM's query runner for the frame, on the frame's own connection and inside its transaction (its record of the
 * transaction kept in step, see recordTransaction). Made once per frame, on first use; refused once the frame has
 * ended, like frameQuery.
 */
const runnerOf = (frame: Frame): QueryRunner => {
  if (frame.runner) return frame.runner;
  const connection = connectionOf(frame);
  const runner = dataSource().createQueryRunner('master');
  // The connection the runner would otherwise take from the pool itself: connect() hands back the one it holds. The
  // frame, not the runner, returns it to the pool (the runner has no release callback to call).
  Object.assign(runner, { databaseConnection: connection });
  recordTransaction(runner, true);
  frame.runner = runner;
  return runner;
};

/**
 * One fixed SQL statement on the unit of work's connection, its rows as the driver returns them: for the statements every
 * tool call makes (its data, the ledger, the audit row), which have no entity to map. TypeORM's query() adds broadcaster
 * events and several promises around each, CPU on every call; an error is the driver's (its `code` and `constraint`
 * as in TypeORM's QueryFailedError).
 */
export const frameQuery = <R = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<R[]> =>
  frameStatement(connectionOf(currentFrame()), sql, params) as Promise<R[]>;

const connectionOf = (frame: Frame): FrameConnection => {
  if (!frame.connection) throw new Error('The unit of work has no connection: not connected yet, or already ended.');
  return frame.connection;
};

export const repo = <T extends ObjectLiteral>(entity: EntityTarget<T>): Repository<T> =>
  currentManager().getRepository(entity);

export const isInFrame = (): boolean => frames.getStore() !== undefined;

/** The open frame's query runner, if a service has made one: for stray-query detection (see isInFrame). */
export const currentRunner = (): QueryRunner | undefined => frames.getStore()?.runner;

/** The frame will roll back instead of committing: a refused call must leave nothing behind. */
export const markRollbackOnly = (): void => {
  currentFrame().rollbackOnly = true;
};

/**
 * A value bound to the open unit of work for as long as it lasts, such as the ability rebuilt for it. Held by the
 * frame rather than by an AsyncLocalStorage of its own: on Node 20 every AsyncLocalStorage in use adds work to every
 * promise the process creates (~70 ns each; a tool call makes ~200), so the unit of work keeps one for all it carries.
 */
export type UnitOfWorkSlot<T> = {
  /** Binds the value to the open frame; throws outside one, and when another value is already bound (fails closed). */
  bind(value: T): void;
  /** The bound value, or undefined outside a frame or when nothing was bound. */
  get(): T | undefined;
};

export const unitOfWorkSlot = <T>(name: string): UnitOfWorkSlot<T> => {
  const key = Symbol(name);
  return {
    bind(value) {
      const { slots } = currentFrame();
      if (slots.has(key) && slots.get(key) !== value) throw new Error(`This unit of work already has a ${name}.`);
      slots.set(key, value);
    },
    get: () => frames.getStore()?.slots.get(key) as T | undefined,
  };
};

const sameScope = (left: TenantScope, right: TenantScope) =>
  left.kind === right.kind && (left.kind === 'unscoped' || left.schoolId === (right as { schoolId: string }).schoolId);

/**
 * A read that can be the unit of work's first statement in place of its pin: a SQL function that takes the pin's five
 * values first ($1–$5: school, platform, actor, statement and idle time limits), sets them itself exactly as the pin
 * does, then reads what the caller needs before anything else (a tool call: open_tool_call, its run and its caller).
 * One round trip for both. Its own parameters follow from $6.
 */
export type PinningRead = { sql: string; params: readonly unknown[] };

/** The rows of the pinning read, handed to the unit of work's function (none when it was opened without one). */
export type PinnedRows = Record<string, unknown>[];

// Transaction-local settings: a pooled connection returns to the pool with no tenant left on it. The time limits ride in
// the same statement (no extra round trip): behind PgBouncer's transaction pooling they can be neither startup
// parameters (refused) nor session settings (they would leak to the next client of that connection).
const PIN = `SELECT set_config('app.school_id', $1, true), set_config('app.platform', $2, true), set_config('app.user_id', $3, true),
                set_config('statement_timeout', $4, true), set_config('idle_in_transaction_session_timeout', $5, true)`;

const pinValues = (scope: TenantScope, actorId: string): unknown[] => {
  const { statementTimeoutMs, idleInTransactionTimeoutMs } = transactionTimeoutsOf(dataSource());
  return [scope.kind === 'school' ? scope.schoolId : '', scope.kind === 'unscoped' ? 'on' : '', actorId, String(statementTimeoutMs), String(idleInTransactionTimeoutMs)];
};

type QueryResultRows = { rows: Record<string, unknown>[] };

/** What the frame needs of a pooled pg client: its statements, its errors while held, and its return to the pool. */
type FrameConnection = {
  query(sql: string, params: readonly unknown[] | undefined, callback: (error: Error | null, result: QueryResultRows) => void): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
  removeListener(event: 'error', listener: (error: Error) => void): unknown;
  /** Back to the pool; given an error, the pool discards the connection instead. */
  release(error?: Error): void;
};

type ConnectionPool = { connect(callback: (error: Error | undefined, connection: FrameConnection) => void): void };

/**
 * A connection from the data source's pg pool (TypeORM's postgres driver keeps it as `master`), the one its query runners
 * draw from. The callback form, like frameStatement's: one promise instead of pg-pool's two.
 */
const connect = (): Promise<FrameConnection> =>
  new Promise((resolve, reject) =>
    (dataSource().driver as unknown as { master: ConnectionPool }).master.connect((error, connection) => (error ? reject(error) : resolve(connection))),
  );

/**
 * The frame's own statements (BEGIN, the pin, COMMIT, ROLLBACK) and frameQuery's go straight to its driver connection:
 * TypeORM's startTransaction/query/commitTransaction wrap each in broadcaster events and several promises, CPU on every
 * tool call for statements that have no entity, subscriber or result mapping to do. pg's callback form makes no promise
 * of its own (its promise form makes two); the one promise here is what the caller awaits. Slow statements are still
 * logged through the data source's logger, as TypeORM logs the services' queries, from the caller's context (the
 * callback runs in the connection's, which would put another call's ids on the line).
 */
const frameStatement = (connection: FrameConnection, sql: string, params?: readonly unknown[]): Promise<Record<string, unknown>[]> => {
  const started = Date.now();
  return new Promise<QueryResultRows>((resolve, reject) => connection.query(sql, params, (error, result) => (error ? reject(error) : resolve(result)))).then(
    ({ rows }) => {
      const elapsed = Date.now() - started;
      const source = dataSource();
      if (source.options.maxQueryExecutionTime && elapsed > source.options.maxQueryExecutionTime) source.logger.logQuerySlow(elapsed, sql, params as unknown[]);
      return rows;
    },
    (error: Error) => {
      // As pg's promise form does: the stack leads back to the caller, not to the socket that read the error.
      Error.captureStackTrace(error);
      throw error;
    },
  );
};

const pin = (connection: FrameConnection, scope: TenantScope, actorId: string, read: PinningRead | undefined): Promise<PinnedRows> =>
  read ? frameStatement(connection, read.sql, [...pinValues(scope, actorId), ...read.params]) : frameStatement(connection, PIN, pinValues(scope, actorId)).then(() => []);

const openFrame = <T>(scope: TenantScope, actorId: string, fn: (pinned: PinnedRows) => Promise<T>, read: PinningRead | undefined): Promise<T> => {
  const frame: Frame = { scope, actorId, connection: undefined, runner: undefined, rollbackOnly: false, slots: new Map() };
  // BEGIN..COMMIT run inside als.run so every query of the unit of work sees the frame; its promise is the caller's.
  return frames.run(frame, async () => {
    let connection: FrameConnection | undefined;
    // A held connection that fails between statements (the server gone, the idle-in-transaction limit) reports it as an
    // event, which would end the process unheard; the pool is told to discard it instead.
    let broken: Error | undefined;
    const onError = (error: Error): void => {
      broken = error;
    };
    let open = false;
    try {
      connection = frame.connection = await connect();
      connection.on('error', onError);
      await frameStatement(connection, 'START TRANSACTION');
      open = true;
      const result = await fn(await pin(connection, scope, actorId, read));
      open = false;
      if (frame.rollbackOnly) {
        await endTransaction(frame, connection, 'ROLLBACK');
        return result;
      }
      try {
        await endTransaction(frame, connection, 'COMMIT');
      } catch (error) {
        throw new CommitOutcomeUnknownError(error);
      }
      return result;
    } catch (error) {
      if (connection && open) await endTransaction(frame, connection, 'ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      // Work that outlives its unit of work (a promise nobody awaited) must not reach the connection once the pool has
      // handed it to another unit of work, perhaps another school's: the frame forgets it and its runner is released.
      frame.connection = undefined;
      void frame.runner?.release();
      if (connection) {
        connection.removeListener('error', onError);
        connection.release(broken);
      }
      // Said here, in the unit of work's own context (its ids on the line), not in the listener, which runs in the
      // connection's: the work itself only learns that the connection can no longer be queried.
      if (broken) frameLog.warn(`The unit of work's connection failed and was discarded: ${broken.message}`);
    }
  });
};

/**
 * TypeORM's own record of the transaction (the fields its startTransaction and commitTransaction keep), kept in step
 * with the frame's: with it open, a manager.transaction() inside the frame takes a savepoint instead of sending a
 * second BEGIN and committing the frame's transaction early.
 */
const recordTransaction = (runner: QueryRunner, open: boolean): void => {
  Object.assign(runner, { isTransactionActive: open, transactionDepth: open ? 1 : 0 });
};

const endTransaction = (frame: Frame, connection: FrameConnection, statement: 'COMMIT' | 'ROLLBACK'): Promise<unknown> => {
  if (frame.runner) recordTransaction(frame.runner, false);
  return frameStatement(connection, statement);
};

/**
 * Runs fn in one transaction pinned to a school. Reentrant: inside an open frame for the same
 * school it reuses it; a frame for another tenant is refused rather than silently nested.
 */
const inFrame = <T>(scope: TenantScope, actorId: string, fn: (pinned: PinnedRows) => Promise<T>, read?: PinningRead): Promise<T> => {
  const open = frames.getStore();
  if (open) {
    if (!(sameScope(open.scope, scope) && open.actorId === actorId)) return Promise.reject(new Error('A unit of work for another tenant or actor is already open.'));
    // Pinning again to the same values changes nothing; the read still answers.
    return read ? pin(connectionOf(open), scope, actorId, read).then(fn) : fn([]);
  }
  return openFrame(scope, actorId, fn, read);
};

export const withSchool = <T>(schoolId: string, actorId: string, fn: (pinned: PinnedRows) => Promise<T>, read?: PinningRead): Promise<T> =>
  inFrame({ kind: 'school', schoolId }, actorId, fn, read);

/** Cross-school reads for platform admins; RLS lets the frame read every school and write none. */
export const runUnscoped = <T>(actorId: string, fn: (pinned: PinnedRows) => Promise<T>, read?: PinningRead): Promise<T> =>
  inFrame({ kind: 'unscoped' }, actorId, fn, read);
