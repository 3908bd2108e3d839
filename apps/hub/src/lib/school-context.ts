import { createContext, useContext } from 'react';
import type { SchoolSummary } from '@naalya/access';

/** Where the Hub's user works: the zone every date is shown in, and for a platform administrator the school picked. */
export type SchoolView = {
  /** IANA name: the picked school's for a platform administrator, the user's school's for staff; undefined before it is known. */
  timeZone?: string;
  isPlatform: boolean;
  /** The school a platform administrator acts in; null with none picked (read-only, every school), and for staff. */
  acting: SchoolSummary | null;
  /** The schools a platform administrator may pick from, to name a run's or an audit row's school by its id. */
  schools: SchoolSummary[];
};

export const SchoolContext = createContext<SchoolView>({ isPlatform: false, acting: null, schools: [] });

export const useSchool = (): SchoolView => useContext(SchoolContext);

/** The words naming the school a platform administrator's write ran in (a run's target school id), for its card. */
export const schoolNameOf = (view: SchoolView, schoolId: string | null | undefined): string => {
  if (!schoolId) return 'no school picked (read only)';
  return view.schools.find((school) => school.id === schoolId)?.name ?? 'a school no longer listed';
};
