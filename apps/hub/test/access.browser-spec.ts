import { type BrowserContext, type Locator, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, openHubBrowser, SCREENSHOTS, sidewaysScroll, signedInTab, tabTo, type HubBrowser } from './support/hub-browser';
import type { HubStack } from './support/hub-stack';

// Layout and access, in Debian's chromium against the built server and worker (scripted model): a 360 px screen, the
// keyboard alone, axe's WCAG 2.1 A and AA rules, what the title and the live regions say, a session shared by tabs,
// ids one click away.
const ADMIN = 'admin@greenhill.school';
const TIMEOUT = 20_000;
const NARROW = { width: 360, height: 740 };
const WIDE = { width: 1280, height: 900 };

let stack: HubStack;
let browser: BrowserContext;
let page!: Page;
let hub: HubBrowser | undefined;

/** Closes every tab of the browser (so no open Hub tab hands its session on), then signs in a new one. */
const signIn = async (email: string): Promise<Page> => {
  await Promise.all(browser.pages().map((open) => open.close()));
  page = await signedInTab(browser, stack.baseUrl, email, TIMEOUT);
  return page;
};

const composer = () => page.getByLabel(/^Message Rover/);
const send = async (message: string) => {
  await composer().fill(message);
  await composer().press('Enter');
};
const finished = (message: string) =>
  expect.poll(() => page.getByTestId('user-message').filter({ hasText: message }).last().getAttribute('data-run-status')).toBe('finished');

/** The page at 360 x 740: nothing scrolls sideways, each action given is visible and takes a click, axe finds nothing. */
const checkNarrow = async (actions: Locator[]) => {
  expect(await sidewaysScroll(page)).toBe(0);
  for (const action of actions) await action.click({ trial: true });
  expect(await axeViolations(page)).toEqual([]);
};

/** Waits for `target` to take the keyboard focus (moved there by the page, not by a key). */
const focused = (target: Locator) => expect.poll(() => target.evaluate((element) => element === document.activeElement)).toBe(true);

beforeAll(async () => {
  hub = await openHubBrowser();
  ({ browser, stack } = hub);
  await browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.baseUrl });
  // One audited write through REST, so Activity has a row to open at 360 px and from the keyboard.
  const created = await stack.api(ADMIN, '/departments', { name: 'Keyboard Robotics' });
  expect(created.status).toBe(201);
}, 150_000);

afterAll(async () => {
  await hub?.close();
});

