import type { Confirmation, RunAnswer } from '@naalya/agent-tools';
import type { AgentRunKind, AgentRunStatus, AgentSpeaker } from '@naalya/agent-tools';
import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { BIGINT_AS_NUMBER } from '../../core/database/bigint-column.js';

/** Statuses that hold the thread's lock: a new run waits until the active one finishes or fails. */
export const ACTIVE_RUN_STATUSES: readonly AgentRunStatus[] = ['running', 'interrupted'];

/** An ask_user question or a confirmation as the run keeps it: `delivered` once its answer went out in a resume request. */
export type StoredInterrupt = {
  interruptId: string;
  question: string;
  askedBy: AgentSpeaker;
  toolCallId?: string;
  argsHash?: string;
  /** Set when the question is a confirmation of one tool call: an answer to it is recorded as that call's approval. */
  confirmation?: Confirmation;
  answered: boolean;
  answer?: string;
  /** Set when the person answered a confirmation with an edit: the edited arguments the worker is resumed with. */
  editedArgs?: Record<string, unknown>;
  answeredAt?: string;
  delivered: boolean;
  /** The run was cancelled or its questions expired before this one was answered. */
  voided?: boolean;
};

/** The step a run is on, so the sweeper can dispatch it again from its checkpoint: a new message, or answers. */
export type RunStep = { kind: 'start' } | { kind: 'resume'; answers: Record<string, RunAnswer> };

@Entity({ name: 'agent_runs' })
export class AgentRunEntity {
  @PrimaryColumn({ type: 'uuid' }) id: string;
  @Column({ name: 'thread_id', type: 'uuid' }) threadId: string;
  @Column({ type: 'text' }) kind: AgentRunKind;
  @Column({ name: 'school_id', type: 'uuid', nullable: true }) schoolId: string | null;
  @Column({ name: 'owner_id', type: 'uuid' }) ownerId: string;
  @Column({ type: 'text' }) status: AgentRunStatus;
  @Column({ type: 'text' }) message: string;
  @Column({ name: 'campus_id', type: 'uuid', nullable: true }) campusId: string | null;
  @Column({ name: 'target_school_id', type: 'uuid', nullable: true }) targetSchoolId: string | null;
  @Column({ name: 'pending_interrupts', type: 'jsonb' }) pendingInterrupts: StoredInterrupt[];
  @Column({ name: 'last_seq', type: 'integer' }) lastSeq: number;
  @Column({ type: 'text', nullable: true }) error: string | null;
  @Column({ name: 'error_code', type: 'text', nullable: true }) errorCode: string | null;
  /** Bumped at every dispatch and by a cancel: only a dispatch token of the current epoch is honoured. */
  @Column({ type: 'integer' }) epoch: number;
  /** How many times the current step was dispatched. */
  @Column({ type: 'integer' }) attempts: number;
  @Column({ name: 'lease_worker', type: 'text', nullable: true }) leaseWorker: string | null;
  @Column({ name: 'lease_expires_at', type: 'timestamptz', nullable: true }) leaseExpiresAt: Date | null;
  /** A direct run's end, or when an interrupted run's questions stop waiting. */
  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true }) expiresAt: Date | null;
  @Column({ type: 'jsonb', nullable: true }) step: RunStep | null;
  /** The language model's tokens the run has used, as the worker reported them after each model call. */
  @Column({ name: 'input_tokens', type: 'bigint', transformer: BIGINT_AS_NUMBER }) inputTokens: number;
  @Column({ name: 'output_tokens', type: 'bigint', transformer: BIGINT_AS_NUMBER }) outputTokens: number;
  /** Tokens (input and output) of the current step: counted against AGENT_STEP_TOKEN_BUDGET, reset at every dispatch. */
  @Column({ name: 'step_tokens', type: 'bigint', transformer: BIGINT_AS_NUMBER }) stepTokens: number;
  /** The trace of the request that started the run (null with tracing off): stored so an operator finds its spans. */
  @Column({ name: 'trace_id', type: 'text', nullable: true }) traceId: string | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}
