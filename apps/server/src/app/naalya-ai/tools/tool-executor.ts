import { Inject, Injectable, Logger } from '@nestjs/common';
import { dispatchKeyRing } from '../../core/config/signing-key-ring.js';
import { AuditSource, UserType } from '@naalya/access';
import {
  ERROR_SENTENCES,
  INVALID_ARGUMENTS_PREFIX,
  RPC_AGENT_TOOLS,
  agentToolRequestSchema,
  isMutatingEvent,
  toolError,
  type AgentCallScope,
  type AgentToolResult,
  type AnyAgentTool,
  type ConfirmationPreview,
} from '@naalya/agent-tools';
import { addLogContextSource, type LogContext } from '@naalya/observability';
import { currentRmqMessage } from '@naalya/rmq';
import { failSpan, inSpan, tracingEnabled } from '@naalya/telemetry';
import type { ZodType } from 'zod';
import { AuditLogService, auditRowValues } from '../../core/audit/audit-log.service.js';
import { AppAbilityFactory } from '../../core/authorization/app-ability.factory.js';
import { IdentityService, type CallerWithPermissions } from '../../core/auth/identity.service.js';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { nulCharacterPath, nulCharacterSentence } from '../../core/http/hostile-input.js';
import { measureToolCall, serverMetrics } from '../../core/observability/server-metrics.js';
import { markRollbackOnly, type PinnedRows, type PinningRead } from '../../core/tenancy/tenant-context.js';
import { envelopeMatchesClaims, verifyDispatchToken, type DispatchClaims } from '../dispatch/dispatch-token.js';
import { checkApproval, type LiveApproval } from '../runs/tool-call-approvals.js';
import { tenantJwtFor } from '../../core/tenancy/tenant-scope.js';
import { canonicalHash } from './canonical-hash.js';
import { toolAuditEntry } from './tool-audit.js';
import { ToolCallLedgerService, requestHash } from './tool-call-ledger.service.js';
import { ToolCallQuota, type Admission } from './tool-call-quota.js';
import type { ToolPosture } from './tool-posture.js';
import { hasNoTenantScope, inTenantScope, runInRelationshipToolScope, runInToolScope, toJwtPayload } from './tool-scope.js';
import { invalidArgumentsSentence, toToolError } from './tool-error.js';

export const MISSING_IDENTITY_ERROR = ERROR_SENTENCES.IDENTITY_MISSING;
export const MALFORMED_ENVELOPE_ERROR = ERROR_SENTENCES.ENVELOPE_MALFORMED;
export const DEADLINE_PASSED_ERROR = ERROR_SENTENCES.DEADLINE_PASSED;
export const DEFAULT_RELATIONSHIP_SCOPE_NOTE =
  'This covers only what you are directly responsible for, such as your own classes, subjects or departments.';

/** The one sentence the model sees for every refused dispatch token; the reason goes to the security log only. */
export const DISPATCH_REFUSED_ERROR = ERROR_SENTENCES.DISPATCH_REFUSED;

/** What the model sees when a tool that needs confirmation arrives without the user's approval of exactly this call. */
export const CONFIRMATION_REQUIRED_ERROR = ERROR_SENTENCES.CONFIRMATION_REQUIRED;

/**
 * What the model sees when the message was not delivered under the event of the tool the handler asked execute() to
 * run (a handler wired to another tool's schema, or a call outside the transport): that tool's rules must not apply.
 */
export const TOOL_MISMATCH_ERROR = ERROR_SENTENCES.TOOL_MISMATCH;

const securityLog = new Logger('Security');

/** A refused call is a security event: who it claimed to be, what it asked for, and why it was refused. */
export const logSecurityEvent = (details: { kind: string; reason: string; [key: string]: unknown }): void => {
  securityLog.warn({ msg: `security event: ${details.kind} refused (${details.reason})`, ...details });
};

/** Clock skew allowed between the worker that set the deadline and this server. */
const DEADLINE_SKEW_MS = 2_000;

// A tool call's ids ride on its message frame (RmqMessageFrame.logIds), which the transport already holds: every line
// written while the call runs, a masked error's cause included, carries them.
addLogContextSource(() => (currentRmqMessage()?.logIds ?? {}) as LogContext);

const TOOLS_BY_SCHEMA = new Map<unknown, AnyAgentTool>(RPC_AGENT_TOOLS.map((definition) => [definition.schema, definition]));

