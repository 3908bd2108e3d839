import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity({ name: 'terms' })
export class TermEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ type: 'text' }) name: string;
  @Column({ name: 'starts_on', type: 'date' }) startsOn: string;
  @Column({ name: 'ends_on', type: 'date' }) endsOn: string;
  @Column({ name: 'is_current', type: 'boolean' }) isCurrent: boolean;
}
