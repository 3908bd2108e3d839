import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { AGENT_RUN_PATTERN, fromRunInterrupt, type AgentInterrupt, type RunStreamEvent } from '@naalya/agent-tools';
import { MESSAGE_SIGNATURE_HEADER, brokerCredentialsOf, generateMessageSigningKeyPair, parseMessageSigningKey, rmqNames, runsDeadLetterQueue, signMessage } from '@naalya/rmq';
import { RABBITMQ_URL, createTestStack, readRunEvents, type BuiltProcess, type TestStack } from '@naalya/test-stack';
import { connect, type GetMessage, type Options } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Both services as processes, the way `npm start` runs them: the built server and the built worker, with the
// scripted model, talking over the real RabbitMQ; the worker's checkpoints in PostgreSQL under its own role.
let stack: TestStack;
let worker: BuiltProcess | undefined;
let token: string;

const api = async <T>(path: string, body?: unknown, as = token): Promise<T> => {
  const response = await fetch(`${stack.server().baseUrl}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${as}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
};

type StoredEvent = { seq: number; event: RunStreamEvent };

/** The first question a step paused on, as the server keeps it. */
const questionOf = (events: RunStreamEvent[]): AgentInterrupt | undefined => {
  const finish = events.at(-1);
  return finish?.type === 'RUN_FINISHED' && finish.outcome.type === 'interrupt' ? fromRunInterrupt(finish.outcome.interrupts[0]) : undefined;
};
/** Who made each tool call: the specialist whose subagent the call carries, or Rover. */
const toolCalls = (events: RunStreamEvent[]) => {
  const roles = new Map(events.flatMap((event) => (event.type === 'SUBAGENT_STARTED' ? [[event.subagentRunId, event.name] as const] : [])));
  return events.flatMap((event) => (event.type === 'TOOL_CALL_START' ? [`${(event.subagentRunId && roles.get(event.subagentRunId)) ?? 'rover'}:${event.toolCallName}`] : []));
};
/** The last message's text, from its streamed deltas. */
const lastText = (events: RunStreamEvent[]) => {
  const texts = new Map<string, string>();
  for (const event of events) if (event.type === 'TEXT_MESSAGE_CONTENT') texts.set(event.messageId, (texts.get(event.messageId) ?? '') + event.delta);
  return [...texts.values()].at(-1) ?? '';
};
/** A tool call's arguments, from its streamed deltas. */
const argsOf = (events: RunStreamEvent[], toolCallName: string): Record<string, unknown> => {
  const start = events.find((event) => event.type === 'TOOL_CALL_START' && event.toolCallName === toolCallName);
  const id = start?.type === 'TOOL_CALL_START' ? start.toolCallId : undefined;
  return JSON.parse(events.map((event) => (event.type === 'TOOL_CALL_ARGS' && event.toolCallId === id ? event.delta : '')).join('') || '{}') as Record<string, unknown>;
};
/** The event types, a run of streamed deltas counted once. */
const shapeOf = (events: RunStreamEvent[]) =>
  events.map((event) => event.type).filter((type, index, all) => !(type === 'TEXT_MESSAGE_CONTENT' || type === 'TOOL_CALL_ARGS') || all[index - 1] !== type);

/** A run step's properties as the server publishes it: its broker user_id and its signature over the exact body. */
const signedAsServer = (body: Buffer, privateKey = stack.runSigning.privateKey): Options.Publish => ({
  persistent: true,
  userId: brokerCredentialsOf(stack.env['RABBITMQ_URL'] ?? RABBITMQ_URL).user,
  headers: { [MESSAGE_SIGNATURE_HEADER]: signMessage(body, parseMessageSigningKey(privateKey)) },
});

/** Reads the run's server-sent events until the server ends the stream (the step finished). */
const readStep = async (threadId: string, runId: string, afterSeq = 0, as = token): Promise<StoredEvent[]> =>
  (await readRunEvents(stack.server().baseUrl, as, { threadId, runId }, { lastEventId: afterSeq, signal: AbortSignal.timeout(30_000) })).map(({ seq, event }) => ({ seq, event }));

beforeAll(async () => {
  stack = await createTestStack({ name: 'e2e' });
  await stack.startServer();
  worker = await stack.startWorker();
  token = await stack.login('admin@greenhill.school');
}, 120_000);

afterAll(async () => {
  await stack?.teardown();
});

describe('a conversation through the server, the runs queue, the worker and back', () => {
  it('"list departments": the worker runs the step and the server streams its events in order', async () => {
    const { id: threadId } = await api<{ id: string }>('/agent/threads', {});
    const { runId } = await api<{ runId: string }>(`/agent/threads/${threadId}/runs`, { message: 'list departments' });

    const events = (await readStep(threadId, runId)).map(({ event }) => event);

    expect(shapeOf(events)).toEqual([
      'RUN_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    expect(events[1]).toMatchObject({ toolCallName: 'list_departments', metadata: { event: 'list.departments' } });
    expect(events[1]).not.toHaveProperty('subagentRunId');
    expect(events.find((event) => event.type === 'TOOL_CALL_RESULT')).toMatchObject({ role: 'tool', metadata: { hopMs: expect.any(Number) } });
    expect(events.find((event) => event.type === 'TEXT_MESSAGE_START')).toMatchObject({ role: 'assistant', name: 'rover' });
    // The reply arrived token by token: several deltas that join to it.
    expect(events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT').length).toBeGreaterThan(3);
    expect(lastText(events)).toMatch(/^\[scripted model\] I found \d+ departments: .*Languages/);
    expect(events.at(-1)).toMatchObject({ outcome: { type: 'success' } });
  });

  /** The Greenhill department of this name, if it still exists. */
  const greenhillDepartment = async (name: string): Promise<string | undefined> =>
    (
      await stack.owner.query(
        `SELECT d.id FROM departments d JOIN schools s ON s.id = d.school_id WHERE s.name = 'Greenhill Academy' AND d.name = $1`,
        [name],
      )
    ).rows[0]?.id;

  /** Asks to delete a department; the run pauses on the proxy's confirmation before anything reaches the server. */
  const askToDelete = async (name: string) => {
    const departmentId = await greenhillDepartment(name);
    const ledgerBefore = await ledgerCount('delete.department');
    const { id: threadId } = await api<{ id: string }>('/agent/threads', {});
    const { runId } = await api<{ runId: string }>(`/agent/threads/${threadId}/runs`, { message: `delete the ${name} department` });
    const asked = await readStep(threadId, runId);
    const finish = asked.at(-1)?.event;
    expect(finish).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'interrupt', interrupts: [{ reason: 'confirmation', expiresAt: expect.any(String) }] } });
    // The conversation is snapshot before the run pauses.
    expect(asked.at(-2)?.event).toMatchObject({ type: 'MESSAGES_SNAPSHOT', messages: expect.arrayContaining([expect.objectContaining({ role: 'user', content: `delete the ${name} department` })]) });
    const question = questionOf(asked.map(({ event }) => event));
    expect(question).toMatchObject({
      askedBy: 'rover',
      // Written by the server from the records: the department's name, not its id.
      question: expect.stringMatching(new RegExp(`^Delete the department "${name}" \\(.+\\)\\? It has `)),
      confirmation: { event: 'delete.department', callId: expect.any(String) },
    });
    expect(question?.question).not.toContain(departmentId);
    expect(asked.filter(({ event }) => event.type === 'TOOL_CALL_RESULT' && event.content.includes('delete'))).toEqual([]);
    expect(await ledgerCount('delete.department')).toBe(ledgerBefore);
    return { departmentId, threadId, runId, asked, question };
  };

  it('"delete the Languages department": the run pauses on the confirmation, yes resumes it, the department is deleted once, audited', async () => {
    const { threadId, runId, asked, question } = await askToDelete('Languages');

    const resumed = await api<{ resumed: boolean }>(`/agent/threads/${threadId}/resume`, { interruptId: question?.interruptId, answer: 'yes' });
    expect(resumed.resumed).toBe(true);
    const events = (await readStep(threadId, runId, asked.at(-1)?.seq)).map(({ event }) => event);

    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    const deleted = events.find((event) => event.type === 'CUSTOM');
    expect(deleted).toMatchObject({ name: 'department.deleted', value: { auditId: expect.any(String) } });
    const auditId = deleted?.type === 'CUSTOM' ? deleted.value['auditId'] : undefined;
    const { rows } = await stack.owner.query(`SELECT action, resource_type FROM audit_log WHERE id = $1`, [auditId]);
    expect(rows).toHaveLength(1);
    expect(await greenhillDepartment('Languages')).toBeUndefined();
  });

  it('"delete the Sciences department" answered no: nothing reaches the server, the department stays, no ledger or audit row', async () => {
    const auditsBefore = Number((await stack.owner.query(`SELECT count(*)::int AS n FROM audit_log`)).rows[0]?.n);
    const { departmentId, threadId, runId, asked, question } = await askToDelete('Sciences');
    const ledgerBefore = await ledgerCount('delete.department');

    await api(`/agent/threads/${threadId}/resume`, { interruptId: question?.interruptId, answer: 'no' });
    const events = (await readStep(threadId, runId, asked.at(-1)?.seq)).map(({ event }) => event);

    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    expect(lastText(events)).toContain('Nothing was changed.');
    expect(customOf(events)).toBeUndefined();
    expect(await greenhillDepartment('Sciences')).toBe(departmentId);
    expect(await ledgerCount('delete.department')).toBe(ledgerBefore);
    expect(Number((await stack.owner.query(`SELECT count(*)::int AS n FROM audit_log`)).rows[0]?.n)).toBe(auditsBefore);
  });
});

// --- one conversation per persona, a resume across a worker restart, a malformed run ----------------------

type Step = { threadId: string; runId: string; events: RunStreamEvent[]; lastSeq: number };

const as = async (email: string) => {
  const userToken = await stack.login(email);
  const send = async (message: string, threadId?: string): Promise<Step> => {
    const thread = threadId ?? (await api<{ id: string }>('/agent/threads', {}, userToken)).id;
    const { runId } = await api<{ runId: string }>(`/agent/threads/${thread}/runs`, { message }, userToken);
    const stored = await readStep(thread, runId, 0, userToken);
    return { threadId: thread, runId, events: stored.map(({ event }) => event), lastSeq: stored.at(-1)?.seq ?? 0 };
  };
  const answer = async (step: Step, reply: string, edits?: Record<string, unknown>): Promise<Step> => {
    const question = questionOf(step.events);
    if (!question) throw new Error(`no question pending in run ${step.runId}`);
    await api(`/agent/threads/${step.threadId}/resume`, { interruptId: question.interruptId, answer: reply, ...(edits ? { edits } : {}) }, userToken);
    const stored = await readStep(step.threadId, step.runId, step.lastSeq, userToken);
    return { ...step, events: stored.map(({ event }) => event), lastSeq: stored.at(-1)?.seq ?? step.lastSeq };
  };
  return { send, answer };
};

const auditRowsOf = async (auditId: unknown) =>
  (
    await stack.owner.query(
      `SELECT u.email, a.action, a.resource_type, a.source FROM audit_log a JOIN users u ON u.id = a.actor_id WHERE a.id = $1`,
      [auditId],
    )
  ).rows;
const customOf = (events: RunStreamEvent[]) => events.find((event) => event.type === 'CUSTOM');
const ledgerCount = async (event: string) =>
  Number((await stack.owner.query(`SELECT count(*)::int AS n FROM tool_call_ledger WHERE event = $1`, [event])).rows[0]?.n);

describe('one conversation per persona, through both processes', () => {
  it('Angela, class teacher: the register through Angie, students first, one audited write', async () => {
    const angela = await as('class.teacher@greenhill.school');
    const { events } = await angela.send('take the register for S1 Kisasi, everyone present except Ivan');

    expect(toolCalls(events)).toEqual(['rover:task', 'class_teacher:list_my_classes', 'class_teacher:list_class_students', 'class_teacher:record_attendance']);
    expect(events.find((event) => event.type === 'TOOL_CALL_START' && event.toolCallName === 'record_attendance')).toMatchObject({ metadata: { event: 'record.attendance' } });
    const recorded = customOf(events);
    expect(recorded).toMatchObject({ name: 'attendance.recorded', value: { auditId: expect.any(String) } });
    expect(await auditRowsOf(recorded?.type === 'CUSTOM' ? recorded.value['auditId'] : null)).toEqual([
      { email: 'class.teacher@greenhill.school', action: 'record', resource_type: 'attendance', source: 'agent' },
    ]);
    const { rows } = await stack.owner.query(
      `SELECT s.full_name, a.status FROM attendance a JOIN students s ON s.id = a.student_id WHERE a.status = 'absent' AND a.on_date = $1`,
      [argsOf(events, 'record_attendance')['date']],
    );
    expect(rows).toEqual([{ full_name: expect.stringMatching(/^Ivan /), status: 'absent' }]);
    expect(lastText(events)).toMatch(/^\[scripted model\] Done: Attendance recorded for 20 students\./);
  });

  it('Benjamin, subject teacher: the gradebook through Bean, a read with a scope and no audit row', async () => {
    const benjamin = await as('subject.teacher@greenhill.school');
    const before = Number((await stack.owner.query(`SELECT count(*)::int AS n FROM audit_log`)).rows[0]?.n);
    const { events } = await benjamin.send('show the gradebook for S1 Kisasi');

    expect(toolCalls(events)).toEqual(['rover:task', 'subject_teacher:list_my_teaching_assignments', 'subject_teacher:get_gradebook']);
    expect(events.filter((event) => event.type === 'TOOL_CALL_RESULT' && event.metadata?.hopMs !== undefined)).toHaveLength(2);
    expect(lastText(events)).toMatch(/^\[scripted model\] The gradebook of S1 Kisasi for Term 1 2026\. Mathematics: 20 of 20 students marked/);
    expect(events.find((event) => event.type === 'TEXT_MESSAGE_START')).toMatchObject({ name: 'subject_teacher', subagentRunId: expect.any(String) });
    expect(Number((await stack.owner.query(`SELECT count(*)::int AS n FROM audit_log`)).rows[0]?.n)).toBe(before);
  });

  it('Samuel, director of studies who teaches: Sarah asks before approving, then approves once', async () => {
    const samuel = await as('dos@greenhill.school');
    const asked = await samuel.send('approve the lesson plan Linear equations');
    const { rows: plan } = await stack.owner.query(`SELECT id FROM lesson_plans WHERE title = 'Linear equations' AND school_id = (SELECT id FROM schools WHERE name = 'Greenhill Academy')`);
    expect(toolCalls(asked.events)).toEqual(['rover:task', 'dos:list_pending_lesson_plans', 'dos:approve_lesson_plan']);
    expect(questionOf(asked.events)).toMatchObject({
      askedBy: 'dos',
      question: expect.stringContaining('Approve "Linear equations", '),
      confirmation: { event: 'approve.lesson-plan', callId: expect.any(String) },
    });
    expect(questionOf(asked.events)?.question).not.toContain(plan[0]?.id);

    const done = await samuel.answer(asked, 'yes');

    const approve = asked.events.find((event) => event.type === 'TOOL_CALL_START' && event.toolCallName === 'approve_lesson_plan');
    const approveResult = done.events.find((event) => event.type === 'TOOL_CALL_RESULT' && approve?.type === 'TOOL_CALL_START' && event.toolCallId === approve.toolCallId);
    expect(JSON.parse(approveResult?.type === 'TOOL_CALL_RESULT' ? approveResult.content : '{}')).toMatchObject({ data: expect.anything() });
    const approved = customOf(done.events);
    expect(await auditRowsOf(approved?.type === 'CUSTOM' ? approved.value['auditId'] : null)).toEqual([
      { email: 'dos@greenhill.school', action: 'approve', resource_type: 'lesson_plan', source: 'agent' },
    ]);
    const { rows } = await stack.owner.query(`SELECT status FROM lesson_plans WHERE title = 'Linear equations' AND school_id = (SELECT id FROM schools WHERE name = 'Greenhill Academy')`);
    expect(rows).toEqual([{ status: 'approved' }]);
  });

  it('Samuel approves with an edited comment: asked again about the edited call, it runs once with its own audit row linked to the approval, the original never runs, the model is told', async () => {
    const samuel = await as('dos@greenhill.school');
    const asked = await samuel.send('approve the lesson plan Simultaneous equations');
    const first = questionOf(asked.events);
    expect(first?.confirmation).toMatchObject({ event: 'approve.lesson-plan', args: { lessonPlanId: expect.any(String) }, editable: {} });
    const original = first?.confirmation?.args ?? {};

    const reasked = await samuel.answer(asked, 'yes', { comment: 'Add a homework task' });
    const second = questionOf(reasked.events);
    expect(second).toMatchObject({
      askedBy: 'dos',
      question: expect.stringContaining('Approve "Simultaneous equations", '),
      confirmation: { callId: first?.confirmation?.callId, editable: { comment: 'Add a homework task' }, edited: [{ field: 'comment', to: 'Add a homework task' }] },
    });
    expect(second?.interruptId).not.toBe(first?.interruptId);
    // Nothing ran between the two questions.
    expect(reasked.events.filter((event) => event.type === 'TOOL_CALL_RESULT' && event.content.includes('scopeContext'))).toEqual([]);

    const done = await samuel.answer(reasked, 'yes');
    const approved = customOf(done.events);
    const auditId = approved?.type === 'CUSTOM' ? approved.value['auditId'] : null;
    const callId = first?.confirmation?.callId;
    const { rows: audits } = await stack.owner.query(
      `SELECT a.id, a.changes, a.approval_id, p.args_hash, p.edit_id IS NOT NULL AS edited FROM audit_log a JOIN tool_call_approvals p ON p.id = a.approval_id WHERE a.call_id = $1`,
      [callId],
    );
    expect(audits).toEqual([{ id: auditId, changes: { ...original, comment: 'Add a homework task' }, approval_id: expect.any(String), args_hash: second?.argsHash, edited: true }]);
    const { rows: plan } = await stack.owner.query(`SELECT status, review_comment FROM lesson_plans WHERE id = $1`, [original['lessonPlanId']]);
    expect(plan).toEqual([{ status: 'approved', review_comment: 'Add a homework task' }]);
    // The model is told the person's edit ran, not its own arguments.
    const result = done.events.find((event) => event.type === 'TOOL_CALL_RESULT' && event.content.includes('userEdited'));
    expect(JSON.parse(result?.type === 'TOOL_CALL_RESULT' ? result.content : '{}')).toMatchObject({ userEdited: { fields: ['comment'], ran: { comment: 'Add a homework task' } } });
    expect(lastText(done.events)).toContain('You changed comment before approving');
  });

  it("an edit of the teacher to another school's member of staff is refused at the preview over the real hop: no second question, nothing written", async () => {
    const samuel = await as('dos@greenhill.school');
    const asked = await samuel.send('assign Christine to teach Kiswahili in S3 Kisasi');
    const first = questionOf(asked.events);
    expect(first?.confirmation).toMatchObject({ event: 'assign.teaching-assignment', editable: { staffId: expect.any(String) } });
    const { rows: lakeside } = await stack.owner.query(
      `SELECT u.id FROM users u JOIN schools s ON s.id = u.school_id WHERE s.name = 'Lakeside College' AND u.email LIKE 'subject.teacher@%'`,
    );
    const auditsBefore = Number((await stack.owner.query(`SELECT count(*)::int AS n FROM audit_log`)).rows[0]?.n);

    const done = await samuel.answer(asked, 'yes', { staffId: lakeside[0]?.id });

    expect(done.events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    expect(questionOf(done.events)).toBeUndefined();
    const result = done.events.find((event) => event.type === 'TOOL_CALL_RESULT' && event.content.includes('"error"'));
    expect(JSON.parse(result?.type === 'TOOL_CALL_RESULT' ? result.content : '{}')).toMatchObject({ error: expect.any(String) });
    expect(Number((await stack.owner.query(`SELECT count(*)::int AS n FROM audit_log`)).rows[0]?.n)).toBe(auditsBefore);
    expect((await stack.owner.query(`SELECT count(*)::int AS n FROM tool_call_approvals WHERE call_id = $1`, [first?.confirmation?.callId])).rows[0]?.n).toBe(0);
  });

  it('Grace, school administrator: Rover creates a department itself, audited', async () => {
    const grace = await as('admin@greenhill.school');
    const { events } = await grace.send('create a department called Robotics');

    expect(toolCalls(events)).toEqual(['rover:create_department']);
    const created = customOf(events);
    expect(created).toMatchObject({ name: 'department.created' });
    expect(await auditRowsOf(created?.type === 'CUSTOM' ? created.value['auditId'] : null)).toEqual([
      { email: 'admin@greenhill.school', action: 'create', resource_type: 'department', source: 'agent' },
    ]);
  });

  it('deleting a thread after an audited conversation: 204, its runs and events go, the worker deletes its checkpoints, its audit row stays', async () => {
    const grace = await as('admin@greenhill.school');
    const { threadId, runId, events } = await grace.send('create a department called Mechatronics');
    const created = customOf(events);
    const auditId = created?.type === 'CUSTOM' ? created.value['auditId'] : null;
    const checkpointRows = async () =>
      Number((await stack.owner.query(`SELECT count(*)::int AS n FROM agent_checkpoints.checkpoints WHERE thread_id = $1`, [threadId])).rows[0]?.n);
    expect(await checkpointRows()).toBeGreaterThan(0);

    const response = await fetch(`${stack.server().baseUrl}/agent/threads/${threadId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${await stack.login('admin@greenhill.school')}` },
    });
    expect(response.status).toBe(204);

    expect((await stack.owner.query(`SELECT count(*)::int AS n FROM agent_run_events WHERE run_id = $1`, [runId])).rows).toEqual([{ n: 0 }]);
    expect((await stack.owner.query(`SELECT count(*)::int AS n FROM agent_runs WHERE thread_id = $1`, [threadId])).rows).toEqual([{ n: 0 }]);
    // The server's message crosses the runs queue to the worker, which deletes the checkpoints in its own database.
    const deadline = Date.now() + 15_000;
    while ((await checkpointRows()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await checkpointRows()).toBe(0);
    expect(await auditRowsOf(auditId)).toEqual([{ email: 'admin@greenhill.school', action: 'create', resource_type: 'department', source: 'agent' }]);
  });

  it("Lakeside's administrator naming a Greenhill department by id: refused as not found before any question, nothing written", async () => {
    const { rows: target } = await stack.owner.query(
      `SELECT d.id FROM departments d JOIN schools s ON s.id = d.school_id WHERE s.name = 'Greenhill Academy' AND d.name = 'Sciences'`,
    );
    const lakeside = await as('admin@lakeside.school');
    const before = await ledgerCount('delete.department');
    const done = await lakeside.send(`delete department ${target[0]?.id}`);

    expect(toolCalls(done.events)).toEqual(['rover:delete_department']);
    // The preview is refused as the call would be, so the run is never paused on a question about it.
    expect(questionOf(done.events)).toBeUndefined();
    const call = done.events.find((event) => event.type === 'TOOL_CALL_START' && event.toolCallName === 'delete_department');
    const result = done.events.find((event) => event.type === 'TOOL_CALL_RESULT' && call?.type === 'TOOL_CALL_START' && event.toolCallId === call.toolCallId);
    expect(JSON.parse(result?.type === 'TOOL_CALL_RESULT' ? result.content : '{}')).toEqual({ error: expect.any(String), code: 'NOT_FOUND' });
    expect(customOf(done.events)).toBeUndefined();
    expect(await ledgerCount('delete.department')).toBe(before);
    expect((await stack.owner.query(`SELECT 1 FROM departments WHERE id = $1`, [target[0]?.id])).rowCount).toBe(1);
  });
});

describe('resilience', () => {
  it('a resume after the worker is killed continues the same thread from its checkpoint, repeating no completed call', async () => {
    const benjamin = await as('subject.teacher@greenhill.school');
    const marks = await benjamin.send('record marks for S1 Kisasi in Mathematics: Ivan Ochieng 81');
    expect(toolCalls(marks.events).at(-1)).toBe('subject_teacher:record_marks');
    const asked = await benjamin.send('write a lesson plan on quadratic equations for next week', marks.threadId);
    expect(questionOf(asked.events)).toMatchObject({ askedBy: 'subject_teacher', question: expect.stringContaining('Which teaching assignment?') });
    const ledger = { marks: await ledgerCount('record.marks'), plans: await ledgerCount('create.lesson-plan') };

    // Between the question and the answer the worker dies without a chance to clean up, and a new one starts.
    await worker?.stop('SIGKILL');
    worker = await stack.startWorker();

    const done = await benjamin.answer(asked, 'Mathematics in S1 Kisasi');

    expect(toolCalls(done.events)).toEqual(['subject_teacher:create_lesson_plan']);
    expect(done.events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    const { rows: runEvents } = await stack.owner.query(`SELECT payload FROM agent_run_events WHERE run_id = $1 ORDER BY seq`, [asked.runId]);
    const calledInRun = runEvents.flatMap(({ payload }: { payload: RunStreamEvent }) => (payload.type === 'TOOL_CALL_START' ? [payload.toolCallName] : []));
    expect(calledInRun).toEqual(['task', 'list_my_teaching_assignments', 'ask_user', 'create_lesson_plan']);
    expect(await ledgerCount('record.marks')).toBe(ledger.marks);
    expect(await ledgerCount('create.lesson-plan')).toBe(ledger.plans + 1);
    const { rows: plans } = await stack.owner.query(`SELECT count(*)::int AS n FROM lesson_plans WHERE title = 'Quadratic equations'`);
    expect(plans).toEqual([{ n: 1 }]);
  }, 90_000);

  it('a run request whose context is malformed (signed by the server) is dead-lettered and executes no tool: no tool message, no ledger row', async () => {
    const names = rmqNames(stack.env['AGENT_TOOLS_QUEUE'], stack.env['AGENT_RUNS_QUEUE']);
    const connection = await connect(RABBITMQ_URL);
    const channel = await connection.createChannel();
    // With the server stopped, any tool message the worker published would wait in the tools queue to be counted.
    await stack.server().stop();
    try {
      const before = { deadLetters: (await channel.checkQueue(runsDeadLetterQueue(names))).messageCount, ledger: await ledgerCount('create.department') };
      const genuine = (await stack.owner.query(`SELECT id FROM users WHERE email = 'admin@greenhill.school'`)).rows[0]?.id as string;
      const malformed = {
        kind: 'start',
        message: 'create a department called Forged',
        // A context that claims an identity without the server's minting: wrong types and missing fields.
        context: { userId: genuine, schoolId: 'greenhill', roles: 'admin', run: { runId: crypto.randomUUID(), threadId: crypto.randomUUID() } },
      };
      // Signed as the server signs, so it passes the worker's first check and reaches the request's own.
      const body = Buffer.from(JSON.stringify({ pattern: AGENT_RUN_PATTERN, data: malformed }));
      channel.sendToQueue(names.runsQueue, body, signedAsServer(body));

      const deadline = Date.now() + 15_000;
      while ((await channel.checkQueue(runsDeadLetterQueue(names))).messageCount <= before.deadLetters) {
        if (Date.now() > deadline) throw new Error(`the malformed run was not dead-lettered:\n${worker?.output()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(worker?.output()).toContain('Malformed run request, dead-lettered');
      expect((await channel.checkQueue(names.toolsQueue)).messageCount).toBe(0);
      expect((await channel.checkQueue(names.runsQueue)).messageCount).toBe(0);
      expect(await ledgerCount('create.department')).toBe(before.ledger);
      expect((await stack.owner.query(`SELECT 1 FROM departments WHERE name = 'Forged'`)).rowCount).toBe(0);
    } finally {
      await connection.close();
      await stack.startServer();
    }
  });
});

