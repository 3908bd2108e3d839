import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureChromium, startHubStack, type HubStack } from './support/hub-stack';

// The built Hub in Debian's chromium, served by the built server, talking to the built worker over RabbitMQ: the
// whole path a member of staff takes, with the scripted model. One browser, one page, one user per test.
const SCREENSHOTS = fileURLToPath(new URL('../../../tmp/hub-screenshots/', import.meta.url));
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const ADMIN = 'admin@greenhill.school';
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical findings on the page as it stands (evaluated over DevTools, so the page's CSP allows it). */
const seriousAxeViolations = async (target: Page): Promise<string[]> => {
  await target.evaluate(AXE_SOURCE);
  return target.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: () => Promise<{ violations: { id: string; impact: string | null; nodes: { target: unknown[] }[] }[] }> } }).axe;
    const { violations } = await axe.run();
    return violations
      .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      .map((violation) => `${violation.id}: ${violation.nodes.map((node) => String(node.target[0])).join(', ')}`);
  });
};
const TIMEOUT = 20_000;

let stack: HubStack;
let browser: BrowserContext;
let page!: Page;
let profile: string;

/** A new tab: the Hub keeps its token in the tab's sessionStorage, so each tab signs in on its own. */
const signIn = async (email: string): Promise<Page> => {
  if (page) await page.close();
  page = await browser.newPage();
  page.setDefaultTimeout(TIMEOUT);
  await page.goto(`${stack.baseUrl}/hub/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('naalya-demo');
  await page.getByLabel('Password').press('Enter');
  await page.getByTestId('whoami').getByText('Signed in as').waitFor();
  return page;
};


const send = async (message: string) => {
  await page.getByLabel(/^Message Rover/).fill(message);
  await page.getByLabel(/^Message Rover/).press('Enter');
};

beforeAll(async () => {
  const executablePath = ensureChromium();
  mkdirSync(SCREENSHOTS, { recursive: true });
  profile = mkdtempSync(join(tmpdir(), 'naalya-hub-chromium-'));
  // A fresh profile (--user-data-dir) each run; playwright passes it for a persistent context.
  browser = await chromium.launchPersistentContext(profile, { executablePath, args: CHROMIUM_FLAGS, viewport: { width: 1280, height: 900 } });
  stack = await startHubStack();
}, 150_000);

afterAll(async () => {
  await browser?.close();
  await stack?.teardown();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

describe('the Hub in a browser, against the built server and worker', () => {
  it('serves the Hub under /hub/ with a strict content security policy, and redirects / there', async () => {
    const response = await fetch(`${stack.baseUrl}/hub/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(await response.text()).toContain('<div id="root">');
    const root = await fetch(`${stack.baseUrl}/`, { redirect: 'manual' });
    expect(root.headers.get('location')).toBe('/hub/');
    const bare = await fetch(`${stack.baseUrl}/hub`, { redirect: 'manual' });
    expect(bare.headers.get('location')).toBe('/hub/');
    // The API is unchanged beside it: still JSON, still behind the token.
    expect((await fetch(`${stack.baseUrl}/departments`)).status).toBe(401);
  });

  it('signs in, shows who you are, your school and the roster for this turn', async () => {
    await signIn(ADMIN);
    const whoami = page.getByTestId('whoami');
    await expect.poll(() => whoami.textContent()).toContain('Grace Namusoke');
    expect(await page.getByTestId('school').textContent()).toBe('Greenhill Academy');
    await expect.poll(() => whoami.textContent()).toContain('School administrator');
    // Finding out who you are opens nothing: no thread, no run.
    expect((await stack.api<unknown[]>(ADMIN, '/agent/threads')).body).toEqual([]);
    const roster = page.getByTestId('roster');
    await roster.getByText('Rover').waitFor();
    // Campus mode is offered to someone whose reach covers the campuses.
    await page.getByLabel('One campus').check();
    await page.getByLabel('Campus', { exact: true }).waitFor();
    await page.getByLabel('Whole school').check();
  });

  it('a director of studies sees Sarah on the roster', async () => {
    await signIn('dos@greenhill.school');
    await page.getByTestId('roster').getByText('Sarah (director of studies)').waitFor();
    await signIn(ADMIN);
  });

  it('"list departments": a tool card with its arguments, a live status, the scope line and the result; Rover answers', async () => {
    await send('list departments');
    const card = page.getByTestId('tool-card').filter({ hasText: 'List departments' });
    await card.and(page.locator('[data-status="done"]')).waitFor();
    expect(await card.getByTestId('scope-line').textContent()).toBe('Scope: Your access covers the whole school.');
    await card.locator('summary').click();
    expect(await card.getByTestId('tool-result').textContent()).toContain('Languages');
    expect(await card.getByTestId('tool-args').isVisible()).toBe(true);
    const answer = page.getByTestId('agent-message').last();
    await expect.poll(() => answer.textContent()).toContain('Languages');
    expect(await answer.getAttribute('data-speaker')).toBe('rover');
    await page.screenshot({ path: `${SCREENSHOTS}chat.png`, fullPage: true });
  });

  it('campus mode: a campus administrator picks only their own campus, and the scope line says the chat is pinned to it', async () => {
    await signIn('campus.admin@greenhill.school');
    await page.getByLabel('One campus').check();
    const campus = page.getByLabel('Campus', { exact: true });
    expect(await campus.locator('option').allTextContents()).toEqual(['Kisasi']);
    await page.getByText('Message Rover (Kisasi campus)').waitFor();
    await send('list departments');
    const card = page.getByTestId('tool-card').filter({ hasText: 'List departments' });
    await card.and(page.locator('[data-status="done"]')).waitFor();
    expect(await card.getByTestId('scope-line').textContent()).toMatch(/^Scope: This covers the Kisasi campus only, the campus this chat is pinned to\.$/);
    await signIn(ADMIN);
  });

  it('"delete the Languages department": Rover asks, one answer resumes the run, a second is refused, the success links to its audit row', async () => {
    await page.getByRole('link', { name: 'New chat' }).click();
    await send('delete the Languages department');
    // The worker's own confirmation, naming exactly the department the call will delete.
    const languages = (await stack.api<{ id: string; name: string }[]>(ADMIN, '/departments')).body.find((department) => department.name === 'Languages')!;
    const question = page.getByTestId('question').filter({ hasText: `Delete the department with id ${languages.id}` });
    await question.and(page.locator('[data-state="pending"]')).waitFor();
    expect(await question.textContent()).toContain('Rover');
    const interruptId = await question.getAttribute('data-interrupt-id');

    // Keyboard only: the newest question has the focus; type the answer and press Enter.
    await expect.poll(() => question.getByLabel('Your answer').evaluate((input) => input === document.activeElement)).toBe(true);
    await page.keyboard.type('yes');
    await page.keyboard.press('Enter');
    await question.and(page.locator('[data-state="answered"]')).waitFor();
    await page.getByTestId('success-event').filter({ hasText: 'Department deleted' }).waitFor();
    await page.getByTestId('tool-card').filter({ hasText: 'Delete department' }).and(page.locator('[data-status="done"]')).waitFor();

    // The same answer again, as a double submit would send it: the server refuses it.
    const threadId = decodeURIComponent(new URL(page.url()).hash.split('/')[2] ?? '');
    const again = await page.evaluate(
      async ({ threadId, interruptId }) => {
        const response = await fetch(`/agent/threads/${threadId}/resume`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${sessionStorage.getItem('naalya.hub.token')}` },
          body: JSON.stringify({ interruptId, answer: 'yes' }),
        });
        return { status: response.status, body: (await response.json()) as { message: string } };
      },
      { threadId, interruptId },
    );
    expect(again).toMatchObject({ status: 409, body: { message: 'This question has already been answered.' } });
  });

  it('a pending question survives a reload and can still be answered', async () => {
    await page.getByRole('link', { name: 'New chat' }).click();
    await send('delete the Mathematics department');
    const pending = page.getByTestId('question').filter({ hasText: 'Delete the department with id' });
    await pending.and(page.locator('[data-state="pending"]')).waitFor();

    await page.reload();
    const reloaded = page.getByTestId('question').filter({ hasText: 'Delete the department with id' });
    await reloaded.and(page.locator('[data-state="pending"]')).waitFor();
    await page.screenshot({ path: `${SCREENSHOTS}question.png`, fullPage: true });
    await reloaded.getByRole('button', { name: 'Yes' }).click();
    await reloaded.and(page.locator('[data-state="answered"]')).waitFor();
    await page.getByTestId('success-event').filter({ hasText: 'Department deleted' }).waitFor();
  });

  it('the Activity page lists the school log with the agent writes marked, and nothing from another school', async () => {
    // Another school writes too, over REST.
    const other = await stack.api<{ id: string }>('admin@lakeside.school', '/departments', { name: 'Lakeside Drama' });
    expect(other.status).toBe(201);

    await page.getByTestId('success-event').getByRole('link', { name: 'View the audit row' }).click();
    const table = page.getByTestId('audit-table');
    await table.waitFor();
    const highlighted = table.locator('tr[aria-current="true"]');
    expect(await highlighted.getAttribute('data-source')).toBe('agent');
    expect(await highlighted.textContent()).toContain('Delete department');
    expect(await highlighted.textContent()).toContain('Grace Namusoke');
    await page.screenshot({ path: `${SCREENSHOTS}activity.png`, fullPage: true });

    const agentRows = table.locator('[data-testid="audit-row"][data-source="agent"]');
    expect(await agentRows.count()).toBe(2);
    expect(await agentRows.first().getByTestId('agent-badge').textContent()).toContain('Agent');
    expect(await table.textContent()).not.toContain(other.body.id);

    // The same from the API: each school's log holds its own rows only.
    const greenhill = await stack.api<{ id: string; resourceId: string | null }[]>(ADMIN, '/audit-log');
    const lakeside = await stack.api<{ id: string; resourceId: string | null }[]>('admin@lakeside.school', '/audit-log');
    expect(greenhill.body.map((row) => row.resourceId)).not.toContain(other.body.id);
    expect(lakeside.body.map((row) => row.resourceId)).toEqual([other.body.id]);
    // Only those allowed to read the log may: a teacher is refused.
    expect((await stack.api('teacher@greenhill.school', '/audit-log')).status).toBe(403);
  });

  it("a cross-school attempt is refused: another school's administrator cannot delete a Greenhill department", async () => {
    const greenhill = await stack.api<{ id: string; name: string }[]>(ADMIN, '/departments');
    const sciences = greenhill.body.find((department) => department.name === 'Sciences')!;
    await signIn('admin@lakeside.school');
    await send(`delete department ${sciences.id}`);
    const question = page.getByTestId('question').and(page.locator('[data-state="pending"]'));
    await question.waitFor();
    await question.getByLabel('Your answer').fill('yes');
    await question.getByLabel('Your answer').press('Enter');
    const card = page.getByTestId('tool-card').filter({ hasText: 'Delete department' });
    await card.and(page.locator('[data-status="refused"]')).waitFor();
    expect(await card.textContent()).toContain('Department not found.');
    expect(await page.getByTestId('success-event').count()).toBe(0);
    const after = await stack.api<{ id: string }[]>(ADMIN, '/departments');
    expect(after.body.map((department) => department.id)).toContain(sciences.id);
  });

  it('axe reports no serious or critical violations on the sign-in, chat and Activity pages', async () => {
    if (page) await page.close();
    page = await browser.newPage();
    page.setDefaultTimeout(TIMEOUT);
    await page.goto(`${stack.baseUrl}/hub/`);
    await page.getByLabel('Email').waitFor();
    expect(await seriousAxeViolations(page)).toEqual([]);

    await signIn(ADMIN);
    await send('list departments');
    await page.getByTestId('agent-message').last().waitFor();
    expect(await seriousAxeViolations(page)).toEqual([]);

    await page.getByRole('link', { name: 'Activity' }).click();
    await page.getByRole('heading', { name: 'Activity in your school' }).waitFor();
    await page.getByText('Loading…').waitFor({ state: 'detached' });
    expect(await seriousAxeViolations(page)).toEqual([]);
  });
});
