import { fromRunInterrupt, type AgentRunEvent, type AgentRunRequest, type AgentRuntimeContext } from '@naalya/agent-tools';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { MemorySaver } from '@langchain/langgraph';
import { describe, expect, it } from 'vitest';
import { AgentRunExecutor } from '../../runs/agent-run.executor.js';
import { FakeRunLeases, TEST_DISPATCH_TOKEN } from '../../testing/fake-run-leases.fixture.js';
import { FakeToolCaller } from '../../testing/fake-tool-caller.fixture.js';
import { schoolContext } from '../tools/tool-context.fixture.js';
import { ScriptedChatModel } from './scripted-chat-model.js';
import { SCRIPTED_HELP, SCRIPTED_INTENTS, SCRIPTED_LABEL, scriptedPolicy } from './scripted-policy.js';
import { FakeRunUsage } from '../../testing/fake-run-usage.fixture.js';

// The real registry: every school tool has landed, so each intent is tested against the belt it will meet.
const IDS = {
  sciences: '11111111-1111-4111-8111-111111111111',
  drama: '22222222-2222-4222-8222-222222222222',
  p5Blue: '33333333-3333-4333-8333-333333333333',
  tom: '44444444-4444-4444-8444-444444444444',
  amina: '55555555-5555-4555-8555-555555555555',
  fractions: '66666666-6666-4666-8666-666666666666',
  maths: '77777777-7777-4777-8777-777777777777',
  physics: '88888888-8888-4888-8888-888888888888',
  mathsP5: '99999999-9999-4999-8999-999999999999',
  grace: 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
  term: 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
};

const GRADEBOOK = {
  classId: IDS.p5Blue,
  className: 'P5 Blue',
  term: { id: IDS.term, name: 'Term 1 2026' },
  subjects: [
    {
      subjectId: IDS.maths,
      subjectName: 'Maths',
      marks: [
        { studentId: IDS.tom, fullName: 'Tom Okello', score: 72 },
        { studentId: IDS.amina, fullName: 'Amina Nabirye', score: 64 },
      ],
    },
  ],
};

const SCOPE = 'You can see the whole school.';

