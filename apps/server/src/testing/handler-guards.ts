import type { Type } from '@nestjs/common';
import type { AnyAgentTool } from '@naalya/agent-tools';
import type { PermissionGate } from '../app/core/authorization/app-ability.js';
import { REQUIRE_PERMISSIONS } from '../app/core/authorization/require-permissions.decorator.js';
import type { ToolFixture } from '../app/naalya-ai/tools/fixtures/tool-fixture.js';
import type { ToolPosture } from '../app/naalya-ai/tools/tool-posture.js';
import { handlersByEvent } from './tool-handlers.js';

/** Every registered event has exactly one @MessagePattern handler, and no handler listens for an unregistered one. */
export const handlerCoverageViolations = (tools: readonly AnyAgentTool[], controllers?: Type<unknown>[]): string[] => {
  const byEvent = handlersByEvent(controllers);
  const violations: string[] = [];
  for (const tool of tools) {
    const count = byEvent.get(tool.event)?.length ?? 0;
    if (count !== 1) violations.push(`${tool.event}: ${count} handlers, expected exactly 1`);
  }
  for (const event of byEvent.keys()) {
    if (!tools.some((tool) => tool.event === event)) violations.push(`${event}: a handler for an event no tool declares`);
  }
  return violations;
};

/** A casl tool's gate equals its REST route's @RequirePermissions pair; a relationship tool's route declares none. */
export const gateParityViolations = (fixture: ToolFixture, posture: ToolPosture<unknown>): string[] => {
  const [controller, method] = fixture.rest.handler;
  const routeGate = Reflect.getMetadata(REQUIRE_PERMISSIONS, (controller.prototype as Record<string, object>)[method]) as
    | PermissionGate
    | undefined;
  const name = fixture.tool.name;
  if (posture.auth === 'casl') {
    if (!routeGate) return [`${name}: casl tool, but its REST route has no @RequirePermissions`];
    if (routeGate.action !== posture.gate.action || routeGate.resource !== posture.gate.resource) {
      return [`${name}: tool gate ${posture.gate.action}:${posture.gate.resource} differs from REST ${routeGate.action}:${routeGate.resource}`];
    }
    return [];
  }
  return routeGate ? [`${name}: relationship tool, but its REST route is gated by ${routeGate.action}:${routeGate.resource}`] : [];
};
