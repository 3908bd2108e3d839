import type { EntityManager } from 'typeorm';
import type { DemoPersona, PersonaKey } from './demo-seed.js';

export type SchoolDomainSeed = {
  subjects: { id: string; name: string; code: string }[];
  classes: { id: string; name: string; campusId: string; classTeacherId: string | null }[];
  teachingAssignments: { id: string; teacherId: string; subjectId: string; classId: string }[];
  currentTermId: string;
  lessonPlans: { id: string; status: string; teachingAssignmentId: string }[];
};

type SeedSchool = {
  id: string;
  name: string;
  slug: string;
  campuses: { id: string; name: string }[];
  personas: Record<PersonaKey, DemoPersona>;
  extraTeacherIds: string[];
};

const SUBJECTS = [
  ['Mathematics', 'MTH'],
  ['English', 'ENG'],
  ['Biology', 'BIO'],
  ['Chemistry', 'CHE'],
  ['Physics', 'PHY'],
  ['Geography', 'GEO'],
  ['History', 'HIS'],
  ['Kiswahili', 'KIS'],
] as const;

const FIRST_NAMES = ['Aisha', 'Brian', 'Catherine', 'David', 'Eva', 'Faith', 'George', 'Hope', 'Ivan', 'Joy', 'Kenneth', 'Lydia', 'Moses', 'Norah', 'Oscar', 'Patience', 'Ronald', 'Sharon', 'Timothy', 'Vivian'];
const LAST_NAMES = ['Okello', 'Namuli', 'Mugisha', 'Atwine', 'Kintu', 'Nakimera', 'Ochieng', 'Tumusiime', 'Byaruhanga', 'Nansubuga', 'Otim', 'Kyomuhendo'];

const STUDENTS_PER_CLASS = 20;

const insertOne = async (manager: EntityManager, sql: string, parameters: unknown[]): Promise<string> => {
  const [row] = (await manager.query(sql, parameters)) as { id: string }[];
  return row.id;
};

/**
 * Six streams over two campuses, 120 students, eight subjects, staff with mixed hats (a class teacher
 * only, a subject teacher only, one with both, a director of studies who also teaches), and a term of marks.
 * Runs as the owner inside the school's setting, like the rest of the seed.
 */
