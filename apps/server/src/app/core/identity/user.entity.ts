import type { UserType } from '@naalya/access';
import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity({ name: 'users' })
export class UserEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  /** Null only for platform admins, who belong to no school. */
  @Column({ name: 'school_id', type: 'uuid', nullable: true }) schoolId: string | null;
  @Column({ name: 'campus_id', type: 'uuid', nullable: true }) campusId: string | null;
  @Column({ type: 'text' }) email: string;
  @Column({ name: 'full_name', type: 'text' }) fullName: string;
  @Column({ name: 'user_type', type: 'text' }) userType: UserType;
  @Column({ name: 'is_active', type: 'boolean', default: true }) isActive: boolean;
  @Column({ name: 'password_hash', type: 'text', select: false }) passwordHash: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
