import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

export const ATTENDANCE_STATUSES = ['present', 'absent', 'late', 'excused'] as const;
export type AttendanceStatus = (typeof ATTENDANCE_STATUSES)[number];

@Entity({ name: 'attendance' })
export class AttendanceEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ name: 'student_id', type: 'uuid' }) studentId: string;
  @Column({ name: 'class_id', type: 'uuid' }) classId: string;
  @Column({ name: 'on_date', type: 'date' }) onDate: string;
  @Column({ type: 'text' }) status: AttendanceStatus;
  @Column({ name: 'recorded_by', type: 'uuid' }) recordedBy: string;
}
