/** The zone a school gets unless it chooses another (migration 1764662400017's column default). */
export const DEFAULT_SCHOOL_TIME_ZONE = 'Africa/Kampala';

/**
 * IANA zone names this runtime knows, the same list the Hub's Intl formats dates with. V8 leaves the canonical "UTC"
 * out of supportedValuesOf while accepting it everywhere, so it is added by name.
 */
const KNOWN_TIME_ZONES: ReadonlySet<string> = new Set([...Intl.supportedValuesOf('timeZone'), 'UTC']);

export const isKnownTimeZone = (name: string): boolean => KNOWN_TIME_ZONES.has(name);

export const unknownTimeZoneMessage = (name: string): string =>
  `Invalid request: timeZone: "${name.slice(0, 64)}" is not an IANA time zone name; give one such as "${DEFAULT_SCHOOL_TIME_ZONE}" or "Europe/London".`;
