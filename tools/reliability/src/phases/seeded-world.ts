/**
 * The rows of the two demo schools the attack phases aim at, read as the database owner (who sees every school):
 * who calls, with which of their own rows, and every id of the other school or campus to reach for.
 */
export type Query = <R = Record<string, unknown>>(sql: string, parameters?: unknown[]) => Promise<R[]>;

/** Demo personas by the local part of their email (README, "Demo users"). */
export const PERSONA_EMAILS = {
  schoolAdmin: 'admin',
  campusAdmin: 'campus.admin',
  departmentHead: 'head',
  teacher: 'teacher',
  classTeacher: 'class.teacher',
  subjectTeacher: 'subject.teacher',
  formTutor: 'form.tutor',
  directorOfStudies: 'dos',
  registrar: 'registrar',
} as const;
export type PersonaKey = keyof typeof PERSONA_EMAILS;

export type Persona = { id: string; type: string; schoolId: string | null; campusId: string | null; email: string };

/** Which rows an id argument's values come from, by the argument's name. A new kind of id argument needs a pool here. */
export const ID_POOLS = {
  campusId: 'campus',
  departmentId: 'department',
  staffId: 'staff',
  classId: 'class',
  studentId: 'student',
  subjectId: 'subject',
  termId: 'term',
  teachingAssignmentId: 'teachingAssignment',
  lessonPlanId: 'lessonPlan',
  callId: 'call',
} as const;
export type PoolName = (typeof ID_POOLS)[keyof typeof ID_POOLS];
export type Pools = Record<PoolName, string[]>;

export type CampusSlice = { id: string; name: string; pools: Pick<Pools, 'campus' | 'class' | 'student' | 'department' | 'lessonPlan'> };

export type SchoolWorld = {
  id: string;
  slug: string;
  personas: Record<PersonaKey, Persona>;
  pools: Pools;
  campuses: CampusSlice[];
  /** The class teacher's class and its students. */
  homeClass: { id: string; campusId: string; studentIds: string[] };
  /** One of the subject teacher's teaching assignments, with its class's students. */
  taught: { id: string; classId: string; subjectId: string; campusId: string; studentIds: string[] };
  currentTermId: string;
};

export type World = { schools: [SchoolWorld, SchoolWorld]; platformAdmin: Persona };

const one = <R>(rows: R[], what: string): R => {
  const [row] = rows;
  if (!row) throw new Error(`The seeded database has no ${what}: was it seeded with the demo data?`);
  return row;
};

const ids = async (query: Query, sql: string, parameters: unknown[]): Promise<string[]> =>
  (await query<{ id: string }>(sql, parameters)).map((row) => row.id);

const campusSlice = async (query: Query, campus: { id: string; name: string }): Promise<CampusSlice> => ({
  ...campus,
  pools: {
    campus: [campus.id],
    class: await ids(query, `SELECT id::text FROM classes WHERE campus_id = $1 ORDER BY id`, [campus.id]),
    student: await ids(query, `SELECT s.id::text FROM students s JOIN classes c ON c.id = s.class_id WHERE c.campus_id = $1 ORDER BY s.id`, [campus.id]),
    department: await ids(query, `SELECT id::text FROM departments WHERE campus_id = $1 ORDER BY id`, [campus.id]),
    lessonPlan: await ids(
      query,
      `SELECT l.id::text FROM lesson_plans l JOIN teaching_assignments t ON t.id = l.teaching_assignment_id JOIN classes c ON c.id = t.class_id
       WHERE c.campus_id = $1 ORDER BY l.id`,
      [campus.id],
    ),
  },
});

