import { Action, Resource, UserType } from '@naalya/access';
import type { EntityManager } from 'typeorm';
import { hashPassword } from '../core/auth/password-hasher.js';
import { seedSchoolDomain, type SchoolDomainSeed } from './school-domain-seed.js';

export const DEMO_PASSWORD = 'naalya-demo';

export type PersonaKey =
  | 'schoolAdmin'
  | 'campusAdmin'
  | 'departmentHead'
  | 'teacher'
  | 'deactivated'
  | 'classTeacher'
  | 'subjectTeacher'
  | 'bothHats'
  | 'directorOfStudies'
  | 'registrar';

export type DemoPersona = {
  key: PersonaKey | 'platformAdmin';
  email: string;
  fullName: string;
  id: string;
  type: UserType;
  schoolId: string | null;
  campusId: string | null;
  isActive: boolean;
};

export type DemoSchool = {
  id: string;
  name: string;
  slug: string;
  campuses: { id: string; name: string }[];
  departments: { id: string; name: string; campusId: string | null }[];
  personas: Record<PersonaKey, DemoPersona>;
  teaching: SchoolDomainSeed;
};

export type DemoData = { schools: [DemoSchool, DemoSchool]; platformAdmin: DemoPersona };

const SCHOOLS = [
  { name: 'Greenhill Academy', slug: 'greenhill', campuses: ['Kisasi', 'Ntinda'] },
  { name: 'Lakeside College', slug: 'lakeside', campuses: ['Entebbe', 'Kajjansi'] },
] as const;

const CAMPUS_LIMITED = { campusId: '${user.campusId}' };

/** Everyone on the staff may see the school's subjects and campuses. */
const STAFF_BASICS = [
  { action: Action.LIST, resource: Resource.DEPARTMENT },
  { action: Action.LIST, resource: Resource.SUBJECT },
  { action: Action.LIST, resource: Resource.CAMPUS },
];

/** Roles carry permissions; a campus administrator's rules are limited to their own campus. */
const ROLES: Record<string, { action: Action; resource: Resource; conditions?: Record<string, string> }[]> = {
  'School administrator': [{ action: Action.MANAGE, resource: Resource.ALL }],
  'Campus administrator': [
    { action: Action.LIST, resource: Resource.STAFF, conditions: CAMPUS_LIMITED },
    { action: Action.LIST, resource: Resource.DEPARTMENT, conditions: CAMPUS_LIMITED },
    { action: Action.CREATE, resource: Resource.DEPARTMENT, conditions: CAMPUS_LIMITED },
    { action: Action.UPDATE, resource: Resource.DEPARTMENT, conditions: CAMPUS_LIMITED },
    { action: Action.DELETE, resource: Resource.DEPARTMENT, conditions: CAMPUS_LIMITED },
    { action: Action.READ, resource: Resource.RESULT, conditions: CAMPUS_LIMITED },
    { action: Action.ASSIGN, resource: Resource.TEACHING_ASSIGNMENT, conditions: CAMPUS_LIMITED },
    { action: Action.LIST, resource: Resource.LESSON_PLAN, conditions: CAMPUS_LIMITED },
    { action: Action.APPROVE, resource: Resource.LESSON_PLAN, conditions: CAMPUS_LIMITED },
    { action: Action.LIST, resource: Resource.SUBJECT },
    { action: Action.LIST, resource: Resource.CAMPUS },
  ],
  'Director of studies': [
    ...STAFF_BASICS,
    { action: Action.LIST, resource: Resource.STAFF },
    { action: Action.READ, resource: Resource.RESULT },
    { action: Action.ASSIGN, resource: Resource.TEACHING_ASSIGNMENT },
    { action: Action.LIST, resource: Resource.LESSON_PLAN },
    { action: Action.APPROVE, resource: Resource.LESSON_PLAN },
  ],
  // Holds STUDENT READ without teaching anyone: the relationship tools must still refuse them.
  Registrar: [
    { action: Action.LIST, resource: Resource.DEPARTMENT },
    { action: Action.LIST, resource: Resource.SUBJECT },
    { action: Action.READ, resource: Resource.STUDENT },
    { action: Action.LIST, resource: Resource.STUDENT },
  ],
  Teacher: STAFF_BASICS,
};

const PEOPLE: { key: PersonaKey; local: string; fullName: string; role: string; campus: 0 | 1 | null; isActive: boolean }[] = [
  { key: 'schoolAdmin', local: 'admin', fullName: 'Grace Namusoke', role: 'School administrator', campus: null, isActive: true },
  { key: 'campusAdmin', local: 'campus.admin', fullName: 'Peter Okello', role: 'Campus administrator', campus: 0, isActive: true },
  { key: 'departmentHead', local: 'head', fullName: 'Sarah Nakato', role: 'Teacher', campus: 0, isActive: true },
  { key: 'teacher', local: 'teacher', fullName: 'Brian Mugisha', role: 'Teacher', campus: 1, isActive: true },
  { key: 'deactivated', local: 'former', fullName: 'Joan Atim', role: 'Teacher', campus: 1, isActive: false },
  { key: 'classTeacher', local: 'class.teacher', fullName: 'Angela Achieng', role: 'Teacher', campus: 0, isActive: true },
  { key: 'subjectTeacher', local: 'subject.teacher', fullName: 'Benjamin Ssali', role: 'Teacher', campus: 0, isActive: true },
  { key: 'bothHats', local: 'form.tutor', fullName: 'Christine Auma', role: 'Teacher', campus: 0, isActive: true },
  { key: 'directorOfStudies', local: 'dos', fullName: 'Samuel Kato', role: 'Director of studies', campus: null, isActive: true },
  { key: 'registrar', local: 'registrar', fullName: 'Ruth Nambi', role: 'Registrar', campus: 0, isActive: true },
];

