import type { AgentRunStatus, AgentSpeaker } from '@naalya/agent-tools';
import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

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
  confirmation?: { event: string; callId: string };
  answered: boolean;
  answer?: string;
  answeredAt?: string;
  delivered: boolean;
};

@Entity({ name: 'agent_runs' })
export class AgentRunEntity {
  @PrimaryColumn({ type: 'uuid' }) id: string;
  @Column({ name: 'thread_id', type: 'uuid' }) threadId: string;
  @Column({ name: 'school_id', type: 'uuid', nullable: true }) schoolId: string | null;
  @Column({ name: 'owner_id', type: 'uuid' }) ownerId: string;
  @Column({ type: 'text' }) status: AgentRunStatus;
  @Column({ type: 'text' }) message: string;
  @Column({ name: 'campus_id', type: 'uuid', nullable: true }) campusId: string | null;
  @Column({ name: 'target_school_id', type: 'uuid', nullable: true }) targetSchoolId: string | null;
  @Column({ name: 'pending_interrupts', type: 'jsonb' }) pendingInterrupts: StoredInterrupt[];
  @Column({ name: 'last_seq', type: 'integer' }) lastSeq: number;
  @Column({ type: 'text', nullable: true }) error: string | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}
