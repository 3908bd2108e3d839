import { type BrowserContext, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, openHubBrowser, SCREENSHOTS, signedInTab, type HubBrowser } from './support/hub-browser';
import type { HubStack } from './support/hub-stack';

// Tool results as a person reads them, in Debian's chromium against the built server and worker (scripted model): each
// renderer the Hub picks from a tool's definition, the JSON toggle, the write's link to its audit row, a 360 px screen.
const ADMIN = 'admin@greenhill.school';
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
const TIMEOUT = 20_000;

let stack: HubStack;
let browser: BrowserContext;
let page!: Page;
let hub: HubBrowser | undefined;

const signIn = async (email: string): Promise<Page> => {
  if (page) await page.close();
  page = await signedInTab(browser, stack.baseUrl, email, TIMEOUT);
  return page;
};

/** Sends a message and waits for the named tool's card to be done; the card's result is then on screen. */
const resultOf = async (message: string, tool: string): Promise<Locator> => {
  await page.getByLabel(/^Message Rover/).fill(message);
  await page.getByLabel(/^Message Rover/).press('Enter');
  const card = page.locator(`[data-testid="tool-card"][data-tool="${tool}"][data-status="done"]`).last();
  // On a timeout, the chat as it stands says what came instead (a question, a refusal, another tool).
  await card.waitFor().catch(async (error: unknown) => {
    throw new Error(`${String(error)}\n${(await page.locator('main').innerText()).slice(-1500)}`);
  });
  return card;
};

beforeAll(async () => {
  hub = await openHubBrowser();
  ({ browser, stack } = hub);
}, 150_000);

afterAll(async () => {
  await hub?.close();
});

