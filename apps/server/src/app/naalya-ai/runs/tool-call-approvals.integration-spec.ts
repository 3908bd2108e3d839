import { createHash, randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { CONFIRMATION_ANSWERS, canonicalJson, deleteDepartmentTool, toRunInterrupt, type AgentRunEvent, type AgentToolResult } from '@naalya/agent-tools';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { dispatchEnvelope, personaRun, type DispatchOptions } from '../../../testing/dispatch-envelope.js';
import type { TestApp } from '../../../testing/test-app.js';
import { invokeTool } from '../../../testing/tool-handlers.js';
import { agentRequest, createAgentTestApp, createTestBroker, type TestBroker, storeAsWorker } from '../fixtures/agent-run-test-kit.js';
import { CONFIRMATION_REQUIRED_ERROR } from '../tools/tool-executor.js';

let broker: TestBroker;
let testApp: TestApp;
let schoolA: TestApp['demo']['schools'][0];

beforeAll(async () => {
  broker = await createTestBroker();
  testApp = await createAgentTestApp(broker.names);
  [schoolA] = testApp.demo.schools;
});
afterAll(async () => {
  await testApp?.close();
  await broker?.close();
});
beforeEach(async () => {
  await broker.channel.purgeQueue(broker.names.runsQueue);
});

// Written out rather than imported, so the test would catch the server hashing something other than canonical JSON.
const sha256OfCanonical = (value: unknown) => createHash('sha256').update(canonicalJson(value)).digest('hex');

const ownerRows = <T = Record<string, unknown>>(sql: string, parameters: unknown[] = []) => testApp.owner.query(sql, parameters) as Promise<T[]>;

const newDepartment = async (): Promise<string> => {
  const [row] = await ownerRows<{ id: string }>(`INSERT INTO departments (school_id, name) VALUES ($1, $2) RETURNING id`, [
    schoolA.id,
    `Doomed ${randomUUID().slice(0, 8)}`,
  ]);
  return row.id;
};

/** What a delete_department call did: its result, whether the department is gone, audit and ledger rows, security log lines. */
const attemptDelete = async (
  departmentId: string,
  options: DispatchOptions = {},
  persona: DemoPersona = schoolA.personas.schoolAdmin,
): Promise<{ result: AgentToolResult; deleted: boolean; audits: number; ledger: number; logged: string[] }> => {
  const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  try {
    const envelope = await dispatchEnvelope(persona, deleteDepartmentTool, { departmentId }, options);
    const result = await invokeTool(testApp.module, deleteDepartmentTool, envelope);
    const logged = warn.mock.calls.map(([message]) => String((message as { msg?: string })?.msg ?? message)).filter((line) => line.startsWith('security event'));
    const [{ departments }] = await ownerRows<{ departments: number }>(`SELECT count(*)::int AS departments FROM departments WHERE id = $1`, [departmentId]);
    const [{ audits }] = await ownerRows<{ audits: number }>(`SELECT count(*)::int AS audits FROM audit_log WHERE resource_id = $1`, [departmentId]);
    const [{ ledger }] = await ownerRows<{ ledger: number }>(`SELECT count(*)::int AS ledger FROM tool_call_ledger WHERE call_id = $1`, [envelope.meta.callId]);
    return { result, deleted: departments === 0, audits, ledger, logged };
  } finally {
    warn.mockRestore();
  }
};

const refusedAndUnchanged = (outcome: Awaited<ReturnType<typeof attemptDelete>>, reason: string) => {
  expect(outcome.result).toEqual({ error: CONFIRMATION_REQUIRED_ERROR, code: 'CONFIRMATION_REQUIRED' });
  expect(outcome.deleted).toBe(false);
  expect(outcome.audits).toBe(0);
  expect(outcome.ledger).toBe(0);
  expect(outcome.logged).toEqual([expect.stringContaining(`(approval-${reason})`)]);
};

describe('execute() runs a tool that needs confirmation only with the user\'s approval of exactly that call', () => {
  it('a confirmable tool called without an approval is refused, nothing changes, no audit or ledger row, a security event is logged', async () => {
    refusedAndUnchanged(await attemptDelete(await newDepartment(), { approval: 'none' }), 'none');
  });

  it('an approval of other arguments (an argument changed after the user approved) is refused and nothing changes', async () => {
    const approvedOne = await newDepartment();
    refusedAndUnchanged(await attemptDelete(await newDepartment(), { approval: { args: { departmentId: approvedOne } } }), 'other-arguments');
    expect(await ownerRows(`SELECT id FROM departments WHERE id = $1`, [approvedOne])).toHaveLength(1);
  });

  it('an approval given by another user of the same school does not count', async () => {
    refusedAndUnchanged(await attemptDelete(await newDepartment(), { approval: { by: schoolA.personas.departmentHead } }), 'other-user');
  });

  it('an approval given in another thread does not count in this one', async () => {
    // The other thread is a colleague's; the approval there names this user, this call id and these arguments.
    const elsewhere = personaRun(schoolA.personas.departmentHead.id);
    refusedAndUnchanged(await attemptDelete(await newDepartment(), { approval: { run: elsewhere } }), 'none');
  });

  it('an expired approval does not count', async () => {
    refusedAndUnchanged(await attemptDelete(await newDepartment(), { approval: { ttlSeconds: -1 } }), 'expired');
  });

  it('a confirmation the user answered no to does not approve the call', async () => {
    refusedAndUnchanged(await attemptDelete(await newDepartment(), { approval: { answer: CONFIRMATION_ANSWERS.decline } }), 'declined');
  });

  it('an approved call runs once, with one audit row, and its replay returns the same result without running again', async () => {
    const departmentId = await newDepartment();
    const callId = randomUUID();
    const first = await attemptDelete(departmentId, { callId });
    expect(first).toMatchObject({ result: { data: expect.anything() }, deleted: true, audits: 1, ledger: 1, logged: [] });
    const replay = await attemptDelete(departmentId, { callId });
    expect(replay.result).toEqual(first.result);
    expect(replay.audits).toBe(1);
  });
});

describe('a platform admin, whose approval has no school, writing in the school chosen at dispatch', () => {
  it("their own approval counts although the write runs pinned to the target school; without it the call is refused", async () => {
    const admin = testApp.demo.platformAdmin;
    const refused = await attemptDelete(await newDepartment(), { targetSchoolId: schoolA.id, approval: 'none' }, admin);
    refusedAndUnchanged(refused, 'none');
    const approved = await attemptDelete(await newDepartment(), { targetSchoolId: schoolA.id }, admin);
    expect(approved).toMatchObject({ result: { data: expect.anything() }, deleted: true, audits: 1, ledger: 1, logged: [] });
  });
});

describe('resume records the answer to a confirmation as an approval bound to what the worker asked', () => {
  const call = (persona: DemoPersona, method: 'GET' | 'POST', path: string, body?: unknown) =>
    agentRequest(testApp.app, testApp, persona, method, path, body);

  /** A run of the admin's that paused on the worker's confirmation of deleting `departmentId` (as the proxy asks it). */
  const pausedOnConfirmation = async (departmentId: string) => {
    const admin = schoolA.personas.schoolAdmin;
    const threadId = ((await call(admin, 'POST', '/agent/threads', {})).body as { id: string }).id;
    const { runId } = (await call(admin, 'POST', `/agent/threads/${threadId}/runs`, { message: 'delete that department' })).body as { runId: string };
    await broker.takeRunRequest();
    const interruptId = randomUUID();
    const callId = sha256OfCanonical({ threadId, interruptId });
    const event: AgentRunEvent = {
      runId,
      threadId,
      type: 'RUN_FINISHED',
      outcome: {
        type: 'interrupt',
        interrupts: [
          toRunInterrupt({
            interruptId,
            question: 'Delete the department "Doomed" (whole school)?',
            askedBy: 'rover',
            toolCallId: `tc-${interruptId}`,
            argsHash: sha256OfCanonical({ departmentId }),
            confirmation: { event: deleteDepartmentTool.event, callId },
          }),
        ],
      },
    };
    await storeAsWorker(testApp, { runId, threadId }, event);
    return { admin, threadId, runId, interruptId, callId };
  };

  /** The resumed step's epoch: the worker's calls carry the token of the step it is running. */
  const epochOf = async (runId: string) => ((await ownerRows(`SELECT epoch FROM agent_runs WHERE id = $1`, [runId]))[0] as { epoch: number }).epoch;

  it('a yes is recorded against the stored call id, event, argument hash, thread and user, and that call then runs', async () => {
    const departmentId = await newDepartment();
    const { admin, threadId, runId, interruptId, callId } = await pausedOnConfirmation(departmentId);
    // The client sends only the answer; nothing it could add names another call or other arguments.
    expect((await call(admin, 'POST', `/agent/threads/${threadId}/resume`, { interruptId, answer: 'Yes' })).status).toBe(200);
    expect(
      await ownerRows(
        `SELECT thread_id, run_id, call_id, event, args_hash, user_id, approved, expires_at > now() AS live,
                extract(epoch FROM expires_at - created_at)::int AS lifetime FROM tool_call_approvals WHERE call_id = $1`,
        [callId],
      ),
    ).toEqual([
      {
        thread_id: threadId,
        run_id: runId,
        call_id: callId,
        event: deleteDepartmentTool.event,
        args_hash: sha256OfCanonical({ departmentId }),
        user_id: admin.id,
        approved: true,
        live: true,
        // TOOL_APPROVAL_TTL_SECONDS, unset in the test server: its default.
        lifetime: 900,
      },
    ]);
    const outcome = await attemptDelete(departmentId, { run: { runId, threadId }, epoch: await epochOf(runId), callId, approval: 'none' }, admin);
    expect(outcome).toMatchObject({ deleted: true, audits: 1, logged: [] });
  });

  it('an approval given in a run the user then cancels stops counting: the same call in the next run of the thread is refused', async () => {
    const departmentId = await newDepartment();
    const { admin, threadId, runId, interruptId, callId } = await pausedOnConfirmation(departmentId);
    expect((await call(admin, 'POST', `/agent/threads/${threadId}/resume`, { interruptId, answer: 'Yes' })).status).toBe(200);
    await broker.takeRunRequest();
    expect((await call(admin, 'POST', `/agent/threads/${threadId}/runs/${runId}/cancel`)).status).toBe(200);
    const next = (await call(admin, 'POST', `/agent/threads/${threadId}/runs`, { message: 'delete that department' })).body as { runId: string };
    await broker.takeRunRequest();
    const outcome = await attemptDelete(departmentId, { run: { runId: next.runId, threadId }, epoch: await epochOf(next.runId), callId, approval: 'none' }, admin);
    refusedAndUnchanged(outcome, 'expired');
  });

  it('a no is recorded as declined and the call stays refused', async () => {
    const departmentId = await newDepartment();
    const { admin, threadId, runId, interruptId, callId } = await pausedOnConfirmation(departmentId);
    expect((await call(admin, 'POST', `/agent/threads/${threadId}/resume`, { interruptId, answer: 'no' })).status).toBe(200);
    expect(await ownerRows(`SELECT approved FROM tool_call_approvals WHERE call_id = $1`, [callId])).toEqual([{ approved: false }]);
    refusedAndUnchanged(await attemptDelete(departmentId, { run: { runId, threadId }, epoch: await epochOf(runId), callId, approval: 'none' }, admin), 'declined');
  });
});
