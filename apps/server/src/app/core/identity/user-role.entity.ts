import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'user_x_roles' })
export class UserRoleEntity {
  @PrimaryColumn({ name: 'user_id', type: 'uuid' }) userId: string;
  @PrimaryColumn({ name: 'role_id', type: 'uuid' }) roleId: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
}
