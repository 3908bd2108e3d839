import { readFile } from 'node:fs/promises';
import type { AuditLogRow } from '@naalya/access';
import { type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, openHubBrowser, SCREENSHOTS, signedInTab, type HubBrowser } from './support/hub-browser';
import type { HubStack } from './support/hub-stack';

// The Activity page as an administrator works with it, in Debian's chromium against the built server, over 100,000
// audit rows seeded into the stack's database: each filter, keyset paging, one row's detail, the CSV export, axe.
const ADMIN = 'admin@greenhill.school';
const TIMEOUT = 20_000;
const SEEDED = 100_000;
const PAGE_SIZE = 50;
const TOOLS = ['create_department', 'delete_department', 'record_attendance', 'record_marks'] as const;
const ROUTES = ['POST /departments', 'DELETE /departments/:departmentId'] as const;

let stack: HubStack;
let browser: BrowserContext;
let page!: Page;
let hub: HubBrowser | undefined;
let schoolId: string;
let people: { id: string; full_name: string }[];

/**
 * 100,000 rows in one statement, spread over every member of the school's staff (at random, so no person is tied to
 * one tool), four tools, two routes, both sources and 2025 (one every five minutes from 1 January, so no real write of today falls among them).
 */
const seedActivity = async () => {
  [{ id: schoolId } = { id: '' }] = await stack.sql<{ id: string }>(`SELECT id FROM schools WHERE name = 'Greenhill Academy'`);
  people = await stack.sql<{ id: string; full_name: string }>(`SELECT id, full_name FROM users WHERE school_id = $1 AND user_type = 'staff' ORDER BY full_name`, [schoolId]);
  const started = performance.now();
  await stack.sql(
    `INSERT INTO audit_log (school_id, actor_id, actor_type, action, resource_type, resource_id, source, tool, route, run_id, resource_name, changes, created_at)
     SELECT $1, ($2::uuid[])[1 + floor(random() * cardinality($2::uuid[]))::int], 'staff', action, kind, gen_random_uuid()::text,
            CASE WHEN rest THEN 'http' ELSE 'agent' END,
            CASE WHEN rest THEN NULL ELSE ($3::text[])[1 + (g / 3) % 4] END,
            CASE WHEN rest THEN ($4::text[])[1 + g % 2] END,
            CASE WHEN rest THEN NULL ELSE gen_random_uuid() END,
            'Seeded ' || kind || ' ' || g,
            jsonb_build_object('name', 'Seeded ' || kind || ' ' || g, 'members', jsonb_build_array(jsonb_build_object('fullName', 'Member ' || g, 'role', 'head'))),
            timestamptz '2025-01-01 00:00:00+00' + g * interval '5 minutes'
       FROM (SELECT g, g % 3 = 0 AS rest,
                    CASE WHEN g % 3 = 0 THEN (ARRAY['create', 'delete'])[1 + g % 2] ELSE (ARRAY['create', 'delete', 'record', 'record'])[1 + (g / 3) % 4] END AS action,
                    CASE WHEN g % 3 = 0 THEN 'department' ELSE (ARRAY['department', 'department', 'attendance', 'marks'])[1 + (g / 3) % 4] END AS kind
               FROM generate_series(1, ${SEEDED}) AS g) AS seeded`,
    [schoolId, people.map((person) => person.id), TOOLS, ROUTES],
  );
  await stack.sql('ANALYZE audit_log');
  console.log(`[activity] seeded ${SEEDED} audit rows in ${Math.round(performance.now() - started)} ms`);
};

/** The ids of the rows on the page, in order. */
const shownIds = async () => page.getByTestId('audit-row').evaluateAll((rows) => rows.map((row) => row.id.replace(/^audit-/, '')));

/** The API's first `pages` pages for the filters, as the page should show them. */
const apiPages = async (query: Record<string, string>, pages: number) => {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let index = 0; index < pages; index++) {
    const params: URLSearchParams = new URLSearchParams({ ...query, limit: String(PAGE_SIZE), ...(cursor ? { cursor } : {}) });
    const response: Response = await fetch(`${stack.baseUrl}/audit-log?${params}`, { headers: { authorization: `Bearer ${await token()}` } });
    ids.push(...((await response.json()) as AuditLogRow[]).map((row) => row.id));
    cursor = response.headers.get('x-next-cursor');
    if (!cursor) break;
  }
  return ids;
};
const token = async () => (await page.evaluate(() => sessionStorage.getItem('naalya.hub.token'))) as string;

