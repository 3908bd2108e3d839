import { randomUUID } from 'node:crypto';
import {
  CONFIRMATION_ANSWERS,
  ERROR_SENTENCES,
  RPC_AGENT_TOOLS,
  agentInterruptValueSchema,
  agentRuntimeContextSchema,
  createDepartmentTool,
  deleteDepartmentTool,
  listDepartmentsTool,
  listStaffTool,
  type AgentRuntimeContext,
  type AgentToolResult,
  type AnyAgentTool,
} from '@naalya/agent-tools';
import { Command, MemorySaver } from '@langchain/langgraph';
import { rmqNames } from '@naalya/rmq';
import amqplib from 'amqplib';
import { AIMessage, HumanMessage, ToolMessage, createAgent, fakeModel } from 'langchain';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AgentToolService } from '../src/naalya-agent/core/tools/agent-tool.service.js';
import { toRpcProxy, toolCallIdempotencyKey } from '../src/naalya-agent/core/tools/build-agent-tools.js';
import { CONTEXT_MISSING_ERROR } from '../src/naalya-agent/core/tools/tool-context.js';
import { RABBITMQ_URL, createTestStack, type TestStack } from '@naalya/test-stack';

let stack: TestStack;
let caller: AgentToolService;
const contexts: Record<string, AgentRuntimeContext> = {};
let ids: {
  schoolA: string;
  schoolB: string;
  kisasi: string;
  ntinda: string;
  sciencesA: string;
  languagesA: string;
  campusAdminA: string;
  angelasClass: string;
  mathematics: string;
  benjaminsMathematics: string;
  benjamin: string;
  firstStudent: string;
  secondStudent: string;
};

const TIMEOUT_MS = 4_000;

const newCaller = async (timeoutMs = TIMEOUT_MS) => {
  const service = new AgentToolService({ rabbitmqUrl: RABBITMQ_URL, toolsQueue: stack.toolsQueue, timeoutMs });
  await service.onModuleInit();
  return service;
};

/** What the model triggers: the worker's generic proxy, invoked the way LangGraph's ToolNode invokes it. */
const viaProxy = async (
  tool: AnyAgentTool,
  args: Record<string, unknown>,
  context: unknown,
  options: { caller?: AgentToolService; toolCallId?: string; writer?: (event: unknown) => void } = {},
): Promise<AgentToolResult> => {
  const proxy = toRpcProxy(tool, options.caller ?? caller);
  const output = await proxy.invoke(args, {
    context,
    toolCallId: options.toolCallId ?? `call-${randomUUID()}`,
    writer: options.writer ?? null,
    configurable: { thread_id: 'e2e' },
  } as never);
  return JSON.parse(String(output)) as AgentToolResult;
};

/**
 * A tool that needs confirmation, the way a run calls it: the proxy pauses the run with its question, the user's
 * yes is recorded as the server's resume records it (the resume itself is covered by agent-run.e2e-spec and the
 * server's approvals suite), and the run resumes. The server runs the call only if the approval it finds has the
 * call id, event and argument hash the worker computed, so this also proves both sides hash alike.
 */
