import type { Type } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { PATTERN_METADATA } from '@nestjs/microservices/constants.js';
import type { AgentToolResult, AnyAgentTool } from '@naalya/agent-tools';
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

/** Calls the tool's handler in process, as the transport would: the payload is whatever the envelope is. */
export const invokeTool = async (module: TestingModule, tool: AnyAgentTool, payload: unknown): Promise<AgentToolResult> => {
  const [handler] = handlersByEvent().get(tool.event) ?? [];
  if (!handler) throw new Error(`No handler for ${tool.event}`);
  const instance = module.get(handler.controller) as Record<string, (payload: unknown) => Promise<AgentToolResult>>;
  return instance[handler.method](payload);
};