describe('360 px wide: no page scrolls sideways, every action is reachable, axe finds nothing', () => {
  afterEach(async () => {
    await page.setViewportSize(WIDE);
  });

  it('the sign-in page', async () => {
    await Promise.all(browser.pages().map((open) => open.close()));
    page = await browser.newPage();
    page.setDefaultTimeout(TIMEOUT);
    await page.setViewportSize(NARROW);
    await page.goto(`${stack.baseUrl}/hub/`);
    await checkNarrow([page.getByLabel('Email'), page.getByLabel('Password'), page.getByRole('button', { name: 'Sign in' })]);
  });

  it('a chat with a result: the thread list behind "Chats", the header wrapped, the result table stacked', async () => {
    await signIn(ADMIN);
    await page.setViewportSize(NARROW);
    await send('list departments');
    await page.locator('[data-tool="list_departments"][data-status="done"]').waitFor();
    await finished('list departments');
    const toggle = page.getByTestId('threads-toggle');
    // The list is folded away until asked for.
    expect(await page.getByRole('link', { name: 'New chat' }).isVisible()).toBe(false);
    // Send takes a click once there is something to send.
    await composer().fill('list subjects');
    await checkNarrow([
      toggle,
      composer(),
      page.getByRole('button', { name: 'Send', exact: true }),
      page.getByRole('button', { name: 'Copy id of Languages' }),
      page.getByRole('button', { name: 'Show JSON' }),
      page.getByRole('link', { name: 'Activity' }),
      page.getByRole('button', { name: 'Sign out' }),
      page.getByLabel('Whole school'),
    ]);
    await composer().fill('');
    await page.screenshot({ path: `${SCREENSHOTS}chat-narrow.png`, fullPage: true });

    await toggle.click();
    expect(await toggle.getAttribute('aria-expanded')).toBe('true');
    await checkNarrow([
      page.getByRole('link', { name: 'New chat' }),
      page.getByLabel('Search chats'),
      page.getByTestId('thread-list').getByRole('link', { name: 'list departments' }),
      page.getByRole('button', { name: 'Rename list departments' }),
      page.getByRole('button', { name: 'Delete list departments' }),
      page.getByRole('button', { name: 'Hide chats' }),
    ]);
    // Escape folds it, the focus back on the toggle; picking a thread folds it too.
    await page.getByLabel('Search chats').focus();
    await page.keyboard.press('Escape');
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    await focused(toggle);
    await page.keyboard.press('Enter');
    await page.getByTestId('thread-list').getByRole('link', { name: 'list departments' }).click();
    await expect.poll(() => toggle.getAttribute('aria-expanded')).toBe('false');
  });

  it('a question that waits: its answer, Yes, No and Stop', async () => {
    await page.setViewportSize(NARROW);
    await send('delete the Sciences department');
    const question = page.getByTestId('question').and(page.locator('[data-state="pending"]'));
    await question.waitFor();
    await checkNarrow([
      question.getByLabel('Your answer'),
      question.getByRole('button', { name: 'Send answer' }),
      question.getByRole('button', { name: 'Yes' }),
      question.getByRole('button', { name: 'No' }),
      page.getByRole('button', { name: 'Stop the current run' }),
    ]);
    await question.getByRole('button', { name: 'No' }).click();
    await page.getByTestId('question').and(page.locator('[data-state="answered"]')).waitFor();
  });

  it('Activity', async () => {
    await page.setViewportSize(NARROW);
    await page.getByRole('link', { name: 'Activity' }).click();
    await page.getByRole('heading', { name: /^Activity/ }).waitFor();
    await page.getByText('Loading…').waitFor({ state: 'detached' });
    await checkNarrow([page.getByRole('link', { name: 'Chat', exact: true }), page.getByRole('button', { name: 'Sign out' })]);
    // One row's detail, opened from the stacked list, and the way back.
    await page.getByRole('link', { name: /^Details: / }).first().click();
    await page.getByTestId('audit-detail').waitFor();
    await checkNarrow([page.getByRole('link', { name: 'Back to the list' }), page.getByRole('link', { name: 'Chat', exact: true })]);
  });

  it("a platform administrator: the school picker, picked from the keyboard, and the banner", async () => {
    await signIn('platform@naalya.school');
    await page.setViewportSize(NARROW);
    const picker = page.getByTestId('school-picker');
    await tabTo(picker);
    await page.keyboard.press('ArrowDown');
    await page.getByText('Acting in Greenhill Academy').waitFor();
    await checkNarrow([picker, composer(), page.getByTestId('threads-toggle'), page.getByRole('button', { name: 'Sign out' })]);
  });

  it('Connected apps', async () => {
    await page.setViewportSize(NARROW);
    await page.getByRole('link', { name: 'Connected apps' }).click();
    await expect.poll(() => page.title()).toBe('Connected apps · Naalya Hub');
    await checkNarrow([page.getByLabel('Name'), page.getByRole('button', { name: 'Create token' }), page.getByRole('link', { name: 'Activity' })]);
  });
});