export const seedSchoolDomain = async (manager: EntityManager, school: SeedSchool): Promise<SchoolDomainSeed> => {
  const { personas } = school;
  const extra = school.extraTeacherIds;
  await manager.query(
    `INSERT INTO school_branding (school_id, display_name, motto, primary_color) VALUES ($1, $2, $3, $4)`,
    [school.id, school.name, school.slug === 'greenhill' ? 'Knowledge is light' : 'Rise and serve', school.slug === 'greenhill' ? '#1b7f3b' : '#1f4e8c'],
  );
  const subjects = [];
  for (const [name, code] of SUBJECTS) {
    subjects.push({ id: await insertOne(manager, `INSERT INTO subjects (school_id, name, code) VALUES ($1, $2, $3) RETURNING id`, [school.id, name, code]), name, code });
  }

  // Class teachers per stream: S1 and S2 on the first campus are the class-teacher-only and the two-hats personas.
  const classTeachers = [personas.classTeacher.id, personas.bothHats.id, extra[0], extra[1], personas.teacher.id, extra[2]];
  const classes = [];
  for (const [campusIndex, campus] of school.campuses.entries()) {
    for (const level of [1, 2, 3]) {
      const classTeacherId = classTeachers[campusIndex * 3 + level - 1];
      const name = `S${level} ${campus.name}`;
      const id = await insertOne(
        manager,
        `INSERT INTO classes (school_id, campus_id, name, level, class_teacher_id) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
        [school.id, campus.id, name, level, classTeacherId],
      );
      classes.push({ id, name, campusId: campus.id, classTeacherId });
      await manager.query(
        `INSERT INTO students (school_id, class_id, full_name, admission_number)
         SELECT $1, $2, ($3::text[])[1 + (n * 7 + $5) % array_length($3::text[], 1)] || ' ' || ($4::text[])[1 + (n * 5 + $5) % array_length($4::text[], 1)],
                $6 || lpad(((($5 - 1) * ${STUDENTS_PER_CLASS}) + n)::text, 4, '0')
           FROM generate_series(1, ${STUDENTS_PER_CLASS}) AS n`,
        [school.id, id, FIRST_NAMES, LAST_NAMES, campusIndex * 3 + level, `${school.slug.slice(0, 2).toUpperCase()}-`],
      );
    }
  }

  // Who teaches each subject on each campus. The subject-teacher-only persona teaches Mathematics; the
  // director of studies teaches Physics to S1 and S2 on the first campus.
  const teacherFor = (code: string, campusIndex: number, level: number): string => {
    const table: Record<string, [string, string]> = {
      MTH: [personas.subjectTeacher.id, extra[3]],
      ENG: [personas.bothHats.id, extra[4]],
      BIO: [personas.departmentHead.id, extra[0]],
      CHE: [extra[1], extra[1]],
      PHY: [level <= 2 ? personas.directorOfStudies.id : extra[2], extra[2]],
      GEO: [extra[3], personas.teacher.id],
      HIS: [extra[4], extra[4]],
      KIS: [extra[2], extra[2]],
    };
    return table[code][campusIndex];
  };
  const teachingAssignments = [];
  for (const [classIndex, stream] of classes.entries()) {
    for (const subject of subjects) {
      const teacherId = teacherFor(subject.code, Math.floor(classIndex / 3), (classIndex % 3) + 1);
      teachingAssignments.push({
        id: await insertOne(
          manager,
          `INSERT INTO teaching_assignments (school_id, teacher_id, subject_id, class_id) VALUES ($1, $2, $3, $4) RETURNING id`,
          [school.id, teacherId, subject.id, stream.id],
        ),
        teacherId,
        subjectId: subject.id,
        classId: stream.id,
      });
    }
  }

  const currentTermId = await insertOne(
    manager,
    `INSERT INTO terms (school_id, name, starts_on, ends_on, is_current) VALUES ($1, 'Term 1 2026', '2026-02-02', '2026-04-30', true) RETURNING id`,
    [school.id],
  );
  await manager.query(`INSERT INTO terms (school_id, name, starts_on, ends_on) VALUES ($1, 'Term 2 2026', '2026-05-25', '2026-08-14')`, [school.id]);
  // Marks for the whole term: deterministic per student and subject, recorded by the subject's teacher.
  await manager.query(
    `INSERT INTO marks (school_id, student_id, subject_id, term_id, score, recorded_by)
     SELECT $1, s.id, t.subject_id, $2, 35 + (abs(hashtext(s.admission_number || t.subject_id::text)) % 6500) / 100.0, t.teacher_id
       FROM students s JOIN teaching_assignments t ON t.class_id = s.class_id
      WHERE s.school_id = $1`,
    [school.id, currentTermId],
  );

  await manager.query(`INSERT INTO director_of_studies_appointments (school_id, user_id, campus_id) VALUES ($1, $2, NULL)`, [
    school.id,
    personas.directorOfStudies.id,
  ]);

  const mathsS1 = teachingAssignments.find((assignment) => assignment.teacherId === personas.subjectTeacher.id)!;
  const lessonPlans = [];
  for (const [title, weekOf, status] of [
    ['Linear equations', '2026-03-02', 'pending'],
    ['Simultaneous equations', '2026-03-09', 'pending'],
    ['Number bases', '2026-02-16', 'approved'],
  ] as const) {
    lessonPlans.push({
      id: await insertOne(
        manager,
        `INSERT INTO lesson_plans (school_id, teaching_assignment_id, title, week_of, objectives, status, created_by, reviewed_by, reviewed_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
        [
          school.id,
          mathsS1.id,
          title,
          weekOf,
          `By the end of the week learners can work with ${title.toLowerCase()}.`,
          status,
          personas.subjectTeacher.id,
          status === 'approved' ? personas.directorOfStudies.id : null,
          status === 'approved' ? new Date('2026-02-13T10:00:00Z') : null,
        ],
      ),
      status,
      teachingAssignmentId: mathsS1.id,
    });
  }

  return { subjects, classes, teachingAssignments, currentTermId, lessonPlans };
};