const callerWithSchool = () =>
  new FakeToolCaller()
    .answer('list.staff', { data: [{ id: 's1', fullName: 'Ada Nakato' }, { id: 's2', fullName: 'Brian Mugisha' }, { id: IDS.grace, fullName: 'Grace Atwine' }], scopeContext: SCOPE })
    .answer('list.departments', { data: [{ id: IDS.sciences, name: 'Sciences' }, { id: IDS.drama, name: 'Drama' }], scopeContext: SCOPE })
    .answer('create.department', { data: { id: 'new-dept', name: 'Sciences' }, scopeContext: SCOPE, auditId: 'audit-1' })
    .answer('delete.department', { data: IDS.drama, scopeContext: SCOPE, auditId: 'audit-2' })
    .answer('list.my-classes', { data: [{ id: IDS.p5Blue, name: 'P5 Blue', studentCount: 2 }], scopeContext: 'These are your own classes.' })
    .answer('list.class-students', { data: [{ id: IDS.tom, fullName: 'Tom Okello' }, { id: IDS.amina, fullName: 'Amina Nabirye' }], scopeContext: SCOPE })
    .answer('record.attendance', { data: { recorded: 2, absent: 1 }, scopeContext: SCOPE, auditId: 'audit-3' })
    .answer('list.teaching-assignments', {
      data: [{ id: IDS.mathsP5, subjectId: IDS.maths, subjectName: 'Maths', classId: IDS.p5Blue, className: 'P5 Blue', campusId: 'c1' }],
      scopeContext: 'These are the subjects and classes you teach.',
    })
    .answer('get.gradebook', { data: GRADEBOOK, scopeContext: 'Your access covers the classes you teach.' })
    .answer('record.marks', { data: { recorded: 2 }, scopeContext: SCOPE, auditId: 'audit-5' })
    .answer('list.subjects', { data: [{ id: IDS.maths, name: 'Maths' }, { id: IDS.physics, name: 'Physics' }], scopeContext: SCOPE })
    .answer('create.lesson-plan', { data: { id: 'plan-new', title: 'Fractions' }, scopeContext: SCOPE, auditId: 'audit-6' })
    .answer('list.lesson-plans', { data: [{ id: IDS.fractions, title: 'Fractions', status: 'pending' }], scopeContext: 'These are your own lesson plans.' })
    .answer('list.pending-lesson-plans', { data: [{ id: IDS.fractions, title: 'Fractions' }], scopeContext: SCOPE })
    .answer('approve.lesson-plan', { data: { id: IDS.fractions, status: 'approved' }, scopeContext: SCOPE, auditId: 'audit-4' })
    .answer('get.results-summary', {
      data: {
        term: 'Term 1 2026',
        rows: [
          { classId: IDS.p5Blue, className: 'P5 Blue', campusName: 'Kisasi', subjectName: 'Maths', average: 61.25, marks: 2 },
          { classId: IDS.p5Blue, className: 'P5 Blue', campusName: 'Kisasi', subjectName: 'Physics', average: 70.5, marks: 2 },
        ],
      },
      scopeContext: SCOPE,
    })
    .answer('assign.teaching-assignment', { data: { id: 'ta-new' }, scopeContext: SCOPE, auditId: 'audit-7' })
    .answer('get.branding', { data: { displayName: 'Greenhill Academy', motto: 'Knowledge is light', primaryColor: '#1b7f3b', logoUrl: null }, scopeContext: SCOPE })
    .answer('list.campuses', { data: [{ id: 'c1', name: 'Kisasi' }, { id: 'c2', name: 'Ntinda' }], scopeContext: SCOPE })
    // The server's previews: questions from the records, as the caller may see them.
    .preview('delete.department', (payload) => ({
      data: { question: `Delete the department "${(payload.args as { departmentId: string }).departmentId === IDS.drama ? 'Drama' : 'Sciences'}" (Kisasi)? It has 2 members, headed by Ada Nakato.` },
      scopeContext: SCOPE,
    }))
    .preview('assign.teaching-assignment', { data: { question: 'Make Grace Atwine the Physics teacher of P5 Blue? Nobody teaches it there now; Grace Atwine starts teaching it.' }, scopeContext: SCOPE })
    .preview('approve.lesson-plan', {
      data: { question: 'Approve "Fractions", Ada Nakato\'s Maths plan for P5 Blue, week of 12 January 2026? It is pending; it becomes approved and Ada Nakato sees it.' },
      scopeContext: SCOPE,
    });

let threadCounter = 0;

const conversation = (caller = callerWithSchool(), capabilities = { isClassTeacher: true, isSubjectTeacher: true, isDirectorOfStudies: true }) => {
  const threadId = `thread-scripted-${++threadCounter}`;
  let runCounter = 0;
  const events: AgentRunEvent[] = [];
  const executor = new AgentRunExecutor({
    toolCaller: caller,
    checkpointer: new MemorySaver(),
    events: { publish: async (batch) => void events.push(...batch.events) },
    leases: new FakeRunLeases(),
    usage: new FakeRunUsage(),
    chatModel: () => new ScriptedChatModel(scriptedPolicy),
    logger: { log: () => undefined, error: () => undefined, warn: () => undefined },
  });
  const context = (): AgentRuntimeContext => ({ ...schoolContext(), capabilities, run: { runId: `run-${++runCounter}`, threadId }, dispatchToken: TEST_DISPATCH_TOKEN });
  const step = async (request: AgentRunRequest) => {
    const before = events.length;
    await executor.execute(request);
    return events.slice(before);
  };
  const pendingOf = (stepEvents: AgentRunEvent[]) => {
    const finish = stepEvents.findLast((event) => event.type === 'RUN_FINISHED');
    // As the server keeps them: the contract's interrupt, back from AG-UI's.
    return finish?.type === 'RUN_FINISHED' && finish.outcome.type === 'interrupt' ? finish.outcome.interrupts.map(fromRunInterrupt) : [];
  };
  return {
    caller,
    events,
    say: (message: string) => step({ kind: 'start', context: context(), message }),
    answer: async (stepEvents: AgentRunEvent[], answer: string) => {
      const pending = pendingOf(stepEvents);
      return step({ kind: 'resume', context: context(), answers: Object.fromEntries(pending.map((interrupt) => [interrupt.interruptId, answer])) });
    },
    pendingOf,
  };
};

