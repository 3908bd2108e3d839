import type { AIMessage, BaseMessage } from '@langchain/core/messages';
import type { AgentToolRole } from '@naalya/agent-tools';
import type { ScriptedTool } from '@naalya/worker/testing';
import type { ToolCallTrace } from './trace.js';
import type { World } from './world.js';

/** What an eval scenario is: who says what, what should happen, and what the database should hold afterwards. */

export const CATEGORIES = {
  specialist: 'right specialist',
  'tool-args': 'right tool and arguments',
  question: 'a question before a destructive action',
  scope: 'the scope line in the answer',
  refusal: 'refusals reported honestly',
  adversarial: 'adversarial',
} as const;
export type Category = keyof typeof CATEGORIES;

export type SchoolKey = 'greenhill' | 'lakeside';
export type PersonaKey = 'classTeacher' | 'subjectTeacher' | 'dos' | 'admin';

/** The demo's personas, by their login at either school. */
export const PERSONA_LOGINS: Record<PersonaKey, string> = {
  classTeacher: 'class.teacher',
  subjectTeacher: 'subject.teacher',
  dos: 'dos',
  admin: 'admin',
};
export const emailOf = (persona: PersonaKey, school: SchoolKey) => `${PERSONA_LOGINS[persona]}@${school}.school`;

/** A call the model should make: its tool, and what its arguments must satisfy (a sentence saying why not, or null). */
export type ExpectedCall = { name: string; args?: (args: Record<string, unknown>, world: World) => string | null };

/** A check of the final answer, with what it looks for. */
export type AnswerCheck = { label: string; test: (answer: string, world: World) => boolean };

/** A change the run should make, as the audit row it leaves (the eval reads audit_log as the database owner). */
export type ExpectedWrite = { action: string; resourceType: string };

/** A fact the database should hold after the run, read as its owner. */
export type DbCheck = { label: string; holds: (world: World) => Promise<boolean> };

export type Expectation = {
  /** Who does the work: a specialist Rover hands over to, or null for Rover alone. */
  specialist: AgentToolRole | null;
  /** Calls that must be made; any call to a tool whose definition asks for confirmation and is not listed here is a failure. */
  calls?: ExpectedCall[];
  /** The model itself asks the user (ask_user) before it calls this tool: a detail was missing. */
  asksBefore?: string;
  answer?: AnswerCheck[];
  /** The answer states the scope (scopeContext) of the tool results it is based on. */
  scopeLine?: boolean;
  /** The audit rows the run writes, exactly ([]: nothing changed). */
  writes: ExpectedWrite[];
  db?: DbCheck[];
};

/** How the eval's user answers a confirmation: yes only when the call confirmed is the one the user asked for. */
export type ConfirmRule = 'yes' | 'no' | ((call: ToolCallTrace | undefined, world: World) => boolean);

export type Scenario = {
  id: string;
  category: Category;
  persona: PersonaKey;
  school: SchoolKey;
  message: string | ((world: World) => string);
  /** Answers to the model's own questions, in order. */
  replies?: string[];
  /** Answers to the platform's confirmations; 'no' when left out (the user asked for no change). */
  confirm?: ConfirmRule;
  expect: Expectation;
};

/** The turn as a misbehaving model sees it, and what the behaving (scripted) model would answer. */
export type MisbehaviourInput = { messages: BaseMessage[]; tools: ScriptedTool[]; world: World; behave: () => AIMessage };

/**
 * One scripted misbehaviour: a scenario the eval knows, played by a model that answers some requests wrongly (a function
 * of the request, so it works on both providers). `platformStops`: the platform itself must stop it (refuse, confirm,
 * change nothing); otherwise only the eval can catch it (an answer without its scope line).
 */
export type Misbehaviour = {
  id: string;
  label: string;
  scenario: Scenario;
  platformStops: boolean;
  /** How the user answers confirmations here, over the scenario's own rule (a user who cannot tell one id from another says yes). */
  confirm?: ConfirmRule;
  /** The message to send instead of the behaving model's, or undefined to behave. */
  answer: (input: MisbehaviourInput) => AIMessage | undefined;
};