describe('the keyboard alone', () => {
  it('signs in, picks the mode, starts a chat, sends, copies an id, answers, stops, renames, searches, deletes, opens an Activity row and comes back to the list and to Chat', async () => {
    await Promise.all(browser.pages().map((open) => open.close()));
    page = await browser.newPage();
    page.setDefaultTimeout(TIMEOUT);
    await page.goto(`${stack.baseUrl}/hub/`);
    const keys = page.keyboard;

    // Sign in: the email field has the focus.
    await tabTo(page.getByLabel('Email'));
    await keys.type(ADMIN);
    await keys.press('Tab');
    await keys.type('naalya-demo');
    await keys.press('Enter');
    await page.getByTestId('whoami').getByText('Signed in as').waitFor();

    // The mode: arrows move within the radio group; the campus list follows.
    await tabTo(page.getByLabel('Whole school'));
    await keys.press('ArrowRight');
    await page.getByLabel('Campus', { exact: true }).waitFor();
    expect(await page.getByLabel('One campus').isChecked()).toBe(true);
    await keys.press('ArrowLeft');
    expect(await page.getByLabel('Whole school').isChecked()).toBe(true);

    // A new chat, a message, its result; the id copied.
    await tabTo(page.getByRole('link', { name: 'New chat' }));
    await keys.press('Enter');
    await tabTo(composer());
    await keys.type('list departments');
    await keys.press('Enter');
    await page.locator('[data-tool="list_departments"][data-status="done"]').waitFor();
    await finished('list departments');
    const copy = page.getByRole('button', { name: 'Copy id of Languages' });
    await tabTo(copy);
    await keys.press('Enter');
    await copy.locator('xpath=..').getByText('Copied').waitFor();
    const departments = await stack.api<{ id: string; name: string }[]>(ADMIN, '/departments');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(departments.body.find((department) => department.name === 'Languages')?.id);
    const json = page.getByTestId('json-toggle');
    expect(await json.textContent()).toBe('Show JSON');
    await tabTo(json);
    await keys.press('Space');
    expect(await json.getAttribute('aria-expanded')).toBe('true');

    // A confirmation: the answer field takes the focus; No is a Tab or three away.
    await tabTo(composer());
    await keys.type('delete the Sciences department');
    await keys.press('Enter');
    const question = page.getByTestId('question').and(page.locator('[data-state="pending"]'));
    await question.waitFor();
    await focused(question.getByLabel('Your answer'));
    await tabTo(question.getByRole('button', { name: 'No' }));
    await keys.press('Space');
    await page.getByTestId('question').and(page.locator('[data-state="answered"]')).waitFor();
    await finished('delete the Sciences department');

    // Stop a run: held running with the worker frozen.
    stack.freezeWorker();
    try {
      await tabTo(composer());
      await keys.type('show the staff');
      await keys.press('Enter');
      const stop = page.getByRole('button', { name: 'Stop the current run' });
      await tabTo(stop);
      await keys.press('Enter');
      await page.getByTestId('run-stopped').waitFor();
    } finally {
      stack.thawWorker();
    }

    // Rename the thread, find it, delete another.
    const threadId = decodeURIComponent(new URL(page.url()).hash.split('/')[2] ?? '');
    const current = page.getByTestId('thread-list').getByRole('listitem').filter({ has: page.locator('a[aria-current="page"]') });
    await tabTo(current.getByRole('button', { name: /^Rename/ }), { back: true });
    await keys.press('Enter');
    await keys.press('Control+A');
    await keys.type('Keyboard only');
    await keys.press('Enter');
    await page.getByTestId('thread-list').getByRole('link', { name: 'Keyboard only' }).waitFor();
    const spare = await stack.api<{ id: string }>(ADMIN, '/agent/threads', { title: 'Spare thread' });
    await tabTo(page.getByLabel('Search chats'), { back: true });
    await keys.type('spare');
    await keys.press('Enter');
    await expect.poll(() => page.getByTestId('thread-list').getByRole('link').allTextContents()).toEqual(['Spare thread']);
    await tabTo(page.getByRole('button', { name: 'Delete Spare thread' }));
    await keys.press('Enter');
    // The confirmation takes the focus; Escape keeps the thread (the focus back on its Delete), a second go deletes it.
    const confirmation = page.getByRole('group', { name: 'Delete Spare thread?' });
    await focused(confirmation.getByRole('button', { name: 'Delete', exact: true }));
    await keys.press('Escape');
    await focused(page.getByRole('button', { name: 'Delete Spare thread' }));
    await keys.press('Enter');
    await focused(confirmation.getByRole('button', { name: 'Delete', exact: true }));
    await keys.press('Enter');
    await page.getByText('No chats match').waitFor();
    expect((await stack.api(ADMIN, `/agent/threads/${spare.body.id}`)).status).toBe(404);

    // Pick a thread: from a new chat, search for it, then follow its link.
    await tabTo(page.getByRole('link', { name: 'New chat' }), { back: true });
    await keys.press('Enter');
    await expect.poll(() => page.url()).toMatch(/#\/chat$/);
    await tabTo(page.getByLabel('Search chats'));
    await keys.press('Control+A');
    await keys.type('keyboard');
    await keys.press('Enter');
    await tabTo(page.getByTestId('thread-list').getByRole('link', { name: 'Keyboard only' }));
    await keys.press('Enter');
    await expect.poll(() => page.url()).toContain(`#/chat/${threadId}`);

    // Activity and back.
    await tabTo(page.getByRole('link', { name: 'Activity' }), { back: true });
    await keys.press('Enter');
    await page.getByRole('heading', { name: /^Activity/ }).waitFor();
    // A row's detail and back to the list, where the focus returns to the row it came from.
    const details = page.getByRole('link', { name: /^Details: / }).first();
    await details.waitFor();
    const detailsName = await details.getAttribute('aria-label');
    await tabTo(details);
    await keys.press('Enter');
    await page.getByTestId('audit-detail').waitFor();
    await tabTo(page.getByRole('link', { name: 'Back to the list' }), { back: true });
    await keys.press('Enter');
    await focused(page.getByRole('link', { name: detailsName ?? '', exact: true }));
    await tabTo(page.getByRole('link', { name: 'Chat', exact: true }), { back: true });
    await keys.press('Enter');
    await page.getByTestId('thread-list').waitFor();
    expect(page.url()).toMatch(/#\/chat$/);
  });
});

describe('announcements: the title and the live regions', () => {
  /** Makes the page believe its tab is in the background (or back in front): headless Chromium has no other tab to switch to. */
  const setHidden = (hidden: boolean) =>
    page.evaluate((isHidden) => {
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (isHidden ? 'hidden' : 'visible') });
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => isHidden });
      document.dispatchEvent(new Event('visibilitychange'));
    }, hidden);

  /**
   * Records, from the page's first script on, each node added inside a live region (so a repeat is seen even when its
   * text is the same); installed for every load of the page that follows.
   */
  const recordAnnouncements = () =>
    page.addInitScript(() => {
      const added: Record<string, string[]> = { announcer: [], 'question-announcer': [] };
      (window as unknown as { announced: typeof added }).announced = added;
      new MutationObserver((mutations) => {
        for (const mutation of mutations) {
          mutation.addedNodes.forEach((node) => {
            const region = (node instanceof Element ? node : node.parentElement)?.closest<HTMLElement>('[data-testid="announcer"], [data-testid="question-announcer"]');
            if (region && region !== node) added[region.dataset['testid'] ?? '']?.push(node.textContent ?? '');
          });
        }
      }).observe(document, { childList: true, subtree: true });
    });
  const announced = () => page.evaluate(() => (window as unknown as { announced: Record<string, string[]> }).announced);

  it('the title says where you are, and counts an answer, then a question, that arrive in a background tab', async () => {
    await signIn(ADMIN);
    expect(await page.title()).toBe('Chat · Naalya Hub');
    await page.getByRole('link', { name: 'Activity' }).click();
    await expect.poll(() => page.title()).toBe('Activity · Naalya Hub');
    await page.getByRole('link', { name: 'Chat', exact: true }).click();
    await expect.poll(() => page.title()).toBe('Chat · Naalya Hub');

    await send('list departments');
    await page.waitForURL(/#\/chat\/.+/);
    await expect.poll(() => page.title()).toBe('list departments · Chat · Naalya Hub');
    await finished('list departments');
    await recordAnnouncements();
    await page.reload();
    await page.getByTestId('agent-message').last().waitFor();
    // The reload replayed the thread: nothing read out.
    expect(await announced()).toEqual({ announcer: [], 'question-announcer': [] });

    await setHidden(true);
    await send('list campuses');
    await expect.poll(() => page.title()).toBe('(1) New answer · list departments · Chat · Naalya Hub');
    await finished('list campuses');
    await send('delete the Sciences department');
    await expect.poll(() => page.title()).toMatch(/^\(\d+\) Question waiting · list departments · Chat · Naalya Hub$/);
    const said = await announced();
    expect(said['announcer']?.some((text) => text.startsWith('Rover:'))).toBe(true);
    expect(said['question-announcer']).toHaveLength(1);
    expect(said['question-announcer']?.[0]).toMatch(/^Rover asks you to confirm: Delete the department/);
    // Looking at the tab clears the count.
    await setHidden(false);
    await expect.poll(() => page.title()).toBe('list departments · Chat · Naalya Hub');
  });

  it('a reload replays the thread, the waiting question with it, and announces nothing again', async () => {
    await page.reload();
    await page.getByTestId('question').and(page.locator('[data-state="pending"]')).waitFor();
    await finished('list campuses');
    expect(await announced()).toEqual({ announcer: [], 'question-announcer': [] });
    // Answering it: the answer that follows is announced, once; the question is not announced again.
    await page.getByTestId('question').getByRole('button', { name: 'No' }).click();
    await finished('delete the Sciences department');
    await expect.poll(async () => (await announced())['announcer']?.length).toBeGreaterThan(0);
    const said = await announced();
    expect(new Set(said['announcer']).size).toBe(said['announcer']?.length);
    expect(said['question-announcer']).toEqual([]);
    expect(await axeViolations(page)).toEqual([]);
  });
});

