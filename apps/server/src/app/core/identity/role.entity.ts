import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity({ name: 'roles' })
export class RoleEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ type: 'text' }) name: string;
}
