import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
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
 * and the built server and worker behind the Hub. close() ends both and removes the profile.
 */
export const openHubBrowser = async (): Promise<HubBrowser> => {
  const executablePath = ensureChromium();
  mkdirSync(SCREENSHOTS, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'naalya-hub-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, { executablePath, args: CHROMIUM_FLAGS, viewport: { width: 1280, height: 900 } });
  const closeBrowser = async () => {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  };
  const stack = await startHubStack().catch(async (error: unknown) => {
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
 * A new tab signed in as `email` with the demo password. The Hub keeps its token in the tab's sessionStorage, so each
 * tab signs in on its own.
 */
export const signedInTab = async (browser: BrowserContext, baseUrl: string, email: string, timeoutMs: number): Promise<Page> => {
  const page = await browser.newPage();
  page.setDefaultTimeout(timeoutMs);
  await page.goto(`${baseUrl}/hub/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('naalya-demo');
  await page.getByLabel('Password').press('Enter');
  await page.getByTestId('whoami').getByText('Signed in as').waitFor();
  return page;
};

/**
 * axe-core's findings on the page as it stands, or within the element `within` selects, of the impacts given (every
 * impact without them), each as "rule: first node of each finding".
 */
export const axeViolations = async (target: Page, options: { within?: string; impacts?: readonly string[] } = {}): Promise<string[]> => {
  await target.evaluate(AXE_SOURCE);
  const violations = await target.evaluate(async (within) => {
    type Violation = { id: string; impact: string | null; nodes: { target: unknown[] }[] };
    const axe = (window as unknown as { axe: { run: (context?: string) => Promise<{ violations: Violation[] }> } }).axe;
    const { violations: found } = await (within === undefined ? axe.run() : axe.run(within));
    return found.map((violation) => ({ id: violation.id, impact: violation.impact, nodes: violation.nodes.map((node) => String(node.target[0])) }));
  }, options.within);
  return violations
    .filter((violation) => !options.impacts || options.impacts.includes(violation.impact ?? ''))
    .map((violation) => `${violation.id}: ${violation.nodes.join(', ')}`);
};