// Each message's text: its streamed deltas, joined.
const texts = (events: AgentRunEvent[]) => {
  const byMessage = new Map<string, string>();
  for (const event of events) if (event.type === 'TEXT_MESSAGE_CONTENT') byMessage.set(event.messageId, (byMessage.get(event.messageId) ?? '') + event.delta);
  return [...byMessage.values()];
};
/** A tool call's arguments, from its streamed deltas. */
const argsOf = (events: AgentRunEvent[], toolCallName: string): unknown => {
  const start = events.find((event) => event.type === 'TOOL_CALL_START' && event.toolCallName === toolCallName);
  const id = start?.type === 'TOOL_CALL_START' ? start.toolCallId : undefined;
  return JSON.parse(events.map((event) => (event.type === 'TOOL_CALL_ARGS' && event.toolCallId === id ? event.delta : '')).join('') || 'null');
};
const lastText = (events: AgentRunEvent[]) => texts(events).at(-1) ?? '';
const speakers = (events: AgentRunEvent[]) => events.flatMap((event) => (event.type === 'TEXT_MESSAGE_START' ? [event.name] : []));

describe('the scripted model: one test per intent of its policy table', () => {
  it('"show the staff": list_staff, then the names and the scope sentence', async () => {
    const chat = conversation();
    const events = await chat.say('show the staff');

    expect(chat.caller.calls.map((call) => call.event)).toEqual(['list.staff']);
    expect(lastText(events)).toBe(`${SCRIPTED_LABEL} I found 3 staff: Ada Nakato, Brian Mugisha, Grace Atwine. ${SCOPE}`);
  });

  it('"list departments": list_departments', async () => {
    const chat = conversation();
    const events = await chat.say('list departments');

    expect(chat.caller.calls.map((call) => call.event)).toEqual(['list.departments']);
    expect(lastText(events)).toContain('I found 2 departments: Sciences, Drama.');
  });

  it('"create a department called Sciences": create_department with the name, then the outcome', async () => {
    const chat = conversation();
    const events = await chat.say('create a department called Sciences');

    expect(chat.caller.calls.map((call) => [call.event, call.payload.args])).toEqual([['create.department', { name: 'Sciences' }]]);
    expect(lastText(events)).toBe(`${SCRIPTED_LABEL} Done: Department "Sciences" created. ${SCOPE}`);
    expect(events.find((event) => event.type === 'CUSTOM')).toMatchObject({ name: 'department.created', value: { auditId: 'audit-1' } });
  });

  it('"create a department": asks for the name, then creates it', async () => {
    const chat = conversation();
    const asked = await chat.say('create a department');
    expect(chat.pendingOf(asked)[0]?.question).toMatch(/^\[scripted model\] What name should I use\?/);

    await chat.answer(asked, 'Robotics');

    expect(chat.caller.calls.map((call) => call.payload.args)).toEqual([{ name: 'Robotics' }]);
  });

  it('"delete the Drama department": looks it up, the proxy asks the server\'s question about it, deletes it after yes', async () => {
    const chat = conversation();
    const asked = await chat.say('delete the Drama department');
    expect(chat.caller.previews.map((call) => [call.event, call.payload.args])).toEqual([['delete.department', { departmentId: IDS.drama }]]);
    expect(chat.pendingOf(asked)).toEqual([
      expect.objectContaining({
        question: 'Delete the department "Drama" (Kisasi)? It has 2 members, headed by Ada Nakato.',
        askedBy: 'rover',
        confirmation: expect.objectContaining({ event: 'delete.department' }),
      }),
    ]);
    expect(chat.caller.calls.map((call) => call.event)).toEqual(['list.departments']);

    const done = await chat.answer(asked, 'yes');

    expect(chat.caller.callsTo('delete.department').map((call) => call.payload.args)).toEqual([{ departmentId: IDS.drama }]);
    expect(chat.caller.callsTo('list.departments')).toHaveLength(1);
    expect(lastText(done)).toContain('Done: Department deleted.');
  });

  it('"delete a department" without a name: asks which one (with the choices), then confirms', async () => {
    const chat = conversation();
    const which = await chat.say('delete a department');
    expect(chat.pendingOf(which)[0]?.question).toBe(`${SCRIPTED_LABEL} Which department? You can choose from: Sciences, Drama.`);

    const confirm = await chat.answer(which, 'Sciences');
    expect(chat.pendingOf(confirm)[0]?.question).toContain('Delete the department "Sciences"');
    await chat.answer(confirm, 'yes');

    expect(chat.caller.callsTo('delete.department').map((call) => call.payload.args)).toEqual([{ departmentId: IDS.sciences }]);
  });

  it('a "no" to the confirmation changes nothing', async () => {
    const chat = conversation();
    const asked = await chat.say('delete the Drama department');
    const done = await chat.answer(asked, 'no, keep it');

    expect(chat.caller.callsTo('delete.department')).toEqual([]);
    expect(lastText(done)).toContain('Nothing was changed.');
  });

  it('a department that does not exist is named, with the ones the user can see', async () => {
    const chat = conversation();
    const events = await chat.say('delete the Music department');

    expect(chat.caller.callsTo('delete.department')).toEqual([]);
    expect(lastText(events)).toContain('I could not find a department called "Music". The ones you can see are: Sciences, Drama.');
  });

  it('"list my classes": delegates to the class teacher specialist through task, who answers under her role', async () => {
    const chat = conversation();
    const events = await chat.say('list my classes');

    expect(argsOf(events, 'task')).toEqual({ subagent_type: 'class_teacher', description: 'list my classes' });
    expect(chat.caller.calls.map((call) => call.event)).toEqual(['list.my-classes']);
    expect(speakers(events)).toEqual(['class_teacher']);
    expect(lastText(events)).toContain('I found 1 class: P5 Blue.');
  });

  it('"record attendance for P5 Blue, absent: Tom": the class teacher resolves the class and students and records the register', async () => {
    const chat = conversation();
    await chat.say('record attendance for P5 Blue, absent: Tom');

    expect(chat.caller.calls.map((call) => call.event)).toEqual(['list.my-classes', 'list.class-students', 'record.attendance']);
    expect(chat.caller.callsTo('list.class-students')[0].payload.args).toEqual({ classId: IDS.p5Blue });
    expect(chat.caller.callsTo('record.attendance')[0].payload.args).toEqual({
      classId: IDS.p5Blue,
      date: new Date().toISOString().slice(0, 10),
      entries: [
        { studentId: IDS.tom, status: 'absent' },
        { studentId: IDS.amina, status: 'present' },
      ],
    });
  });

  it('"show the gradebook for P5 Blue": the subject teacher finds the class among their assignments', async () => {
    const chat = conversation();
    const events = await chat.say('show the gradebook for P5 Blue');

    expect(chat.caller.calls.map((call) => call.event)).toEqual(['list.teaching-assignments', 'get.gradebook']);
    expect(chat.caller.callsTo('get.gradebook')[0].payload.args).toEqual({ classId: IDS.p5Blue });
    expect(speakers(events)).toEqual(['subject_teacher']);
    expect(lastText(events)).toBe(
      `${SCRIPTED_LABEL} The gradebook of P5 Blue for Term 1 2026. Maths: 2 of 2 students marked, average 68, highest Tom Okello with 72. Your access covers the classes you teach.`,
    );
  });

  it('"who is in P5 Blue": the class teacher finds the class and lists its students', async () => {
    const chat = conversation();
    const events = await chat.say('who is in P5 Blue?');

    expect(chat.caller.calls.map((call) => [call.event, call.payload.args])).toEqual([
      ['list.my-classes', {}],
      ['list.class-students', { classId: IDS.p5Blue }],
    ]);
    expect(speakers(events)).toEqual(['class_teacher']);
    expect(lastText(events)).toBe(`${SCRIPTED_LABEL} I found 2 students: Tom Okello, Amina Nabirye. ${SCOPE}`);
  });

  it('"who is in P5 Blue" for a director of studies only: Sarah finds the class in the results summary', async () => {
    const chat = conversation(callerWithSchool(), { isClassTeacher: false, isSubjectTeacher: false, isDirectorOfStudies: true });
    const events = await chat.say('who is in P5 Blue?');

    expect(chat.caller.calls.map((call) => call.event)).toEqual(['get.results-summary', 'list.class-students']);
    expect(chat.caller.callsTo('list.class-students')[0].payload.args).toEqual({ classId: IDS.p5Blue });
    expect(speakers(events)).toEqual(['dos']);
  });

  it('"take the register for P5 Blue, everyone present except Amina": students first, then the register', async () => {
    const chat = conversation();
    const events = await chat.say('take the register for P5 Blue, everyone present except Amina');

    expect(chat.caller.calls.map((call) => call.event)).toEqual(['list.my-classes', 'list.class-students', 'record.attendance']);
    expect(chat.caller.callsTo('record.attendance')[0].payload.args).toMatchObject({
      classId: IDS.p5Blue,
      entries: [
        { studentId: IDS.tom, status: 'present' },
        { studentId: IDS.amina, status: 'absent' },
      ],
    });
    expect(events.find((event) => event.type === 'CUSTOM')).toMatchObject({ name: 'attendance.recorded', value: { auditId: 'audit-3' } });
    expect(lastText(events)).toBe(`${SCRIPTED_LABEL} Done: Attendance recorded for 2 students. ${SCOPE}`);
  });

  it('"what do I teach": the subject teacher lists their teaching assignments', async () => {
    const chat = conversation();
    const events = await chat.say('what do I teach?');

    expect(chat.caller.calls.map((call) => call.event)).toEqual(['list.teaching-assignments']);
    expect(speakers(events)).toEqual(['subject_teacher']);
    expect(lastText(events)).toBe(`${SCRIPTED_LABEL} I found 1 teaching assignment: Maths in P5 Blue. These are the subjects and classes you teach.`);
  });

  it('"record marks for P5 Blue in Maths: Tom Okello 81, Amina 77": class and subject resolved, students from the gradebook', async () => {
    const chat = conversation();
    const events = await chat.say('record marks for P5 Blue in Maths: Tom Okello 81, Amina 77');

    expect(chat.caller.calls.map((call) => call.event)).toEqual(['list.teaching-assignments', 'list.subjects', 'get.gradebook', 'record.marks']);
    expect(chat.caller.callsTo('record.marks')[0].payload.args).toEqual({
      classId: IDS.p5Blue,
      subjectId: IDS.maths,
      marks: [
        { studentId: IDS.tom, score: 81 },
        { studentId: IDS.amina, score: 77 },
      ],
    });
    expect(lastText(events)).toBe(`${SCRIPTED_LABEL} Done: 2 marks recorded. ${SCOPE}`);
  });

  it('"record marks" naming nobody in the class changes nothing', async () => {
    const chat = conversation();
    const events = await chat.say('record marks for P5 Blue in Maths: Nobody Here 50');

    expect(chat.caller.callsTo('record.marks')).toEqual([]);
    expect(lastText(events)).toContain('I could not match anything you named to fill in the marks');
  });

  it('"write a lesson plan on fractions for next week": asks which teaching assignment, then submits it for next Monday', async () => {
    const chat = conversation();
    const asked = await chat.say('write a lesson plan on fractions for next week');
    expect(chat.pendingOf(asked)[0]).toMatchObject({ askedBy: 'subject_teacher', question: `${SCRIPTED_LABEL} Which teaching assignment? You can choose from: Maths in P5 Blue.` });

    const done = await chat.answer(asked, 'Maths in P5 Blue');

    const [call] = chat.caller.callsTo('create.lesson-plan');
    expect(call.payload.args).toMatchObject({ teachingAssignmentId: IDS.mathsP5, title: 'Fractions', objectives: expect.stringContaining('fractions') });
    const weekOf = new Date(`${String(call.payload.args['weekOf' as never])}T00:00:00Z`);
    expect(weekOf.getUTCDay()).toBe(1);
    expect(weekOf.getTime()).toBeGreaterThan(Date.now());
    expect(lastText(done)).toBe(`${SCRIPTED_LABEL} Done: Lesson plan "Fractions" submitted. ${SCOPE}`);
  });

  it('"my lesson plans": the subject teacher lists their own plans', async () => {
    const chat = conversation();
    const events = await chat.say('show my lesson plans');

    expect(chat.caller.calls.map((call) => call.event)).toEqual(['list.lesson-plans']);
    expect(lastText(events)).toBe(`${SCRIPTED_LABEL} I found 1 lesson plan: Fractions. These are your own lesson plans.`);
  });

  it('"lesson plans waiting for review": the director of studies lists the pending ones', async () => {
    const chat = conversation();
    const events = await chat.say('which lesson plans are waiting for review?');

    expect(chat.caller.calls.map((call) => call.event)).toEqual(['list.pending-lesson-plans']);
    expect(speakers(events)).toEqual(['dos']);
  });

  it('"results summary": the director of studies summarises averages in plain sentences', async () => {
    const chat = conversation();
    const events = await chat.say('results summary please');

    expect(chat.caller.calls.map((call) => call.event)).toEqual(['get.results-summary']);
    expect(lastText(events)).toBe(
      `${SCRIPTED_LABEL} Results of Term 1 2026 for 1 classes and 2 class subjects: the overall average is 65.9. Highest: Physics in P5 Blue (70.5). Lowest: Maths in P5 Blue (61.3). ${SCOPE}`,
    );
  });

  it('"assign Grace to teach Physics in P5 Blue": Rover finds the teacher, Sarah resolves class and subject, confirms, assigns', async () => {
    const chat = conversation();
    const asked = await chat.say('assign Grace to teach Physics in P5 Blue');
    expect(chat.caller.calls.map((call) => call.event)).toEqual(['list.staff', 'get.results-summary', 'list.subjects']);
    expect(argsOf(asked, 'task')).toEqual({ subagent_type: 'dos', description: `assign Grace to teach Physics in P5 Blue (staff id ${IDS.grace})` });
    expect(chat.pendingOf(asked)[0]).toMatchObject({
      askedBy: 'dos',
      question: 'Make Grace Atwine the Physics teacher of P5 Blue? Nobody teaches it there now; Grace Atwine starts teaching it.',
    });

    await chat.answer(asked, 'yes');

    expect(chat.caller.callsTo('assign.teaching-assignment').map((call) => call.payload.args)).toEqual([
      { classId: IDS.p5Blue, subjectId: IDS.physics, staffId: IDS.grace },
    ]);
  });

  it('"show the school branding": Rover reads it and describes it', async () => {
    const chat = conversation();
    const events = await chat.say('show the school branding');

    expect(lastText(events)).toBe(
      `${SCRIPTED_LABEL} The school is shown as Greenhill Academy: its motto is "Knowledge is light", its main colour is #1b7f3b and it has no logo yet. ${SCOPE}`,
    );
  });

  it('"list campuses" and "list subjects": Rover lists them', async () => {
    const chat = conversation();
    const campuses = await chat.say('list campuses');
    const subjects = await chat.say('list subjects');

    expect(chat.caller.calls.map((call) => call.event)).toEqual(['list.campuses', 'list.subjects']);
    expect(lastText(campuses)).toContain('I found 2 campuses: Kisasi, Ntinda.');
    expect(lastText(subjects)).toContain('I found 2 subjects: Maths, Physics.');
  });

  it('a department named by id is used as given, with no lookup: the server decides', async () => {
    const chat = conversation();
    const asked = await chat.say(`delete department ${IDS.drama}`);
    await chat.answer(asked, 'yes');

    expect(chat.caller.calls.map((call) => [call.event, call.payload.args])).toEqual([['delete.department', { departmentId: IDS.drama }]]);
  });

  it('"approve lesson plan Fractions": the director of studies finds it, asks to confirm, approves it', async () => {
    const chat = conversation();
    const asked = await chat.say('approve the lesson plan Fractions');
    expect(chat.pendingOf(asked)[0]).toMatchObject({ askedBy: 'dos', question: expect.stringContaining('Approve "Fractions", Ada Nakato\'s Maths plan for P5 Blue') });

    expect(chat.caller.calls.map((call) => call.event)).toEqual(['list.pending-lesson-plans']);
    await chat.answer(asked, 'yes');

    expect(chat.caller.callsTo('approve.lesson-plan').map((call) => call.payload.args)).toEqual([{ lessonPlanId: IDS.fractions }]);
  });

  it('"who teaches Biology": says plainly that no tool serves it yet', async () => {
    const chat = conversation();
    const events = await chat.say('who teaches Biology?');

    expect(chat.caller.calls).toEqual([]);
    expect(lastText(events)).toBe(`${SCRIPTED_LABEL} I cannot find out who teaches what yet: this platform has no tool for it.`);
  });

  it('a specialist tool the user has no specialist for is refused plainly, without a call', async () => {
    const chat = conversation(callerWithSchool(), { isClassTeacher: false, isSubjectTeacher: false, isDirectorOfStudies: false });
    const events = await chat.say('list my classes');

    expect(chat.caller.calls).toEqual([]);
    expect(lastText(events)).toContain('none of the assistants you can work with in this chat has that tool');
  });

  it('"what day is it": the clock', async () => {
    const chat = conversation();
    const events = await chat.say('what day is it?');

    expect(lastText(events)).toMatch(/^\[scripted model\] It is \w+day, \d{4}-/);
  });

  it('"who can help me": the agent map names the specialists', async () => {
    const chat = conversation();
    const events = await chat.say('who can help me?');

    expect(lastText(events)).toContain('Angie, the class teacher assistant; Bean, the subject teacher assistant; Sarah, the director of studies assistant');
  });

  it('relays an { error } in plain words', async () => {
    const chat = conversation(callerWithSchool().answer('create.department', { error: 'Forbidden resource', code: 'PERMISSION_DENIED' }));
    const events = await chat.say('create a department called Sciences');

    expect(lastText(events)).toBe(`${SCRIPTED_LABEL} That did not work. The platform said: Forbidden resource`);
  });

  it('says "outcome unknown" plainly when a write timed out', async () => {
    const unknown = 'The "create.department" tool timed out. The outcome is unknown: the change may still complete.';
    const chat = conversation(callerWithSchool().answer('create.department', { error: unknown, code: 'TOOL_TIMED_OUT' }));
    const events = await chat.say('create a department called Sciences');

    expect(lastText(events)).toMatch(/^\[scripted model\] I could not confirm whether that worked: the outcome is unknown/);
  });

  it('answers anything else with what it understands', async () => {
    const chat = conversation();
    const events = await chat.say('tell me a joke');

    expect(lastText(events)).toBe(SCRIPTED_HELP);
  });

  it('labels every reply and every question, and never reuses a tool call id', async () => {
    const chat = conversation();
    for (const message of ['show the staff', 'list departments', 'list my classes', 'delete the Drama department']) await chat.say(message);

    for (const text of texts(chat.events)) expect(text.startsWith(SCRIPTED_LABEL)).toBe(true);
    const ids = chat.events.flatMap((event) => (event.type === 'TOOL_CALL_START' ? [event.toolCallId] : []));
    expect(ids.length).toBeGreaterThan(5);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^call_[0-9a-f-]{36}$/);
  });
});