/** More teachers, so each school has 15 staff and every subject and stream is covered. */
const EXTRA_TEACHERS = ['Daniel Opio', 'Esther Nalwoga', 'Francis Mukasa', 'Harriet Akello', 'Isaac Wasswa'] as const;

const insertOne = async (manager: EntityManager, sql: string, parameters: unknown[]): Promise<string> => {
  const [row] = (await manager.query(sql, parameters)) as { id: string }[];
  return row.id;
};

/**
 * Two schools with two campuses each, so every test can try to cross tenants. Runs as the owner;
 * `emailDomain` lets a test database hold the demo next to other fixtures.
 */
export const seedDemo = async (manager: EntityManager, emailDomain = 'school'): Promise<DemoData> => {
  const passwordHash = await hashPassword(DEMO_PASSWORD);
  const schools: DemoSchool[] = [];
  for (const school of SCHOOLS) {
    const schoolId = await insertOne(manager, `INSERT INTO schools (name) VALUES ($1) RETURNING id`, [school.name]);
    // FORCE row-level security binds the owner too: seed inside the school's setting.
    await manager.query(`SELECT set_config('app.school_id', $1, true)`, [schoolId]);
    const campuses = [];
    for (const name of school.campuses) {
      campuses.push({ id: await insertOne(manager, `INSERT INTO campuses (school_id, name) VALUES ($1, $2) RETURNING id`, [schoolId, name]), name });
    }
    const roleIds: Record<string, string> = {};
    for (const [name, permissions] of Object.entries(ROLES)) {
      roleIds[name] = await insertOne(manager, `INSERT INTO roles (school_id, name) VALUES ($1, $2) RETURNING id`, [schoolId, name]);
      for (const permission of permissions) {
        await manager.query(
          `INSERT INTO role_permissions (school_id, role_id, action, resource, conditions) VALUES ($1, $2, $3, $4, $5)`,
          [schoolId, roleIds[name], permission.action, permission.resource, permission.conditions ?? null],
        );
      }
    }
    const personas = {} as Record<PersonaKey, DemoPersona>;
    for (const person of PEOPLE) {
      const email = `${person.local}@${school.slug}.${emailDomain}`;
      const campusId = person.campus === null ? null : campuses[person.campus].id;
      const id = await insertOne(
        manager,
        `INSERT INTO users (school_id, campus_id, email, full_name, user_type, is_active, password_hash)
         VALUES ($1, $2, $3, $4, 'staff', $5, $6) RETURNING id`,
        [schoolId, campusId, email, person.fullName, person.isActive, passwordHash],
      );
      await manager.query(`INSERT INTO user_x_roles (school_id, user_id, role_id) VALUES ($1, $2, $3)`, [schoolId, id, roleIds[person.role]]);
      personas[person.key] = { key: person.key, email, fullName: person.fullName, id, type: UserType.STAFF, schoolId, campusId, isActive: person.isActive };
    }
    const extraTeacherIds: string[] = [];
    for (const [index, fullName] of EXTRA_TEACHERS.entries()) {
      const id = await insertOne(
        manager,
        `INSERT INTO users (school_id, campus_id, email, full_name, user_type, password_hash)
         VALUES ($1, $2, $3, $4, 'staff', $5) RETURNING id`,
        [schoolId, campuses[index % 2].id, `teacher${index + 2}@${school.slug}.${emailDomain}`, fullName, passwordHash],
      );
      await manager.query(`INSERT INTO user_x_roles (school_id, user_id, role_id) VALUES ($1, $2, $3)`, [schoolId, id, roleIds['Teacher']]);
      extraTeacherIds.push(id);
    }
    const departments = [];
    for (const [name, campus] of [['Sciences', 0], ['Mathematics', 0], ['Languages', 1]] as const) {
      const campusId = campuses[campus].id;
      departments.push({
        id: await insertOne(manager, `INSERT INTO departments (school_id, campus_id, name) VALUES ($1, $2, $3) RETURNING id`, [schoolId, campusId, name]),
        name,
        campusId,
      });
    }
    await manager.query(
      `INSERT INTO department_members (school_id, department_id, user_id, is_head) VALUES ($1, $2, $3, true), ($1, $2, $4, false)`,
      [schoolId, departments[0].id, personas.departmentHead.id, personas.teacher.id],
    );
    const teaching = await seedSchoolDomain(manager, { id: schoolId, name: school.name, slug: school.slug, campuses, personas, extraTeacherIds });
    await manager.query(`SELECT set_config('app.school_id', '', true)`);
    schools.push({ id: schoolId, name: school.name, slug: school.slug, campuses, departments, personas, teaching });
  }
  const platformEmail = `platform@naalya.${emailDomain}`;
  const platformId = await insertOne(
    manager,
    `INSERT INTO users (email, full_name, user_type, password_hash) VALUES ($1, 'Paula Platform', 'platform_admin', $2) RETURNING id`,
    [platformEmail, passwordHash],
  );
  return {
    schools: schools as [DemoSchool, DemoSchool],
    platformAdmin: {
      key: 'platformAdmin', email: platformEmail, fullName: 'Paula Platform', id: platformId,
      type: UserType.PLATFORM_ADMIN, schoolId: null, campusId: null, isActive: true,
    },
  };
};
