import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** One run event as the worker published it, numbered by the server: seq is gapless and monotonic per run. */
@Entity({ name: 'agent_run_events' })
export class AgentRunEventEntity {
  @PrimaryColumn({ name: 'run_id', type: 'uuid' }) runId: string;
  @PrimaryColumn({ type: 'integer' }) seq: number;
  @Column({ name: 'school_id', type: 'uuid', nullable: true }) schoolId: string | null;
  @Column({ name: 'owner_id', type: 'uuid' }) ownerId: string;
  @Column({ name: 'message_id', type: 'text' }) messageId: string;
  @Column({ type: 'text' }) type: string;
  @Column({ type: 'jsonb' }) payload: Record<string, unknown>;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
