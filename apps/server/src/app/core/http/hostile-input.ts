import { isUtf8 } from 'node:buffer';
import { BadRequestException, Injectable, type CanActivate, type ExecutionContext, type INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';

/**
 * The path of the first string (or object key) holding U+0000, or undefined; `path` '' names top-level keys bare. PostgreSQL refuses 0x00 in text, so such
 * a value would otherwise fail deep inside a query as a 500; both doors refuse it up front, naming where it was.
 */
export const nulCharacterPath = (value: unknown, path: string, depth = 0): string | undefined => {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  // JSON nesting is bounded by the body limit; the depth bound keeps a crafted deep object from costing a deep stack.
  if (typeof value !== 'object' || value === null || depth > 64) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const itemPath = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
    if (key.includes('\u0000')) return itemPath;
    const found = nulCharacterPath(item, itemPath, depth + 1);
    if (found) return found;
  }
  return undefined;
};

export const nulCharacterSentence = (path: string): string => `${path} contains a NUL character (U+0000), which is not allowed.`;

export const INVALID_UTF8_SENTENCE = 'The request body is not valid UTF-8.';

type InputRequest = { body?: unknown; query?: unknown; params?: unknown };

/** REST's one check for NUL characters, on the parsed body, the query string and the route parameters, before any handler. */
@Injectable()
export class NulCharacterGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    const request = context.switchToHttp().getRequest<InputRequest>();
    const path = nulCharacterPath(request.params, 'params') ?? nulCharacterPath(request.query, 'query') ?? nulCharacterPath(request.body, 'body');
    if (path) throw new BadRequestException(nulCharacterSentence(path));
    return true;
  }
}

/** body-parser answers a verify error with its `status`, and Nest's filter replies with the message. */
const refuseInvalidUtf8 = (_request: unknown, _response: unknown, buffer: Buffer): void => {
  if (!isUtf8(buffer)) throw Object.assign(new Error(INVALID_UTF8_SENTENCE), { status: 400, statusCode: 400, expose: true });
};

/**
 * Express's JSON and form parsers decode with replacement characters, so a body of invalid UTF-8 would reach a handler
 * silently altered; these parsers refuse it instead. Registered before Nest's own (which then skip a parsed body), by
 * main.ts and the test app alike.
 */
export const useStrictBodyParsers = (app: INestApplication): void => {
  const express = app as NestExpressApplication;
  express.useBodyParser('json', { verify: refuseInvalidUtf8 });
  express.useBodyParser('urlencoded', { extended: true, verify: refuseInvalidUtf8 });
};
