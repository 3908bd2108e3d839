import { type BrowserContext, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, openHubBrowser, SCREENSHOTS, sidewaysScroll, signedInTab, tabTo, type HubBrowser } from './support/hub-browser';
import type { HubStack } from './support/hub-stack';

// Confirmations people can trust, in the built Hub against the built server and worker (scripted model): approving
// with edits (the fields drawn from the tool's schema, the question asked again with what changed, the approval on the
// audit row) and a question's expiry (said plainly, with "Ask again"). Questions wait QUESTION_TTL_SECONDS here, so the
// expiry is seen within the test; every other question is answered well inside it.
const QUESTION_TTL_SECONDS = 20;
const DOS = 'dos@greenhill.school';
const ADMIN = 'admin@greenhill.school';
const TIMEOUT = 20_000;
const NARROW = { width: 360, height: 740 };
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

let hub: HubBrowser | undefined;
let stack: HubStack;
let browser: BrowserContext;
let page!: Page;

const signIn = async (email: string): Promise<Page> => {
  if (page) await page.close();
  page = await signedInTab(browser, stack.baseUrl, email, TIMEOUT);
  return page;
};
const send = async (message: string) => {
  await page.getByLabel(/^Message Rover/).fill(message);
  await page.getByLabel(/^Message Rover/).press('Enter');
};
const focused = (target: Locator) => expect.poll(() => target.evaluate((element) => element === document.activeElement)).toBe(true);
const inState = (question: Locator, state: string) => question.and(page.locator(`[data-state="${state}"]`));
/** The question the page shows now in `state` (the newest such), held by its interrupt id as its state moves on. */
const questionIn = async (state: string, filter: { has?: Locator } = {}): Promise<Locator> => {
  const found = page.getByTestId('question').and(page.locator(`[data-state="${state}"]`)).filter(filter).last();
  await found.waitFor();
  return page.locator(`[data-testid="question"][data-interrupt-id="${await found.getAttribute('data-interrupt-id')}"]`);
};
const lessonPlan = async (title: string) => {
  const [plan] = await stack.sql<{ status: string; review_comment: string | null }>(
    `SELECT p.status, p.review_comment FROM lesson_plans p JOIN schools s ON s.id = p.school_id WHERE s.name = 'Greenhill Academy' AND p.title = $1`,
    [title],
  );
  return plan;
};

beforeAll(async () => {
  hub = await openHubBrowser({ AGENT_QUESTION_TTL_SECONDS: String(QUESTION_TTL_SECONDS) });
  ({ browser, stack } = hub);
}, 150_000);

afterAll(async () => {
  await hub?.close();
});