describe('a sign-in shared by the tabs of one browser', () => {
  it('a second tab opens signed in; signing out in it signs out the first', async () => {
    const first = await signIn(ADMIN);
    const second = await browser.newPage();
    second.setDefaultTimeout(TIMEOUT);
    await second.goto(`${stack.baseUrl}/hub/`);
    await second.getByTestId('whoami').getByText('Grace Namusoke').waitFor();
    expect(await second.getByLabel('Email').count()).toBe(0);

    await second.getByRole('button', { name: 'Sign out' }).click();
    await second.getByLabel('Email').waitFor();
    await first.getByLabel('Email').waitFor();
    expect(await first.evaluate(() => sessionStorage.length)).toBe(0);
    await second.close();
  });

  it('signing in at one tab signs in a tab that waits at the sign-in form', async () => {
    await Promise.all(browser.pages().map((open) => open.close()));
    const [first, second] = [await browser.newPage(), await browser.newPage()];
    for (const tab of [first, second]) {
      tab.setDefaultTimeout(TIMEOUT);
      await tab.goto(`${stack.baseUrl}/hub/`);
      await tab.getByLabel('Email').waitFor();
    }
    await first.getByLabel('Email').fill(ADMIN);
    await first.getByLabel('Password').fill('naalya-demo');
    await first.getByLabel('Password').press('Enter');
    await second.getByTestId('whoami').getByText('Grace Namusoke').waitFor();
    page = first;
  });

  it('the token never reaches storage that outlives the tabs: with no Hub tab open, a new one asks to sign in', async () => {
    const first = await signIn(ADMIN);
    expect(await first.evaluate(() => localStorage.length)).toBe(0);
    await first.close();
    page = await browser.newPage();
    page.setDefaultTimeout(TIMEOUT);
    await page.goto(`${stack.baseUrl}/hub/`);
    await page.getByLabel('Email').waitFor();
  });

  it('an expired token is dropped before it is sent: the tab shows the sign-in form and forgets it', async () => {
    const claims = Buffer.from(JSON.stringify({ sub: 'x', exp: Math.floor(Date.now() / 1000) - 60 })).toString('base64url');
    const expired = `eyJhbGciOiJIUzI1NiJ9.${claims}.signature`;
    const sent: string[] = [];
    page.on('request', (request) => {
      const authorization = request.headers()['authorization'];
      if (authorization) sent.push(authorization);
    });
    await page.evaluate((token) => sessionStorage.setItem('naalya.hub.token', token), expired);
    await page.reload();
    await page.getByLabel('Email').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('naalya.hub.token'))).toBeNull();
    expect(sent).toEqual([]);
  });
});
