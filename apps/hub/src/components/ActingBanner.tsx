import { timeZoneLabel } from '../lib/dates';
import { useSchool } from '../lib/school-context';

/**
 * On every page of a platform administrator who picked a school: which school every request and every write of theirs
 * acts in. Staff never see it (the header names their school).
 */
export const ActingBanner = () => {
  const { acting } = useSchool();
  if (!acting) return null;
  return (
    <section aria-label="School you are acting in" className="border-b border-amber-300 bg-amber-50 px-4 py-2 text-sm text-amber-950" data-testid="acting-banner">
      <strong>Acting in {acting.name}</strong>: every change you make, here or through Rover, is made in this school. Dates are in{' '}
      {timeZoneLabel(acting.timeZone)}.
    </section>
  );
};
