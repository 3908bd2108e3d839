import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity({ name: 'departments' })
export class DepartmentEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  /** Null for a school-wide department. */
  @Column({ name: 'campus_id', type: 'uuid', nullable: true }) campusId: string | null;
  @Column({ type: 'text' }) name: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
