import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createTestStack, login } from '@naalya/test-stack';

const HUB_INDEX = fileURLToPath(new URL('../../dist/index.html', import.meta.url));
export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

/** Debian's chromium, installed on first use if it is missing; otherwise a clear message, not a cryptic launch error. */
export const ensureChromium = (): string => {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  const install = spawnSync('sh', ['-c', 'apt-get install -y -q chromium || (apt-get update -q && apt-get install -y -q chromium)'], {
    encoding: 'utf8',
    timeout: 240_000,
  });
  if (existsSync(CHROMIUM)) return CHROMIUM;
  throw new Error(
    `The Hub's browser tests need Debian's chromium at ${CHROMIUM} and could not install it (apt-get install -y chromium): ${(install.stderr || install.stdout || String(install.error)).slice(-500)}`,
  );
};

export type HubStack = {
  baseUrl: string;
  /** The REST API as a demo user (for setting up or checking what the browser did). */
  api: <T>(email: string, path: string, body?: unknown) => Promise<{ status: number; body: T }>;
  teardown: () => Promise<void>;
};

/** The built server, which serves the built Hub under /hub/, and the built worker (scripted model), on a stack of their own. */
export const startHubStack = async (): Promise<HubStack> => {
  if (!existsSync(HUB_INDEX)) throw new Error(`The Hub is not built (${HUB_INDEX}): run npx nx run-many -t build first.`);
  const stack = await createTestStack({ name: 'hub' });
  try {
    await stack.startServer();
    await stack.startWorker();
  } catch (error) {
    await stack.teardown();
    throw error;
  }
  const baseUrl = stack.server().baseUrl;

  const tokens = new Map<string, string>();
  const tokenOf = async (email: string) => {
    const token = tokens.get(email) ?? (await login(baseUrl, email));
    tokens.set(email, token);
    return token;
  };
  const api = async <T>(email: string, path: string, body?: unknown) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await tokenOf(email)}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as T };
  };

  return { baseUrl, api, teardown: stack.teardown };
};
