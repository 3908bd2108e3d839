// Statements of one role in one database, from PostgreSQL's own statement log: `ALTER ROLE .. IN DATABASE .. SET
// log_statement = 'all'` applies to sessions opened afterwards, so a server started after it logs every statement.
import { openSync, readSync, statSync, closeSync } from 'node:fs';

export const POSTGRES_LOG = process.env.BENCH_POSTGRES_LOG ?? '/var/log/postgresql/postgresql-15-main.log';

export const logOffset = () => {
  try {
    return statSync(POSTGRES_LOG).size;
  } catch {
    return 0;
  }
};

const readFrom = (offset) => {
  const size = statSync(POSTGRES_LOG).size;
  if (size <= offset) return '';
  const buffer = Buffer.alloc(size - offset);
  const fd = openSync(POSTGRES_LOG, 'r');
  readSync(fd, buffer, 0, buffer.length, offset);
  closeSync(fd);
  return buffer.toString('utf8');
};

/**
 * The statements logged since `offset` for user@database, in order, each with its backend pid. Extended-protocol
 * statements are logged as `execute <name>: SQL`, simple ones as `statement: SQL`; continuation lines are joined.
 */
export const readStatements = (offset, user, database) => {
  const text = readFrom(offset);
  const entries = [];
  let current;
  const head = /^\d{4}-\d\d-\d\d [\d:.]+ \w+ \[(\d+)\] (\S*)@(\S*) (LOG|DETAIL|ERROR|STATEMENT|WARNING|HINT|CONTEXT): {2}(.*)$/;
  for (const line of text.split('\n')) {
    const match = head.exec(line);
    if (match) {
      current = undefined;
      const [, pid, who, db, level, rest] = match;
      if (who !== user || db !== database || level !== 'LOG') continue;
      const statement = /^(?:statement|execute [^:]*): (.*)$/.exec(rest);
      if (!statement) continue;
      current = { pid: Number(pid), sql: statement[1] };
      entries.push(current);
    } else if (current && /^\s/.test(line)) {
      current.sql += ` ${line.trim()}`;
    } else {
      current = undefined;
    }
  }
  return entries.map((entry) => ({ ...entry, sql: entry.sql.replace(/\s+/g, ' ').trim() }));
};

export const setStatementLogging = async (owner, role, database, on) => {
  await owner.query(
    on ? `ALTER ROLE "${role}" IN DATABASE "${database}" SET log_statement = 'all'` : `ALTER ROLE "${role}" IN DATABASE "${database}" RESET log_statement`,
  );
};
