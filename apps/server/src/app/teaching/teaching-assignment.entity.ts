import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** Who teaches which subject to which stream. */
@Entity({ name: 'teaching_assignments' })
export class TeachingAssignmentEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ name: 'teacher_id', type: 'uuid' }) teacherId: string;
  @Column({ name: 'subject_id', type: 'uuid' }) subjectId: string;
  @Column({ name: 'class_id', type: 'uuid' }) classId: string;
}