const viaConfirmedProxy = async (
  tool: AnyAgentTool,
  args: Record<string, unknown>,
  context: AgentRuntimeContext,
  writer: (event: unknown) => void,
): Promise<AgentToolResult> => {
  const toolCallId = `call-${randomUUID()}`;
  const agent = createAgent({
    model: fakeModel().respondWithTools([{ name: tool.name, args, id: toolCallId }]).respond(new AIMessage('Done.')),
    tools: [toRpcProxy(tool, caller)],
    contextSchema: agentRuntimeContextSchema,
    checkpointer: new MemorySaver(),
  });
  const config = { configurable: { thread_id: toolCallId }, context };
  await agent.invoke({ messages: [new HumanMessage(`Call ${tool.name}`)] }, config);
  const [pending] = (await agent.graph.getState(config)).tasks.flatMap((task) => task.interrupts ?? []);
  const asked = agentInterruptValueSchema.parse(pending?.value);
  if (!asked.confirmation || !asked.argsHash) throw new Error(`${tool.name} did not ask for confirmation`);
  await stack.owner.query(
    `INSERT INTO tool_call_approvals (school_id, thread_id, run_id, interrupt_id, call_id, event, args_hash, user_id, approved, answer, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, true, $9, now() + interval '15 minutes')`,
    [
      context.userDetails.schoolId,
      context.run.threadId,
      context.run.runId,
      pending?.id ?? toolCallId,
      asked.confirmation.callId,
      asked.confirmation.event,
      asked.argsHash,
      context.userDetails.id,
      CONFIRMATION_ANSWERS.approve,
    ],
  );
  const stream = await agent.stream(new Command({ resume: CONFIRMATION_ANSWERS.approve }), { ...config, streamMode: ['custom', 'updates'] });
  for await (const [mode, chunk] of stream) if (mode === 'custom') writer(chunk);
  const { messages } = (await agent.graph.getState(config)).values as { messages: unknown[] };
  const result = messages.find((message): message is ToolMessage => ToolMessage.isInstance(message) && message.tool_call_id === toolCallId);
  return JSON.parse(String(result?.content)) as AgentToolResult;
};

const count = async (sql: string, parameters: unknown[] = []) =>
  Number((await stack.owner.query<{ count: string }>(sql, parameters)).rows[0].count);

beforeAll(async () => {
  stack = await createTestStack({ name: 'e2e' });
  await stack.startServer();
  caller = await newCaller();
  const { rows } = await stack.owner.query<{ key: string; id: string }>(`
    SELECT 'schoolA' AS key, id FROM schools WHERE name = 'Greenhill Academy'
    UNION ALL SELECT 'schoolB', id FROM schools WHERE name = 'Lakeside College'
    UNION ALL SELECT 'kisasi', id FROM campuses WHERE name = 'Kisasi'
    UNION ALL SELECT 'ntinda', id FROM campuses WHERE name = 'Ntinda'
    UNION ALL SELECT 'sciencesA', d.id FROM departments d JOIN schools s ON s.id = d.school_id WHERE s.name = 'Greenhill Academy' AND d.name = 'Sciences'
    UNION ALL SELECT 'languagesA', d.id FROM departments d JOIN schools s ON s.id = d.school_id WHERE s.name = 'Greenhill Academy' AND d.name = 'Languages'
    UNION ALL SELECT 'campusAdminA', id FROM users WHERE email = 'campus.admin@greenhill.school'
    UNION ALL SELECT 'benjamin', id FROM users WHERE email = 'subject.teacher@greenhill.school'
    UNION ALL SELECT 'angelasClass', c.id FROM classes c JOIN users u ON u.id = c.class_teacher_id WHERE u.email = 'class.teacher@greenhill.school'
    UNION ALL SELECT 'mathematics', s.id FROM subjects s JOIN schools sc ON sc.id = s.school_id WHERE sc.name = 'Greenhill Academy' AND s.code = 'MTH'
    UNION ALL SELECT 'benjaminsMathematics', t.id FROM teaching_assignments t JOIN users u ON u.id = t.teacher_id JOIN classes c ON c.id = t.class_id
              JOIN users ct ON ct.id = c.class_teacher_id WHERE u.email = 'subject.teacher@greenhill.school' AND ct.email = 'class.teacher@greenhill.school'
    UNION ALL (SELECT 'firstStudent', st.id FROM students st JOIN classes c ON c.id = st.class_id JOIN users u ON u.id = c.class_teacher_id
               WHERE u.email = 'class.teacher@greenhill.school' ORDER BY st.admission_number LIMIT 1)
    UNION ALL (SELECT 'secondStudent', st.id FROM students st JOIN classes c ON c.id = st.class_id JOIN users u ON u.id = c.class_teacher_id
               WHERE u.email = 'class.teacher@greenhill.school' ORDER BY st.admission_number OFFSET 1 LIMIT 1)`);
  ids = Object.fromEntries(rows.map((row) => [row.key, row.id])) as typeof ids;
  for (const [key, email, body] of [
    ['adminA', 'admin@greenhill.school', {}],
    ['adminAKisasi', 'admin@greenhill.school', { campusId: ids.kisasi }],
    ['teacherA', 'teacher@greenhill.school', {}],
    ['headA', 'head@greenhill.school', {}],
    ['adminB', 'admin@lakeside.school', {}],
    ['classTeacherA', 'class.teacher@greenhill.school', {}],
    ['subjectTeacherA', 'subject.teacher@greenhill.school', {}],
    ['dosA', 'dos@greenhill.school', {}],
  ] as const) {
    contexts[key] = await stack.contextFor(email, body);
  }
}, 120_000);