describe('confirmations in the Hub: approve with edits, expiry in sight', () => {
  it('approve with edits, at 360 px and from the keyboard: the comment prefilled and labelled, the question asked again with the change, approved, and the approval on the audit row as edited', async () => {
    await signIn(DOS);
    await page.setViewportSize(NARROW);
    await send('approve the lesson plan Linear equations');
    const asked = await questionIn('pending');
    expect(await asked.textContent()).toContain('Linear equations');
    expect(await asked.textContent()).not.toMatch(UUID);

    // The answer field has the focus; "Edit before approving" is a few Tabs on, and opens the editor with Enter.
    const edit = asked.getByRole('button', { name: 'Edit before approving' });
    await tabTo(edit);
    expect(await edit.getAttribute('aria-expanded')).toBe('false');
    await page.keyboard.press('Enter');
    expect(await edit.getAttribute('aria-expanded')).toBe('true');
    const editor = asked.getByTestId('confirmation-editor');
    // Only what the tool lets a person change, labelled for people: the comment, prefilled with the one asked about.
    expect(await editor.getByTestId('edit-field').evaluateAll((fields) => fields.map((field) => field.getAttribute('data-field')))).toEqual(['comment']);
    const comment = editor.getByLabel('Comment');
    await focused(comment);
    expect(await comment.inputValue()).toBe('');
    expect(await editor.textContent()).not.toMatch(/\bids?\b|[0-9a-f]{8}-/i);
    // The hint is tied to the field.
    const describedBy = (await comment.getAttribute('aria-describedby')) ?? '';
    expect(await page.locator(`[id="${describedBy.split(' ')[0]}"]`).textContent()).toBe('Optional. Up to 500 characters.');

    // Nothing changed yet: said in the editor, which keeps the focus.
    await tabTo(editor.getByRole('button', { name: 'Approve with changes' }));
    await page.keyboard.press('Enter');
    await editor.getByRole('alert').getByText('Nothing has been changed yet').waitFor();
    await focused(comment);
    await page.keyboard.type('Add a homework task for day three.');
    expect(await sidewaysScroll(page)).toBe(0);
    expect(await axeViolations(page, { within: '[data-testid="question"]' })).toEqual([]);
    await tabTo(editor.getByRole('button', { name: 'Approve with changes' }));
    await page.keyboard.press('Enter');
    await inState(asked, 'answered').waitFor();

    // Asked again about the edited call, saying what changed; nothing was written yet.
    const reasked = await questionIn('pending', { has: page.getByTestId('question-edited') });
    expect(await reasked.getByTestId('question-edited').textContent()).toBe('You changed: Comment from nothing to “Add a homework task for day three.”');
    expect(await reasked.textContent()).not.toMatch(UUID);
    expect(await lessonPlan('Linear equations')).toEqual({ status: 'pending', review_comment: null });
    await focused(reasked.getByLabel('Your answer'));
    expect(await sidewaysScroll(page)).toBe(0);
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: `${SCREENSHOTS}confirmation-edited.png`, fullPage: true });
    await tabTo(reasked.getByRole('button', { name: 'Yes' }));
    await page.keyboard.press('Enter');

    await inState(reasked, 'answered').waitFor();
    await page.getByTestId('tool-card').filter({ hasText: 'Approve lesson plan' }).and(page.locator('[data-status="done"]')).last().waitFor();
    const success = page.getByTestId('success-event').filter({ hasText: 'Lesson plan approved' });
    await success.waitFor();
    expect(await lessonPlan('Linear equations')).toEqual({ status: 'approved', review_comment: 'Add a homework task for day three.' });

    // The audit row of the write shows the approval that allowed it: who, and that they changed it first.
    const href = (await success.getByRole('link', { name: 'View the audit row' }).getAttribute('href')) ?? '';
    await signIn(ADMIN);
    await page.goto(`${stack.baseUrl}/hub/${href}`);
    await page.getByTestId('audit-table').locator('tr[aria-current="true"]').getByTestId('audit-details-link').click();
    const approval = page.getByTestId('audit-approval');
    await approval.waitFor();
    expect(await approval.textContent()).toContain('Samuel Kato');
    expect(await approval.getByTestId('approval-edited').textContent()).toContain('Comment from nothing to “Add a homework task for day three.”');
    await page.screenshot({ path: `${SCREENSHOTS}activity-approval.png`, fullPage: true });
  });

  it('an id is changed by name: the teacher of an assignment is picked from the staff list, and the question asked again names both teachers, never an id', async () => {
    await signIn(DOS);
    await send('assign Grace to teach Physics in S3 Kisasi');
    const asked = await questionIn('pending');
    expect(await asked.textContent()).toContain('Grace Namusoke');
    await asked.getByRole('button', { name: 'Edit before approving' }).click();
    const teacher = asked.getByTestId('confirmation-editor').getByLabel('Teacher');
    await focused(teacher);
    expect(await teacher.evaluate((element) => element.tagName)).toBe('SELECT');
    // The staff by name, the one asked about chosen; an id is a value, never a word on the screen.
    await expect.poll(() => teacher.locator('option').count()).toBeGreaterThan(5);
    const options = await teacher.locator('option').allTextContents();
    expect(options.join(' ')).not.toMatch(UUID);
    // Named as the staff list names them: with their campus, where they have one.
    const esther = options.find((option) => option.startsWith('Esther Nalwoga')) ?? '';
    expect(esther).not.toBe('');
    expect(await teacher.locator('option:checked').textContent()).toMatch(/^Grace Namusoke/);
    await teacher.selectOption({ label: esther });
    await asked.getByRole('button', { name: 'Approve with changes' }).click();

    const reasked = await questionIn('pending', { has: page.getByTestId('question-edited') });
    expect(await reasked.textContent()).toContain('Esther Nalwoga');
    await expect.poll(() => reasked.getByTestId('question-edited').textContent()).toMatch(/^You changed: Teacher from Grace Namusoke.* to Esther Nalwoga/);
    expect(await reasked.textContent()).not.toMatch(UUID);
    await reasked.getByRole('button', { name: 'No' }).click();
    await inState(reasked, 'answered').waitFor();
  });

  it('a confirmation whose tool takes no edits offers none: deleting a department is Yes or No', async () => {
    await signIn(ADMIN);
    await send('delete the Languages department');
    const asked = await questionIn('pending');
    expect(await asked.textContent()).toContain('Languages');
    expect(await asked.getByRole('button', { name: 'Yes' }).count()).toBe(1);
    expect(await asked.getByRole('button', { name: 'Edit before approving' }).count()).toBe(0);
    await asked.getByRole('button', { name: 'No' }).click();
    await inState(asked, 'answered').waitFor();
  });

  it('expiry: the question says when it expires; unanswered, it says it expired and nothing was done, and "Ask again" brings a new question; an answer the server refuses as expired does the same', async () => {
    await signIn(DOS);
    await send('approve the lesson plan Simultaneous equations');
    const first = await questionIn('pending');
    expect(await first.getByTestId('question-expiry').textContent()).toContain('expires in less than a minute');

    // Past its time: expired, in words, and once the server has ended the run, offered again.
    await inState(first, 'expired').waitFor({ timeout: (QUESTION_TTL_SECONDS + 5) * 1_000 });
    expect(await first.getByLabel('Your answer').count()).toBe(0);
    const askAgain = first.getByRole('button', { name: 'Ask again' });
    await askAgain.waitFor();
    expect(await first.getByTestId('question-state').textContent()).toMatch(/^This question expired at .+ without an answer, so nothing was done\.$/);
    await expect.poll(() => page.getByTestId('user-message').first().getAttribute('data-run-status')).toBe('failed');
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: `${SCREENSHOTS}question-expired.png`, fullPage: true });

    await askAgain.click();
    await expect.poll(() => page.getByTestId('user-message').filter({ hasText: 'approve the lesson plan Simultaneous equations' }).count()).toBe(2);
    expect(await askAgain.count()).toBe(0);
    const second = await questionIn('pending');
    expect(await second.textContent()).toContain('Simultaneous equations');
    await focused(second.getByLabel('Your answer'));

    // This page's clock stops, so only the server knows the question expired: answered late, it is refused, and the
    // question shows as expired with the same offer.
    await page.clock.setFixedTime(Date.now());
    const expiredRuns = () =>
      stack.sql(`SELECT 1 FROM agent_runs WHERE message = 'approve the lesson plan Simultaneous equations' AND error_code = 'QUESTION_EXPIRED'`).then((rows) => rows.length);
    await expect.poll(expiredRuns, { timeout: (QUESTION_TTL_SECONDS + 10) * 1_000 }).toBe(2);
    await second.getByRole('button', { name: 'Yes' }).click();
    await inState(second, 'expired').waitFor();
    await second.getByRole('button', { name: 'Ask again' }).waitFor();
    expect(await lessonPlan('Simultaneous equations')).toEqual({ status: 'pending', review_comment: null });
  }, 120_000);
});
