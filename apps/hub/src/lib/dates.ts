/**
 * Every date the Hub shows goes through here, so a school's time zone, once passed, applies everywhere at once.
 * `timeZone` is an IANA name ("Africa/Kampala"); undefined means the browser's own zone.
 */
export const formatDateTime = (iso: string, timeZone?: string): string =>
  new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium', timeZone });

/** The calendar date of an instant in the zone, without the time. */
export const formatDate = (iso: string, timeZone?: string): string => new Date(iso).toLocaleDateString(undefined, { dateStyle: 'medium', timeZone });

/** A calendar day as a date input gives it: "2026-12-06". */
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Whether `day` is a real calendar day in the date input's format (2026-02-30 is not). */
export const isDay = (day: string): boolean => {
  const match = DAY.exec(day);
  if (!match) return false;
  const date = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])));
  return date.toISOString().slice(0, 10) === day;
};

/** The day `count` days after `day` (before it when negative), across month and year ends. */
export const addDays = (day: string, count: number): string => {
  const [year, month, date] = day.split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(year, month - 1, date + count)).toISOString().slice(0, 10);
};

/** How far the zone's wall clock is ahead of UTC at `instant`, in milliseconds. */
const zoneOffsetMs = (instant: number, timeZone: string): number => {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(instant));
  const part = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((candidate) => candidate.type === type)?.value);
  const wall = Date.UTC(part('year'), part('month') - 1, part('day'), part('hour'), part('minute'), part('second'));
  return wall - Math.floor(instant / 1000) * 1000;
};

/**
 * The instant a calendar day begins in the zone, as an ISO 8601 instant: what a date range filter means by "from
 * 6 December" for a school in that zone. The offset is read twice, at the first guess and at the answer, so a day
 * that begins just after a daylight-saving change still begins at its own midnight.
 */
export const dayStart = (day: string, timeZone?: string): string => {
  if (!isDay(day)) throw new Error(`Not a calendar day (YYYY-MM-DD): ${day}`);
  const [year, month, date] = day.split('-').map(Number) as [number, number, number];
  if (timeZone === undefined) return new Date(year, month - 1, date).toISOString();
  const wallMidnight = Date.UTC(year, month - 1, date);
  const guess = wallMidnight - zoneOffsetMs(wallMidnight, timeZone);
  return new Date(wallMidnight - zoneOffsetMs(guess, timeZone)).toISOString();
};

/** Today's calendar day in the zone, as a date input takes it. */
export const today = (timeZone?: string): string => new Date().toLocaleDateString('en-CA', { timeZone });

/**
 * The zone's name as people read it, beside its IANA name: "East Africa Time (Africa/Kampala)", said once where dates
 * are listed rather than after every one of them.
 */
export const timeZoneLabel = (timeZone: string, at: Date = new Date()): string => {
  const name = new Intl.DateTimeFormat(undefined, { timeZone, timeZoneName: 'long' }).formatToParts(at).find((part) => part.type === 'timeZoneName')?.value;
  return name && name !== timeZone ? `${name} (${timeZone})` : timeZone;
};
