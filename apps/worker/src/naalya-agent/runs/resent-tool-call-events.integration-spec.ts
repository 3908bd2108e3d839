import { randomUUID } from 'node:crypto';
import { AIMessage } from '@langchain/core/messages';
import { MemorySaver } from '@langchain/langgraph';
import { fakeModel } from 'langchain';
import type { AgentRunEvent, AgentRuntimeContext } from '@naalya/agent-tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schoolContext } from '../core/tools/tool-context.fixture.js';
import { FakeRunLeases, TEST_DISPATCH_TOKEN } from '../testing/fake-run-leases.fixture.js';
import { FakeRunUsage } from '../testing/fake-run-usage.fixture.js';
import { dropConnectionOnceDelivered, openToolsOnBroker, startLedgerResponder, type ToolsOnBroker } from '../testing/tools-broker.fixture.js';
import { AgentRunExecutor } from './agent-run.executor.js';

const RABBITMQ_URL = process.env['RABBITMQ_TEST_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';

// The user watches a conversation through its run events. A tool call the worker had to send again (its reply lost
// with the connection) is still one call there: one start, one end, one result with the final answer, and the success
// notice once. The re-send lives below the tool node (AgentToolService), so nothing of it may leak into the stream.
describe('a tool call sent again after a lost reply, as the user sees it', () => {
  let tools: ToolsOnBroker;

  beforeAll(async () => {
    tools = await openToolsOnBroker(RABBITMQ_URL, 'test-events');
  });

  afterAll(async () => {
    await tools?.close();
  });

  it('one TOOL_CALL_START, TOOL_CALL_END, CUSTOM and TOOL_CALL_RESULT (the ledger\'s answer) for a write delivered twice', async () => {
    const { service } = tools;
    const answer = { data: { id: 'dept-1' }, scopeContext: 'You can act across the whole school.', auditId: 'audit-1' };
    const server = await startLedgerResponder(tools.channel, tools.queue, answer);
    const { deliveries } = server;
    const dropAfterFirst = dropConnectionOnceDelivered(deliveries, tools.connectionName);

    try {
      const events: AgentRunEvent[] = [];
      const rover = fakeModel()
        .respond(new AIMessage({ content: '', tool_calls: [{ name: 'create_department', args: { name: 'Sciences' }, id: 'tc-create', type: 'tool_call' }] }))
        .respond(new AIMessage('Created.'));
      const executor = new AgentRunExecutor({
        toolCaller: service,
        checkpointer: new MemorySaver(),
        events: {
          publish: async (batch) => {
            events.push(...batch.events);
          },
        },
        leases: new FakeRunLeases(),
        usage: new FakeRunUsage(),
        chatModel: (speaker) => (speaker === 'rover' ? rover : fakeModel().respond(new AIMessage(`unused ${speaker}`))),
        logger: { log: () => undefined, error: () => undefined, warn: () => undefined },
      });
      const context: AgentRuntimeContext = {
        ...schoolContext(),
        run: { runId: `run-${randomUUID()}`, threadId: `thread-${randomUUID()}` },
        dispatchToken: TEST_DISPATCH_TOKEN,
      };

      expect(await executor.execute({ kind: 'start', context, message: 'create a department called Sciences' })).toBe('success');
      await dropAfterFirst;

      // Sent twice, unchanged: the re-send is real, and the stream shows one call.
      expect(deliveries).toHaveLength(2);
      expect(deliveries[1].data).toEqual(deliveries[0].data);
      expect(service.resends).toBe(1);
      const ofCall = events.filter((event) => 'toolCallId' in event && event.toolCallId === 'tc-create').map((event) => event.type);
      expect(ofCall.filter((type) => type !== 'TOOL_CALL_ARGS')).toEqual(['TOOL_CALL_START', 'TOOL_CALL_END', 'TOOL_CALL_RESULT']);
      expect(events.filter((event) => event.type === 'CUSTOM')).toHaveLength(1);
      expect(events.find((event) => event.type === 'CUSTOM')).toMatchObject({ name: 'department.created', value: { auditId: 'audit-1' } });
      expect(events.find((event) => event.type === 'TOOL_CALL_RESULT')).toMatchObject({ toolCallId: 'tc-create', content: JSON.stringify(answer) });
      expect(events.filter((event) => event.type === 'RUN_FINISHED')).toHaveLength(1);
    } finally {
      await server.stop();
    }
  });
});