describe('tool results for people, in a browser', () => {
  it('a list is a table led by names with column headers, ids one click away, and no uuid among its cells', async () => {
    await signIn(ADMIN);
    const card = await resultOf('list departments', 'list_departments');
    expect(await card.getByTestId('scope-line').textContent()).toBe('Scope: Your access covers the whole school.');
    const table = card.getByTestId('result-table');
    const headers = await table.locator('thead th').evaluateAll((cells) => cells.map((cell) => [cell.textContent, cell.getAttribute('scope')]));
    expect(headers[0]).toEqual(['Name', 'col']);
    expect(headers.at(-1)).toEqual(['Details', 'col']);
    expect(headers.every(([, scope]) => scope === 'col')).toBe(true);
    const languages = table.locator('tbody tr').filter({ hasText: 'Languages' });
    expect(await languages.locator('th[scope="row"]').textContent()).toBe('Languages');
    // The ids are folded away: the visible cells hold no uuid until the row's details are opened, by keyboard alone.
    expect(await table.locator('tbody').innerText()).not.toMatch(UUID);
    await languages.getByText('Ids', { exact: true }).focus();
    await page.keyboard.press('Enter');
    expect(await languages.getByTestId('result-ids').innerText()).toMatch(new RegExp(`department:\\s*${UUID.source}`));
    expect(await axeViolations(page, { within: '[data-tool="list_departments"]' })).toEqual([]);
    await page.screenshot({ path: `${SCREENSHOTS}results-table.png`, fullPage: true });
  });

  it('the raw JSON is behind a keyboard toggle that says whether it is open', async () => {
    const card = page.locator('[data-testid="tool-card"][data-tool="list_departments"]').last();
    const toggle = card.getByRole('button', { name: 'Show JSON' });
    const json = card.getByTestId('result-json');
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    expect(await json.isVisible()).toBe(false);
    await toggle.focus();
    await page.keyboard.press('Enter');
    const hide = card.getByRole('button', { name: 'Hide JSON' });
    expect(await hide.getAttribute('aria-expanded')).toBe('true');
    expect(await hide.getAttribute('aria-controls')).toBe(await json.getAttribute('id'));
    const shown = JSON.parse((await json.textContent()) ?? '') as { id: string; name: string }[];
    expect(shown.map((department) => department.name)).toContain('Languages');
    expect(shown[0]?.id).toMatch(UUID);
    await page.keyboard.press('Space');
    expect(await json.isVisible()).toBe(false);
  });

  it('one thing is a short card: the school branding as labelled fields', async () => {
    const card = await resultOf('show the school branding', 'get_school_branding');
    const record = card.getByTestId('result-record');
    await record.waitFor();
    expect(await card.locator('[data-view]').getAttribute('data-view')).toBe('record');
    expect(await record.locator('dt').count()).toBeGreaterThan(0);
    expect(await record.locator('dt').allTextContents()).toContain('Motto');
    expect(await record.innerText()).not.toMatch(UUID);
    expect(await axeViolations(page, { within: '[data-tool="get_school_branding"]' })).toEqual([]);
  });

  it('a write links to its audit row on the Activity page, and its result is a record without ids in view', async () => {
    await signIn(ADMIN);
    const card = await resultOf('create a department called Robotics', 'create_department');
    expect(await card.locator('[data-view]').getAttribute('data-view')).toBe('record');
    // The new department's name is the card's title; its ids (department, school, campus) are one click away.
    expect(await card.getByTestId('result-record').locator('p').first().textContent()).toBe('Robotics');
    expect(await card.getByTestId('result-record').innerText()).not.toMatch(UUID);
    const link = card.getByRole('link', { name: 'View the audit row' });
    const href = (await link.getAttribute('href')) ?? '';
    expect(href).toMatch(new RegExp(`^#/activity\\?highlight=${UUID.source}$`));
    await link.click();
    const highlighted = page.getByTestId('audit-table').locator('tr[aria-current="true"]');
    await highlighted.waitFor();
    expect(await highlighted.textContent()).toContain('Create department');
    const audit = await stack.api<{ id: string; source: string }>(ADMIN, `/audit-log/${href.split('=')[1]}`);
    expect(audit.status).toBe(200);
    expect(audit.body.source).toBe('agent');
  });

  it('at 360 px a result table stacks into label and value lines, and the page does not scroll sideways', async () => {
    await page.goto(`${stack.baseUrl}/hub/#/chat`);
    await page.setViewportSize({ width: 360, height: 780 });
    try {
      const card = await resultOf('show the staff', 'list_staff');
      const firstRow = card.getByTestId('result-table').locator('tbody tr').first();
      expect(await firstRow.evaluate((row) => getComputedStyle(row).display)).toBe('block');
      // Each cell carries its column's name, as the stacked layout shows it in front of the value.
      expect(await firstRow.locator('td').first().getAttribute('data-label')).toBe('Email');
      await expect.poll(() => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBe(0);
      await page.screenshot({ path: `${SCREENSHOTS}results-narrow.png`, fullPage: true });
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('a gradebook is a grid of students by subjects, its marks read across, in a region the keyboard can scroll', async () => {
    await signIn('subject.teacher@greenhill.school');
    const card = await resultOf('show the gradebook for S1 Kisasi', 'get_gradebook');
    const grid = card.getByTestId('result-grid');
    expect(await grid.getAttribute('role')).toBe('region');
    expect(await grid.getAttribute('tabindex')).toBe('0');
    expect(await grid.locator('caption').textContent()).toContain('S1 Kisasi');
    const columns = await grid.locator('thead th').allTextContents();
    expect(columns).toEqual(['Full name', 'Mathematics']);
    const rows = grid.locator('tbody tr');
    expect(await rows.count()).toBeGreaterThan(1);
    expect(await rows.first().locator('th[scope="row"]').textContent()).not.toMatch(UUID);
    expect(await rows.first().locator('td').first().textContent()).toMatch(/^(\d+(\.\d{1,2})?|—)$/);
    expect(await grid.innerText()).not.toMatch(UUID);
    expect(await axeViolations(page, { within: '[data-tool="get_gradebook"]' })).toEqual([]);
    // The run over (no Stop button), so the screenshot shows the finished conversation.
    await expect.poll(() => page.getByRole('button', { name: 'Stop' }).count()).toBe(0);
    await page.screenshot({ path: `${SCREENSHOTS}results-grid.png`, fullPage: true });
  });
});
