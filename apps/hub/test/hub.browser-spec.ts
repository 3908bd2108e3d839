import { type BrowserContext, type Page } from 'playwright-core';
import { ERROR_SENTENCES } from '@naalya/agent-tools';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, openHubBrowser, SCREENSHOTS, signedInTab, type HubBrowser } from './support/hub-browser';
import type { HubStack } from './support/hub-stack';

// The built Hub in Debian's chromium, served by the built server, talking to the built worker over RabbitMQ: the
// whole path a member of staff takes, with the scripted model. One browser, one page, one user per test.
const ADMIN = 'admin@greenhill.school';

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


const send = async (message: string) => {
  await page.getByLabel(/^Message Rover/).fill(message);
  await page.getByLabel(/^Message Rover/).press('Enter');
};

beforeAll(async () => {
  hub = await openHubBrowser();
  ({ browser, stack } = hub);
}, 150_000);

afterAll(async () => {
  await hub?.close();
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
    // The card's own disclosure: each row of the result table has an "Ids" one of its own.
    await card.locator(':scope > details > summary').click();
    expect(await card.getByTestId('tool-result').textContent()).toContain('Languages');
    expect(await card.getByTestId('tool-args').isVisible()).toBe(true);
    const answer = page.getByTestId('agent-message').last();
    await expect.poll(() => answer.textContent()).toContain('Languages');
    expect(await answer.getAttribute('data-speaker')).toBe('rover');
    await page.screenshot({ path: `${SCREENSHOTS}chat.png`, fullPage: true });
  });

  it('streaming: the reply is seen in part before it is whole, tool arguments fill, and the live region announces each message once, whole', async () => {
    await signIn(ADMIN);
    // Every change the page makes, as the user (and a screen reader) would meet it: the messages, the tool arguments,
    // and what is added to the live region.
    await page.evaluate(() => {
      type Seen = {
        messages: { text: string; streaming: string | null; busy: string | null; live: string | null }[];
        args: { text: string; complete: string | null }[];
      };
      const record = { seen: [] as Seen[], announced: [] as string[], announcerEdits: 0 };
      (window as unknown as { streamRecord: typeof record }).streamRecord = record;
      const textOf = (element: Element | null) => (element?.textContent ?? '').replace('▍', '');
      new MutationObserver((mutations) => {
        for (const mutation of mutations) {
          const inAnnouncer = (node: Node | null) => !!(node instanceof Element ? node : node?.parentElement)?.closest('[data-testid="announcer"]');
          if (mutation.type === 'childList' && mutation.target instanceof Element && mutation.target.matches('[data-testid="announcer"]')) {
            mutation.addedNodes.forEach((node) => record.announced.push(node.textContent ?? ''));
          } else if (inAnnouncer(mutation.target)) {
            record.announcerEdits += 1;
          }
        }
        record.seen.push({
          messages: [...document.querySelectorAll('[data-testid="agent-message"]')].map((element) => ({
            text: textOf(element.querySelector('[data-testid="message-text"]')),
            streaming: element.getAttribute('data-streaming'),
            busy: element.getAttribute('aria-busy'),
            live: element.getAttribute('aria-live'),
          })),
          args: [...document.querySelectorAll('[data-testid="tool-card"][data-tool="delete_department"] [data-testid="tool-args"]')].map((element) => ({
            text: textOf(element),
            complete: element.getAttribute('data-complete'),
          })),
        });
      }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    });

    await send('delete the Sciences department');
    const question = page.getByTestId('question').filter({ hasText: 'Delete the department "' });
    await question.and(page.locator('[data-state="pending"]')).waitFor();
    await question.getByRole('button', { name: 'No' }).click();
    await question.and(page.locator('[data-state="answered"]')).waitFor();
    await page.getByTestId('tool-card').filter({ hasText: 'Delete department' }).and(page.locator('[data-status="refused"]')).waitFor();
    await expect.poll(() => page.getByTestId('composer-hint').textContent()).toBe('Enter sends, Shift+Enter starts a new line.');
    await expect.poll(() => page.locator('[data-testid="agent-message"][data-streaming="true"]').count()).toBe(0);

    const record = await page.evaluate(
      () => (window as unknown as { streamRecord: { seen: { messages: { text: string; streaming: string | null; busy: string | null; live: string | null }[]; args: { text: string; complete: string | null }[] }[]; announced: string[]; announcerEdits: number } }).streamRecord,
    );
    const finalMessages = await page.getByTestId('message-text').allTextContents();
    expect(finalMessages.length).toBeGreaterThan(0);
    // Nothing shows twice (the snapshot sent before the pause adds nothing to a page that saw the events).
    expect(new Set(finalMessages).size).toBe(finalMessages.length);

    // Each message was seen in part, busy and not live, before it was whole.
    for (const [index, whole] of finalMessages.entries()) {
      const partial = record.seen.map((seen) => seen.messages[index]).filter((message) => message && message.streaming === 'true' && message.text.length > 0);
      expect(partial.some((message) => message && message.text.length < whole.length && whole.startsWith(message.text)), whole).toBe(true);
      expect(partial.every((message) => message?.busy === 'true' && message.live === 'off')).toBe(true);
    }
    // The arguments filled: seen incomplete as a prefix of their JSON text, then laid out once complete.
    const args = record.seen.flatMap((seen) => seen.args);
    const complete = args.find((arg) => arg.complete === 'true');
    expect(complete?.text).toMatch(/"departmentId": "[0-9a-f-]{36}"/);
    const filling = args.filter((arg) => arg.complete === 'false' && arg.text.length > 0);
    expect(filling.length).toBeGreaterThan(1);
    const raw = filling.at(-1)?.text ?? '';
    expect(filling.every((arg) => raw.startsWith(arg.text))).toBe(true);
    expect(new Set(filling.map((arg) => arg.text)).size).toBeGreaterThan(1);

    // The live region: each message added once, whole, never edited token by token.
    expect(record.announced).toEqual(finalMessages.map((text) => `Rover: ${text}`));
    expect(record.announcerEdits).toBe(0);
    // The conversation log stays live for what is added to it; the messages in it are not.
    expect(await page.getByTestId('conversation').getAttribute('aria-live')).toBe('polite');
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
    // The server's confirmation from the records, naming the department the call will delete, never its id.
    const languages = (await stack.api<{ id: string; name: string }[]>(ADMIN, '/departments')).body.find((department) => department.name === 'Languages')!;
    const question = page.getByTestId('question').filter({ hasText: 'Delete the department "Languages"' });
    await question.and(page.locator('[data-state="pending"]')).waitFor();
    expect(await question.textContent()).toContain('Rover');
    expect(await question.textContent()).not.toContain(languages.id);
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
    const pending = page.getByTestId('question').filter({ hasText: 'Delete the department "' });
    await pending.and(page.locator('[data-state="pending"]')).waitFor();

    await page.reload();
    const reloaded = page.getByTestId('question').filter({ hasText: 'Delete the department "' });
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

  it("a cross-school attempt is refused before anything is asked: another school's administrator cannot delete a Greenhill department", async () => {
    const greenhill = await stack.api<{ id: string; name: string }[]>(ADMIN, '/departments');
    const sciences = greenhill.body.find((department) => department.name === 'Sciences')!;
    await signIn('admin@lakeside.school');
    await send(`delete department ${sciences.id}`);
    const card = page.getByTestId('tool-card').filter({ hasText: 'Delete department' });
    await card.and(page.locator('[data-status="refused"]')).waitFor();
    expect(await card.textContent()).toContain('Department not found.');
    expect(await page.getByTestId('question').count()).toBe(0);
    expect(await page.getByTestId('success-event').count()).toBe(0);
    const after = await stack.api<{ id: string }[]>(ADMIN, '/departments');
    expect(after.body.map((department) => department.id)).toContain(sciences.id);
  });

  it('axe reports no WCAG 2.1 A or AA violation, of any impact, on the sign-in, chat and Activity pages', async () => {
    if (page) await page.close();
    page = await browser.newPage();
    page.setDefaultTimeout(TIMEOUT);
    await page.goto(`${stack.baseUrl}/hub/`);
    await page.getByLabel('Email').waitFor();
    expect(await axeViolations(page)).toEqual([]);

    await signIn(ADMIN);
    await send('list departments');
    await page.getByTestId('agent-message').last().waitFor();
    expect(await axeViolations(page)).toEqual([]);

    await page.getByRole('link', { name: 'Activity' }).click();
    await page.getByRole('heading', { name: 'Activity in your school' }).waitFor();
    await page.getByText('Loading…').waitFor({ state: 'detached' });
    expect(await axeViolations(page)).toEqual([]);
  });
});

// Run states as the server reports them. The worker is frozen (SIGSTOP) to hold a run in `running` with nobody working
// on it; the stack's server gives such a step up after two leases of 10 s (RUN_ABANDONED).
describe('run states in the Hub: running and Stop, queued, stop-and-send, failed with send again, a question that expires', () => {
  const RUN_GIVEN_UP_MS = 40_000;
  const userMessage = (text: string) => page.getByTestId('user-message').filter({ hasText: text });
  const runStatus = (text: string) => userMessage(text).first().getAttribute('data-run-status');
  const stopButton = () => page.getByRole('button', { name: 'Stop the current run' });
  const currentThread = () => decodeURIComponent(new URL(page.url()).hash.split('/')[2] ?? '');
  /** A thread of its own with one answered message in it (so the next sends go to an existing thread). */
  const freshThread = async () => {
    await page.getByRole('link', { name: 'New chat' }).click();
    await send('list departments');
    await expect.poll(() => runStatus('list departments')).toBe('finished');
  };

  afterEach(() => stack.thawWorker());

  it('running, then Stop (keyboard): the run says so, Stop is labelled and focusable, "Stopped" ends it and nothing of it runs later', async () => {
    await signIn(ADMIN);
    await freshThread();
    stack.freezeWorker();
    await send('show the staff');
    await expect.poll(() => runStatus('show the staff')).toBe('running');
    await page.getByTestId('composer-hint').getByText('Rover is working…').waitFor();

    await stopButton().focus();
    expect(await stopButton().evaluate((button) => button === document.activeElement)).toBe(true);
    await page.keyboard.press('Enter');
    const stopped = page.getByTestId('run-stopped');
    await stopped.waitFor();
    expect(await stopped.textContent()).toContain('Stopped.');
    expect(await runStatus('show the staff')).toBe('cancelled');
    await expect.poll(() => stopButton().count()).toBe(0);
    // The keyboard user is back in the composer.
    expect(await page.getByLabel(/^Message Rover/).evaluate((input) => input === document.activeElement)).toBe(true);

    // The server agrees, and ended the run's stream with the cancelled outcome.
    const threadId = currentThread();
    const runId = (await userMessage('show the staff').getAttribute('data-run-id')) ?? '';
    const detail = await stack.api<{ runs: { id: string; status: string }[] }>(ADMIN, `/agent/threads/${threadId}`);
    expect(detail.body.runs.find((run) => run.id === runId)?.status).toBe('cancelled');

    // The worker wakes up to a step whose run was stopped: it runs none of it, and the thread takes a new message.
    stack.thawWorker();
    await send('list campuses');
    await expect.poll(() => runStatus('list campuses')).toBe('finished');
    const events = await stack.runEvents(ADMIN, threadId, runId);
    expect(events.map((event) => event.type)).not.toContain('TEXT_MESSAGE_START');
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' }, metadata: { committedWrites: [] } });
    await page.screenshot({ path: `${SCREENSHOTS}stopped.png`, fullPage: true });
  });

  it('queued: a message sent while Rover works is refused by default and the Hub offers the choice; "Queue it" waits, then runs', async () => {
    await freshThread();
    stack.freezeWorker();
    await send('show the staff');
    await expect.poll(() => runStatus('show the staff')).toBe('running');

    await send('list campuses');
    const choice = page.getByTestId('multitask-choice');
    await choice.waitFor();
    expect(await choice.getAttribute('data-code')).toBe('RUN_IN_PROGRESS');
    expect(await choice.textContent()).toContain('Rover is still working on your previous message.');
    // Nothing was sent yet: the message is still in the composer, and the choice has the focus.
    expect(await page.getByLabel(/^Message Rover/).inputValue()).toBe('list campuses');
    expect(await userMessage('list campuses').count()).toBe(0);
    const queueIt = choice.getByRole('button', { name: 'Queue it' });
    await expect.poll(() => queueIt.evaluate((button) => button === document.activeElement)).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await page.keyboard.press('Enter');

    const queued = userMessage('list campuses');
    await expect.poll(() => queued.getAttribute('data-run-status')).toBe('queued');
    expect(await queued.getByTestId('run-state').textContent()).toBe('Queued: waiting for the current reply to finish.');
    await page.getByTestId('composer-hint').getByText('1 message queued: waiting for the current reply to finish.', { exact: false }).waitFor();
    expect(await page.getByLabel(/^Message Rover/).inputValue()).toBe('');
    await page.screenshot({ path: `${SCREENSHOTS}queued.png`, fullPage: true });

    // The current run ends (stopped here): the queued one starts, and answers once the worker is back.
    await stopButton().click();
    await expect.poll(() => runStatus('show the staff')).toBe('cancelled');
    // It starts (running, while the worker is still frozen); observed as soon as it leaves the queue, not timed.
    await expect.poll(() => queued.getAttribute('data-run-status')).not.toBe('queued');
    stack.thawWorker();
    await expect.poll(() => queued.getAttribute('data-run-status'), { timeout: TIMEOUT }).toBe('finished');
    const answer = page.getByTestId('agent-message').last();
    await expect.poll(() => answer.textContent()).toContain('[scripted model]');
  });

  it('"Stop the current run and send": the current run is stopped, the new message runs at once', async () => {
    await freshThread();
    stack.freezeWorker();
    await send('show the staff');
    await expect.poll(() => runStatus('show the staff')).toBe('running');

    await send('list subjects');
    const choice = page.getByTestId('multitask-choice');
    await choice.getByRole('button', { name: 'Stop the current run and send' }).click();
    await expect.poll(() => runStatus('show the staff')).toBe('cancelled');
    await page.getByTestId('run-stopped').waitFor();
    await expect.poll(() => runStatus('list subjects')).toBe('running');
    expect(await choice.count()).toBe(0);

    stack.thawWorker();
    await expect.poll(() => runStatus('list subjects'), { timeout: TIMEOUT }).toBe('finished');
    const threadId = currentThread();
    const detail = await stack.api<{ runs: { message: string; status: string }[] }>(ADMIN, `/agent/threads/${threadId}`);
    expect(detail.body.runs.map((run) => [run.message, run.status])).toEqual([
      ['list departments', 'finished'],
      ['show the staff', 'cancelled'],
      ['list subjects', 'finished'],
    ]);
  });

  it('failed: a run no worker takes is failed by the server with its sentence; "Send again" sends the same message as a new run', async () => {
    await freshThread();
    stack.freezeWorker();
    await send('list subjects');
    const failure = page.getByTestId('run-error');
    await failure.waitFor({ timeout: RUN_GIVEN_UP_MS });
    expect(await failure.getAttribute('data-code')).toBe('RUN_ABANDONED');
    expect(await failure.textContent()).toContain(ERROR_SENTENCES.RUN_ABANDONED);
    expect(await runStatus('list subjects')).toBe('failed');
    // Failed is not running: no Stop, nothing says Rover is working.
    expect(await stopButton().count()).toBe(0);
    expect(await page.getByTestId('composer-hint').textContent()).not.toContain('working');
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: `${SCREENSHOTS}failed.png`, fullPage: true });

    stack.thawWorker();
    await failure.getByRole('button', { name: 'Send again' }).click();
    await expect.poll(() => userMessage('list subjects').count()).toBe(2);
    await expect.poll(() => userMessage('list subjects').last().getAttribute('data-run-status'), { timeout: TIMEOUT }).toBe('finished');
    const detail = await stack.api<{ runs: { message: string; status: string; errorCode: string | null }[] }>(ADMIN, `/agent/threads/${currentThread()}`);
    expect(detail.body.runs.slice(1).map((run) => [run.message, run.status, run.errorCode])).toEqual([
      ['list subjects', 'failed', 'RUN_ABANDONED'],
      ['list subjects', 'finished', null],
    ]);
  });

  it('interrupted: the question says when it expires; stopping its run leaves it no longer answerable, after a reload too', async () => {
    await freshThread();
    await send('delete the Sciences department');
    const question = page.getByTestId('question').filter({ hasText: 'Delete the department "' });
    await question.and(page.locator('[data-state="pending"]')).waitFor();
    expect(await runStatus('delete the Sciences department')).toBe('interrupted');
    // The server's default time to answer is 24 h: a moment later, it "expires in 23 h".
    const expiry = question.getByTestId('question-expiry');
    await expect.poll(() => expiry.textContent()).toContain('expires in 23 h');
    const expiresAt = Date.parse((await expiry.locator('time').getAttribute('datetime')) ?? '');
    expect(expiresAt - Date.now()).toBeGreaterThan(23 * 3_600_000);
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(24 * 3_600_000);
    await page.getByTestId('composer-hint').getByText('A question above is waiting for your answer.', { exact: false }).waitFor();
    await page.screenshot({ path: `${SCREENSHOTS}question-expiry.png`, fullPage: true });

    await stopButton().click();
    await question.and(page.locator('[data-state="stopped"]')).waitFor();
    expect(await question.getByTestId('question-state').textContent()).toBe('This question can no longer be answered: the run was stopped.');
    expect(await question.getByLabel('Your answer').count()).toBe(0);
    expect(await page.getByTestId('run-stopped').last().textContent()).toContain('Nothing had been changed.');
    // The delete it asked about never ran, and an answer now is refused.
    expect(await page.getByTestId('tool-card').filter({ hasText: 'Delete department' }).getAttribute('data-status')).toBe('stopped');
    const departments = await stack.api<{ name: string }[]>(ADMIN, '/departments');
    expect(departments.body.map((department) => department.name)).toContain('Sciences');
    const interruptId = (await question.getAttribute('data-interrupt-id')) ?? '';
    const late = await stack.api(ADMIN, `/agent/threads/${currentThread()}/resume`, { interruptId, answer: 'yes' });
    expect(late.status).toBe(409);

    await page.reload();
    const reloaded = page.getByTestId('question').filter({ hasText: 'Delete the department "' });
    await reloaded.and(page.locator('[data-state="stopped"]')).waitFor();
    await page.getByTestId('run-stopped').waitFor();
    expect(await runStatus('delete the Sciences department')).toBe('cancelled');

    // The stopped question holds nothing: the next message is answered.
    await send('list campuses');
    await expect.poll(() => runStatus('list campuses')).toBe('finished');
    await expect.poll(() => page.getByTestId('agent-message').last().textContent()).toContain('Kisasi');
  });

  it('a question waits: a new message may only stop its run and be sent (QUESTION_PENDING); the question is then no longer answerable', async () => {
    await freshThread();
    await send('delete the Sciences department');
    const question = page.getByTestId('question').filter({ hasText: 'Delete the department "' });
    await question.and(page.locator('[data-state="pending"]')).waitFor();

    await page.getByLabel(/^Message Rover/).fill('list campuses');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const choice = page.getByTestId('multitask-choice');
    await choice.waitFor();
    expect(await choice.getAttribute('data-code')).toBe('QUESTION_PENDING');
    expect(await choice.textContent()).toContain('A question above is waiting for your answer.');
    // Queueing behind a question is not offered: the server accepts only interrupt while a question waits.
    expect(await choice.getByRole('button', { name: 'Queue it' }).count()).toBe(0);
    await choice.getByRole('button', { name: 'Stop the current run and send' }).click();

    await question.and(page.locator('[data-state="stopped"]')).waitFor();
    await expect.poll(() => runStatus('delete the Sciences department')).toBe('cancelled');
    await expect.poll(() => runStatus('list campuses')).toBe('finished');
    await expect.poll(() => page.getByTestId('agent-message').last().textContent()).toContain('Kisasi');
    const departments = await stack.api<{ name: string }[]>(ADMIN, '/departments');
    expect(departments.body.map((department) => department.name)).toContain('Sciences');
  });
});

