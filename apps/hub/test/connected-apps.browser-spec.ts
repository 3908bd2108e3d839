import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, openHubBrowser, signedInTab, type HubBrowser } from './support/hub-browser';

// Connected apps in Debian's chromium against the built server: a token made, shown once, listed, revoked.
const ADMIN = 'admin@greenhill.school';
const TIMEOUT = 20_000;

let hub: HubBrowser | undefined;
let page: Page;

beforeAll(async () => {
  hub = await openHubBrowser();
  page = await signedInTab(hub.browser, hub.stack.baseUrl, ADMIN, TIMEOUT);
}, 150_000);

afterAll(async () => {
  await hub?.close();
});

describe('Connected apps', () => {
  it('makes a token for an MCP client, shows it once, lists the app and revokes it', async () => {
    await page.getByRole('link', { name: 'Connected apps' }).click();
    await expect.poll(() => page.title()).toContain('Connected apps');
    await page.getByLabel('Name').fill('Desk assistant');
    await page.getByRole('button', { name: 'Create token' }).click();
    const token = page.getByTestId('new-token');
    await token.waitFor({ timeout: TIMEOUT });
    expect(await token.textContent()).toMatch(/^nmcp_[A-Za-z0-9_-]{43}$/);
    const row = page.getByRole('row', { name: /Desk assistant/ });
    await row.waitFor({ timeout: TIMEOUT });
    // The list never holds the token itself.
    expect(await page.getByRole('table').textContent()).not.toContain(await token.textContent());
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Revoke Desk assistant' }).click();
    await expect.poll(() => page.getByRole('row', { name: /Desk assistant/ }).count(), { timeout: TIMEOUT }).toBe(0);
  });
});
