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

export const callRest = async (
  testApp: TestApp,
  persona: DemoPersona,
  route: FixtureRestRoute,
  args: Record<string, unknown>,
  options: { targetSchoolId?: string } = {},
): Promise<{ status: number; body: unknown }> => {
  const headers: Record<string, string> = {
    authorization: `Bearer ${tokenFor(testApp, persona)}`,
    'content-type': 'application/json',
  };
  if (options.targetSchoolId) headers[TARGET_SCHOOL_HEADER] = options.targetSchoolId;
  const response = await fetch(`${await testApp.app.getUrl()}${route.path(args)}`, {
    method: route.method,
    headers,
    body: route.method === 'GET' || route.method === 'DELETE' ? undefined : JSON.stringify(route.body ? route.body(args) : args),
  });
  const text = await response.text();
  const isJson = response.headers.get('content-type')?.includes('json');
  return { status: response.status, body: isJson ? JSON.parse(text) : text };
};
