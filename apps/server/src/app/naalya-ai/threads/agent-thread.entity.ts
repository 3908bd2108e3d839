import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** A conversation with Rover. The server makes the id; the thread belongs to its owner. */
@Entity({ name: 'agent_threads' })
export class AgentThreadEntity {
  @PrimaryColumn({ type: 'uuid' }) id: string;
  /** Null for a platform admin's thread: platform admins belong to no school. */
  @Column({ name: 'school_id', type: 'uuid', nullable: true }) schoolId: string | null;
  @Column({ name: 'owner_id', type: 'uuid' }) ownerId: string;
  @Column({ type: 'text', nullable: true }) title: string | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}
