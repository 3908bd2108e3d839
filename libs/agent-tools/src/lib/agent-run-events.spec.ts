import { EventSchemas } from '@ag-ui/core/schemas';
import { describe, expect, it } from 'vitest';
import { agentRunEventSchema, fromRunInterrupt, runStreamEventSchema, toRunInterrupt, toRunStreamEvent, type AgentRunEvent } from './agent-run-events.js';
import type { AgentInterrupt } from './agent-run.js';

const ids = { runId: 'run-1', threadId: 'thread-1', timestamp: 1_764_000_000_000 };

const confirmation: AgentInterrupt = {
  interruptId: 'interrupt-1',
  question: 'Create the class "Senior 2"?',
  askedBy: 'class_teacher',
  toolCallId: 'call-2',
  argsHash: 'a'.repeat(64),
  confirmation: { event: 'classes.create', callId: 'thread-1:call-2' },
};

// One of every event type the contract has, as a step would send them.
const everyEvent: AgentRunEvent[] = [
  { ...ids, type: 'RUN_STARTED' },
  { ...ids, type: 'TEXT_MESSAGE_START', messageId: 'm-1', role: 'assistant', name: 'rover' },
  { ...ids, type: 'TEXT_MESSAGE_CONTENT', messageId: 'm-1', delta: 'Asking Angie.' },
  { ...ids, type: 'TEXT_MESSAGE_END', messageId: 'm-1' },
  { ...ids, type: 'TOOL_CALL_START', toolCallId: 'call-1', toolCallName: 'task', parentMessageId: 'm-1' },
  { ...ids, type: 'TOOL_CALL_ARGS', toolCallId: 'call-1', delta: '{"subagent_type":"class_teacher"}' },
  { ...ids, type: 'TOOL_CALL_END', toolCallId: 'call-1' },
  { ...ids, type: 'SUBAGENT_STARTED', subagentRunId: 'sub-1', name: 'class_teacher', parentToolCallId: 'call-1' },
  { ...ids, type: 'TOOL_CALL_START', toolCallId: 'call-2', toolCallName: 'create_class', subagentRunId: 'sub-1', metadata: { event: 'classes.create' } },
  { ...ids, type: 'TOOL_CALL_ARGS', toolCallId: 'call-2', delta: '{"name":"Senior 2"}', subagentRunId: 'sub-1' },
  { ...ids, type: 'TOOL_CALL_END', toolCallId: 'call-2', subagentRunId: 'sub-1' },
  {
    ...ids,
    type: 'TOOL_CALL_RESULT',
    messageId: 'm-2',
    toolCallId: 'call-2',
    role: 'tool',
    content: '{"data":{}}',
    subagentRunId: 'sub-1',
    metadata: { hopMs: 3.5 },
  },
  { ...ids, type: 'CUSTOM', name: 'progress', value: { step: 1 }, subagentRunId: 'sub-1' },
  { ...ids, type: 'SUBAGENT_FINISHED', subagentRunId: 'sub-1', outcome: { type: 'suspended', interruptIds: ['interrupt-1'] } },
  {
    ...ids,
    type: 'MESSAGES_SNAPSHOT',
    messages: [
      { id: 'u-1', role: 'user', content: 'Create Senior 2' },
      {
        id: 'm-1',
        role: 'assistant',
        name: 'rover',
        content: 'Asking Angie.',
        toolCalls: [{ id: 'call-1', type: 'function', function: { name: 'task', arguments: '{}' } }],
      },
      { id: 't-1', role: 'tool', toolCallId: 'call-1', content: 'done' },
    ],
  },
  {
    ...ids,
    type: 'RUN_FINISHED',
    outcome: { type: 'interrupt', interrupts: [{ ...toRunInterrupt(confirmation, 'sub-1'), expiresAt: '2026-12-05T10:00:00.000Z' }] },
  },
  { ...ids, type: 'RUN_FINISHED', outcome: { type: 'success' } },
  { ...ids, type: 'RUN_FINISHED', outcome: { type: 'cancelled' }, metadata: { committedWrites: [{ callId: 'c', event: 'classes.create', auditId: null }] } },
  { ...ids, type: 'RUN_ERROR', message: 'The assistant is unavailable.', code: 'AGENT_UNAVAILABLE' },
];

describe('run events are AG-UI 1.0 events', () => {
  it('covers every event type of the contract', () => {
    const types = new Set(everyEvent.map((event) => event.type));
    expect([...types].sort()).toEqual(agentRunEventSchema.options.map((option) => option.shape.type.value).sort());
  });

  it.each(everyEvent.map((event) => [`${event.type}${'outcome' in event && event.type === 'RUN_FINISHED' ? ` (${event.outcome.type})` : ''}`, event]))(
    'AG-UI accepts our %s, unchanged',
    (_name, event) => {
      expect(agentRunEventSchema.parse(event)).toEqual(event);
      // AG-UI's schemas are loose objects: unchanged means none of our fields has a type AG-UI reads differently.
      expect(EventSchemas.parse(event)).toEqual(event);
    },
  );

  it.each(everyEvent.map((event) => [event.type, event]))('a client receives %s in AG-UI shape: run and thread ids only on RUN_STARTED and RUN_FINISHED', (_name, event) => {
    const streamed = toRunStreamEvent(event);
    expect(runStreamEventSchema.parse(streamed)).toEqual(streamed);
    expect(EventSchemas.parse(streamed)).toEqual(streamed);
    const runScoped = event.type === 'RUN_STARTED' || event.type === 'RUN_FINISHED';
    expect('runId' in streamed && 'threadId' in streamed).toBe(runScoped);
    if (!runScoped) expect(runStreamEventSchema.safeParse({ ...streamed, runId: 'run-1' }).success).toBe(false);
  });

  it('rejects an event with a private field AG-UI does not know (the old speaker attribution)', () => {
    expect(agentRunEventSchema.safeParse({ ...ids, type: 'TEXT_MESSAGE_START', messageId: 'm', role: 'assistant', name: 'rover', speaker: 'rover' }).success).toBe(false);
  });

  it('rejects an empty delta, which AG-UI clients drop', () => {
    expect(agentRunEventSchema.safeParse({ ...ids, type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: '' }).success).toBe(false);
  });

  it('an interrupt goes to AG-UI and back unchanged: reason, question, fingerprint, confirmation, who asked', () => {
    const interrupt = toRunInterrupt(confirmation, 'sub-1');
    expect(interrupt).toMatchObject({ id: 'interrupt-1', reason: 'confirmation', toolCallId: 'call-2', metadata: { argsHash: 'a'.repeat(64) } });
    expect(fromRunInterrupt(interrupt)).toEqual(confirmation);
    const question: AgentInterrupt = { interruptId: 'q', question: 'Which term?', askedBy: 'rover' };
    expect(toRunInterrupt(question).reason).toBe('question');
    expect(fromRunInterrupt(toRunInterrupt(question))).toEqual(question);
  });
});
