import { AIMessage, ToolMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import { askUserArgsHash } from '../core/tools/local/ask-user.tool.js';
import { RunEventTranslator, toAgentInterrupts } from './run-event.translator.js';

const ids = { runId: 'run-1', threadId: 'thread-1' };
const translator = () => new RunEventTranslator(ids, (toolCallId) => (toolCallId === 'tc-rpc' ? 12.5 : undefined));
const update = (node: string, messages: unknown[]) => [[], 'updates', { [node]: { messages } }];

describe('RunEventTranslator', () => {
  it('attributes an AI message to the specialist named on it, and anything else to Rover', () => {
    const events = translator().translate(update('model_request', [new AIMessage({ content: 'Hello', name: 'dos' })]));
    expect(events[0]).toMatchObject({ type: 'TEXT_MESSAGE_START', speaker: 'dos' });
    const rover = translator().translate(update('model_request', [new AIMessage({ content: 'Hi', name: 'someone' })]));
    expect(rover[0]).toMatchObject({ speaker: 'rover' });
  });

  it('starts a tool call once, and reports its result once with the hop time of RPC calls only', () => {
    const subject = translator();
    const call = new AIMessage({ content: '', tool_calls: [{ id: 'tc-rpc', name: 'list_staff', args: {}, type: 'tool_call' }] });
    expect(subject.translate(update('model_request', [call])).map((event) => event.type)).toEqual(['TOOL_CALL_START', 'TOOL_CALL_END']);
    expect(subject.translate(update('model_request', [call]))).toEqual([]);
    const result = new ToolMessage({ tool_call_id: 'tc-rpc', content: '{"data":[],"scopeContext":"x"}' });
    expect(subject.translate(update('tools', [result]))).toEqual([
      { ...ids, type: 'TOOL_CALL_RESULT', toolCallId: 'tc-rpc', content: '{"data":[],"scopeContext":"x"}', hopMs: 12.5 },
    ]);
    expect(subject.translate(update('tools', [result]))).toEqual([]);
  });

  it('relays only streamOnSuccess-shaped custom chunks', () => {
    expect(translator().translate([[], 'custom', { name: 'department.created', label: 'Created', auditId: 'a1' }])).toEqual([
      { ...ids, type: 'CUSTOM', name: 'department.created', value: { label: 'Created', auditId: 'a1' } },
    ]);
    expect(translator().translate([[], 'custom', 'progress 50%'])).toEqual([]);
    expect(translator().translate([[], 'custom', { step: 1 }])).toEqual([]);
  });

  it('ignores interrupt updates and unknown modes (interrupts are read from the checkpoint)', () => {
    expect(translator().translate([[], 'updates', { __interrupt__: [{ id: 'i1', value: {} }] }])).toEqual([]);
    expect(translator().translate([[], 'values', {}])).toEqual([]);
  });
});

describe('toAgentInterrupts', () => {
  it('maps ask_user interrupts to the contract, and surfaces any other interrupt as a question from Rover', () => {
    const asked = { question: 'Which class?', askedBy: 'class_teacher', toolCallId: 'tc-ask', argsHash: askUserArgsHash({ question: 'Which class?' }) };
    expect(toAgentInterrupts([{ id: 'i1', value: asked }, { id: 'i2', value: { action: 'approve' } }, { value: 'no id' }])).toEqual([
      { interruptId: 'i1', ...asked },
      { interruptId: 'i2', question: '{"action":"approve"}', askedBy: 'rover' },
    ]);
  });
});
