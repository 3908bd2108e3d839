import { describe, expect, it } from 'vitest';
import { addDays, dayStart, formatDate, formatDateTime, isDay, timeZoneLabel } from './dates';

describe('dates in a time zone', () => {
  it("formats an instant in the zone it is given, and in the browser's own without one", () => {
    const iso = '2026-12-06T22:30:00.000Z';
    // Kampala is UTC+3: half past ten at night in UTC is already the 7th there.
    expect(formatDate(iso, 'Africa/Kampala')).toBe(new Date('2026-12-07T12:00:00Z').toLocaleDateString(undefined, { dateStyle: 'medium', timeZone: 'UTC' }));
    expect(formatDateTime(iso, 'UTC')).toBe(new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium', timeZone: 'UTC' }));
    expect(formatDateTime(iso)).toBe(new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' }));
  });

  it('begins a day at its midnight in the zone, across a daylight-saving change', () => {
    expect(dayStart('2026-12-06', 'UTC')).toBe('2026-12-06T00:00:00.000Z');
    expect(dayStart('2026-12-06', 'Africa/Kampala')).toBe('2026-12-05T21:00:00.000Z');
    expect(dayStart('2026-12-06', 'America/New_York')).toBe('2026-12-06T05:00:00.000Z');
    // London moves to summer time at 01:00 UTC on 29 March 2026: that day begins in winter time, the next in summer.
    expect(dayStart('2026-03-29', 'Europe/London')).toBe('2026-03-29T00:00:00.000Z');
    expect(dayStart('2026-03-30', 'Europe/London')).toBe('2026-03-29T23:00:00.000Z');
    expect(dayStart('2026-12-06')).toBe(new Date(2026, 11, 6).toISOString());
  });

  it('refuses what is not a calendar day', () => {
    expect(isDay('2026-02-29')).toBe(false);
    expect(isDay('2028-02-29')).toBe(true);
    expect(() => dayStart('6 December', 'UTC')).toThrow('Not a calendar day (YYYY-MM-DD): 6 December');
  });

  it('counts days across month and year ends', () => {
    expect(addDays('2026-12-31', 1)).toBe('2027-01-01');
    expect(addDays('2026-03-01', -1)).toBe('2026-02-28');
  });

  it('shows an instant near midnight on its day in Kampala, not on the UTC one', () => {
    // 22:30 UTC on the 6th is 01:30 on the 7th in Kampala (UTC+3, no daylight saving).
    const iso = '2026-12-06T22:30:00.000Z';
    const kampala = formatDateTime(iso, 'Africa/Kampala');
    const utc = formatDateTime(iso, 'UTC');
    expect(kampala).toMatch(/\b7\b/);
    expect(kampala).toMatch(/\b0?1:30:00\b/);
    expect(utc).toMatch(/\b6\b/);
    expect(utc).toMatch(/\b(22|10):30:00\b/);
  });

  it("names a zone as people read it, with its IANA name", () => {
    expect(timeZoneLabel('Africa/Kampala')).toMatch(/^\S.* \(Africa\/Kampala\)$/);
    expect(timeZoneLabel('Africa/Kampala')).not.toBe(timeZoneLabel('Europe/London'));
  });
});
