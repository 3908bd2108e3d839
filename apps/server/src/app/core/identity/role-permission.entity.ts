import type { Action, Resource } from '@naalya/access';
import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** Conditions may name `${user.campusId}` or `${user.id}`; the ability factory interpolates them. */
export type PermissionConditions = Record<string, string>;

@Entity({ name: 'role_permissions' })
export class RolePermissionEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ name: 'role_id', type: 'uuid' }) roleId: string;
  @Column({ type: 'text' }) action: Action;
  @Column({ type: 'text' }) resource: Resource;
  @Column({ type: 'jsonb', nullable: true }) conditions: PermissionConditions | null;
}
