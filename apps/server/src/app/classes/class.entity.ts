import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** A stream, such as "S2 East", on one campus. */
@Entity({ name: 'classes' })
export class ClassEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ name: 'campus_id', type: 'uuid' }) campusId: string;
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'smallint' }) level: number;
  @Column({ name: 'class_teacher_id', type: 'uuid', nullable: true }) classTeacherId: string | null;
}
