import { randomUUID } from 'node:crypto';
import { ERROR_SENTENCES } from '@naalya/agent-tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { encodeCursor } from '../../core/audit/audit-cursor.js';
import { tokenFor } from '../../../testing/rest-client.js';
import type { TestApp } from '../../../testing/test-app.js';
import { createAgentTestApp, createTestBroker, runEvents, startRunAndTakeStep, storeAsWorker, type TestBroker } from '../fixtures/agent-run-test-kit.js';
import { threadSearchCondition } from './agent-threads.service.js';

let broker: TestBroker;
let testApp: TestApp;

beforeAll(async () => {
  broker = await createTestBroker();
  testApp = await createAgentTestApp(broker.names);
});
afterAll(async () => {
  await testApp?.close();
  await broker?.close();
});

type Thread = { id: string; title: string | null; createdAt: string; updatedAt: string };

/** One request as the persona, with the next page's cursor read from its header. */
const call = async (persona: DemoPersona, method: 'GET' | 'PATCH', path: string, body?: unknown) => {
  const response = await fetch(`${await testApp.app.getUrl()}${path}`, {
    method,
    headers: { authorization: `Bearer ${tokenFor(testApp, persona)}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null, next: response.headers.get('x-next-cursor') };
};
const list = (persona: DemoPersona, query: Record<string, string> = {}) => call(persona, 'GET', `/agent/threads?${new URLSearchParams(query)}`);
const ids = (body: unknown) => (body as Thread[]).map((thread) => thread.id);

/** Rows written as the owner role: the fixture needs threads and finished runs, not the agent that would make them. */
const insertThread = async (persona: DemoPersona, schoolId: string | null, title: string | null, updatedAt = new Date()) => {
  const id = randomUUID();
  await testApp.owner.query(`INSERT INTO agent_threads (id, school_id, owner_id, title, updated_at) VALUES ($1, $2, $3, $4, $5)`, [id, schoolId, persona.id, title, updatedAt]);
  return id;
};
const insertMessage = (persona: DemoPersona, schoolId: string | null, threadId: string, message: string) =>
  testApp.owner.query(`INSERT INTO agent_runs (id, thread_id, school_id, owner_id, status, message) VALUES ($1, $2, $3, $4, 'finished', $5)`, [randomUUID(), threadId, schoolId, persona.id, message]);
const ownedIds = async (persona: DemoPersona) =>
  ((await testApp.owner.query(`SELECT id FROM agent_threads WHERE owner_id = $1`, [persona.id])) as { id: string }[]).map((row) => row.id);

const notFound = { status: 404, body: expect.objectContaining({ code: 'THREAD_NOT_FOUND', message: ERROR_SENTENCES.THREAD_NOT_FOUND }) };

describe('GET /agent/threads: keyset pages', () => {
  it('pages through every thread of the caller once, newest first, with no duplicates or gaps, ties on updated_at included', async () => {
    const school = testApp.demo.schools[0];
    const persona = school.personas.teacher;
    // Seven threads share one updated_at to the microsecond: only the id breaks their tie.
    const tie = new Date(Date.now() - 60_000);
    for (let index = 0; index < 7; index += 1) await insertThread(persona, school.id, `Tied ${index}`, tie);
    for (let index = 0; index < 6; index += 1) await insertThread(persona, school.id, `Spread ${index}`, new Date(Date.now() - index * 1000));

    const seen: Thread[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await list(persona, { limit: '4', ...(cursor ? { cursor } : {}) });
      expect(page.status).toBe(200);
      expect((page.body as Thread[]).length).toBeLessThanOrEqual(4);
      seen.push(...(page.body as Thread[]));
      cursor = page.next;
      pages += 1;
    } while (cursor && pages < 100);

    const all = await ownedIds(persona);
    expect(seen.length).toBe(all.length);
    expect(new Set(seen.map((thread) => thread.id)).size).toBe(seen.length);
    expect(new Set(seen.map((thread) => thread.id))).toEqual(new Set(all));
    const order = seen.map((thread) => Date.parse(thread.updatedAt));
    expect(order).toEqual([...order].sort((a, b) => b - a));
  });

  it('the last page carries no cursor, and without a limit the first 100 come back as the Hub has always read them', async () => {
    const persona = testApp.demo.schools[1].personas.teacher;
    await insertThread(persona, testApp.demo.schools[1].id, 'Only one');
    const page = await list(persona);
    expect(page.status).toBe(200);
    expect(Array.isArray(page.body)).toBe(true);
    expect((page.body as Thread[]).length).toBe((await ownedIds(persona)).length);
    expect(page.next).toBeNull();
  });

  it('refuses an invalid query with a 400 naming the field', async () => {
    const persona = testApp.demo.schools[0].personas.teacher;
    for (const [query, field] of [
      [{ limit: '0' }, 'limit'],
      [{ limit: '101' }, 'limit'],
      [{ limit: 'ten' }, 'limit'],
      [{ q: '  ' }, 'q'],
      [{ q: '!!! ???' }, 'q'],
      [{ q: 'x'.repeat(201) }, 'q'],
      [{ cursor: 'not-a-cursor' }, 'cursor'],
      [{ cursor: Buffer.from('1.2').toString('base64url') }, 'cursor'],
      [{ sort: 'title' }, 'sort'],
    ] as const) {
      const answer = await list(persona, query);
      expect(answer.status, JSON.stringify(query)).toBe(400);
      expect((answer.body as { message: string }).message).toContain(field);
    }
  });
});

describe('GET /agent/threads?q: search across the caller own threads', () => {
  it('finds a thread by a word of its title and by a word (or its start) of a message the user sent in it', async () => {
    const school = testApp.demo.schools[0];
    const persona = school.personas.campusAdmin;
    const byTitle = await insertThread(persona, school.id, 'Quarterly Heliotrope review');
    const byMessage = await insertThread(persona, school.id, 'Planning');
    await insertMessage(persona, school.id, byMessage, 'Draft a quiz on zygomorphic flowers for grade seven');
    await insertThread(persona, school.id, 'Unrelated');

    expect(ids((await list(persona, { q: 'heliotrope' })).body)).toEqual([byTitle]);
    expect(ids((await list(persona, { q: 'ZYGOMORPH' })).body)).toEqual([byMessage]);
    expect(ids((await list(persona, { q: 'zygomorphic flowers' })).body)).toEqual([byMessage]);
    expect(ids((await list(persona, { q: 'zygomorphic tulips' })).body)).toEqual([]);
  });

  it('search pages by cursor too', async () => {
    const school = testApp.demo.schools[0];
    const persona = school.personas.departmentHead;
    const made = new Set<string>();
    for (let index = 0; index < 5; index += 1) made.add(await insertThread(persona, school.id, `Marimba lesson ${index}`, new Date(Date.now() - index * 1000)));
    const first = await list(persona, { q: 'marimba', limit: '3' });
    expect((first.body as Thread[]).length).toBe(3);
    const second = await list(persona, { q: 'marimba', limit: '3', cursor: first.next as string });
    expect(second.next).toBeNull();
    expect(new Set([...ids(first.body), ...ids(second.body)])).toEqual(made);
  });

  it('security: another user of the same school never sees the thread, by title or message, nor by a cursor forged onto it', async () => {
    const school = testApp.demo.schools[0];
    const owner = school.personas.teacher;
    const thread = await insertThread(owner, school.id, 'Xylophonic secret');
    await insertMessage(owner, school.id, thread, 'quokkaesque plans');
    expect(ids((await list(owner, { q: 'xylophonic' })).body)).toEqual([thread]);
    const other = school.personas.schoolAdmin;
    expect(ids((await list(other, { q: 'xylophonic' })).body)).toEqual([]);
    expect(ids((await list(other, { q: 'quokkaesque' })).body)).toEqual([]);
    const forged = await list(other, { cursor: encodeCursor(String((Date.now() + 60_000) * 1000), thread) });
    expect(forged.status).toBe(200);
    expect(ids(forged.body)).not.toContain(thread);
  });

  it('security: a user of another school never sees the thread', async () => {
    const [schoolA, schoolB] = testApp.demo.schools;
    const thread = await insertThread(schoolA.personas.teacher, schoolA.id, 'Ocarina roster');
    await insertMessage(schoolA.personas.teacher, schoolA.id, thread, 'pangolin census');
    for (const intruder of [schoolB.personas.schoolAdmin, schoolB.personas.teacher]) {
      expect(ids((await list(intruder, { q: 'ocarina' })).body)).toEqual([]);
      expect(ids((await list(intruder, { q: 'pangolin' })).body)).toEqual([]);
      expect(ids((await list(intruder)).body)).not.toContain(thread);
    }
  });

  it('security: a platform admin without a target school sees only their own threads, never a school user', async () => {
    const school = testApp.demo.schools[1];
    const thread = await insertThread(school.personas.teacher, school.id, 'Theremin timetable');
    await insertMessage(school.personas.teacher, school.id, thread, 'axolotl field trip');
    const admin = testApp.demo.platformAdmin;
    const own = await insertThread(admin, null, 'Theremin platform notes');
    expect(ids((await list(admin, { q: 'theremin' })).body)).toEqual([own]);
    expect(ids((await list(admin, { q: 'axolotl' })).body)).toEqual([]);
    expect(ids((await list(admin)).body)).not.toContain(thread);
  });

  it('the search reads the full-text indexes of titles, messages and replies, not every row', async () => {
    // With sequential scans priced out, a plan that could not use the indexes would still show a Seq Scan.
    const plan = (await testApp.owner.transaction(async (manager) => {
      await manager.query(`SET LOCAL enable_seqscan = off`);
      return manager.query(`EXPLAIN SELECT t.id FROM agent_threads t WHERE t.owner_id = $1 AND ${threadSearchCondition('$1', '$2')}`, [randomUUID(), 'word:*']);
    })) as { 'QUERY PLAN': string }[];
    const text = plan.map((row) => row['QUERY PLAN']).join('\n');
    expect(text).toContain('ix_agent_runs_message_search');
    expect(text).toContain('ix_agent_runs_reply_search');
    expect(text).not.toMatch(/Seq Scan on agent_runs/);
  });
});

describe("GET /agent/threads?q=: the assistant's replies", () => {
  /** A run of `persona`'s whose assistant answers in `deltas` (split mid-word, as a model streams) and ends. */
  const answeredRun = async (persona: DemoPersona, message: string, deltas: string[]) => {
    const step = await startRunAndTakeStep(testApp, broker, persona, message);
    const event = runEvents(step);
    const messageId = randomUUID();
    const stored = await storeAsWorker(testApp, step, [
      event.started(),
      { runId: step.runId, threadId: step.threadId, type: 'TEXT_MESSAGE_START', messageId, role: 'assistant', name: 'rover' },
      ...deltas.map((delta) => event.text(messageId, delta)),
      { runId: step.runId, threadId: step.threadId, type: 'TEXT_MESSAGE_END', messageId },
      event.finished(),
    ]);
    expect(stored).toMatchObject({ kind: 'stored' });
    return step;
  };

  it('finds a thread by a word only the assistant wrote, even one streamed in pieces, once the run has ended', async () => {
    const school = testApp.demo.schools[0];
    const owner = school.personas.registrar;
    const { threadId, runId } = await answeredRun(owner, 'What is planned for Friday?', ['The Quetz', 'alcoatl excursion leaves at ', 'nine.']);
    const [run] = (await testApp.owner.query(`SELECT message, reply FROM agent_runs WHERE id = $1`, [runId])) as { message: string; reply: string }[];
    expect(run).toEqual({ message: 'What is planned for Friday?', reply: '\nThe Quetzalcoatl excursion leaves at nine.' });
    expect(ids((await list(owner, { q: 'quetzalcoatl' })).body)).toEqual([threadId]);
    expect(ids((await list(owner, { q: 'Quetzal excursion' })).body)).toEqual([threadId]);
    expect(ids((await list(owner, { q: 'quetzalcoatl picnic' })).body)).toEqual([]);
  });

  it("security: another user's thread is never found by its assistant's reply, in the same school, another, or as a platform admin", async () => {
    const [schoolA, schoolB] = testApp.demo.schools;
    const { threadId } = await answeredRun(schoolA.personas.directorOfStudies, 'Any news?', ['The Oce', 'lot fundraiser is on Monday.']);
    expect(ids((await list(schoolA.personas.directorOfStudies, { q: 'ocelot' })).body)).toEqual([threadId]);
    for (const other of [schoolA.personas.schoolAdmin, schoolA.personas.teacher, schoolB.personas.schoolAdmin, testApp.demo.platformAdmin]) {
      expect(ids((await list(other, { q: 'ocelot' })).body)).toEqual([]);
    }
  });
});

describe('PATCH /agent/threads/:id: rename, owner only', () => {
  it('the owner renames the thread; it keeps its place in the list', async () => {
    const school = testApp.demo.schools[1];
    const persona = school.personas.campusAdmin;
    const thread = await insertThread(persona, school.id, 'Old name', new Date(Date.now() - 3_600_000));
    const answer = await call(persona, 'PATCH', `/agent/threads/${thread}`, { title: '  Term plan  ' });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual(expect.objectContaining({ id: thread, title: 'Term plan' }));
    const stored = (await testApp.owner.query(`SELECT title, updated_at FROM agent_threads WHERE id = $1`, [thread])) as { title: string; updated_at: Date }[];
    expect(stored[0]?.title).toBe('Term plan');
    expect(stored[0]?.updated_at.getTime()).toBeLessThan(Date.now() - 3_000_000);
  });

  it('security: anyone else (same school, another school, a platform admin without target school) gets 404 and the title stays', async () => {
    const [schoolA, schoolB] = testApp.demo.schools;
    const thread = await insertThread(schoolA.personas.teacher, schoolA.id, 'Mine');
    for (const intruder of [schoolA.personas.schoolAdmin, schoolB.personas.schoolAdmin, testApp.demo.platformAdmin]) {
      expect(await call(intruder, 'PATCH', `/agent/threads/${thread}`, { title: 'Taken' })).toEqual(expect.objectContaining(notFound));
    }
    expect(await call(schoolA.personas.teacher, 'PATCH', `/agent/threads/${randomUUID()}`, { title: 'Nothing' })).toEqual(expect.objectContaining(notFound));
    expect(await call(schoolA.personas.teacher, 'PATCH', `/agent/threads/not-a-thread`, { title: 'Nothing' })).toEqual(expect.objectContaining(notFound));
    expect(((await testApp.owner.query(`SELECT title FROM agent_threads WHERE id = $1`, [thread])) as { title: string }[])[0]?.title).toBe('Mine');
  });

  it('refuses an empty, overlong or NUL-bearing title, and any other field, with a 400 naming it', async () => {
    const school = testApp.demo.schools[0];
    const thread = await insertThread(school.personas.teacher, school.id, 'Kept');
    for (const [body, field] of [
      [{ title: '   ' }, 'title'],
      [{ title: 'x'.repeat(201) }, 'title'],
      [{ title: 'a\u0000b' }, 'title'],
      [{}, 'title'],
      [{ title: 'Fine', ownerId: randomUUID() }, 'ownerId'],
    ] as const) {
      const answer = await call(school.personas.teacher, 'PATCH', `/agent/threads/${thread}`, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect((answer.body as { message: string }).message).toContain(field);
    }
    expect(((await testApp.owner.query(`SELECT title FROM agent_threads WHERE id = $1`, [thread])) as { title: string }[])[0]?.title).toBe('Kept');
  });
});
