import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenFor } from '../../../testing/rest-client.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { INVALID_UTF8_SENTENCE } from './hostile-input.js';
import { MALFORMED_TARGET_SCHOOL_ERROR, TARGET_SCHOOL_HEADER, UNKNOWN_TARGET_SCHOOL_ERROR } from './target-school.js';

let testApp: TestApp;
let admin: DemoPersona;

beforeAll(async () => {
  testApp = await createTestApp();
  admin = testApp.demo.schools[0].personas.schoolAdmin;
});
afterAll(() => testApp?.close());

const send = async (persona: DemoPersona, method: string, path: string, options: { body?: string | Buffer; headers?: Record<string, string> } = {}) => {
  const response = await fetch(`${await testApp.app.getUrl()}${path}`, {
    method,
    headers: { authorization: `Bearer ${tokenFor(testApp, persona)}`, 'content-type': 'application/json', ...options.headers },
    body: options.body,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};
const departmentsLike = async (pattern: string) =>
  Number(((await testApp.owner.query(`SELECT count(*) FROM departments WHERE name LIKE $1`, [pattern])) as { count: string }[])[0].count);
const nulSentence = (field: string) => `${field} contains a NUL character (U+0000), which is not allowed.`;

describe('NUL characters and invalid UTF-8 over REST', () => {
  it('a NUL character in a body field is refused with 400 naming the field, and nothing is written', async () => {
    const answer = await send(admin, 'POST', '/departments', { body: JSON.stringify({ name: 'Nul\u0000Sciences' }) });
    expect(answer).toEqual({ status: 400, body: expect.objectContaining({ message: nulSentence('body.name'), code: 'INVALID_REQUEST' }) });
    expect(await departmentsLike('Nul%')).toBe(0);
  });

  it('a NUL character in a nested body field or an object key is refused naming its path', async () => {
    const nested = await send(admin, 'POST', '/departments', { body: JSON.stringify({ name: 'Nested', extra: { list: ['ok', 'b\u0000d'] } }) });
    expect(nested.body['message']).toBe(nulSentence('body.extra.list[1]'));
    const key = await send(admin, 'POST', '/departments', { body: JSON.stringify({ 'na\u0000me': 'Keyed' }) });
    expect(key).toEqual({ status: 400, body: expect.objectContaining({ message: nulSentence('body.na\u0000me') }) });
  });

  it('a NUL character in the query string or a route parameter is refused with 400 naming it', async () => {
    expect(await send(admin, 'GET', '/departments?campusId=%00')).toEqual({
      status: 400,
      body: expect.objectContaining({ message: nulSentence('query.campusId') }),
    });
    expect(await send(admin, 'DELETE', `/departments/${randomUUID()}%00`)).toEqual({
      status: 400,
      body: expect.objectContaining({ message: nulSentence('params.departmentId') }),
    });
  });

  it('a body that is not valid UTF-8 is refused with 400, not silently decoded with replacement characters', async () => {
    const body = Buffer.concat([Buffer.from('{"name":"Bad'), Buffer.from([0xc3, 0x28]), Buffer.from('Bytes"}')]);
    const answer = await send(admin, 'POST', '/departments', { body });
    expect(answer).toEqual({ status: 400, body: expect.objectContaining({ message: INVALID_UTF8_SENTENCE }) });
    expect(await departmentsLike('Bad%')).toBe(0);
  });

  it('valid UTF-8 beyond ASCII is still accepted', async () => {
    const answer = await send(admin, 'POST', '/departments', { body: JSON.stringify({ name: 'Études Lugha 数学' }) });
    expect(answer.status).toBe(201);
  });
});

describe('the platform admin target-school header', () => {
  const createIn = (persona: DemoPersona, target: string, name: string) =>
    send(persona, 'POST', '/departments', { body: JSON.stringify({ name }), headers: { [TARGET_SCHOOL_HEADER]: target } });

  it('a malformed target school is refused with 400 naming the header', async () => {
    expect(await createIn(testApp.demo.platformAdmin, 'not-a-uuid', 'Malformed Target')).toEqual({
      status: 400,
      body: expect.objectContaining({ message: MALFORMED_TARGET_SCHOOL_ERROR }),
    });
    expect(await departmentsLike('Malformed Target')).toBe(0);
  });

  it('a well-formed id of no school is refused with 404, on reads and writes', async () => {
    const unknown = randomUUID();
    expect(await createIn(testApp.demo.platformAdmin, unknown, 'Unknown Target')).toEqual({
      status: 404,
      body: expect.objectContaining({ message: UNKNOWN_TARGET_SCHOOL_ERROR }),
    });
    expect(await send(testApp.demo.platformAdmin, 'GET', '/departments', { headers: { [TARGET_SCHOOL_HEADER]: unknown } })).toEqual({
      status: 404,
      body: expect.objectContaining({ message: UNKNOWN_TARGET_SCHOOL_ERROR }),
    });
  });

  it('an existing school is still a valid target', async () => {
    expect((await createIn(testApp.demo.platformAdmin, testApp.demo.schools[1].id, 'Known Target')).status).toBe(201);
  });

  it('anyone but a platform admin is refused for sending the header, malformed or not', async () => {
    expect((await createIn(admin, 'not-a-uuid', 'Staff Target')).status).toBe(403);
    expect((await createIn(admin, testApp.demo.schools[1].id, 'Staff Target')).status).toBe(403);
  });
});