/**
 * Sets the filters in the form from cleared ones and applies them; resolves with the query the page then sent for its
 * first page, as the API received it (the range as instants in the page's time zone), once the rows are shown.
 */
const applyFilters = async (set: Partial<Record<'Person' | 'Tool' | 'Source', string>> & { route?: string; from?: string; to?: string }) => {
  await page.getByRole('button', { name: 'Clear filters' }).click();
  await page.waitForFunction(() => window.location.hash === '#/activity');
  await page.getByText('Loading…').waitFor({ state: 'detached' });
  for (const label of ['Person', 'Tool', 'Source'] as const) {
    const value = set[label];
    if (value) await page.getByLabel(label, { exact: true }).selectOption({ label: value });
  }
  if (set.route) await page.getByLabel('REST route').fill(set.route);
  if (set.from) await page.getByLabel('From (first day)').fill(set.from);
  if (set.to) await page.getByLabel('To (last day)').fill(set.to);
  const request = page.waitForRequest((candidate) => /\/audit-log\?/.test(candidate.url()) && !candidate.url().includes('cursor='));
  await page.getByRole('button', { name: 'Show activity' }).click();
  const params = new URL((await request).url()).searchParams;
  params.delete('limit');
  await page.getByText('Loading…').waitFor({ state: 'detached' });
  return Object.fromEntries(params);
};

beforeAll(async () => {
  hub = await openHubBrowser();
  ({ browser, stack } = hub);
  await seedActivity();
  page = await signedInTab(browser, stack.baseUrl, ADMIN, TIMEOUT);
  await browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.baseUrl });
}, 150_000);

afterAll(async () => {
  await hub?.close();
});