afterAll(async () => {
  await caller?.onModuleDestroy();
  await stack?.teardown();
});

describe('every tool crosses the hop', () => {
  /** Who calls each tool, with what: the person the tool is for, on rows of their own school. */
  const callFor = async (tool: AnyAgentTool): Promise<{ context: string; args: Record<string, unknown> }> => {
    const marks = [
      { studentId: ids.firstStudent, score: 64 },
      { studentId: ids.secondStudent, score: 77 },
    ];
    const pendingPlan = async () => {
      const { rows } = await stack.owner.query<{ id: string }>(
        `INSERT INTO lesson_plans (school_id, teaching_assignment_id, title, week_of, objectives, created_by)
         VALUES ($1, $2, 'Fractions', '2026-03-16', 'Learners can add and subtract fractions.', $3) RETURNING id`,
        [ids.schoolA, ids.benjaminsMathematics, ids.benjamin],
      );
      return rows[0].id;
    };
    const cases: Record<string, () => Promise<{ context: string; args: Record<string, unknown> }>> = {
      list_staff: async () => ({ context: 'adminA', args: {} }),
      list_departments: async () => ({ context: 'adminA', args: {} }),
      create_department: async () => ({ context: 'adminA', args: { name: `Hop ${randomUUID().slice(0, 6)}`, campusId: ids.kisasi } }),
      delete_department: async () => ({ context: 'adminA', args: { departmentId: ids.languagesA } }),
      add_department_member: async () => ({ context: 'adminA', args: { departmentId: ids.sciencesA, staffId: ids.campusAdminA } }),
      get_school_branding: async () => ({ context: 'teacherA', args: {} }),
      update_school_branding: async () => ({ context: 'adminA', args: { motto: `Hop ${randomUUID().slice(0, 6)}` } }),
      list_campuses: async () => ({ context: 'teacherA', args: {} }),
      list_subjects: async () => ({ context: 'teacherA', args: {} }),
      list_my_classes: async () => ({ context: 'classTeacherA', args: {} }),
      list_class_students: async () => ({ context: 'classTeacherA', args: { classId: ids.angelasClass } }),
      record_attendance: async () => ({
        context: 'classTeacherA',
        args: { classId: ids.angelasClass, date: '2026-03-12', entries: [{ studentId: ids.firstStudent, status: 'late' }] },
      }),
      list_my_teaching_assignments: async () => ({ context: 'subjectTeacherA', args: {} }),
      get_gradebook: async () => ({ context: 'subjectTeacherA', args: { classId: ids.angelasClass } }),
      record_marks: async () => ({ context: 'subjectTeacherA', args: { classId: ids.angelasClass, subjectId: ids.mathematics, marks } }),
      create_lesson_plan: async () => ({
        context: 'subjectTeacherA',
        args: { teachingAssignmentId: ids.benjaminsMathematics, title: 'Ratios', weekOf: '2026-03-30', objectives: 'Learners can simplify ratios.' },
      }),
      list_lesson_plans: async () => ({ context: 'subjectTeacherA', args: {} }),
      get_results_summary: async () => ({ context: 'dosA', args: {} }),
      assign_subject_teacher: async () => ({
        context: 'dosA',
        args: { classId: ids.angelasClass, subjectId: ids.mathematics, staffId: ids.benjamin },
      }),
      list_pending_lesson_plans: async () => ({ context: 'dosA', args: {} }),
      approve_lesson_plan: async () => ({ context: 'dosA', args: { lessonPlanId: await pendingPlan() } }),
      get_tool_call_outcome: async () => {
        // A write the caller made; its outcome is then read back by the call id the proxy derived for it.
        const toolCallId = `outcome-${randomUUID()}`;
        await viaProxy(createDepartmentTool, { name: `Outcome ${randomUUID().slice(0, 6)}`, campusId: ids.kisasi }, contexts['adminA'], { toolCallId });
        return { context: 'adminA', args: { callId: toolCallIdempotencyKey(contexts['adminA'].run.threadId, toolCallId) } };
      },
    };
    if (!cases[tool.name]) throw new Error(`No end-to-end call for ${tool.name}: add one here.`);
    return cases[tool.name]();
  };

  it.each(RPC_AGENT_TOOLS.map((tool) => [tool.name, tool] as const))(
    '%s: toRpcProxy to execute() and back, with scopeContext, and auditId on writes',
    async (_, tool) => {
      const events: unknown[] = [];
      const { context, args } = await callFor(tool);
      const writer = (event: unknown) => events.push(event);
      const result = tool.confirm
        ? await viaConfirmedProxy(tool, args, contexts[context], writer)
        : await viaProxy(tool, args, contexts[context], { writer });
      expect(result).toMatchObject({ data: expect.anything(), scopeContext: expect.any(String) });
      if (tool.streamOnSuccess) {
        const { auditId } = result as { auditId: string };
        expect(await count(`SELECT count(*) FROM audit_log WHERE id = $1 AND source = 'agent'`, [auditId])).toBe(1);
        expect(events).toEqual([expect.objectContaining({ auditId })]);
      } else {
        expect(result).not.toHaveProperty('auditId');
      }
    },
  );
});

