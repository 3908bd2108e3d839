import type { DataSource } from 'typeorm';

// Apart from data-source.ts so the unit of work can read them without importing the data source's module graph
// (its query logger imports the unit of work).

/** The time limits every unit of work sets on its own transaction (see tenant-context's openFrame). */
export type TransactionTimeouts = { statementTimeoutMs: number; idleInTransactionTimeoutMs: number };

export const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000;

/** An idle transaction holds its connection and its row locks: it gets twice a statement's time, then is ended. */
export const transactionTimeoutsFor = (statementTimeoutMs: number): TransactionTimeouts => ({
  statementTimeoutMs,
  idleInTransactionTimeoutMs: statementTimeoutMs * 2,
});

const timeoutsBySource = new WeakMap<DataSource, TransactionTimeouts>();

export const registerTransactionTimeouts = (dataSource: DataSource, timeouts: TransactionTimeouts): void => {
  timeoutsBySource.set(dataSource, timeouts);
};

/** The limits the data source was created with, so whoever opens its transactions applies them. */
export const transactionTimeoutsOf = (dataSource: DataSource): TransactionTimeouts =>
  timeoutsBySource.get(dataSource) ?? transactionTimeoutsFor(DEFAULT_STATEMENT_TIMEOUT_MS);