describe('authenticated run steps', () => {
  const unacked = async (queue: string): Promise<number> => {
    const { stdout } = await promisify(execFile)('rabbitmqctl', ['list_queues', '-s', 'name', 'messages_unacknowledged']);
    return Number(stdout.split('\n').map((line) => line.split('\t')).find(([name]) => name === queue)?.[1] ?? Number.NaN);
  };
  const eventCount = async (runId: string) =>
    Number((await stack.owner.query(`SELECT count(*)::int AS n FROM agent_run_events WHERE run_id = $1`, [runId])).rows[0]?.n);

  it("forged steps built on a user's real running run (unsigned, altered, unknown key, replayed by another user) run nothing and write nothing to its history; the genuine step then runs", async () => {
    const names = rmqNames(stack.env['AGENT_TOOLS_QUEUE'], stack.env['AGENT_RUNS_QUEUE']);
    const connection = await connect(RABBITMQ_URL);
    const channel = await connection.createChannel();
    const forgedDepartments = async () => (await stack.owner.query(`SELECT name FROM departments WHERE name LIKE 'Forged%'`)).rows;
    try {
      // With no worker consuming, the victim's genuine step waits on the runs queue: taken off it, it is what a
      // forger with broker access could copy (a real context of a running run, its dispatch token, the server's
      // signature over these exact bytes).
      await worker?.stop();
      const userToken = await stack.login('admin@greenhill.school');
      const { id: threadId } = await api<{ id: string }>('/agent/threads', {}, userToken);
      const { runId } = await api<{ runId: string }>(`/agent/threads/${threadId}/runs`, { message: 'list departments' }, userToken);
      let captured: GetMessage | false = false;
      for (const deadline = Date.now() + 5_000; !captured && Date.now() < deadline; ) {
        captured = await channel.get(names.runsQueue, { noAck: true });
        if (!captured) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      if (!captured) throw new Error('the genuine step never reached the runs queue');
      const genuine = captured.content;
      const genuineProperties: Options.Publish = { persistent: true, userId: captured.properties.userId, headers: captured.properties.headers };
      const packet = JSON.parse(genuine.toString('utf8')) as { pattern: string; data: { message: string } };
      const forged = Buffer.from(JSON.stringify({ ...packet, data: { ...packet.data, message: 'create a department called Forged' } }));
      const eventsBefore = await eventCount(runId);
      const ledgerBefore = await ledgerCount('create.department');
      const deadLettersBefore = (await channel.checkQueue(names.deadLetterQueue)).messageCount;

      // From a broker administrator's connection (here the same broker user as the server, so it may claim its
      // user_id): the forged body with no user_id, with the server's user_id but no signature, signed by a key the
      // worker does not hold, and carrying the genuine signature; then the genuine bytes and signature, replayed without
      // the server's user_id.
      channel.sendToQueue(names.runsQueue, forged, { persistent: true });
      channel.sendToQueue(names.runsQueue, forged, { ...signedAsServer(forged), headers: {} });
      channel.sendToQueue(names.runsQueue, forged, signedAsServer(forged, generateMessageSigningKeyPair('forger').privateKey));
      channel.sendToQueue(names.runsQueue, forged, { ...genuineProperties });
      channel.sendToQueue(names.runsQueue, genuine, { ...genuineProperties, userId: undefined });
      // Last, the genuine step as the server published it.
      channel.sendToQueue(names.runsQueue, genuine, genuineProperties);
      worker = await stack.startWorker();

      const events = (await readStep(threadId, runId, 0, userToken)).map(({ event }) => event);
      const deadline = Date.now() + 15_000;
      while ((await channel.checkQueue(names.runsQueue)).messageCount > 0 || (await unacked(names.runsQueue)) > 0) {
        if (Date.now() > deadline) throw new Error(`the forged steps were not settled:\n${worker.output()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }

      // The genuine step ran, once: its run's history is its own events, and nothing of the forgeries.
      expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
      expect(toolCalls(events)).toEqual(['rover:list_departments']);
      expect(events.filter((event) => event.type === 'RUN_STARTED')).toHaveLength(1);
      expect(await eventCount(runId)).toBe(eventsBefore + events.length);
      expect(await forgedDepartments()).toEqual([]);
      expect(await ledgerCount('create.department')).toBe(ledgerBefore);
      // Nothing dead-lettered: the tools' dead-letter queue is unchanged, and the runs' (which the server consumes, failing
      // the run) failed nothing.
      expect((await channel.checkQueue(names.deadLetterQueue)).messageCount).toBe(deadLettersBefore);
      expect((await stack.owner.query(`SELECT status, error_code FROM agent_runs WHERE id = $1`, [runId])).rows).toEqual([{ status: 'finished', error_code: null }]);
      const refusals = worker.output().split('\n').filter((line) => line.includes('security event: run step refused'));
      expect(refusals).toHaveLength(5);
      expect(refusals.join('\n')).not.toMatch(/Forged|list departments/);
    } finally {
      await connection.close();
      if (!worker || worker.child.exitCode !== null) worker = await stack.startWorker();
    }
  }, 90_000);
});