describe('security across the hop', () => {
  it('campus mode: identity and campus come from the runtime context, not from args', async () => {
    const name = `Pinned ${randomUUID().slice(0, 6)}`;
    const result = await viaProxy(createDepartmentTool, { name, campusId: ids.ntinda }, contexts['adminAKisasi']);
    expect(result).toMatchObject({ scopeContext: expect.stringContaining('Kisasi') });
    expect(await count(`SELECT count(*) FROM departments WHERE name = $1 AND campus_id = $2`, [name, ids.kisasi])).toBe(1);
  });

  it('the model cannot name a school or a user: such args never leave the worker', async () => {
    const spy = vi.spyOn(caller, 'call');
    await expect(viaProxy(listStaffTool, { schoolId: ids.schoolB }, contexts['teacherA'])).rejects.toThrow(/did not match expected schema/);
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
  });

  it('a cross-school attempt is refused at its preview, before anything is asked, and changes nothing', async () => {
    const before = await stack.owner.query(`SELECT id, name FROM departments WHERE school_id = $1 ORDER BY id`, [ids.schoolA]);
    const audits = await count(`SELECT count(*) FROM audit_log WHERE school_id = $1`, [ids.schoolA]);
    // The proxy outside a graph cannot ask: reaching interrupt() would throw, so this resolves only if nothing is asked.
    const result = await viaProxy(deleteDepartmentTool, { departmentId: ids.sciencesA }, contexts['adminB']);
    expect(result).toEqual({ error: 'Department not found.', code: 'NOT_FOUND' });
    expect((await stack.owner.query(`SELECT id, name FROM departments WHERE school_id = $1 ORDER BY id`, [ids.schoolA])).rows).toEqual(before.rows);
    expect(await count(`SELECT count(*) FROM audit_log WHERE school_id = $1`, [ids.schoolA])).toBe(audits);
  });

  it('missing or malformed context returns CONTEXT_MISSING_ERROR and nothing reaches RabbitMQ', async () => {
    const spy = vi.spyOn(caller, 'call');
    const malformed = { ...contexts['adminA'], userDetails: { ...contexts['adminA'].userDetails, schoolId: 42 } };
    for (const context of [undefined, {}, malformed]) {
      expect(await viaProxy(listStaffTool, {}, context)).toEqual({ error: CONTEXT_MISSING_ERROR, code: 'CONTEXT_MISSING' });
    }
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
  });

  it('invalid args that get past the worker are refused by the server', async () => {
    const result = await caller.call(deleteDepartmentTool.event, {
      identity: { sub: contexts['adminA'].userDetails.id, type: 'staff', schoolId: ids.schoolA, campusId: null },
      scope: { mode: 'school' },
      args: { departmentId: 'not-an-id' },
      meta: { callId: randomUUID(), deadline: Date.now() + TIMEOUT_MS, dispatchToken: contexts['adminA'].dispatchToken },
    });
    expect(result).toEqual({ error: expect.stringMatching(/^Invalid tool arguments: departmentId/), code: 'INVALID_ARGUMENTS' });
  });

  it('a hand-built envelope without the dispatch token the server minted runs nothing in the server process', async () => {
    const name = `Unsigned ${randomUUID().slice(0, 6)}`;
    const unsigned = await caller.call(createDepartmentTool.event, {
      identity: { sub: contexts['adminA'].userDetails.id, type: 'staff', schoolId: ids.schoolA, campusId: null },
      scope: { mode: 'school' },
      args: { name },
      meta: { callId: randomUUID(), deadline: Date.now() + TIMEOUT_MS },
    });
    // Another user's token does not lend its run to this identity either.
    const borrowed = await caller.call(createDepartmentTool.event, {
      identity: { sub: contexts['adminA'].userDetails.id, type: 'staff', schoolId: ids.schoolA, campusId: null },
      scope: { mode: 'school' },
      args: { name },
      meta: { callId: randomUUID(), deadline: Date.now() + TIMEOUT_MS, dispatchToken: contexts['teacherA'].dispatchToken },
    });
    expect(unsigned).toEqual({ error: ERROR_SENTENCES.DISPATCH_REFUSED, code: 'DISPATCH_REFUSED' });
    expect(borrowed).toEqual(unsigned);
    expect(await count(`SELECT count(*) FROM departments WHERE name = $1`, [name])).toBe(0);
  });

  it('a tool that needs confirmation, sent without the user\'s approval, is refused by the server process and nothing changes', async () => {
    const result = await caller.call(deleteDepartmentTool.event, {
      identity: { sub: contexts['adminA'].userDetails.id, type: 'staff', schoolId: ids.schoolA, campusId: null },
      scope: { mode: 'school' },
      args: { departmentId: ids.sciencesA },
      meta: { callId: randomUUID(), deadline: Date.now() + TIMEOUT_MS, dispatchToken: contexts['adminA'].dispatchToken },
    });
    expect(result).toEqual({ error: ERROR_SENTENCES.CONFIRMATION_REQUIRED, code: 'CONFIRMATION_REQUIRED' });
    expect(await count(`SELECT count(*) FROM departments WHERE id = $1`, [ids.sciencesA])).toBe(1);
  });

  it('a CASL denial comes back as the server wrote it', async () => {
    expect(await viaProxy(createDepartmentTool, { name: 'Not Allowed' }, contexts['teacherA'])).toEqual({
      error: 'You do not have permission to create departments.',
      code: 'PERMISSION_DENIED',
    });
  });

  // A NUL used to reach PostgreSQL, which refused it (a masked TOOL_FAILED); the server now refuses it before any SQL.
  // Masking of unexpected errors is tested in the server's tool-executor integration spec.
  it('a NUL character in an argument is refused as invalid arguments, naming the field, and nothing is written', async () => {
    const result = await viaProxy(createDepartmentTool, { name: 'Null \u0000 byte', campusId: ids.kisasi }, contexts['adminA']);
    expect(result).toEqual({ error: expect.stringMatching(/^Invalid tool arguments: args\.name contains a NUL character/), code: 'INVALID_ARGUMENTS' });
    expect(await count(`SELECT count(*) FROM departments WHERE name LIKE 'Null %'`)).toBe(0);
  });

  it("a replayed tool call (same thread and toolCallId) returns the ledger's stored result: one effect, one audit row", async () => {
    const name = `Replayed ${randomUUID().slice(0, 6)}`;
    const first = await viaProxy(createDepartmentTool, { name, campusId: ids.kisasi }, contexts['adminA'], { toolCallId: 'replayed-call' });
    const second = await viaProxy(createDepartmentTool, { name, campusId: ids.kisasi }, contexts['adminA'], { toolCallId: 'replayed-call' });
    expect(second).toEqual(first);
    expect(await count(`SELECT count(*) FROM departments WHERE name = $1`, [name])).toBe(1);
    expect(await count(`SELECT count(*) FROM audit_log WHERE id = $1`, [(first as { auditId: string }).auditId])).toBe(1);
  });
});

