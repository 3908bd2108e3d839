import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity({ name: 'marks' })
export class MarkEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ name: 'student_id', type: 'uuid' }) studentId: string;
  @Column({ name: 'subject_id', type: 'uuid' }) subjectId: string;
  @Column({ name: 'term_id', type: 'uuid' }) termId: string;
  /** numeric comes back from pg as a string; services convert at the edge. */
  @Column({ type: 'numeric', precision: 5, scale: 2 }) score: string;
  @Column({ name: 'recorded_by', type: 'uuid' }) recordedBy: string;
}
