import type { AuditSource } from '@naalya/access';
import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** Append-only: the app role may INSERT and SELECT, never UPDATE or DELETE. */
@Entity({ name: 'audit_log' })
export class AuditLogEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ name: 'actor_id', type: 'uuid' }) actorId: string;
  @Column({ name: 'actor_type', type: 'text' }) actorType: string;
  @Column({ type: 'text' }) action: string;
  @Column({ name: 'resource_type', type: 'text' }) resourceType: string;
  @Column({ name: 'resource_id', type: 'text', nullable: true }) resourceId: string | null;
  @Column({ type: 'text' }) source: AuditSource;
  @Column({ name: 'call_id', type: 'text', nullable: true }) callId: string | null;
  @Column({ name: 'trace_id', type: 'text', nullable: true }) traceId: string | null;
  /** The agent tool that wrote the row, or the REST route ("POST /departments"): one of the two is set. */
  @Column({ type: 'text', nullable: true }) tool: string | null;
  @Column({ type: 'text', nullable: true }) route: string | null;
  @Column({ name: 'run_id', type: 'uuid', nullable: true }) runId: string | null;
  /** The display name at write time: it outlives the resource. */
  @Column({ name: 'resource_name', type: 'text', nullable: true }) resourceName: string | null;
  /** The validated arguments or body, bounded and without secrets (audit-changes.ts). */
  @Column({ type: 'jsonb', nullable: true }) changes: Record<string, unknown> | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
