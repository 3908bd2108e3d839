import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** One row per mutating call id, written in the call's own transaction: a redelivery finds it and runs nothing. */
@Entity({ name: 'tool_call_ledger' })
export class ToolCallLedgerEntity {
  @PrimaryColumn({ name: 'call_id', type: 'text' }) callId: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ type: 'text' }) event: string;
  @Column({ name: 'request_hash', type: 'text' }) requestHash: string;
  @Column({ name: 'actor_id', type: 'uuid' }) actorId: string;
  @Column({ type: 'jsonb' }) result: unknown;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
