// The chat client's renderer, event by event: what a person at `npm run chat` or `npm run demo` reads as a run streams.
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ApiError, createClient, createRenderer, editHint, inlineEdits } from '../agent-client.mjs';

const ids = { runId: 'run-1', threadId: 'thread-1' };
const names = { rover: 'Rover', class_teacher: 'Angie' };
const renderAll = (events, render = createRenderer({ names, indent: '' })) => events.map((event) => render({ ...ids, ...event }));

describe('the chat renderer', () => {
  it('prints a message as its deltas come, under its speaker, with no line break until it ends', () => {
    const out = renderAll([
      { type: 'RUN_STARTED' },
      { type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant', name: 'rover' },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'I found ' },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: '1 department.' },
      { type: 'TEXT_MESSAGE_END', messageId: 'm1' },
      { type: 'RUN_FINISHED', outcome: { type: 'success' } },
    ]);
    expect(out).toEqual(['', '', 'Rover: I found ', '1 department.', '\n', '']);
  });

  it("prints a tool call's name as it starts and its arguments once complete, attributed to the specialist that made it", () => {
    const render = createRenderer({ names, indent: '' });
    const out = renderAll(
      [
        { type: 'SUBAGENT_STARTED', subagentRunId: 'sub-1', name: 'class_teacher', parentToolCallId: 't1' },
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'create_class', subagentRunId: 'sub-1', metadata: { event: 'classes.create' } },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"name":', subagentRunId: 'sub-1' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '"Senior 2"}', subagentRunId: 'sub-1' },
        { type: 'TOOL_CALL_END', toolCallId: 'c1', subagentRunId: 'sub-1' },
        { type: 'TOOL_CALL_RESULT', messageId: 'r1', toolCallId: 'c1', role: 'tool', content: '{"data":{},"auditId":"a-1"}', metadata: { hopMs: 3.25 } },
      ],
      render,
    );
    expect(out).toEqual(['', 'Angie calls create_class', '', '', ' {"name":"Senior 2"}  [RabbitMQ event classes.create]\n', '  <- create_class answered (hop 3.3 ms); auditId a-1\n']);
  });

  it('a line that comes while another is open breaks it first; the interrupted call is said again whole', () => {
    const out = renderAll([
      { type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant', name: 'rover' },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Checking' },
      { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'list_staff' },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: '...' },
      { type: 'TOOL_CALL_END', toolCallId: 'c1' },
      { type: 'TEXT_MESSAGE_END', messageId: 'm1' },
    ]);
    expect(out.join('')).toBe('Rover: Checking\nRover calls list_staff\nRover: ...\nRover calls list_staff {}  [local tool, no hop]\n');
  });

  it('a handover reads whole, once its arguments say to whom; ask_user prints nothing (its question does)', () => {
    const out = renderAll([
      { type: 'TOOL_CALL_START', toolCallId: 't1', toolCallName: 'task' },
      { type: 'TOOL_CALL_ARGS', toolCallId: 't1', delta: '{"subagent_type":"class_teacher","description":"list the class"}' },
      { type: 'TOOL_CALL_END', toolCallId: 't1' },
      { type: 'TOOL_CALL_START', toolCallId: 'a1', toolCallName: 'ask_user' },
      { type: 'TOOL_CALL_ARGS', toolCallId: 'a1', delta: '{"question":"Which class?"}' },
      { type: 'TOOL_CALL_END', toolCallId: 'a1' },
    ]);
    expect(out.join('')).toBe('Rover hands it to Angie (task: "list the class")\n');
  });

  it('interrupts from the outcome: a question, and a confirmation said as one', () => {
    const out = renderAll([
      {
        type: 'RUN_FINISHED',
        outcome: {
          type: 'interrupt',
          interrupts: [
            { id: 'q1', reason: 'question', message: 'Which term?', metadata: { askedBy: 'class_teacher' } },
            { id: 'q2', reason: 'confirmation', message: 'Create the class?', toolCallId: 'c1', metadata: { askedBy: 'rover' } },
          ],
        },
      },
    ]);
    expect(out.join('')).toBe('Angie asks: Which term?\nRover asks you to confirm: Create the class?\n');
  });

  it('a stop lists the writes it kept, from the event metadata', () => {
    const writes = [{ callId: 'k1', event: 'create.department', auditId: 'a-9' }];
    expect(renderAll([{ type: 'RUN_FINISHED', outcome: { type: 'cancelled' }, metadata: { committedWrites: writes } }]).join('')).toBe(
      'stopped; this change was made before the stop and stays:\n  kept: create.department auditId a-9 (call k1)\n',
    );
    expect(renderAll([{ type: 'RUN_FINISHED', outcome: { type: 'cancelled' }, metadata: { committedWrites: [] } }]).join('')).toBe('stopped; nothing had been changed.\n');
  });

  it("a finished run's tokens, as the server counted them, follow it on a line of their own, digits grouped by thousands", () => {
    const usage = { inputTokens: 1234, outputTokens: 56 };
    expect(renderAll([{ type: 'TEXT_MESSAGE_START', messageId: 'm1', name: 'rover' }, { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Done.' }, { type: 'RUN_FINISHED', outcome: { type: 'success' }, metadata: { usage } }]).join('')).toBe(
      'Rover: Done.\n(1 234 tokens in, 56 out)\n',
    );
    expect(renderAll([{ type: 'RUN_FINISHED', outcome: { type: 'cancelled' }, metadata: { committedWrites: [], usage: { inputTokens: 1234567, outputTokens: 0 } } }]).join('')).toBe(
      'stopped; nothing had been changed.\n(1 234 567 tokens in, 0 out)\n',
    );
  });

  it('no usage line when the run used no tokens (the scripted model) or the event names none', () => {
    expect(renderAll([{ type: 'RUN_FINISHED', outcome: { type: 'success' }, metadata: { usage: { inputTokens: 0, outputTokens: 0 } } }]).join('')).toBe('');
    expect(renderAll([{ type: 'RUN_FINISHED', outcome: { type: 'success' } }]).join('')).toBe('');
  });
});

describe('the client', () => {
  it("a refused request carries the server's code and sentence, which the chat prints instead of the raw answer", async () => {
    const body = { statusCode: 429, message: 'Your school has used today\'s allowance.', code: 'SCHOOL_TOKEN_BUDGET_SPENT' };
    const server = createServer((_request, response) => response.writeHead(429, { 'content-type': 'application/json' }).end(JSON.stringify(body)));
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const client = createClient(`http://127.0.0.1:${server.address().port}`);
      const refused = await client.startRun('thread-1', 'List my classes').catch((error) => error);
      expect(refused).toBeInstanceOf(ApiError);
      expect(refused).toMatchObject({ status: 429, code: 'SCHOOL_TOKEN_BUDGET_SPENT', sentence: body.message });
    } finally {
      server.close();
    }
  });
});

describe('approving with edits at the chat prompt', () => {
  const confirmation = { reason: 'confirmation', metadata: { askedBy: 'dos', confirmation: { event: 'approve.lesson-plan', callId: 'c', editable: { comment: 'Good' } } } };
  const plain = { reason: 'confirmation', metadata: { askedBy: 'rover', confirmation: { event: 'delete.department', callId: 'c' } } };

  it('"edit <name> = <value>" is an edit of a confirmation that lists editable arguments; an empty value unsets it', () => {
    expect(inlineEdits('edit comment = Add a homework task', confirmation)).toEqual({ comment: 'Add a homework task' });
    expect(inlineEdits('edit comment =', confirmation)).toEqual({ comment: null });
    expect(inlineEdits('yes', confirmation)).toBeUndefined();
  });

  it('a confirmation without editable arguments takes "edit ..." as an ordinary answer (which declines), and says nothing of edits', () => {
    expect(inlineEdits('edit comment = x', plain)).toBeUndefined();
    expect(editHint(plain)).toBe('');
    expect(editHint(confirmation)).toContain('comment (now "Good")');
  });
});