describe('history you can search: the thread list pages, searches and renames', () => {
  // A user no other test writes threads for, so the list holds exactly what this block made.
  const HISTORIAN = 'dos@greenhill.school';
  const list = () => page.getByTestId('thread-list').getByRole('listitem');

  beforeAll(async () => {
    for (let index = 1; index <= 35; index += 1) {
      expect((await stack.api(HISTORIAN, '/agent/threads', { title: `History ${String(index).padStart(2, '0')}` })).status).toBe(201);
    }
    expect((await stack.api(HISTORIAN, '/agent/threads', { title: 'Volcano fieldwork' })).status).toBe(201);
  });

  it('"Load more" pages past the first screen, every thread once', async () => {
    await signIn(HISTORIAN);
    await expect.poll(() => list().count()).toBe(30);
    await page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => list().count()).toBe(36);
    const titles = await page.getByTestId('thread-list').getByRole('link').allTextContents();
    expect(new Set(titles).size).toBe(36);
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
  });

  it('the search box finds a thread by a word of its title', async () => {
    await signIn(HISTORIAN);
    await page.getByLabel('Search chats').fill('volcano');
    await page.getByLabel('Search chats').press('Enter');
    await expect.poll(() => page.getByTestId('thread-list').getByRole('link').allTextContents()).toEqual(['Volcano fieldwork']);
    await page.getByLabel('Search chats').fill('nothing-like-this');
    await page.getByLabel('Search chats').press('Enter');
    await page.getByText('No chats match').waitFor();
  });

  it('rename: the new title shows in the list and is what the server keeps', async () => {
    await signIn(HISTORIAN);
    await page.getByRole('button', { name: 'Rename Volcano fieldwork' }).click();
    await page.getByLabel('Chat title').fill('Lava lab');
    await page.getByLabel('Chat title').press('Enter');
    await page.getByTestId('thread-list').getByRole('link', { name: 'Lava lab' }).waitFor();
    const threads = (await stack.api<{ title: string }[]>(HISTORIAN, '/agent/threads?q=lava')).body;
    expect(threads.map((thread) => thread.title)).toEqual(['Lava lab']);
  });
});
