import { createHash, randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import {
  CONFIRMATION_ANSWERS,
  ERROR_SENTENCES,
  approveLessonPlanTool,
  canonicalJson,
  deleteDepartmentTool,
  toRunInterrupt,
  type AgentInterrupt,
  type AgentRunEvent,
  type AgentToolResult,
  type AnyAgentTool,
} from '@naalya/agent-tools';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { dispatchEnvelope, personaRun, type DispatchOptions } from '../../../testing/dispatch-envelope.js';
import type { TestApp } from '../../../testing/test-app.js';
import { invokeTool } from '../../../testing/tool-handlers.js';
import { agentRequest, createAgentTestApp, createTestBroker, type TestBroker, storeAsWorker } from '../fixtures/agent-run-test-kit.js';
import { CONFIRMATION_REQUIRED_ERROR } from '../tools/tool-executor.js';
import { lookups } from '../tools/fixtures/school-lookups.js';
import { insertPendingLessonPlan } from '../tools/fixtures/tool-fixture.js';

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

  /** The worker's RUN_FINISHED pausing the run on one question, stored as the worker's event. */
  const askAsWorker = (runId: string, threadId: string, interrupt: AgentInterrupt) => {
    const event: AgentRunEvent = { runId, threadId, type: 'RUN_FINISHED', outcome: { type: 'interrupt', interrupts: [toRunInterrupt(interrupt)] } };
    return storeAsWorker(testApp, { runId, threadId }, event);
  };

  /** A run of the persona's that paused on the worker's confirmation of a call (as the proxy asks it, by default deleting `departmentId`). */
  const pausedOnConfirmation = async (
    departmentId: string,
    confirmed: { persona: DemoPersona; tool: AnyAgentTool; args: Record<string, unknown> } = {
      persona: schoolA.personas.schoolAdmin,
      tool: deleteDepartmentTool,
      args: { departmentId },
    },
  ) => {
    const admin = confirmed.persona;
    const threadId = ((await call(admin, 'POST', '/agent/threads', {})).body as { id: string }).id;
    const { runId } = (await call(admin, 'POST', `/agent/threads/${threadId}/runs`, { message: 'delete that department' })).body as { runId: string };
    await broker.takeRunRequest();
    const interruptId = randomUUID();
    const callId = sha256OfCanonical({ threadId, interruptId });
    await askAsWorker(runId, threadId, {
      interruptId,
      question: 'Delete the department "Doomed" (whole school)?',
      askedBy: 'rover',
      toolCallId: `tc-${interruptId}`,
      argsHash: sha256OfCanonical(confirmed.args),
      confirmation: { event: confirmed.tool.event, callId, args: confirmed.args },
    });
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

  describe('approve with edits', () => {
    const dos = () => schoolA.personas.directorOfStudies;
    const pendingPlan = () =>
      insertPendingLessonPlan(testApp.owner, schoolA.id, lookups(schoolA).benjaminsMathematics.id, schoolA.personas.subjectTeacher.id);
    /** The director of studies' run paused on approving a pending plan with the model's comment. */
    const pausedOnApproval = async () => {
      const lessonPlanId = await pendingPlan();
      const args = { lessonPlanId, comment: 'Well planned' };
      return { ...(await pausedOnConfirmation('', { persona: dos(), tool: approveLessonPlanTool, args })), lessonPlanId, args };
    };
    const resume = (persona: DemoPersona, threadId: string, body: unknown) => call(persona, 'POST', `/agent/threads/${threadId}/resume`, body);
    const pendingIds = async (runId: string) =>
      ((await ownerRows<{ p: { interruptId: string; answered: boolean }[] }>(`SELECT pending_interrupts AS p FROM agent_runs WHERE id = $1`, [runId]))[0]?.p ?? [])
        .filter((interrupt) => !interrupt.answered)
        .map((interrupt) => interrupt.interruptId);
    const edits = (callId: string) => ownerRows(`SELECT * FROM tool_call_edits WHERE call_id = $1`, [callId]);

    it('an edit of an argument the tool does not list as editable is refused with 400 naming it; the question stays pending, nothing recorded', async () => {
      const { threadId, runId, interruptId, callId } = await pausedOnApproval();
      const refused = await resume(dos(), threadId, { interruptId, answer: 'yes', edits: { lessonPlanId: randomUUID() } });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ code: 'EDIT_NOT_ALLOWED', message: expect.stringContaining('edits.lessonPlanId: only comment can be edited') });
      expect(await pendingIds(runId)).toEqual([interruptId]);
      expect(await edits(callId)).toEqual([]);
      expect(await ownerRows(`SELECT id FROM tool_call_approvals WHERE call_id = $1`, [callId])).toEqual([]);
    });

    it('a tool that lists no editable argument refuses every edit with 400, and the question stays pending', async () => {
      const { admin, threadId, runId, interruptId } = await pausedOnConfirmation(await newDepartment());
      const refused = await resume(admin, threadId, { interruptId, answer: 'yes', edits: { departmentId: randomUUID() } });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ code: 'EDIT_NOT_ALLOWED', message: expect.stringContaining('nothing in it can be edited') });
      expect(await pendingIds(runId)).toEqual([interruptId]);
    });

    it("an edit the tool's schema refuses is a 400 with the sentence the call would get, and the question stays pending", async () => {
      const { threadId, runId, interruptId, callId } = await pausedOnApproval();
      const refused = await resume(dos(), threadId, { interruptId, answer: 'yes', edits: { comment: 'x'.repeat(501) } });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ code: 'INVALID_ARGUMENTS', message: expect.stringMatching(/^Invalid tool arguments: comment: /) });
      expect(await pendingIds(runId)).toEqual([interruptId]);
      expect(await edits(callId)).toEqual([]);
    });

    it('an edit is recorded (who, the original arguments and their hash, the change) and resumes the worker with the edited arguments; it approves nothing', async () => {
      const { threadId, runId, interruptId, callId, args } = await pausedOnApproval();
      expect((await resume(dos(), threadId, { interruptId, answer: 'yes', edits: { comment: 'Add homework' } })).status).toBe(200);
      const edited = { ...args, comment: 'Add homework' };
      expect(await edits(callId)).toEqual([
        expect.objectContaining({
          user_id: dos().id,
          interrupt_id: interruptId,
          original_args: args,
          original_args_hash: sha256OfCanonical(args),
          edited_args_hash: sha256OfCanonical(edited),
          changes: [{ field: 'comment', from: 'Well planned', to: 'Add homework' }],
        }),
      ]);
      expect(await ownerRows(`SELECT id FROM tool_call_approvals WHERE call_id = $1`, [callId])).toEqual([]);
      const { request: step } = await broker.takeRunRequest();
      expect(step).toMatchObject({ kind: 'resume', answers: { [interruptId]: { editedArgs: edited } } });
      // The original arguments have no approval: their call is refused.
      const original = await invokeTool(
        testApp.module,
        approveLessonPlanTool,
        await dispatchEnvelope(dos(), approveLessonPlanTool, args, { run: { runId, threadId }, epoch: await epochOf(runId), callId, approval: 'none' }),
      );
      expect(original).toEqual({ error: CONFIRMATION_REQUIRED_ERROR, code: 'CONFIRMATION_REQUIRED' });
    });

    it('the approval of the edited call links to the edit; the edited call runs once with an audit row naming the approval; the original arguments cannot replay it', async () => {
      const { threadId, runId, interruptId, callId, args, lessonPlanId } = await pausedOnApproval();
      expect((await resume(dos(), threadId, { interruptId, answer: 'yes', edits: { comment: 'Add homework' } })).status).toBe(200);
      await broker.takeRunRequest();
      // The worker asks again about the edited call, under a new interrupt of the same call id.
      const edited = { ...args, comment: 'Add homework' };
      const secondId = randomUUID();
      await askAsWorker(runId, threadId, {
        interruptId: secondId,
        question: 'Approve the plan with the comment "Add homework"?',
        askedBy: 'dos',
        argsHash: sha256OfCanonical(edited),
        confirmation: { event: approveLessonPlanTool.event, callId, args: edited, edited: [{ field: 'comment', from: 'Well planned', to: 'Add homework' }] },
      });
      expect((await resume(dos(), threadId, { interruptId: secondId, answer: 'yes' })).status).toBe(200);
      await broker.takeRunRequest();
      const [approval] = await ownerRows<{ id: string; args_hash: string; edit_id: string }>(`SELECT id, args_hash, edit_id FROM tool_call_approvals WHERE call_id = $1`, [callId]);
      const [edit] = await edits(callId);
      expect(approval).toMatchObject({ args_hash: sha256OfCanonical(edited), edit_id: (edit as { id: string }).id });

      const epoch = await epochOf(runId);
      const attempt = (callArgs: Record<string, unknown>) =>
        dispatchEnvelope(dos(), approveLessonPlanTool, callArgs, { run: { runId, threadId }, epoch, callId, approval: 'none' }).then((envelope) =>
          invokeTool(testApp.module, approveLessonPlanTool, envelope),
        );
      expect(await attempt(args)).toEqual({ error: CONFIRMATION_REQUIRED_ERROR, code: 'CONFIRMATION_REQUIRED' });
      const ran = await attempt(edited);
      expect(ran).toMatchObject({ data: { id: lessonPlanId }, auditId: expect.any(String) });
      // Once: the original arguments still cannot run under the call id the edited call used.
      expect(await attempt(args)).toMatchObject({ code: expect.stringMatching(/CONFIRMATION_REQUIRED|CALL_ID_REUSED/) });
      const audits = await ownerRows(`SELECT approval_id, changes FROM audit_log WHERE call_id = $1`, [callId]);
      expect(audits).toEqual([{ approval_id: approval.id, changes: expect.objectContaining({ comment: 'Add homework' }) }]);

      // The school's administrator reads the Activity log.
      const detail = await call(schoolA.personas.schoolAdmin, 'GET', `/audit-log/${'auditId' in ran ? ran.auditId : ''}`);
      expect(detail.status).toBe(200);
      expect((detail.body as { approval: unknown }).approval).toEqual({
        id: approval.id,
        approvedById: dos().id,
        approvedByName: dos().fullName,
        approvedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        answer: 'yes',
        edited: true,
        edits: [{ field: 'comment', from: 'Well planned', to: 'Add homework' }],
      });
    });

    it('an answer to an expired question is refused with QUESTION_EXPIRED, a sentence saying it expired and to ask again; nothing is recorded', async () => {
      const { threadId, runId, interruptId, callId } = await pausedOnApproval();
      await ownerRows(`UPDATE agent_runs SET expires_at = now() - interval '1 second' WHERE id = $1`, [runId]);
      const refused = await resume(dos(), threadId, { interruptId, answer: 'yes' });
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ code: 'QUESTION_EXPIRED', message: ERROR_SENTENCES.QUESTION_EXPIRED });
      expect(ERROR_SENTENCES.QUESTION_EXPIRED).toMatch(/expired.*ask again/);
      expect(await ownerRows(`SELECT id FROM tool_call_approvals WHERE call_id = $1`, [callId])).toEqual([]);
    });
  });
});
