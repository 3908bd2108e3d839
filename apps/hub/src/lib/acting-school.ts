import type { SchoolSummary } from '@naalya/access';

const SCHOOL_KEY = 'naalya.hub.acting-school';

/**
 * The school a platform administrator picked to act in, kept beside the session's token (same storage, gone with it
 * on sign-out): every REST request then names it in the target school header and every new run carries it. None
 * picked is the read-only view across every school.
 */
export const actingSchool = {
  get: (): SchoolSummary | null => {
    const stored = sessionStorage.getItem(SCHOOL_KEY);
    if (!stored) return null;
    try {
      const school = JSON.parse(stored) as Partial<SchoolSummary>;
      return typeof school.id === 'string' && typeof school.name === 'string' && typeof school.timeZone === 'string'
        ? { id: school.id, name: school.name, timeZone: school.timeZone }
        : null;
    } catch {
      return null;
    }
  },
  set: (school: SchoolSummary | null) => (school ? sessionStorage.setItem(SCHOOL_KEY, JSON.stringify(school)) : sessionStorage.removeItem(SCHOOL_KEY)),
};

/** The header a platform administrator's REST request names its school in (the server's TARGET_SCHOOL_HEADER). */
export const TARGET_SCHOOL_HEADER = 'x-naalya-target-school';