/**
 * Campus mode: a campus-scoped tool runs in the envelope's campus (token-checked), whatever campusId the model passed.
 * School mode leaves the model's campusId for the service to check.
 */
const inCallCampus = <A>(definition: AnyAgentTool, scope: AgentCallScope, args: A): A =>
  definition.campusScoped && scope.mode === 'campus' ? { ...args, campusId: scope.campusId } : args;

/**
 * A tool call's first statement after BEGIN (open_tool_call, migrations 1764662400020 and 022): the tenant pin and time
 * limits, the token's run, and the caller with their permissions, in one round trip. `fence`: a write's run lookup
 * holds a KEY SHARE lock on the run's row until the call commits, so a cancel waits for it (see runInFlight); a read
 * or a preview commits nothing, so it takes no lock (and stays a read-only transaction).
 */
const openToolCall = (runId: string, fence: boolean): PinningRead => ({
  sql: `SELECT * FROM open_tool_call($1, $2, $3, $4, $5, $6, $7)`,
  params: [runId, fence],
});

type OpenedCall = {
  run_status: string | null;
  run_owner_id: string | null;
  run_thread_id: string | null;
  run_epoch: number | null;
  run_lease_live: boolean | null;
  caller_active: boolean | null;
  caller_type: string | null;
  caller_school_id: string | null;
  caller_campus_id: string | null;
  caller_permissions: CallerWithPermissions['permissions'] | null;
};

type CallPlan = {
  event: string;
  /** The tool's name, as the audit row and the Activity page show it. */
  toolName: string;
  callId: string;
  deadline: number;
  identityJwt: JwtPayload;
  tenantJwt: JwtPayload;
  scope: AgentCallScope;
  /** Writes only: the hash of the request the idempotency ledger keys the call's outcome to (reads have no ledger). */
  ledgerHash?: string;
  dispatch: DispatchClaims;
  /** The sha256 of the canonical parsed arguments, for a tool whose calls need the user's approval. */
  confirmArgsHash?: string;
  /** A confirmable call's preview: its checks and gate run, its renderer instead of the call, and nothing is written. */
  preview: boolean;
  /** The quota's word on this call: a write refused by it is still answered from the ledger if it committed before. */
  admission: Admission;
  /** Returns the call's quota when the ledger answers it (its first copy paid). */
  giveBack: () => void;
  /** Who published the call, as the broker validated it: the MCP door's user, or the worker's (Rover). */
  source: typeof AuditSource.AGENT | typeof AuditSource.MCP;
};

/**
 * The only RPC entry: every @MessagePattern handler funnels here. HTTP guards do not run on RabbitMQ,
 * so this parses, pins the tenant, rebuilds the ability, gates, audits and never throws.
 */
@Injectable()
export class ToolExecutor {
  constructor(
    private readonly abilityFactory: AppAbilityFactory,
    private readonly identityService: IdentityService,
    private readonly auditLogService: AuditLogService,
    private readonly ledger: ToolCallLedgerService,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
    private readonly quota: ToolCallQuota,
  ) {}

  execute<A, T>(
    payload: unknown,
    schema: ZodType<A>,
    posture: ToolPosture<T, A>,
    fn: (args: A, jwt: JwtPayload) => Promise<T>,
  ): Promise<AgentToolResult<T>> {
    // Not async (its promise is measureToolCall's), and nothing here can throw: execute() never throws.
    // Labelled by the tool's event (a fixed set), never by the envelope's claims, which a forger chooses.
    const tool = TOOLS_BY_SCHEMA.get(schema)?.event ?? 'unknown';
    const frame = currentRmqMessage();
    if (frame?.fields.redelivered) serverMetrics.redeliveries.inc({ kind: 'tool-call' });
    // The call's id, read before anything is checked, so every line written for it (a masked error's cause included)
    // can be found by it; a claim to log, never to decide on.
    const callId = (payload as { meta?: { callId?: unknown } } | undefined)?.meta?.callId;
    if (frame && typeof callId === 'string' && callId !== '') frame.logIds.callId = callId.slice(0, 100);
    return measureToolCall(tool, () => this.executeTraced(tool, payload, schema, posture, fn));
  }

