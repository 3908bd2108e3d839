import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext } from 'playwright-core';
import { ensureChromium, startHubStack, type HubStack } from './hub-stack';

/** Where the browser specs leave their screenshots; docs/screenshots is refreshed from here. */
export const SCREENSHOTS = fileURLToPath(new URL('../../../../tmp/hub-screenshots/', import.meta.url));

/** axe-core, evaluated in a page over DevTools, so the Hub's content security policy allows it. */
export const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

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
