import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { createDepartmentTool, listStaffTool, type AgentRuntimeContext, type AgentToolResult } from '@naalya/agent-tools';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dispatchEnvelope, personaRun, type DispatchOptions } from '../../../testing/dispatch-envelope.js';
import { tokenFor } from '../../../testing/rest-client.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { invokeTool } from '../../../testing/tool-handlers.js';
import { DISPATCH_REFUSED_ERROR } from './tool-executor.js';

let testApp: TestApp;
let schoolA: TestApp['demo']['schools'][0];

beforeAll(async () => {
  testApp = await createTestApp();
  [schoolA] = testApp.demo.schools;
});
afterAll(() => testApp?.close());

const departmentsNamed = async (name: string) =>
  Number(((await testApp.owner.query(`SELECT count(*) FROM departments WHERE name = $1`, [name])) as { count: string }[])[0].count);

/** A fresh thread with one run in the given status, owned by the persona, as dispatch records it. */
const runFor = async (persona: { id: string; schoolId: string | null }, status: 'running' | 'interrupted' | 'finished' | 'failed') => {
  const run = { runId: randomUUID(), threadId: randomUUID() };
  await testApp.owner.query(`INSERT INTO agent_threads (id, school_id, owner_id) VALUES ($1, $2, $3)`, [run.threadId, persona.schoolId, persona.id]);
  await testApp.owner.query(`INSERT INTO agent_runs (id, thread_id, school_id, owner_id, status, message, kind, expires_at) VALUES ($1, $2, $3, $4, $5, 'm', 'direct', now() + interval '1 day')`, [
    run.runId,
    run.threadId,
    persona.schoolId,
    persona.id,
    status,
  ]);
  return run;
};

/** Creates a department as the school admin with the given envelope change; returns the result, the refusal logged, and whether it ran. */
const attemptWrite = async (
  change: (envelope: Awaited<ReturnType<typeof dispatchEnvelope>>) => unknown,
  options: DispatchOptions = {},
): Promise<{ result: AgentToolResult; ran: boolean; logged: string[] }> => {
  const name = `Forged ${randomUUID().slice(0, 8)}`;
  const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  try {
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name }, options);
    const result = await invokeTool(testApp.module, createDepartmentTool, change(envelope));
    const logged = warn.mock.calls.map(([message]) => String((message as { msg?: string })?.msg ?? message)).filter((line) => line.startsWith('security event'));
    return { result, ran: (await departmentsNamed(name)) > 0, logged };
  } finally {
    warn.mockRestore();
  }
};