describe('faults', () => {
  it('server stopped: the infrastructure sentence within the timeout, and the expired request never runs when it comes back', async () => {
    await stack.server().stop('SIGTERM');
    const name = `While Down ${randomUUID().slice(0, 6)}`;
    const shortCaller = await newCaller(1_500);
    try {
      const started = Date.now();
      const result = await viaProxy(createDepartmentTool, { name, campusId: ids.kisasi }, contexts['adminA'], { caller: shortCaller });
      expect(Date.now() - started).toBeLessThan(1_500 + 1_000);
      expect(result).toEqual({ error: expect.stringMatching(/timed out.*infrastructure issue.*outcome is unknown/s), code: 'TOOL_TIMED_OUT' });
    } finally {
      await shortCaller.onModuleDestroy();
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    await stack.startServer();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await count(`SELECT count(*) FROM departments WHERE name = $1`, [name])).toBe(0);
  });

  it('SIGKILL during a write: the message is redelivered and the write happens exactly once', async () => {
    const longCaller = await newCaller(30_000);
    const name = `Killed ${randomUUID().slice(0, 6)}`;
    const blocker = new (stack.owner.constructor as typeof import('pg').Client)({ connectionString: stack.env['DATABASE_OWNER_URL'] });
    await blocker.connect();
    try {
      // Hold the table so the server's insert waits inside its transaction, then kill the server there.
      await blocker.query('BEGIN; LOCK TABLE departments IN EXCLUSIVE MODE');
      const pending = viaProxy(createDepartmentTool, { name, campusId: ids.kisasi }, contexts['adminA'], { caller: longCaller });
      await waitFor(async () => (await count(`SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'departments'::regclass`)) > 0);
      await stack.server().stop('SIGKILL');
      await blocker.query('ROLLBACK');
      await stack.startServer();
      const result = await pending;
      expect(result).toMatchObject({ data: { name }, auditId: expect.any(String) });
      expect(await count(`SELECT count(*) FROM departments WHERE name = $1`, [name])).toBe(1);
      expect(await count(`SELECT count(*) FROM audit_log WHERE resource_id = (SELECT id::text FROM departments WHERE name = $1)`, [name])).toBe(1);
    } finally {
      await blocker.end();
      await longCaller.onModuleDestroy();
    }
  });

  it('10 x prefetch malformed, unknown-pattern and rejected messages leave the server answering at once, all settled', async () => {
    const names = rmqNames(stack.env['AGENT_TOOLS_QUEUE'], stack.env['AGENT_RUNS_QUEUE']);
    const connection = await amqplib.connect(RABBITMQ_URL);
    const channel = await connection.createChannel();
    try {
      const deadBefore = (await channel.checkQueue(names.deadLetterQueue)).messageCount;
      const replyTo = 'amq.rabbitmq.reply-to';
      await channel.consume(replyTo, () => undefined, { noAck: true });
      const bad = 40;
      for (let index = 0; index < bad; index++) {
        const kind = index % 3;
        const content =
          kind === 0
            ? Buffer.from('not json {')
            : kind === 1
              ? Buffer.from(JSON.stringify({ pattern: 'list.nothing', data: {}, id: `u${index}` }))
              : Buffer.from(JSON.stringify({ pattern: listStaffTool.event, data: null, id: `r${index}` }));
        // As the worker's broker user: a message from anyone else is refused before it is even parsed (next test).
        channel.sendToQueue(names.toolsQueue, content, { replyTo, correlationId: `bad-${index}`, userId: stack.env['WORKER_BROKER_USER'] });
      }
      const started = Date.now();
      const result = await viaProxy(listDepartmentsTool, {}, contexts['teacherA']);
      expect(result).toHaveProperty('data');
      expect(Date.now() - started).toBeLessThan(2_000);
      await waitFor(async () => (await channel.checkQueue(names.toolsQueue)).messageCount === 0);
      // A dead letter reaches its queue a moment after its original leaves the tools queue.
      const expectedDead = Math.ceil((bad * 2) / 3);
      await waitFor(async () => (await channel.checkQueue(names.deadLetterQueue)).messageCount - deadBefore >= expectedDead).catch(() => undefined);
      const dead = (await channel.checkQueue(names.deadLetterQueue)).messageCount - deadBefore;
      // Malformed and unknown patterns are dead-lettered; a null envelope is a normal refusal (answered and acked).
      expect(dead).toBe(expectedDead);
      expect((await channel.checkQueue(names.toolsQueue)).messageCount).toBe(0);
    } finally {
      await channel.close();
      await connection.close();
    }
  });
});