  private executeTraced<A, T>(
    tool: string,
    payload: unknown,
    schema: ZodType<A>,
    posture: ToolPosture<T, A>,
    fn: (args: A, jwt: JwtPayload) => Promise<T>,
  ): Promise<AgentToolResult<T>> {
    // Not async: with tracing off it hands back executeCall's own promise, no wrapper (each costs hooks on Node 20).
    if (!tracingEnabled()) return this.executeCall(payload, schema, posture, fn);
    // One span around the whole call, parent of its SQL (the audit insert included) and child of the AMQP hop's.
    return inSpan('execute', { attributes: { 'naalya.tool.event': tool } }, async (span) => {
      const result = await this.executeCall(payload, schema, posture, fn);
      // execute() never throws: a refusal or a masked failure is a result, recorded by its code (never its text).
      if ('error' in result) failSpan(span, undefined, result.code ?? 'error');
      return result;
    });
  }

  private async executeCall<A, T>(
    payload: unknown,
    schema: ZodType<A>,
    posture: ToolPosture<T, A>,
    fn: (args: A, jwt: JwtPayload) => Promise<T>,
  ): Promise<AgentToolResult<T>> {
    try {
      // Step 0: the envelope is untrusted bytes; nothing runs unless it has exactly the published shape.
      const envelope = payload as { identity?: { sub?: unknown; type?: unknown } } | undefined;
      if (!envelope?.identity?.sub || !envelope.identity.type) return toolError('IDENTITY_MISSING');
      // The whole envelope, before anything reads it: a NUL would otherwise fail in PostgreSQL as a masked error.
      const nulPath = nulCharacterPath(payload, '');
      if (nulPath) return { error: `${INVALID_ARGUMENTS_PREFIX}${nulCharacterSentence(nulPath)}`, code: 'INVALID_ARGUMENTS' };
      const parsedEnvelope = agentToolRequestSchema.safeParse(payload);
      if (!parsedEnvelope.success) return toolError('ENVELOPE_MALFORMED');
      const { identity, scope, meta } = parsedEnvelope.data;

      const definition = TOOLS_BY_SCHEMA.get(schema);
      if (!definition) throw new Error('execute() was given a schema that is not a registered tool definition.');
      // The transport found this handler under the message's pattern; the schema must be that event's, or another tool's rules would apply.
      const frame = currentRmqMessage();
      const pattern = frame?.pattern;
      if (pattern !== definition.event) {
        logSecurityEvent({
          kind: 'tool call',
          reason: pattern === undefined ? 'no-message-frame' : 'pattern-mismatch',
          event: definition.event,
          pattern,
          callId: meta.callId,
          sub: identity.sub,
        });
        return toolError('TOOL_MISMATCH');
      }

      // The server's own signature over what it minted at dispatch: identity and scope must be exactly those.
      const token = verifyDispatchToken(dispatchKeyRing(this.config), meta.dispatchToken);
      const refusal = token.ok ? envelopeMatchesClaims({ identity, scope }, token.claims) : token.reason;
      if (!token.ok || refusal) {
        logSecurityEvent({ kind: 'tool call', reason: refusal ?? 'malformed', event: definition.event, callId: meta.callId, sub: identity.sub });
        return toolError('DISPATCH_REFUSED');
      }

      // Counted only once the call is proven to be the server's own dispatch: a forger cannot spend a school's allowance.
      // A call id is counted once: a worker's re-send of an interrupted call is the same call.
      const quotaSchool = (scope.mode === 'school' ? scope.targetSchoolId : undefined) ?? identity.schoolId ?? 'platform';
      const admitting = this.quota.admit(meta.callId, meta.deadline, quotaSchool, identity.sub);
      // Most calls are admitted from the calls in hand, with no promise to wait for.
      const admission = admitting instanceof Promise ? await admitting : admitting;
      // A preview is a read of a confirmable write: the write's checks and gate, none of its ledger, approval or audit.
      const preview = meta.preview === true;
      if (preview && !definition.confirm) return toolError('TOOL_MISMATCH');
      // Fails closed: without its renderer nothing is asked, so the call cannot be approved either.
      if (preview && !posture.confirmation) throw new Error(`Tool "${definition.name}" needs confirmation but its handler has no renderer.`);
      const writes = isMutatingEvent(definition.event);
      const mutating = writes && !preview;
      // A write over quota may be the repeat of one that committed: the ledger answers it first (runInFrame), or the
      // model would hear "refused" for a change that happened. A read is refused before any database work.
      if (admission.refusal && !mutating) {
        serverMetrics.quotaRefusals.inc({ quota: admission.refusal });
        return toolError(admission.refusal);
      }

      const args = schema.safeParse(parsedEnvelope.data.args);
      // A full stop: the model reads one sentence (zod's own issue messages end without one).
      if (!args.success) return { error: invalidArgumentsSentence(args.error.issues), code: 'INVALID_ARGUMENTS' };

      const identityJwt = toJwtPayload(identity);
      if (hasNoTenantScope(identityJwt)) return toolError('NO_TENANT_SCOPE');
      const targetSchoolId = scope.mode === 'school' ? scope.targetSchoolId : undefined;
      if (writes && identity.type === UserType.PLATFORM_ADMIN && !targetSchoolId) {
        return toolError('PLATFORM_WRITE_NEEDS_SCHOOL');
      }

      const plan: CallPlan = {
        event: definition.event,
        toolName: definition.name,
        callId: meta.callId,
        deadline: meta.deadline,
        identityJwt,
        tenantJwt: tenantJwtFor(identityJwt, targetSchoolId),
        scope,
        ...(mutating ? { ledgerHash: requestHash({ event: definition.event, identity, scope, args: args.data }) } : {}),
        dispatch: token.claims,
        ...(definition.confirm && !preview ? { confirmArgsHash: canonicalHash(args.data) } : {}),
        preview,
        admission,
        giveBack: () => this.quota.giveBack(admission, quotaSchool, identity.sub),
        // The transport ran this message only because its user_id is the worker's or the door's (RabbitMQ checks it
        // against the connection's user): the audit source is read from there, never from the envelope.
        source: frame?.properties.userId === this.config.MCP_BROKER_USER ? AuditSource.MCP : AuditSource.AGENT,
      };
      // The ledger and approval hashes above are of the arguments as the model sent them; only the service sees the pinned campus.
      const callArgs = inCallCampus(definition, scope, args.data);
      // The run is known once the dispatch token is verified: lines from here on (a masked error's cause, the call's
      // own line in measureToolCall) carry it.
      if (frame) frame.logIds.runId = token.claims.runId;
      if (preview && posture.confirmation) {
        const render = posture.confirmation;
        const previewed = await inTenantScope(
          plan.tenantJwt,
          (opened) =>
            this.runInFrame(plan, opened, { ...posture, audit: undefined }, callArgs, async (): Promise<ConfirmationPreview> => ({
              question: await render(callArgs, plan.tenantJwt),
            })),
          openToolCall(plan.dispatch.runId, false),
        );
        // The handler's result type is the call's; a preview's data is the question, which only a preview request reads.
        return previewed as AgentToolResult<never>;
      }
      return await inTenantScope(
        plan.tenantJwt,
        (opened) => this.runInFrame(plan, opened, posture, callArgs, () => fn(callArgs, plan.tenantJwt)),
        openToolCall(plan.dispatch.runId, mutating),
      );
    } catch (error) {
      // Logged here, once, with the call's ids: the worker and the model only ever see the masked sentence.
      return toToolError(error, 'execute');
    }
  }

