import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';
import { tenantRowLevelSecurity } from '../row-level-security.js';

/** The teaching side of a school; every table is a tenant table with forced row-level security. */
const TABLES = [
  'school_branding',
  'subjects',
  'classes',
  'students',
  'teaching_assignments',
  'terms',
  'marks',
  'attendance',
  'lesson_plans',
  'director_of_studies_appointments',
] as const;

export class CreateSchoolDomain1764662400001 implements MigrationInterface {
  name = 'CreateSchoolDomain1764662400001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE school_branding (
        school_id uuid PRIMARY KEY REFERENCES schools (id),
        display_name text NOT NULL,
        motto text,
        primary_color text NOT NULL DEFAULT '#1f6feb' CHECK (primary_color ~ '^#[0-9a-fA-F]{6}$'),
        logo_url text,
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE subjects (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        name text NOT NULL,
        code text NOT NULL,
        CONSTRAINT uq_subjects_school_id_id UNIQUE (school_id, id),
        CONSTRAINT uq_subjects_school_code UNIQUE (school_id, code)
      );
      -- A class is a stream (for example "S2 East") on one campus, with one class teacher.
      CREATE TABLE classes (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        campus_id uuid NOT NULL,
        name text NOT NULL,
        level smallint NOT NULL CHECK (level BETWEEN 1 AND 6),
        class_teacher_id uuid,
        CONSTRAINT uq_classes_school_id_id UNIQUE (school_id, id),
        CONSTRAINT uq_classes_school_name UNIQUE (school_id, name),
        CONSTRAINT fk_classes_campus FOREIGN KEY (school_id, campus_id) REFERENCES campuses (school_id, id),
        CONSTRAINT fk_classes_class_teacher FOREIGN KEY (school_id, class_teacher_id) REFERENCES users (school_id, id)
      );
      CREATE TABLE students (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        class_id uuid NOT NULL,
        full_name text NOT NULL,
        admission_number text NOT NULL,
        CONSTRAINT uq_students_school_id_id UNIQUE (school_id, id),
        CONSTRAINT uq_students_school_admission UNIQUE (school_id, admission_number),
        CONSTRAINT fk_students_class FOREIGN KEY (school_id, class_id) REFERENCES classes (school_id, id)
      );
      CREATE INDEX ix_students_class ON students (class_id);
      -- One teacher per subject per stream: assigning again replaces the teacher.
      CREATE TABLE teaching_assignments (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        teacher_id uuid NOT NULL,
        subject_id uuid NOT NULL,
        class_id uuid NOT NULL,
        CONSTRAINT uq_teaching_assignments_school_id_id UNIQUE (school_id, id),
        CONSTRAINT uq_teaching_assignments_class_subject UNIQUE (class_id, subject_id),
        CONSTRAINT fk_teaching_assignments_teacher FOREIGN KEY (school_id, teacher_id) REFERENCES users (school_id, id),
        CONSTRAINT fk_teaching_assignments_subject FOREIGN KEY (school_id, subject_id) REFERENCES subjects (school_id, id),
        CONSTRAINT fk_teaching_assignments_class FOREIGN KEY (school_id, class_id) REFERENCES classes (school_id, id)
      );
      CREATE INDEX ix_teaching_assignments_teacher ON teaching_assignments (teacher_id);
      CREATE TABLE terms (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        name text NOT NULL,
        starts_on date NOT NULL,
        ends_on date NOT NULL CHECK (ends_on > starts_on),
        is_current boolean NOT NULL DEFAULT false,
        CONSTRAINT uq_terms_school_id_id UNIQUE (school_id, id),
        CONSTRAINT uq_terms_school_name UNIQUE (school_id, name)
      );
      CREATE UNIQUE INDEX uq_terms_one_current ON terms (school_id) WHERE is_current;
      CREATE TABLE marks (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        student_id uuid NOT NULL,
        subject_id uuid NOT NULL,
        term_id uuid NOT NULL,
        score numeric(5, 2) NOT NULL CHECK (score BETWEEN 0 AND 100),
        recorded_by uuid NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT uq_marks_student_subject_term UNIQUE (student_id, subject_id, term_id),
        CONSTRAINT fk_marks_student FOREIGN KEY (school_id, student_id) REFERENCES students (school_id, id),
        CONSTRAINT fk_marks_subject FOREIGN KEY (school_id, subject_id) REFERENCES subjects (school_id, id),
        CONSTRAINT fk_marks_term FOREIGN KEY (school_id, term_id) REFERENCES terms (school_id, id),
        CONSTRAINT fk_marks_recorded_by FOREIGN KEY (school_id, recorded_by) REFERENCES users (school_id, id)
      );
      CREATE TABLE attendance (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        student_id uuid NOT NULL,
        class_id uuid NOT NULL,
        on_date date NOT NULL,
        status text NOT NULL CHECK (status IN ('present', 'absent', 'late', 'excused')),
        recorded_by uuid NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT uq_attendance_student_date UNIQUE (student_id, on_date),
        CONSTRAINT fk_attendance_student FOREIGN KEY (school_id, student_id) REFERENCES students (school_id, id),
        CONSTRAINT fk_attendance_class FOREIGN KEY (school_id, class_id) REFERENCES classes (school_id, id),
        CONSTRAINT fk_attendance_recorded_by FOREIGN KEY (school_id, recorded_by) REFERENCES users (school_id, id)
      );
      CREATE TABLE lesson_plans (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        teaching_assignment_id uuid NOT NULL,
        title text NOT NULL,
        week_of date NOT NULL,
        objectives text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
        created_by uuid NOT NULL,
        reviewed_by uuid,
        reviewed_at timestamptz,
        review_comment text,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT uq_lesson_plans_school_id_id UNIQUE (school_id, id),
        CONSTRAINT fk_lesson_plans_assignment FOREIGN KEY (school_id, teaching_assignment_id) REFERENCES teaching_assignments (school_id, id) ON DELETE CASCADE,
        CONSTRAINT fk_lesson_plans_created_by FOREIGN KEY (school_id, created_by) REFERENCES users (school_id, id),
        CONSTRAINT fk_lesson_plans_reviewed_by FOREIGN KEY (school_id, reviewed_by) REFERENCES users (school_id, id)
      );
      -- A director of studies oversees teaching on one campus, or the whole school when campus_id is null.
      CREATE TABLE director_of_studies_appointments (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        user_id uuid NOT NULL,
        campus_id uuid,
        CONSTRAINT uq_director_of_studies_user_campus UNIQUE (user_id, campus_id),
        CONSTRAINT fk_director_of_studies_user FOREIGN KEY (school_id, user_id) REFERENCES users (school_id, id),
        CONSTRAINT fk_director_of_studies_campus FOREIGN KEY (school_id, campus_id) REFERENCES campuses (school_id, id)
      );
    `);
    for (const table of TABLES) await queryRunner.query(tenantRowLevelSecurity(table));
    await queryRunner.query(`
      GRANT SELECT, INSERT, UPDATE, DELETE ON ${TABLES.join(', ')} TO ${APP_GROUP_ROLE};
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE IF EXISTS ${[...TABLES].reverse().join(', ')} CASCADE`);
  }
}
