/** A calendar date (YYYY-MM-DD) as product copy reads it: "12 January 2027". Dates carry no zone, so none is applied. */
export const calendarDateCopy = (isoDate: string): string =>
  new Date(`${isoDate}T00:00:00Z`).toLocaleDateString('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });
