import { AsyncLocalStorage } from 'node:async_hooks';
import type { DataSource, EntityManager, EntityTarget, ObjectLiteral, QueryRunner, Repository } from 'typeorm';
import { transactionTimeoutsOf } from '../database/transaction-timeouts.js';

/** A frame is pinned to one school, or unscoped (platform admins read across schools). */
export type TenantScope = { kind: 'school'; schoolId: string } | { kind: 'unscoped' };

type Frame = {
  scope: TenantScope;
  actorId: string;
  runner: QueryRunner;
  manager: EntityManager;
  /** The pooled driver connection the runner holds, once the frame has it: see frameQuery. */
  connection: FrameConnection | undefined;
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
export const currentManager = (): EntityManager => currentFrame().manager;

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

/** The open frame's connection, for stray-query detection. */
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

/** What the frame's own statements need of the pooled driver connection TypeORM's query runner holds. */
type FrameConnection = { query(sql: string, params?: readonly unknown[]): Promise<{ rows: Record<string, unknown>[] }> };

/**
 * The frame's own statements (BEGIN, the pin, COMMIT, ROLLBACK) go straight to the driver connection the query runner
 * holds: TypeORM's startTransaction/query/commitTransaction wrap each in broadcaster events and several promises, CPU on
 * every tool call for statements that have no entity, subscriber or result mapping to do. Slow ones are still logged
 * through the data source's logger, as TypeORM logs the services' queries.
 */
const frameStatement = async (connection: FrameConnection, sql: string, params?: readonly unknown[]): Promise<Record<string, unknown>[]> => {
  const started = Date.now();
  const { rows } = await connection.query(sql, params);
  const elapsed = Date.now() - started;
  const source = dataSource();
  if (source.options.maxQueryExecutionTime && elapsed > source.options.maxQueryExecutionTime) source.logger.logQuerySlow(elapsed, sql, params as unknown[]);
  return rows;
};

const pin = (connection: FrameConnection, scope: TenantScope, actorId: string, read: PinningRead | undefined): Promise<PinnedRows> =>
  read ? frameStatement(connection, read.sql, [...pinValues(scope, actorId), ...read.params]) : frameStatement(connection, PIN, pinValues(scope, actorId)).then(() => []);

const openFrame = async <T>(scope: TenantScope, actorId: string, fn: (pinned: PinnedRows) => Promise<T>, read: PinningRead | undefined): Promise<T> => {
  const runner = dataSource().createQueryRunner('master');
  const frame: Frame = { scope, actorId, runner, manager: runner.manager, connection: undefined, rollbackOnly: false, slots: new Map() };
  // BEGIN..COMMIT run inside als.run so every query of the unit of work sees the frame.
  return frames.run(frame, async () => {
    let connection: FrameConnection | undefined;
    try {
      connection = frame.connection = (await runner.connect()) as FrameConnection;
      await frameStatement(connection, 'START TRANSACTION');
      recordTransaction(runner, true);
      const result = await fn(await pin(connection, scope, actorId, read));
      if (frame.rollbackOnly) {
        await endTransaction(runner, connection, 'ROLLBACK');
        return result;
      }
      try {
        await endTransaction(runner, connection, 'COMMIT');
      } catch (error) {
        throw new CommitOutcomeUnknownError(error);
      }
      return result;
    } catch (error) {
      if (connection && runner.isTransactionActive && !runner.isReleased) await endTransaction(runner, connection, 'ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      // Work that outlives its unit of work (a promise nobody awaited) must not reach the connection once the pool has
      // handed it to another unit of work, perhaps another school's: TypeORM's released runner refuses it the same way.
      frame.connection = undefined;
      await runner.release();
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

const endTransaction = (runner: QueryRunner, connection: FrameConnection, statement: 'COMMIT' | 'ROLLBACK'): Promise<unknown> => {
  // Cleared first: a COMMIT that fails leaves no transaction to roll back (PostgreSQL ended it either way).
  recordTransaction(runner, false);
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
