import { type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, openHubBrowser, SCREENSHOTS, signedInTab, type HubBrowser } from './support/hub-browser';
import type { HubStack } from './support/hub-stack';

// A platform administrator in the built Hub: the school they act in picked in the header, named on every page and on
// every write, and every date shown in that school's time zone. Staff see none of it beyond their school's name.
const PLATFORM = 'platform@naalya.school';
const GREENHILL_ADMIN = 'admin@greenhill.school';
const LAKESIDE_ADMIN = 'admin@lakeside.school';
const TIMEOUT = 20_000;

let stack: HubStack;
let browser: BrowserContext;
let hub: HubBrowser | undefined;
let page: Page;

beforeAll(async () => {
  hub = await openHubBrowser();
  ({ browser, stack } = hub);
  page = await signedInTab(browser, stack.baseUrl, PLATFORM, TIMEOUT);
}, 150_000);

afterAll(async () => {
  await hub?.close();
});

const banner = () => page.getByTestId('acting-banner');
const picker = () => page.getByTestId('school-picker');
const send = async (message: string) => {
  await page.getByLabel(/^Message Rover/).fill(message);
  await page.getByLabel(/^Message Rover/).press('Enter');
};
/** What the page itself makes of an instant in a zone: the browser's locale, as the Hub's dates.ts formats it. */
const inZone = (iso: string, timeZone: string) =>
  page.evaluate(([instant, zone]) => new Date(instant).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium', timeZone: zone }), [iso, timeZone] as const);

describe('a platform administrator acting in a school', () => {
  it('starts in the read-only view of every school, picks one, and sees "Acting in" on every page, after a reload too', async () => {
    expect(await picker().inputValue()).toBe('');
    expect(await picker().locator('option').allTextContents()).toEqual(['Every school (read only)', 'Greenhill Academy', 'Lakeside College']);
    expect(await banner().count()).toBe(0);

    await picker().selectOption({ label: 'Greenhill Academy' });
    await expect.poll(() => banner().textContent()).toContain('Acting in Greenhill Academy');
    expect(await banner().textContent()).toContain('(Africa/Kampala)');

    await page.getByRole('link', { name: 'Activity' }).click();
    await page.getByRole('heading', { name: 'Activity in Greenhill Academy' }).waitFor();
    expect(await banner().textContent()).toContain('Acting in Greenhill Academy');

    await page.reload();
    await page.getByRole('heading', { name: 'Activity in Greenhill Academy' }).waitFor();
    expect(await banner().textContent()).toContain('Acting in Greenhill Academy');
    // The picker shows the kept choice once the list of schools is read again.
    await expect.poll(() => picker().locator('option:checked').textContent()).toBe('Greenhill Academy');

    await page.getByRole('link', { name: 'Chat' }).click();
    await page.getByLabel(/^Message Rover/).waitFor();
    expect(await banner().textContent()).toContain('Acting in Greenhill Academy');
    // What this change adds, checked at every impact.
    expect(await axeViolations(page, { within: '[data-testid="acting-banner"]' })).toEqual([]);
    expect(await axeViolations(page, { within: '[data-testid="school-picker-field"]' })).toEqual([]);
  });

  it('makes a write in the picked school: its card and its confirmation name the school, Activity lists it there', async () => {
    await send('create a department called Platform Drama');
    const created = page.getByTestId('tool-card').filter({ hasText: 'Create department' }).and(page.locator('[data-status="done"]'));
    await created.waitFor();
    expect(await created.getByTestId('written-in').textContent()).toBe('School: Greenhill Academy');
    // It landed in Greenhill, and not in Lakeside.
    const names = async (email: string) => (await stack.api<{ name: string }[]>(email, '/departments')).body.map((department) => department.name);
    expect(await names(GREENHILL_ADMIN)).toContain('Platform Drama');
    expect(await names(LAKESIDE_ADMIN)).not.toContain('Platform Drama');

    await send('delete the Platform Drama department');
    const question = page.getByTestId('question').filter({ hasText: 'Delete the department "Platform Drama"' });
    await question.waitFor();
    expect(await question.getByTestId('written-in').textContent()).toBe('In: Greenhill Academy');
    expect(await axeViolations(page, { within: '[data-testid="question"]' })).toEqual([]);
    await page.screenshot({ path: `${SCREENSHOTS}platform-admin.png`, fullPage: true });
    await question.getByRole('button', { name: 'Yes' }).click();
    const deleted = page.getByTestId('tool-card').filter({ hasText: 'Delete department' }).and(page.locator('[data-status="done"]'));
    await deleted.waitFor();
    expect(await deleted.getByTestId('written-in').textContent()).toBe('School: Greenhill Academy');
    expect(await names(GREENHILL_ADMIN)).not.toContain('Platform Drama');

    await page.getByRole('link', { name: 'Activity' }).click();
    // The agent's two writes (the create and the delete) are Greenhill's rows, each naming it.
    const rows = page.locator('[data-testid="audit-row"][data-source="agent"]');
    await expect.poll(() => rows.count()).toBeGreaterThanOrEqual(2);
    expect(new Set(await rows.getByTestId('audit-school').allTextContents())).toEqual(new Set(['Greenhill Academy']));
    expect(await axeViolations(page, { within: '[data-testid="audit-school"]' })).toEqual([]);
  });

  it("shows every date in the picked school's time zone", async () => {
    // Lakeside moves to New York's zone (its administrator's REST change): five hours behind UTC, eight behind Kampala.
    expect((await stack.api(LAKESIDE_ADMIN, '/school', { timeZone: 'America/New_York' }, 'PATCH')).status).toBe(200);
    await page.reload();
    await picker().selectOption({ label: 'Lakeside College' });
    await expect.poll(() => banner().textContent()).toContain('Acting in Lakeside College');
    expect(await banner().textContent()).toContain('(America/New_York)');

    await page.getByRole('link', { name: 'Chat' }).click();
    await send('list departments');
    const sent = page.getByTestId('sent-at').last();
    await expect.poll(async () => (await sent.getAttribute('datetime')) !== null).toBe(true);
    // The run's time as the server stored it, read in the thread list and under the message, in New York's zone.
    await page.getByTestId('tool-card').filter({ hasText: 'List departments' }).and(page.locator('[data-status="done"]')).waitFor();
    await page.reload();
    const sentAt = (await page.getByTestId('sent-at').last().getAttribute('datetime')) as string;
    expect(await page.getByTestId('sent-at').last().textContent()).toBe(await inZone(sentAt, 'America/New_York'));
    expect(await inZone(sentAt, 'America/New_York')).not.toBe(await inZone(sentAt, 'Africa/Kampala'));
    const listed = page.getByTestId('thread-updated').first();
    expect(await listed.textContent()).toBe(await inZone((await listed.getAttribute('datetime')) as string, 'America/New_York'));

    await page.getByRole('link', { name: 'Activity' }).click();
    await page.getByRole('heading', { name: 'Activity in Lakeside College' }).waitFor();
    expect(await page.getByTestId('activity-time-zone').textContent()).toContain('(America/New_York)');
    const when = page.getByTestId('audit-row').first().locator('time');
    expect(await when.textContent()).toBe(await inZone((await when.getAttribute('datetime')) as string, 'America/New_York'));
  });

  it('shows staff no picker and no banner, only their school with its zone', async () => {
    // An open Hub tab would hand its session to the new one (lib/session.ts): the platform administrator's goes first.
    await page.close();
    const staff = await signedInTab(browser, stack.baseUrl, GREENHILL_ADMIN, TIMEOUT);
    try {
      await staff.getByTestId('school-time-zone').waitFor();
      expect(await staff.getByTestId('school').textContent()).toBe('Greenhill Academy');
      expect(await staff.getByTestId('school-time-zone').textContent()).toContain('(Africa/Kampala)');
      expect(await staff.getByTestId('school-picker').count()).toBe(0);
      await staff.getByRole('link', { name: 'Activity' }).click();
      await staff.getByRole('heading', { name: 'Activity in your school' }).waitFor();
      expect(await staff.getByTestId('acting-banner').count()).toBe(0);
      expect(await staff.getByTestId('audit-school').count()).toBe(0);
    } finally {
      await staff.close();
    }
  });
});