  private async runInFrame<A, T>(
    plan: CallPlan,
    pinned: PinnedRows,
    posture: ToolPosture<T, A>,
    args: A,
    call: () => Promise<T>,
  ): Promise<AgentToolResult<T>> {
    const opened = pinned[0] as OpenedCall | undefined;
    if (!this.runInFlight(opened, plan.dispatch)) {
      logSecurityEvent({ kind: 'tool call', reason: 'run-not-in-flight', event: plan.event, callId: plan.callId, sub: plan.identityJwt.sub, runId: plan.dispatch.runId });
      return toolError('DISPATCH_REFUSED');
    }
    if (plan.ledgerHash !== undefined) {
      // A redelivered or replayed call returns what it returned the first time, even past its deadline or over quota.
      const stored = await this.ledger.claim(plan.callId, plan.ledgerHash, plan.deadline);
      if (stored) {
        plan.giveBack();
        return stored as AgentToolResult<T>;
      }
    }
    if (plan.admission.refusal) {
      serverMetrics.quotaRefusals.inc({ quota: plan.admission.refusal });
      return toolError(plan.admission.refusal);
    }
    // Bound to the token's thread and caller, so an approval given in another conversation or by someone else never counts.
    let approval: LiveApproval | undefined;
    if (plan.confirmArgsHash !== undefined) {
      const checked = await checkApproval({
        threadId: plan.dispatch.threadId,
        callId: plan.callId,
        event: plan.event,
        argsHash: plan.confirmArgsHash,
        userId: plan.identityJwt.sub,
      });
      if ('refusal' in checked) {
        const refused = checked.refusal;
        if (refused === 'expired') serverMetrics.approvals.inc({ outcome: 'expired' });
        logSecurityEvent({ kind: 'tool call', reason: `approval-${refused}`, event: plan.event, callId: plan.callId, sub: plan.identityJwt.sub, runId: plan.dispatch.runId });
        return toolError('CONFIRMATION_REQUIRED');
      }
      approval = checked.approval;
    }
    if (Date.now() > plan.deadline + DEADLINE_SKEW_MS) return toolError('DEADLINE_PASSED');

    // The caller and their permission rows, read by open_tool_call under this call's pin; the ability is rebuilt from
    // them (never cached). Checked only here, after the ledger: a replay of a committed call gets its stored outcome.
    const permissions = this.identityService.permissionsIfCurrent(
      opened?.caller_permissions
        ? {
            isActive: opened.caller_active === true,
            userType: opened.caller_type ?? '',
            schoolId: opened.caller_school_id,
            campusId: opened.caller_campus_id,
            permissions: opened.caller_permissions,
          }
        : undefined,
      plan.identityJwt,
    );
    const ability = this.abilityFactory.fromPermissions(plan.tenantJwt, permissions);
    // A delete removes the row its name is read from: read it first, in the same transaction.
    const targetId = posture.audit?.target?.(args as Record<string, unknown>);
    const nameBefore = posture.audit && targetId ? await this.auditLogService.resourceName(posture.audit.resourceType, targetId) : null;
    const result =
      posture.auth === 'casl'
        ? await runInToolScope({ jwt: plan.tenantJwt, ability, scope: plan.scope }, posture.gate, call)
        : await runInRelationshipToolScope(plan.tenantJwt, ability, posture.scopeNote ?? DEFAULT_RELATIONSHIP_SCOPE_NOTE, call);
    if ('error' in result || plan.preview) {
      // A refused or failed call leaves nothing behind, whatever the service wrote before it threw; a preview writes nothing.
      markRollbackOnly();
      return result;
    }
    const audit = posture.audit
      ? toolAuditEntry(
          {
            action: posture.audit.action,
            resourceType: posture.audit.resourceType,
            resourceId: posture.audit.resourceId?.(result.data),
            resourceName: nameBefore ?? posture.audit.resourceName?.(result.data) ?? null,
          },
          { callId: plan.callId, tool: plan.toolName, runId: plan.dispatch.runId, args, source: plan.source, approval },
        )
      : undefined;
    // The audit row and the ledger row in one statement (the ledger's outcome carries the audit row's id).
    const auditId =
      plan.ledgerHash !== undefined
        ? await this.ledger.record(plan.callId, plan.event, plan.ledgerHash, plan.tenantJwt, result, plan.dispatch.runId, audit && auditRowValues(plan.tenantJwt, audit))
        : audit && (await this.auditLogService.record(plan.tenantJwt, audit));
    if (auditId) result.auditId = auditId;
    // Past the transport's time limit the caller already got an error: commit nothing it no longer expects.
    if (currentRmqMessage()?.aborted) throw new Error('The tool call ran past its time limit; rolled back.');
    return result;
  }

  /**
   * The token's run is still running under the token's epoch with a live lease (a direct run needs none), is the token's
   * caller's, and is in the token's thread. For a write, open_tool_call read it through agent_run_dispatch_state, which
   * takes a KEY SHARE lock on the run's row until this call's transaction ends, so a cancel (which locks the row FOR
   * UPDATE) waits for the call: it commits before the cancel answers, or finds the run cancelled here and commits
   * nothing. A read is checked the same way without the lock (agent_run_read_state): it commits nothing, so a cancel
   * need not wait for it. Lease renewals and stored events do not wait. (A method, not a free function, so the
   * battery's weakened server can switch the fence off in its sabotage test.)
   */
  runInFlight(opened: OpenedCall | undefined, claims: DispatchClaims): boolean {
    return (
      opened?.run_status === 'running' &&
      opened.run_epoch === claims.epoch &&
      opened.run_lease_live === true &&
      opened.run_owner_id === claims.identity.sub &&
      opened.run_thread_id === claims.threadId
    );
  }
}
