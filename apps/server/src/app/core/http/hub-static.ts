import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';

/** The built Hub (apps/hub/dist), next to this app's dist in the repository and in an image that copies both. */
export const HUB_DIST_DIR = fileURLToPath(new URL('../../../../../hub/dist/', import.meta.url));
export const HUB_PATH = '/hub/';

// The Hub talks only to this origin; nothing inline, no frames.
const HUB_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/**
 * Serves the built Hub as static files under /hub/ on the server's own origin, so it signs in with the same JWT login
 * and calls the same routes. Files only: the Hub holds no secret, and every route it calls checks the token. Does
 * nothing when the Hub was not built (the API works without it).
 */
export const serveHub = (app: INestApplication, dir = HUB_DIST_DIR): boolean => {
  if (!existsSync(join(dir, 'index.html'))) return false;
  const express = app as NestExpressApplication;
  express.useStaticAssets(dir, {
    prefix: HUB_PATH,
    index: 'index.html',
    fallthrough: true,
    setHeaders: (response, path) => {
      for (const [name, value] of Object.entries(HUB_HEADERS)) response.setHeader(name, value);
      // Hashed assets never change; index.html must be revalidated so a new build is picked up.
      response.setHeader('cache-control', path.endsWith('index.html') ? 'no-cache' : 'public, max-age=31536000, immutable');
    },
  });
  const adapter = express.getHttpAdapter();
  adapter.get('/', (_request: unknown, response: { redirect: (url: string) => void }) => response.redirect(HUB_PATH));
  return true;
};