describe('the Activity page over 100,000 rows', () => {
  it('shows the newest rows by name, with no uuid in the cells a person reads (time to first result reported)', async () => {
    const started = performance.now();
    await page.getByRole('link', { name: 'Activity' }).click();
    await page.getByTestId('audit-row').first().waitFor();
    console.log(`[activity] time to first result, unfiltered over ${SEEDED} rows: ${Math.round(performance.now() - started)} ms`);
    const table = page.getByTestId('audit-table');
    expect(await table.locator('caption').textContent()).toBe(`Activity, newest first: ${PAGE_SIZE} rows shown`);
    const headers = await table.locator('thead th').evaluateAll((cells) => cells.map((cell) => [cell.textContent, cell.getAttribute('scope')]));
    expect(headers).toEqual(['When', 'Who', 'What', 'Resource', 'Source', 'Details'].map((name) => [name, 'col']));
    const seededRow = page.getByTestId('audit-row').filter({ hasText: 'Seeded ' }).first();
    await seededRow.waitFor();
    const who = await seededRow.locator('td[data-label="Who"]').textContent();
    expect(people.map((person) => person.full_name)).toContain(who);
    const cells = await seededRow.locator('td').evaluateAll((tds) => tds.map((td) => (td as HTMLElement).innerText).join(' '));
    expect(cells).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/);
    // The id is one click away.
    const copy = seededRow.getByTestId('copy-id');
    await copy.click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(await copy.getAttribute('title'));
    await seededRow.getByText('Copied').waitFor();
  });

  it('filters by each of person, tool, route, source and date range, each view in the URL and the same after a reload', async () => {
    const staff = (await stack.api<{ id: string; fullName: string; campusName: string | null }[]>(ADMIN, '/staff')).body;
    const person = staff.find((member) => people.some((seeded) => seeded.id === member.id)) ?? staff[0];
    if (!person) throw new Error('The demo school has no staff.');
    const cases: [Parameters<typeof applyFilters>[0], Record<string, string>, string][] = [
      [{ Person: `${person.fullName}${person.campusName ? ` (${person.campusName})` : ''}` }, { actorId: person.id }, `person=${person.id}`],
      [{ Tool: 'Record marks' }, { tool: 'record_marks' }, 'tool=record_marks'],
      [{ route: 'DELETE /departments/:departmentId' }, { route: 'DELETE /departments/:departmentId' }, 'route=DELETE+%2Fdepartments%2F%3AdepartmentId'],
      [{ Source: 'REST API' }, { source: 'http' }, 'source=http'],
    ];
    for (const [set, apiQuery, inUrl] of cases) {
      const started = performance.now();
      const sent = await applyFilters(set);
      console.log(`[activity] time to first result, ${inUrl.split('=')[0]} filter: ${Math.round(performance.now() - started)} ms`);
      expect(sent).toEqual(apiQuery);
      expect(await page.evaluate(() => window.location.hash)).toContain(inUrl);
      const ids = await shownIds();
      expect(ids).toHaveLength(PAGE_SIZE);
      expect(ids).toEqual(await apiPages(apiQuery, 1));
    }

    const sent = await applyFilters({ Source: 'Agent', from: '2025-03-01', to: '2025-03-02' });
    expect(sent['source']).toBe('agent');
    // The range is two whole days from midnight, in the page's time zone, the last day included.
    expect(Date.parse(sent['to'] as string) - Date.parse(sent['from'] as string)).toBe(2 * 24 * 3600_000);
    const ids = await shownIds();
    expect(ids).toEqual(await apiPages(sent, 1));
    const dates = await page.locator('[data-testid="audit-row"] time').evaluateAll((times) => times.map((time) => time.getAttribute('datetime') as string));
    expect(dates.every((date) => date >= (sent['from'] as string) && date < (sent['to'] as string))).toBe(true);
    const hash = await page.evaluate(() => window.location.hash);
    expect(hash).toBe('#/activity?source=agent&from=2025-03-01&to=2025-03-02');
    await page.reload();
    // The school's zone arrives with who the caller is; the range is read in it, so the rows are the ones shown after it.
    await page.getByTestId('activity-time-zone').waitFor();
    await page.getByText('Loading…').waitFor({ state: 'detached' });
    await page.getByTestId('audit-row').first().waitFor();
    expect(await shownIds()).toEqual(ids);
    expect(await page.getByLabel('Source').inputValue()).toBe('agent');
    expect(await page.getByLabel('From (first day)').inputValue()).toBe('2025-03-01');
  });

  it('a route that is not a method and a path is refused in the form, naming the shape it takes', async () => {
    await page.getByLabel('REST route').fill('/departments');
    await page.getByRole('button', { name: 'Show activity' }).click();
    expect(await page.getByLabel('REST route').getAttribute('aria-invalid')).toBe('true');
    await page.getByText('A route is a method and a path, as the rows show it: POST /departments').waitFor();
  });

  it('pages with "Load more" to a second and third page without repeats, focus on the first new row, and says when it has reached the end', async () => {
    const sent = await applyFilters({ Source: 'Agent', from: '2025-03-01', to: '2025-03-04' });
    for (const shown of [2, 3]) {
      await page.getByTestId('load-more').click();
      await page.getByTestId('audit-row').nth(shown * PAGE_SIZE - 1).waitFor();
      const ids = await shownIds();
      expect(ids).toHaveLength(shown * PAGE_SIZE);
      expect(new Set(ids).size).toBe(ids.length);
      expect(await page.evaluate(() => document.activeElement?.id)).toBe(`audit-${ids[(shown - 1) * PAGE_SIZE]}`);
    }
    expect(await shownIds()).toEqual(await apiPages(sent, 3));
    expect(await page.getByTestId('activity-announcement').textContent()).toContain(`${3 * PAGE_SIZE} shown`);

    // One person, one tool, three days: fewer rows than a page, and the table says it has them all.
    const [first] = people;
    const member = (await stack.api<{ id: string; fullName: string; campusName: string | null }[]>(ADMIN, '/staff')).body.find((staff) => staff.id === first?.id);
    if (!member) throw new Error('The first seeded person is not on the staff list.');
    const narrow = await applyFilters({ Person: `${member.fullName}${member.campusName ? ` (${member.campusName})` : ''}`, Tool: 'Create department', from: '2025-06-10', to: '2025-06-12' });
    await page.getByTestId('activity-end').waitFor();
    expect(await page.getByTestId('load-more').count()).toBe(0);
    const [expected] = await stack.sql<{ count: string }>(
      `SELECT count(*) FROM audit_log WHERE school_id = $1 AND actor_id = $2 AND tool = 'create_department' AND created_at >= $3 AND created_at < $4`,
      [schoolId, member.id, narrow['from'], narrow['to']],
    );
    expect(Number(expected?.count)).toBeGreaterThan(0);
    expect(await page.getByTestId('audit-row').count()).toBe(Number(expected?.count));
  });

  it('opens one row at its own URL with what changed read out, the run, and focus on its heading; back returns focus to its link', async () => {
    await applyFilters({ Source: 'Agent', from: '2025-03-01', to: '2025-03-02' });
    const row = page.getByTestId('audit-row').nth(2);
    const id = (await row.getAttribute('id'))?.replace(/^audit-/, '') as string;
    await row.getByTestId('audit-details-link').focus();
    await page.keyboard.press('Enter');
    const detail = page.getByTestId('audit-detail');
    await detail.getByText('What changed').waitFor();
    expect(await page.evaluate(() => window.location.hash)).toBe(`#/activity/${id}?source=agent&from=2025-03-01&to=2025-03-02`);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('activity-detail-title');
    const [stored] = await stack.sql<{ resource_name: string; run_id: string; actor_id: string }>(`SELECT resource_name, run_id, actor_id FROM audit_log WHERE id = $1`, [id]);
    expect(await page.getByRole('heading', { level: 2 }).textContent()).toContain(stored?.resource_name);
    const changes = detail.getByTestId('audit-changes');
    expect(await changes.locator('dt').first().textContent()).toBe('Name');
    expect(await changes.locator('dd').first().textContent()).toBe(stored?.resource_name);
    expect(await changes.innerText()).toContain('Full name');
    expect(await changes.getByTestId('result-json').isVisible()).toBe(false);
    expect(await detail.innerText()).toContain(stored?.run_id);
    expect(await detail.innerText()).toContain(people.find((person) => person.id === stored?.actor_id)?.full_name);
    // A seeded run is nobody's conversation: no thread link, no token usage, no trace, rather than anything made up.
    expect(await detail.getByTestId('thread-link').count()).toBe(0);
    expect(await detail.innerText()).not.toContain('Tokens used');
    expect(await detail.getByTestId('trace-id').count()).toBe(0);
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: `${SCREENSHOTS}activity-detail.png`, fullPage: true });

    await detail.getByTestId('back-to-list').click();
    await page.getByTestId('audit-table').waitFor();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe(`audit-details-${id}`);

    // A row id the school does not have is the server's sentence, not a blank page.
    await page.evaluate(() => (window.location.hash = '#/activity/00000000-0000-4000-8000-000000000000'));
    await page.getByTestId('audit-detail').getByRole('alert').getByText('No activity row has that id in this school.').waitFor();
    await page.getByTestId('back-to-list').click();
    await page.getByTestId('audit-table').waitFor();
  });

  it('exports the range and filters shown as a CSV named by the school and the range; a range too large gets the API’s sentence', async () => {
    const sent = await applyFilters({ Source: 'REST API', from: '2025-03-01', to: '2025-03-02' });
    const downloading = page.waitForEvent('download');
    await page.getByTestId('export-csv').click();
    const file = await downloading;
    expect(file.suggestedFilename()).toBe('activity-greenhill-academy-2025-03-01-to-2025-03-02.csv');
    const lines = (await readFile((await file.path()) as string, 'utf8')).trimEnd().split('\r\n');
    expect(lines[0]).toBe('createdAt,actorName,actorId,actorType,source,tool,route,action,resourceType,resourceId,resourceName,runId,callId,changes');
    const expected = await stack.sql<{ id: string; resource_name: string }>(
      `SELECT id, resource_name FROM audit_log WHERE school_id = $1 AND source = 'http' AND created_at >= $2 AND created_at < $3 ORDER BY created_at DESC, id DESC`,
      [schoolId, sent['from'], sent['to']],
    );
    expect(expected.length).toBeGreaterThan(100);
    const rows = lines.slice(1).map((line) => line.slice(1, -1).split('","'));
    expect(rows.map((cells) => cells[10])).toEqual(expected.map((row) => row.resource_name));
    expect(rows.every((cells) => cells[4] === 'http' && (cells[0] as string) >= (sent['from'] as string) && (cells[0] as string) < (sent['to'] as string))).toBe(true);
    await page.getByTestId('export-status').getByText('Exported 2025-03-01 to 2025-03-02.').waitFor();

    await applyFilters({ from: '2025-01-01', to: '2025-12-31' });
    await page.getByTestId('export-csv').click();
    await page.getByTestId('export-status').getByText('Invalid request: to: the range holds more than 10000 rows; export a shorter range').waitFor();

    await applyFilters({ Source: 'Agent' });
    await page.getByTestId('export-csv').click();
    await page.getByTestId('export-status').getByText('Choose the first and last day of the range (From and To), then Show activity, to export it.').waitFor();
  });

  it('axe finds nothing on the filtered list, and at 360 px the page does not scroll sideways', async () => {
    await applyFilters({ Source: 'Agent', from: '2025-03-01', to: '2025-03-02' });
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: `${SCREENSHOTS}activity.png`, fullPage: false });
    await page.setViewportSize({ width: 360, height: 800 });
    try {
      await page.getByTestId('audit-row').first().waitFor();
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
      expect(await axeViolations(page)).toEqual([]);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });
});