describe('only the worker broker user may call', () => {
  it('a well-formed, signed call published without the worker user_id is dead-lettered unrun by the server process', async () => {
    const names = rmqNames(stack.env['AGENT_TOOLS_QUEUE'], stack.env['AGENT_RUNS_QUEUE']);
    const connection = await amqplib.connect(RABBITMQ_URL);
    const channel = await connection.createChannel();
    try {
      const deadBefore = (await channel.checkQueue(names.deadLetterQueue)).messageCount;
      await channel.consume('amq.rabbitmq.reply-to', () => undefined, { noAck: true });
      const name = `No user id ${randomUUID().slice(0, 6)}`;
      const data = {
        identity: { sub: contexts['adminA'].userDetails.id, type: 'staff', schoolId: ids.schoolA, campusId: null },
        scope: { mode: 'school' },
        args: { name },
        meta: { callId: randomUUID(), deadline: Date.now() + TIMEOUT_MS, dispatchToken: contexts['adminA'].dispatchToken },
      };
      channel.sendToQueue(names.toolsQueue, Buffer.from(JSON.stringify({ pattern: createDepartmentTool.event, data, id: 'no-user' })), {
        replyTo: 'amq.rabbitmq.reply-to',
        correlationId: 'no-user',
      });
      await waitFor(async () => (await channel.checkQueue(names.deadLetterQueue)).messageCount === deadBefore + 1);
      expect((await channel.checkQueue(names.deadLetterQueue)).messageCount).toBe(deadBefore + 1);
      expect(await count(`SELECT count(*) FROM departments WHERE name = $1`, [name])).toBe(0);
    } finally {
      await channel.close();
      await connection.close();
    }
  });
});

const waitFor = async (check: () => Promise<boolean>, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('condition not met in time');
};
