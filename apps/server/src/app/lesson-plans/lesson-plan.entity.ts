import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

export const LESSON_PLAN_STATUSES = ['pending', 'approved', 'rejected'] as const;
export type LessonPlanStatus = (typeof LESSON_PLAN_STATUSES)[number];

/** Belongs to a teaching assignment; a director of studies reviews it. */
@Entity({ name: 'lesson_plans' })
export class LessonPlanEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column({ name: 'school_id', type: 'uuid' }) schoolId: string;
  @Column({ name: 'teaching_assignment_id', type: 'uuid' }) teachingAssignmentId: string;
  @Column({ type: 'text' }) title: string;
  @Column({ name: 'week_of', type: 'date' }) weekOf: string;
  @Column({ type: 'text' }) objectives: string;
  @Column({ type: 'text' }) status: LessonPlanStatus;
  @Column({ name: 'created_by', type: 'uuid' }) createdBy: string;
  @Column({ name: 'reviewed_by', type: 'uuid', nullable: true }) reviewedBy: string | null;
  @Column({ name: 'reviewed_at', type: 'timestamptz', nullable: true }) reviewedAt: Date | null;
  @Column({ name: 'review_comment', type: 'text', nullable: true }) reviewComment: string | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
