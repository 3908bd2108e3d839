import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity({ name: 'campuses' })
export class CampusEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ type: 'text' }) name: string;
}
