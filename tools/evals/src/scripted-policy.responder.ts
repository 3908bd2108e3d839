import type { Responder } from '@naalya/model-simulator';
import { scriptedPolicy, type ScriptedPolicy } from '@naalya/worker/testing';
import { toLangChain, toTurn } from './wire-messages.js';

/** A policy written against LangChain (the worker's scripted model) as a simulator responder, on either provider's wire. */
export const policyResponder =
  (policy: ScriptedPolicy): Responder =>
  (request) => {
    const { messages, tools } = toLangChain(request);
    return toTurn(policy(messages, tools));
  };

/**
 * The worker's scripted model over the wire: `npm run simulator:demo` serves it, so the demo's five conversations run
 * through the real provider packages (`--responder` loads this module's default export).
 */
export default policyResponder(scriptedPolicy);