const loadSchool = async (query: Query, slug: string): Promise<SchoolWorld> => {
  const school = one(await query<{ id: string }>(`SELECT id::text FROM schools WHERE id IN (SELECT school_id FROM users WHERE email = $1)`, [`admin@${slug}.school`]), `school ${slug}`);
  const personas = {} as Record<PersonaKey, Persona>;
  for (const [key, local] of Object.entries(PERSONA_EMAILS) as [PersonaKey, string][]) {
    personas[key] = one(
      await query<Persona>(
        `SELECT id::text, user_type AS type, school_id::text AS "schoolId", campus_id::text AS "campusId", email FROM users WHERE email = $1`,
        [`${local}@${slug}.school`],
      ),
      `${local}@${slug}.school`,
    );
  }
  const bySchool = (sql: string) => ids(query, sql, [school.id]);
  const pools: Pools = {
    campus: await bySchool(`SELECT id::text FROM campuses WHERE school_id = $1 ORDER BY id`),
    department: await bySchool(`SELECT id::text FROM departments WHERE school_id = $1 ORDER BY id`),
    staff: await bySchool(`SELECT id::text FROM users WHERE school_id = $1 ORDER BY id`),
    class: await bySchool(`SELECT id::text FROM classes WHERE school_id = $1 ORDER BY id`),
    student: await bySchool(`SELECT id::text FROM students WHERE school_id = $1 ORDER BY id`),
    subject: await bySchool(`SELECT id::text FROM subjects WHERE school_id = $1 ORDER BY id`),
    term: await bySchool(`SELECT id::text FROM terms WHERE school_id = $1 ORDER BY id`),
    teachingAssignment: await bySchool(`SELECT id::text FROM teaching_assignments WHERE school_id = $1 ORDER BY id`),
    lessonPlan: await bySchool(`SELECT id::text FROM lesson_plans WHERE school_id = $1 ORDER BY id`),
    call: await ids(query, `SELECT call_id AS id FROM tool_call_ledger WHERE school_id = $1 ORDER BY call_id`, [school.id]),
  };
  const campuses = await query<{ id: string; name: string }>(`SELECT id::text, name FROM campuses WHERE school_id = $1 ORDER BY name`, [school.id]);
  const homeClass = one(
    await query<{ id: string; campusId: string }>(`SELECT id::text, campus_id::text AS "campusId" FROM classes WHERE class_teacher_id = $1 ORDER BY name LIMIT 1`, [
      personas.classTeacher.id,
    ]),
    `class of ${personas.classTeacher.email}`,
  );
  const taught = one(
    await query<{ id: string; classId: string; subjectId: string; campusId: string }>(
      `SELECT t.id::text, t.class_id::text AS "classId", t.subject_id::text AS "subjectId", c.campus_id::text AS "campusId"
       FROM teaching_assignments t JOIN classes c ON c.id = t.class_id WHERE t.teacher_id = $1 ORDER BY c.name LIMIT 1`,
      [personas.subjectTeacher.id],
    ),
    `teaching assignment of ${personas.subjectTeacher.email}`,
  );
  const studentsOf = (classId: string) => ids(query, `SELECT id::text FROM students WHERE class_id = $1 ORDER BY admission_number`, [classId]);
  return {
    id: school.id,
    slug,
    personas,
    pools,
    campuses: await Promise.all(campuses.map((campus) => campusSlice(query, campus))),
    homeClass: { ...homeClass, studentIds: await studentsOf(homeClass.id) },
    taught: { ...taught, studentIds: await studentsOf(taught.classId) },
    currentTermId: one(await query<{ id: string }>(`SELECT id::text FROM terms WHERE school_id = $1 AND is_current`, [school.id]), `current term of ${slug}`).id,
  };
};

export const loadWorld = async (query: Query): Promise<World> => ({
  schools: [await loadSchool(query, 'greenhill'), await loadSchool(query, 'lakeside')],
  platformAdmin: one(
    await query<Persona>(
      `SELECT id::text, user_type AS type, school_id::text AS "schoolId", campus_id::text AS "campusId", email FROM users WHERE email = 'platform@naalya.school'`,
    ),
    'platform administrator',
  ),
});

/**
 * Every id a reply must not contain when the caller is not of this school: the school, and the id of every row of
 * every table with a school_id (found in the catalog, so a new tenant table is covered without a change here).
 */
export const everyIdOfSchool = async (query: Query, schoolId: string): Promise<Set<string>> => {
  const tables = await query<{ table_name: string }>(
    `SELECT c.table_name FROM information_schema.columns c
     JOIN information_schema.columns i ON i.table_schema = c.table_schema AND i.table_name = c.table_name AND i.column_name = 'id'
     WHERE c.table_schema = 'public' AND c.column_name = 'school_id' ORDER BY c.table_name`,
  );
  const found = new Set<string>([schoolId]);
  for (const { table_name: table } of tables) {
    for (const id of await ids(query, `SELECT id::text FROM "${table}" WHERE school_id = $1`, [schoolId])) found.add(id);
  }
  return found;
};

/** The ids of a campus's own rows (the campus, its classes, their students, its departments and lesson plans). */
export const everyIdOfCampus = (campus: CampusSlice): Set<string> => new Set(Object.values(campus.pools).flat());

/** The ids in a reply that belong to a set (uuids only: every row id the set can hold is one). */
export const leakedIds = (reply: unknown, forbidden: ReadonlySet<string>): string[] =>
  [...new Set(JSON.stringify(reply ?? null).match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi) ?? [])].filter((id) =>
    forbidden.has(id.toLowerCase()),
  );
