import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity({ name: 'students' })
export class StudentEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ name: 'class_id', type: 'uuid' }) classId: string;
  @Column({ name: 'full_name', type: 'text' }) fullName: string;
  @Column({ name: 'admission_number', type: 'text' }) admissionNumber: string;
}
