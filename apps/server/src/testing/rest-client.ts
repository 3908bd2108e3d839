import jwt from 'jsonwebtoken';
import type { DemoPersona } from '../app/seed/demo-seed.js';
import { SERVER_CONFIG, type ServerConfig } from '../app/core/config/server-config.js';
import { jwtKeyRing } from '../app/core/config/signing-key-ring.js';
import { TARGET_SCHOOL_HEADER } from '../app/core/http/target-school.js';
import type { FixtureRestRoute } from '../app/naalya-ai/tools/fixtures/tool-fixture.js';
import type { TestApp } from './test-app.js';

/**
 * A token as login would sign it. Signed directly so a deactivated user's still-valid token (issued
 * before deactivation) can be tried too; login itself is tested on its own.
 */
export const tokenFor = (testApp: Pick<TestApp, 'module'>, persona: DemoPersona): string => {
  // The test app's own current key, as login signs with it (a suite may configure its own keys).
  const { current } = jwtKeyRing(testApp.module.get<ServerConfig>(SERVER_CONFIG));
  return jwt.sign({ sub: persona.id, type: persona.type, schoolId: persona.schoolId, campusId: persona.campusId }, current.secret, {
    algorithm: 'HS256',
    expiresIn: 600,
    keyid: current.kid,
  });
};

/** One REST call as `persona`, a platform administrator's target school in its header when given. */
/** A persona's identity as a verified login token carries it, for services that take the caller's claims directly. */
export const claimsFor = (persona: DemoPersona) => ({
  sub: persona.id,
  type: persona.type,
  schoolId: persona.schoolId,
  campusId: persona.campusId,
  iat: Math.floor(Date.now() / 1000),
  exp: Math.floor(Date.now() / 1000) + 600,
});

export const restRequest = async (
  testApp: TestApp,
  persona: DemoPersona,
  method: FixtureRestRoute['method'],
  path: string,
  options: { body?: unknown; targetSchoolId?: string } = {},
): Promise<{ status: number; body: unknown }> => {
  const headers: Record<string, string> = {
    authorization: `Bearer ${tokenFor(testApp, persona)}`,
    'content-type': 'application/json',
  };
  if (options.targetSchoolId) headers[TARGET_SCHOOL_HEADER] = options.targetSchoolId;
  const response = await fetch(`${await testApp.app.getUrl()}${path}`, {
    method,
    headers,
    body: method === 'GET' || method === 'DELETE' || options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  const isJson = response.headers.get('content-type')?.includes('json');
  return { status: response.status, body: isJson ? JSON.parse(text) : text };
};

export const callRest = (
  testApp: TestApp,
  persona: DemoPersona,
  route: FixtureRestRoute,
  args: Record<string, unknown>,
  options: { targetSchoolId?: string } = {},
): Promise<{ status: number; body: unknown }> =>
  restRequest(testApp, persona, route.method, route.path(args), { ...options, body: route.body ? route.body(args) : args });