describe('execute() runs only calls whose dispatch token the server minted for a run in flight', () => {
  it('runs a call carrying the token minted for this identity, scope and running run', async () => {
    const { result, ran, logged } = await attemptWrite((envelope) => envelope);
    expect(result).toHaveProperty('data');
    expect(ran).toBe(true);
    expect(logged).toEqual([]);
  });

  it('refuses a call without a dispatch token, runs nothing and logs the reason', async () => {
    const { result, ran, logged } = await attemptWrite(({ meta: { dispatchToken: _token, ...meta }, ...envelope }) => ({ ...envelope, meta }));
    expect(result).toEqual({ error: DISPATCH_REFUSED_ERROR, code: 'DISPATCH_REFUSED' });
    expect(ran).toBe(false);
    expect(logged).toEqual([expect.stringContaining('(missing)')]);
  });

  it('refuses a token signed with a key other than the server\'s (a forger\'s)', async () => {
    const { result, ran, logged } = await attemptWrite((envelope) => envelope, { signingKey: 'forger-key-forger-key-forger-key-0000' });
    expect(result).toEqual({ error: DISPATCH_REFUSED_ERROR, code: 'DISPATCH_REFUSED' });
    expect(ran).toBe(false);
    expect(logged).toEqual([expect.stringContaining('(bad-signature)')]);
  });

  it('refuses a token whose claims were edited after signing', async () => {
    const { result, ran } = await attemptWrite((envelope) => {
      const [version, kid, body, signature] = envelope.meta.dispatchToken!.split('.');
      const claims = JSON.parse(Buffer.from(body, 'base64url').toString());
      claims.exp += 86_400;
      return { ...envelope, meta: { ...envelope.meta, dispatchToken: `${version}.${kid}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}` } };
    });
    expect(result).toEqual({ error: DISPATCH_REFUSED_ERROR, code: 'DISPATCH_REFUSED' });
    expect(ran).toBe(false);
  });

  it('refuses an expired token', async () => {
    const { result, ran, logged } = await attemptWrite((envelope) => envelope, { tokenTtlSeconds: -1 });
    expect(result).toEqual({ error: DISPATCH_REFUSED_ERROR, code: 'DISPATCH_REFUSED' });
    expect(ran).toBe(false);
    expect(logged).toEqual([expect.stringContaining('(expired)')]);
  });

  it('refuses a token minted for another user when the envelope claims a different identity', async () => {
    const teacherToken = (await dispatchEnvelope(schoolA.personas.teacher, createDepartmentTool, {})).meta.dispatchToken;
    const { result, ran, logged } = await attemptWrite((envelope) => envelope, {});
    expect(result).toHaveProperty('data');
    expect(ran).toBe(true);
    expect(logged).toEqual([]);
    const swapped = await attemptWrite((envelope) => ({ ...envelope, meta: { ...envelope.meta, dispatchToken: teacherToken } }));
    expect(swapped.result).toEqual({ error: DISPATCH_REFUSED_ERROR, code: 'DISPATCH_REFUSED' });
    expect(swapped.ran).toBe(false);
    expect(swapped.logged).toEqual([expect.stringContaining('(identity-mismatch)')]);
  });

  it('refuses a school-mode token used with a campus scope or a target school added after minting', async () => {
    const campus = await attemptWrite((envelope) => ({ ...envelope, scope: { mode: 'campus', campusId: schoolA.campuses[0].id } }));
    const target = await attemptWrite((envelope) => ({ ...envelope, scope: { mode: 'school', targetSchoolId: testApp.demo.schools[1].id } }));
    for (const attempt of [campus, target]) {
      expect(attempt.result).toEqual({ error: DISPATCH_REFUSED_ERROR, code: 'DISPATCH_REFUSED' });
      expect(attempt.ran).toBe(false);
      expect(attempt.logged).toEqual([expect.stringContaining('(scope-mismatch)')]);
    }
  });

  it.each(['finished', 'failed', 'interrupted'] as const)('refuses a valid token whose run is %s (no longer running)', async (status) => {
    const run = await runFor(schoolA.personas.schoolAdmin, status);
    const { result, ran, logged } = await attemptWrite((envelope) => envelope, { run });
    expect(result).toEqual({ error: DISPATCH_REFUSED_ERROR, code: 'DISPATCH_REFUSED' });
    expect(ran).toBe(false);
    expect(logged).toEqual([expect.stringContaining('(run-not-in-flight)')]);
  });

  it('refuses a valid token naming a run that does not exist, or another user\'s running run', async () => {
    const missing = await attemptWrite((envelope) => envelope, { run: { runId: randomUUID(), threadId: randomUUID() } });
    const others = await attemptWrite((envelope) => envelope, { run: personaRun(schoolA.personas.teacher.id) });
    const wrongThread = await attemptWrite((envelope) => envelope, { run: { ...personaRun(schoolA.personas.schoolAdmin.id), threadId: randomUUID() } });
    for (const attempt of [missing, others, wrongThread]) {
      expect(attempt.result).toEqual({ error: DISPATCH_REFUSED_ERROR, code: 'DISPATCH_REFUSED' });
      expect(attempt.ran).toBe(false);
      expect(attempt.logged).toEqual([expect.stringContaining('(run-not-in-flight)')]);
    }
  });

  it('a run that finishes stops its token at once: the same token runs before and is refused after', async () => {
    const run = await runFor(schoolA.personas.schoolAdmin, 'running');
    const before = await attemptWrite((envelope) => envelope, { run });
    await testApp.owner.query(`UPDATE agent_runs SET status = 'finished' WHERE id = $1`, [run.runId]);
    const after = await attemptWrite((envelope) => envelope, { run });
    expect(before.ran).toBe(true);
    expect(after).toMatchObject({ result: { error: DISPATCH_REFUSED_ERROR, code: 'DISPATCH_REFUSED' }, ran: false });
  });

  it('refuses a read too: nothing is returned without a valid token', async () => {
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, listStaffTool, {});
    expect(await invokeTool(testApp.module, listStaffTool, { ...envelope, meta: { ...envelope.meta, dispatchToken: 'v1.e30.AAAA' } })).toEqual({
      error: DISPATCH_REFUSED_ERROR,
      code: 'DISPATCH_REFUSED',
    });
  });
});

describe('contexts minted by the server carry a token execute() accepts', () => {
  it('POST /agent/context opens a running run and its token runs a call; a finished run\'s token does not', async () => {
    const persona = schoolA.personas.schoolAdmin;
    const response = await fetch(`${await testApp.app.getUrl()}/agent/context`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokenFor(testApp, persona)}`, 'content-type': 'application/json' },
      body: '{}',
    });
    const context = (await response.json()) as AgentRuntimeContext;
    expect(context.dispatchToken).toMatch(/^v2\.default\./);
    expect(await testApp.owner.query(`SELECT status, owner_id FROM agent_runs WHERE id = $1`, [context.run.runId])).toEqual([
      { status: 'running', owner_id: persona.id },
    ]);
    const base = await dispatchEnvelope(persona, listStaffTool, {});
    const envelope = { ...base, meta: { ...base.meta, dispatchToken: context.dispatchToken } };
    expect(await invokeTool(testApp.module, listStaffTool, envelope)).toHaveProperty('data');
    await testApp.owner.query(`UPDATE agent_runs SET status = 'finished' WHERE id = $1`, [context.run.runId]);
    expect(await invokeTool(testApp.module, listStaffTool, envelope)).toEqual({ error: DISPATCH_REFUSED_ERROR, code: 'DISPATCH_REFUSED' });
  });
});