describe('scriptedPolicy as a function', () => {
  it('is deterministic but for ids: the same conversation gives the same call', () => {
    const tools = [{ name: 'list_staff', description: '', parameters: { type: 'object', properties: {} } }];
    const first = scriptedPolicy([new HumanMessage('show the staff')], tools);
    const second = scriptedPolicy([new HumanMessage('show the staff')], tools);

    expect(first.tool_calls?.map(({ name, args }) => ({ name, args }))).toEqual(second.tool_calls?.map(({ name, args }) => ({ name, args })));
    expect(first.tool_calls?.[0]?.id).not.toBe(second.tool_calls?.[0]?.id);
  });

  it('answers from the results after the last user message only', () => {
    const tools = [{ name: 'list_staff', description: '', parameters: { type: 'object', properties: {} } }];
    const reply = scriptedPolicy(
      [
        new HumanMessage('show the staff'),
        new AIMessage({ content: '', tool_calls: [{ id: 'c1', name: 'list_staff', args: {}, type: 'tool_call' }] }),
        new ToolMessage({ tool_call_id: 'c1', content: JSON.stringify({ data: [{ fullName: 'Ada' }], scopeContext: SCOPE }) }),
        new HumanMessage('show the staff'),
      ],
      tools,
    );

    expect(reply.tool_calls?.[0]?.name).toBe('list_staff');
  });

  it('has an intent for every example in its help text', () => {
    for (const example of SCRIPTED_HELP.matchAll(/"([^"]+)"/g)) {
      expect(SCRIPTED_INTENTS.some((intent) => intent.pattern.test(example[1])), example[1]).toBe(true);
    }
  });
});
