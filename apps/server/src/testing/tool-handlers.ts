import type { Type } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { PATTERN_METADATA } from '@nestjs/microservices/constants.js';
import type { AgentToolResult, AnyAgentTool } from '@naalya/agent-tools';
import { runInRmqMessageFrame, type RmqMessageFrame } from '@naalya/rmq';
import { TOOL_HANDLER_CONTROLLERS } from '../app/naalya-ai/tools/naalya-ai-tools.module.js';

export type ToolHandler = { controller: Type<unknown>; method: string };

/** Every @MessagePattern method on the given controllers, by event, read from Nest's own metadata. */
export const handlersByEvent = (controllers: Type<unknown>[] = TOOL_HANDLER_CONTROLLERS): Map<string, ToolHandler[]> => {
  const byEvent = new Map<string, ToolHandler[]>();
  for (const controller of controllers) {
    for (const method of Object.getOwnPropertyNames(controller.prototype)) {
      const patterns = Reflect.getMetadata(PATTERN_METADATA, controller.prototype[method]) as unknown[] | undefined;
      for (const pattern of patterns ?? []) {
        const event = String(pattern);
        byEvent.set(event, [...(byEvent.get(event) ?? []), { controller, method }]);
      }
    }
  }
  return byEvent;
};

/**
 * The frame AckAfterReplyTransport runs a handler in, for a message delivered under `pattern`: what execute() reads
 * the pattern from. Never aborted unless `aborted` says so (the transport aborts it when the call's time limit passes).
 */
export const messageFrame = (pattern: string, aborted: () => boolean = () => false): RmqMessageFrame => ({
  pattern,
  properties: {} as RmqMessageFrame['properties'],
  fields: {} as RmqMessageFrame['fields'],
  content: Buffer.alloc(0),
  logIds: {},
  get signal() {
    return aborted() ? AbortSignal.abort() : new AbortController().signal;
  },
  get aborted() {
    return aborted();
  },
});

/** Runs `work` as the transport runs a handler found under `pattern`: inside that message's frame. */
export const inMessageFrame = <T>(pattern: string, work: () => T): T => runInRmqMessageFrame(messageFrame(pattern), work);

/**
 * Calls one @MessagePattern method in process, as the transport would: in the frame of a message delivered under the
 * method's pattern (or the frame given), the payload whatever the envelope is.
 */
export const invokeHandler = (instance: object, method: string, payload: unknown, frame?: RmqMessageFrame): Promise<AgentToolResult> => {
  const [pattern] = (Reflect.getMetadata(PATTERN_METADATA, Object.getPrototypeOf(instance)[method]) as unknown[] | undefined) ?? [];
  if (pattern === undefined) throw new Error(`${method} is not a @MessagePattern handler`);
  const handlers = instance as Record<string, (payload: unknown) => Promise<AgentToolResult>>;
  return runInRmqMessageFrame(frame ?? messageFrame(String(pattern)), () => handlers[method](payload));
};

/** Calls the tool's handler as the transport would: found under the tool's event, in the frame of a message under it (or the frame given). */
export const invokeTool = async (module: TestingModule, tool: AnyAgentTool, payload: unknown, frame?: RmqMessageFrame): Promise<AgentToolResult> => {
  const [handler] = handlersByEvent().get(tool.event) ?? [];
  if (!handler) throw new Error(`No handler for ${tool.event}`);
  return invokeHandler(module.get(handler.controller) as object, handler.method, payload, frame);
};
