import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'department_members' })
export class DepartmentMemberEntity {
  @PrimaryColumn({ name: 'department_id', type: 'uuid' }) departmentId: string;
  @PrimaryColumn({ name: 'user_id', type: 'uuid' }) userId: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ name: 'is_head', type: 'boolean', default: false }) isHead: boolean;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
