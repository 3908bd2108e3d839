import { DataSource, type DataSourceOptions } from 'typeorm';
import { CreateTenancySchema1764662400000 } from './migrations/1764662400000-create-tenancy-schema.js';
import { CreateSchoolDomain1764662400001 } from './migrations/1764662400001-create-school-domain.js';
import { CreateAgentRuns1764662400002 } from './migrations/1764662400002-create-agent-runs.js';
import { DispatchRunState1764662400003 } from './migrations/1764662400003-dispatch-run-state.js';
import { CreateToolCallApprovals1764662400004 } from './migrations/1764662400004-create-tool-call-approvals.js';
import { RunLeases1764662400005 } from './migrations/1764662400005-run-leases.js';
import { NotifyRunEventsPerStatement1764662400006 } from './migrations/1764662400006-notify-run-events-per-statement.js';
import { ModelPolicyAndTokenUsage1764662400007 } from './migrations/1764662400007-model-policy-and-token-usage.js';
import { SharedToolCallQuota1764662400009 } from './migrations/1764662400009-shared-tool-call-quota.js';
import { PerUserRunLimits1764662400011 } from './migrations/1764662400011-per-user-run-limits.js';
import { TraceIds1764662400012 } from './migrations/1764662400012-trace-ids.js';
import { RetentionPurge1764662400013 } from './migrations/1764662400013-retention-purge.js';
import { LoginAttemptCounters1764662400014 } from './migrations/1764662400014-login-attempt-counters.js';
import { AuditActivity1764662400015 } from './migrations/1764662400015-audit-activity.js';
import { ThreadSearch1764662400016 } from './migrations/1764662400016-thread-search.js';
import { SchoolTimeZones1764662400017 } from './migrations/1764662400017-school-time-zones.js';
import { McpTokens1764662400018 } from './migrations/1764662400018-mcp-tokens.js';
import { AssistantReplySearch1764662400019 } from './migrations/1764662400019-assistant-reply-search.js';
import { ToolCallStatements1764662400020 } from './migrations/1764662400020-tool-call-statements.js';
import { ApprovalEdits1764662400021 } from './migrations/1764662400021-approval-edits.js';
import { UnfencedReads1764662400022 } from './migrations/1764662400022-unfenced-reads.js';
import { StrayQueryLogger } from './stray-query.logger.js';
import { DEFAULT_STATEMENT_TIMEOUT_MS, registerTransactionTimeouts, transactionTimeoutsFor } from './transaction-timeouts.js';

export const MIGRATIONS = [CreateTenancySchema1764662400000, CreateSchoolDomain1764662400001, CreateAgentRuns1764662400002, DispatchRunState1764662400003, CreateToolCallApprovals1764662400004, RunLeases1764662400005, NotifyRunEventsPerStatement1764662400006, ModelPolicyAndTokenUsage1764662400007, SharedToolCallQuota1764662400009, PerUserRunLimits1764662400011, TraceIds1764662400012, RetentionPurge1764662400013, LoginAttemptCounters1764662400014, AuditActivity1764662400015, ThreadSearch1764662400016, SchoolTimeZones1764662400017, McpTokens1764662400018, AssistantReplySearch1764662400019, ToolCallStatements1764662400020, ApprovalEdits1764662400021, UnfencedReads1764662400022];

/** The entity classes the app maps; the app hands its list down (core does not know the domain). */
export type EntityList = NonNullable<DataSourceOptions['entities']>;

export type DatabaseOptions = { url: string; entities: EntityList; poolSize?: number; statementTimeoutMs?: number };

/**
 * The app's connection: the non-owner role, so row-level security applies to every query.
 *
 * No session settings travel as startup parameters: PgBouncer in transaction pooling refuses a connection that
 * sends statement_timeout (or, told to ignore it, silently drops it), and a session SET would leak to whichever
 * client gets that server connection next. The time limits are set per transaction by the unit of work instead,
 * and as the app role's default by db-setup for the few statements outside one.
 */
export const createAppDataSource = ({ url, entities, poolSize = 8, statementTimeoutMs = DEFAULT_STATEMENT_TIMEOUT_MS }: DatabaseOptions): DataSource => {
  const dataSource = new DataSource({
    type: 'postgres',
    url,
    entities,
    synchronize: false,
    migrationsRun: false,
    installExtensions: false,
    logger: new StrayQueryLogger(),
    maxQueryExecutionTime: 1_000,
    extra: { max: poolSize },
  });
  registerTransactionTimeouts(dataSource, transactionTimeoutsFor(statementTimeoutMs));
  return dataSource;
};

/** The owner's connection: migrations, setup and seeding, all in SQL, so it maps no entities. */
export const createOwnerDataSource = (url: string): DataSource =>
  new DataSource({
    type: 'postgres',
    url,
    migrations: MIGRATIONS,
    migrationsTableName: 'typeorm_migrations',
    synchronize: false,
    installExtensions: false,
    extra: { max: 2 },
  });
