// `@naalya/server/testing`: what code outside the server that tests the built server needs of its internals (the
// reliability battery's weakened server assembles the app with one protection replaced; its checks read the server's
// own sentences and sign tokens with its own signer). Built to dist/ with the app; one place to follow a moved file.
import 'reflect-metadata';

export { AppModule } from './app/app.module.js';
export { APP_ENTITIES } from './app/app.entities.js';
export { AUDIT_ROW_INSERT, AuditLogService, auditRowValues } from './app/core/audit/audit-log.service.js';
export { loadServerConfig, nestLogLevels } from './app/core/config/server-config.js';
export { createAppDataSource } from './app/core/database/data-source.js';
export { BrokerStatus } from './app/core/health/broker-status.js';
export { currentManager, registerDataSource, runUnscoped, withSchool } from './app/core/tenancy/tenant-context.js';
export { connectToolTransport } from './app/core/transport/tool-transport.js';
export { startAgentRunMessaging } from './app/naalya-ai/agent-run-messaging.js';
export { AgentRunEventStore } from './app/naalya-ai/events/agent-run-event-store.service.js';
export { RunSweeper } from './app/naalya-ai/lifecycle/run-sweeper.service.js';
export { AgentThreadsService } from './app/naalya-ai/threads/agent-threads.service.js';
export { dispatchTokenBody, signDispatchToken, type DispatchClaims } from './app/naalya-ai/dispatch/dispatch-token.js';
export { canonicalHash } from './app/naalya-ai/tools/canonical-hash.js';
export { CALL_ID_REUSED_ERROR, ToolCallLedgerService } from './app/naalya-ai/tools/tool-call-ledger.service.js';
export { SCHOOL_QUOTA_ERROR, ToolCallQuota, USER_QUOTA_ERROR } from './app/naalya-ai/tools/tool-call-quota.js';
export { OUTCOME_UNKNOWN_ERROR } from './app/naalya-ai/tools/tool-error.js';
export {
  CONFIRMATION_REQUIRED_ERROR,
  DEADLINE_PASSED_ERROR,
  DISPATCH_REFUSED_ERROR,
  MALFORMED_ENVELOPE_ERROR,
  MISSING_IDENTITY_ERROR,
  ToolExecutor,
} from './app/naalya-ai/tools/tool-executor.js';
