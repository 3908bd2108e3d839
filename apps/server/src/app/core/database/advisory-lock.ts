import { currentManager } from '../tenancy/tenant-context.js';

/**
 * Serialises the units of work that take the same key, on every server replica, until this one commits or rolls back:
 * for a check-then-write with no row to lock yet (a first insert, a count against a limit). A transaction advisory
 * lock is never left held; keys hash to 64 bits, and a collision only makes two unrelated writes wait for each other.
 * (A tool call's ledger claim takes the same lock with a wait bounded by the call's deadline, in claim_tool_call.)
 */
export const lockUntilCommit = async (key: string): Promise<void> => {
  await currentManager().query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [key]);
};
