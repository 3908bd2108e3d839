import 'reflect-metadata';
import { performance } from 'node:perf_hooks';
import { NestFactory } from '@nestjs/core';
import { RPC_AGENT_TOOLS, type AnyAgentTool } from '@naalya/agent-tools';
import { AgentToolsModule } from '../naalya-agent/core/tools/agent-tools.module.js';
import { WorkerConfigError, loadWorkerConfig } from '../app/config/worker-config.js';
import { AGENT_TOOL_CALLER, type AgentToolCaller } from '../naalya-agent/core/tools/agent-tool-caller.js';
import { toRpcProxy, toolCallIdempotencyKey } from '../naalya-agent/core/tools/build-agent-tools.js';

// A scripted stand-in for the model until runs are dispatched: reads calls (a runtime context minted by
// the server, a tool name, arguments) as JSON on stdin, makes each through the real proxy and hop, and
// writes one JSON line per call. `npm run demo` drives it.
type PlannedCall = { context: unknown; tool: string; args: Record<string, unknown>; toolCallId: string };

const readStdin = async () => {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  return JSON.parse(input) as PlannedCall[];
};

const main = async () => {
  const config = loadWorkerConfig(process.env);
  const plan = await readStdin();
  const app = await NestFactory.createApplicationContext(AgentToolsModule.forRoot(config), { logger: ['error'], abortOnError: false });
  try {
    const caller = app.get<AgentToolCaller>(AGENT_TOOL_CALLER);
    for (const call of plan) {
      const definition = RPC_AGENT_TOOLS.find((tool: AnyAgentTool) => tool.name === call.tool);
      if (!definition) throw new Error(`Unknown tool ${call.tool}`);
      const events: unknown[] = [];
      const started = performance.now();
      const output = await toRpcProxy(definition, caller).invoke(call.args, {
        context: call.context,
        toolCallId: call.toolCallId,
        writer: (event: unknown) => events.push(event),
        configurable: { thread_id: 'demo' },
      } as never);
      const hopMs = performance.now() - started;
      const threadId = (call.context as { run?: { threadId?: string } }).run?.threadId ?? '';
      process.stdout.write(
        `${JSON.stringify({ event: definition.event, hopMs, result: JSON.parse(String(output)), streamed: events, callId: toolCallIdempotencyKey(threadId, call.toolCallId) })}\n`,
      );
    }
  } finally {
    await app.close();
  }
};

main().catch((error: unknown) => {
  console.error(error instanceof WorkerConfigError ? error.message : `Demo calls failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
