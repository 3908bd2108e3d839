import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { ensureChromium, startHubStack, type HubStack } from './hub-stack';

/** Where the browser specs leave their screenshots; docs/screenshots is refreshed from here. */
export const SCREENSHOTS = fileURLToPath(new URL('../../../../tmp/hub-screenshots/', import.meta.url));

/** axe-core, evaluated in a page over DevTools, so the Hub's content security policy allows it. */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

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

export type HubBrowser = { browser: BrowserContext; stack: HubStack; close: () => Promise<void> };

/**
 * Debian's chromium with a fresh profile each run (playwright passes it as --user-data-dir for a persistent context),
 * and the built server and worker behind the Hub (`serverEnv`: as startHubStack takes it). close() ends both and
 * removes the profile.
 */
export const openHubBrowser = async (serverEnv: Readonly<Record<string, string>> = {}): Promise<HubBrowser> => {
  const executablePath = ensureChromium();
  mkdirSync(SCREENSHOTS, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'naalya-hub-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, { executablePath, args: CHROMIUM_FLAGS, viewport: { width: 1280, height: 900 } });
  const closeBrowser = async () => {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  };
  const stack = await startHubStack(serverEnv).catch(async (error: unknown) => {
    await closeBrowser();
    throw error;
  });
  return {
    browser,
    stack,
    close: async () => {
      await closeBrowser();
      await stack.teardown();
    },
  };
};

/**
 * A new tab signed in as `email` with the demo password, from the sign-in form. The Hub hands its session to a new tab
 * while another of its tabs is open (lib/session.ts), so this is for a context with no Hub tab open: one that arrives
 * signed in says so rather than timing out at a form it never shows.
 */
export const signedInTab = async (browser: BrowserContext, baseUrl: string, email: string, timeoutMs: number): Promise<Page> => {
  const page = await browser.newPage();
  page.setDefaultTimeout(timeoutMs);
  await page.goto(`${baseUrl}/hub/`);
  await page.getByLabel('Email').or(page.getByTestId('whoami')).waitFor();
  if (await page.getByTestId('whoami').isVisible()) throw new Error(`A new tab arrived signed in (another Hub tab of this browser is open): close it before signing in as ${email}.`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('naalya-demo');
  await page.getByLabel('Password').press('Enter');
  await page.getByTestId('whoami').getByText('Signed in as').waitFor();
  return page;
};

/** The rules the Hub is held to: axe's WCAG 2.0 and 2.1, levels A and AA. */
export const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] as const;

/**
 * axe-core's WCAG 2.1 A and AA findings (WCAG_TAGS) on the page as it stands, or within the element `within` selects,
 * of any impact, each as "rule: first node of each finding".
 */
export const axeViolations = async (target: Page, options: { within?: string } = {}): Promise<string[]> => {
  await target.evaluate(AXE_SOURCE);
  const violations = await target.evaluate(
    async ({ within, tags }) => {
      type Violation = { id: string; nodes: { target: unknown[] }[] };
      type Axe = { run: (context: string | Document, options: unknown) => Promise<{ violations: Violation[] }> };
      const axe = (window as unknown as { axe: Axe }).axe;
      const { violations: found } = await axe.run(within ?? document, { runOnly: { type: 'tag', values: tags } });
      return found.map((violation) => ({ id: violation.id, nodes: violation.nodes.map((node) => String(node.target[0])) }));
    },
    { within: options.within, tags: [...WCAG_TAGS] },
  );
  return violations.map((violation) => `${violation.id}: ${violation.nodes.join(', ')}`);
};

/** How far the page scrolls sideways: document.scrollingElement's scrollWidth beyond its clientWidth (0: not at all). */
export const sidewaysScroll = (target: Page): Promise<number> =>
  target.evaluate(() => {
    const root = document.scrollingElement ?? document.documentElement;
    return root.scrollWidth - root.clientWidth;
  });

/**
 * Presses Tab (Shift+Tab with `back`) until `target` has the keyboard focus, at most `limit` times; the focus is then
 * drawn (a visible outline), or this throws.
 */
export const tabTo = async (target: Locator, options: { back?: boolean; limit?: number } = {}): Promise<void> => {
  const page = target.page();
  const element = await target.elementHandle();
  for (let presses = 0; presses <= (options.limit ?? 150); presses += 1) {
    if (await element.evaluate((node) => node === document.activeElement)) {
      const outline = await element.evaluate((node) => getComputedStyle(node).outlineStyle);
      if (outline === 'none') throw new Error(`${String(target)} has the focus with no visible outline.`);
      return;
    }
    await page.keyboard.press(options.back ? 'Shift+Tab' : 'Tab');
  }
  throw new Error(`Tab did not reach ${String(target)} in ${options.limit ?? 150} presses.`);
};
