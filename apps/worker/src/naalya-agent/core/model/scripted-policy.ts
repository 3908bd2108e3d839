import { randomUUID } from 'node:crypto';
import {
  AGENT_TOOL_ROLES,
  LOCAL_TOOL_NAMES,
  RPC_AGENT_TOOLS,
  TRANSPORT_ERROR_CODES,
  isMutatingEvent,
  isToolErrorCode,
  type AgentToolRole,
  type AnyAgentTool,
} from '@naalya/agent-tools';
import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import type { ScriptedPolicy, ScriptedTool } from './scripted-chat-model.js';

// Every reply says where it comes from, so nobody mistakes the offline model for a real one.
export const SCRIPTED_LABEL = '[scripted model]';

export const ASK_USER = LOCAL_TOOL_NAMES.askUser;
export const TASK = 'task';

type Mentions = Record<string, string>;

/** One plain request the scripted model understands, mapped to the tools that serve it. */
export type ScriptedIntent = {
  id: string;
  /** Matched against the user's request; the first matching intent wins, so the order of the table matters. */
  pattern: RegExp;
  /** What it does, for replies: "list the departments". */
  label: string;
  /** Candidate tool names, first found wins: tools land on the registry over time and the table needs no change. */
  tools: readonly string[];
  /** Names the request mentions, keyed by argument (`name`) or by entity (`department`, resolved to `departmentId`). */
  mentions?: (request: string) => Mentions;
  /** Entries for an array argument that names cannot fill, built from a lookup (attendance registers). */
  fillArray?: Record<string, ArrayFiller>;
  /** Entities Rover looks up by name with its own tools before delegating, when the specialist has no tool to (staff). */
  resolveBeforeDelegating?: readonly string[];
};

type ArrayFiller = {
  lookup: readonly string[];
  lookupArgs: (args: Record<string, unknown>) => Record<string, unknown>;
  build: (items: readonly NamedItem[], mentions: Mentions) => unknown[];
  /** The (id, name) items of the lookup's result, when they are not its plain list (a gradebook's students). */
  items?: (result: string | undefined) => NamedItem[];
};

type NamedItem = { id: string; name: string };

const STOP_WORDS = new Set(['a', 'an', 'the', 'this', 'that', 'my', 'our', 'new', 'one']);

const clean = (value: string | undefined): string | undefined => {
  const text = value?.trim().replace(/^["“'‘]|["”'’]$/g, '').trim();
  return text && !STOP_WORDS.has(text.toLowerCase()) ? text : undefined;
};

const pick = (request: string, pattern: RegExp, key: string): Mentions => {
  const value = clean(request.match(pattern)?.[1]);
  return value ? { [key]: value } : {};
};

const listOf = (text: string | undefined): string[] =>
  (text ?? '')
    .split(/,|\band\b/)
    .map((part) => part.trim().replace(/[.!?]$/, ''))
    .filter(Boolean);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const GUID_MENTION = /\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/i;

/** The Monday of this week or of the next one, as YYYY-MM-DD (UTC). */
const mondayOf = (which: 'this' | 'next', now = new Date()): string => {
  const day = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  day.setUTCDate(day.getUTCDate() - ((day.getUTCDay() + 6) % 7) + (which === 'next' ? 7 : 0));
  return day.toISOString().slice(0, 10);
};

const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

// "Aisha Okello 78, Brian Namuli 64" as (name, score) pairs.
const scoresOf = (text: string | undefined): { name: string; score: number }[] =>
  listOf(text).flatMap((part) => {
    const match = part.match(/^(.+?)\s*[:=-]?\s+(\d{1,3}(?:\.\d+)?)$/);
    return match ? [{ name: match[1].trim(), score: Number(match[2]) }] : [];
  });


/** The requests the scripted model understands, most specific first. Adding a tool elsewhere needs no change here. */
export const SCRIPTED_INTENTS: readonly ScriptedIntent[] = [
  {
    id: 'record_attendance',
    pattern: /\b(record|take|mark|submit|call)\b.*\b(attendance|register)\b/i,
    label: 'record attendance',
    tools: ['record_attendance'],
    mentions: (request) => {
      const absent = request.match(/\b(?:absent|except(?:\s+for)?)\b[:\s]+(.+)$/i)?.[1];
      return {
        ...pick(request, /\b(?:attendance|register)\s+(?:for|in|of)\s+(?:class\s+)?(.+?)(?=[,.;:!?]|\s+(?:today|absent|everyone|with|except)\b|$)/i, 'class'),
        ...(absent ? { absent: absent.replace(/\s+(?:is|are|was|were)\s+absent.*$/i, '') } : {}),
      };
    },
    fillArray: {
      entries: {
        lookup: ['list_class_students', 'list_students'],
        lookupArgs: (args) => ({ classId: args['classId'] }),
        build: (students, mentions) => {
          const absent = listOf(mentions['absent']).map((name) => name.toLowerCase());
          return students.map((student) => ({
            studentId: student.id,
            status: absent.some((name) => student.name.toLowerCase().includes(name)) ? 'absent' : 'present',
          }));
        },
      },
    },
  },
  {
    id: 'record_marks',
    pattern: /\b(record|enter|add|save|submit)\b.*\b(marks|scores|grades)\b/i,
    label: 'record marks',
    tools: ['record_marks'],
    mentions: (request) => ({
      ...pick(request, /\b(?:for|of)\s+(?:class\s+)?(.+?)(?=\s+in\s+|[:,.;!?]|$)/i, 'class'),
      ...pick(request, /\bin\s+(.+?)(?=[:,;.!?]|$)/i, 'subject'),
      ...(request.includes(':') ? { scores: request.slice(request.indexOf(':') + 1) } : {}),
    }),
    fillArray: {
      marks: {
        lookup: ['get_gradebook'],
        lookupArgs: (args) => ({ classId: args['classId'], subjectId: args['subjectId'] }),
        items: (result) => {
          const parsed = parseJson(result);
          const data = isRecord(parsed) && isRecord(parsed['data']) ? parsed['data'] : {};
          const subjects = Array.isArray(data['subjects']) ? data['subjects'].filter(isRecord) : [];
          const students = subjects.flatMap((subject) => (Array.isArray(subject['marks']) ? subject['marks'].filter(isRecord) : []));
          const items = students.flatMap((row): NamedItem[] =>
            typeof row['studentId'] === 'string' && typeof row['fullName'] === 'string' ? [{ id: row['studentId'], name: row['fullName'] }] : [],
          );
          return items.filter((item, index) => items.findIndex((other) => other.id === item.id) === index);
        },
        build: (students, mentions) =>
          scoresOf(mentions['scores']).flatMap(({ name, score }) => {
            const student = findNamed(students, name);
            return student ? [{ studentId: student.id, score }] : [];
          }),
      },
    },
  },
  {
    id: 'create_lesson_plan',
    pattern: /\b(write|create|draft|make|prepare|plan)\b.*\blesson\s*plan\b/i,
    label: 'write a lesson plan',
    tools: ['create_lesson_plan'],
    mentions: (request) => {
      const topic = clean(request.match(/\b(?:on|about|covering)\s+(.+?)(?=\s+for\s+|[.!?]?$)/i)?.[1]);
      const week = /\bthis\s+week\b/i.test(request) ? 'this' : 'next';
      return {
        ...(topic
          ? { title: capitalise(topic), objectives: `By the end of the week learners can explain and use ${topic.toLowerCase()}, and solve problems with it.` }
          : {}),
        weekOf: mondayOf(week),
        ...pick(request, /\bfor\s+(?!next\b|this\b)(?:class\s+)?(.+?)(?=\s+(?:for|next|this)\b|[.!?]?$)/i, 'teachingAssignment'),
      };
    },
  },
  {
    id: 'approve_lesson_plan',
    pattern: /\bapprove\b.*\blesson\s*plans?\b/i,
    label: 'approve a lesson plan',
    tools: ['approve_lesson_plan'],
    mentions: (request) => pick(request, /\blesson\s*plan\s+(?:called\s+|titled\s+|named\s+)?(.+?)[.!?]?$/i, 'lessonPlan'),
  },
  {
    id: 'list_pending_lesson_plans',
    pattern: /\blesson\s*plans?\b.*\b(waiting|pending|review|approval|to approve)\b|\b(pending|waiting|unreviewed)\b.*\blesson\s*plans?\b/i,
    label: 'list the lesson plans waiting for review',
    tools: ['list_pending_lesson_plans'],
  },
  {
    id: 'list_my_lesson_plans',
    pattern: /\bmy\s+lesson\s*plans?\b/i,
    label: 'list your lesson plans',
    tools: ['list_lesson_plans'],
  },
  {
    id: 'list_lesson_plans',
    pattern: /\blesson\s*plans?\b/i,
    label: 'list lesson plans',
    tools: ['list_pending_lesson_plans', 'list_my_lesson_plans', 'list_lesson_plans'],
  },
  {
    id: 'results_summary',
    pattern: /\b(results?\s+summary|summary\s+of\s+(?:the\s+)?results|results|averages?|performance)\b/i,
    label: 'summarise the results',
    tools: ['get_results_summary'],
  },
  {
    id: 'gradebook',
    pattern: /\b(grade\s*book|marks|grades)\b/i,
    label: 'show the gradebook',
    tools: ['get_gradebook'],
    mentions: (request) => ({
      ...pick(request, /\b(?:for|of)\s+(?:class\s+)?(.+?)(?=\s+in\s+|[.!?]|$)/i, 'class'),
      ...pick(request, /\bin\s+(.+?)[.!?]?$/i, 'subject'),
    }),
  },
  {
    id: 'assign_subject_teacher',
    pattern: /\bassign\b.+\bto\s+teach\b/i,
    label: 'assign a subject teacher',
    tools: ['assign_subject_teacher'],
    resolveBeforeDelegating: ['staff'],
    mentions: (request) => {
      const match = request.match(/\bassign\s+(.+?)\s+to\s+teach\s+(.+?)\s+(?:in|to|for)\s+(?:class\s+)?(.+?)(?=\s*\(|[.!?]?$)/i);
      const staffId = request.match(/\bstaff id\s+([0-9a-f-]{36})\b/i)?.[1];
      return {
        ...(clean(match?.[1]) ? { staff: clean(match?.[1]) as string } : {}),
        ...(clean(match?.[2]) ? { subject: clean(match?.[2]) as string } : {}),
        ...(clean(match?.[3]) ? { class: clean(match?.[3]) as string } : {}),
        ...(staffId ? { staffId } : {}),
      };
    },
  },
  {
    id: 'who_teaches',
    pattern: /\bwho\s+teaches\b/i,
    label: 'find out who teaches what',
    tools: ['list_teaching_assignments'],
  },
  {
    id: 'list_my_teaching_assignments',
    pattern: /\bwhat\b.*\b(?:do|am)\s+i\s+teach|\bmy\s+(?:teaching|subjects|timetable)\b|\bwhich\s+(?:subjects|classes)\s+do\s+i\s+teach\b/i,
    label: 'list what you teach',
    tools: ['list_my_teaching_assignments'],
  },
  {
    id: 'list_class_students',
    pattern: /\bwho\s+(?:is|are)\s+in\b|\bstudents\s+(?:in|of)\b|\b(?:list|show)\b.*\b(?:students|learners|pupils)\b/i,
    label: 'list the students of a class',
    tools: ['list_class_students'],
    mentions: (request) => pick(request, /\b(?:in|of)\s+(?:class\s+)?(.+?)[.!?]?$/i, 'class'),
  },
  {
    id: 'list_my_classes',
    pattern: /\b(list|show|what are|which are|see)\b.*\bclass(es)?\b/i,
    label: 'list your classes',
    tools: ['list_my_classes'],
  },
  {
    id: 'delete_department',
    pattern: /\b(delete|remove)\b.*\bdepartment\b/i,
    label: 'delete a department',
    tools: ['delete_department'],
    mentions: (request) => ({
      ...pick(request, /\b(?:delete|remove)\s+(?:the\s+)?(.+?)\s+department\b/i, 'department'),
      ...pick(request, /\bdepartment\s+(?:called|named)\s+(.+?)[.!?]?$/i, 'department'),
      ...pick(request, GUID_MENTION, 'department'),
    }),
  },
  {
    id: 'add_department_member',
    pattern: /\badd\b.+\bto\b.*\bdepartment\b/i,
    label: 'add someone to a department',
    tools: ['add_department_member'],
    mentions: (request) => {
      const match = request.match(/\badd\s+(.+?)\s+to\s+(?:the\s+)?(.+?)\s+department\b/i);
      return {
        ...(clean(match?.[1]) ? { staff: clean(match?.[1]) as string } : {}),
        ...(clean(match?.[2]) ? { department: clean(match?.[2]) as string } : {}),
        ...(/\bas\s+(?:the\s+)?head\b/i.test(request) ? { asHead: 'true' } : {}),
      };
    },
  },
  {
    id: 'create_department',
    pattern: /\b(create|add|make|start|set up)\b.*\bdepartment\b/i,
    label: 'create a department',
    tools: ['create_department'],
    mentions: (request) => pick(request, /\b(?:called|named)\s+(.+?)[.!?]?$/i, 'name'),
  },
  {
    id: 'list_departments',
    pattern: /\bdepartments?\b/i,
    label: 'list the departments',
    tools: ['list_departments'],
  },
  {
    id: 'school_branding',
    pattern: /\b(branding|motto|school colou?rs?|logo)\b/i,
    label: 'show the school branding',
    tools: ['get_school_branding'],
  },
  {
    id: 'list_campuses',
    pattern: /\bcampus(es)?\b/i,
    label: 'list the campuses',
    tools: ['list_campuses'],
  },
  {
    id: 'list_subjects',
    pattern: /\bsubjects\b/i,
    label: 'list the subjects',
    tools: ['list_subjects'],
  },
  {
    id: 'list_staff',
    pattern: /\b(staff|teachers|colleagues|employees|team)\b/i,
    label: 'list the staff',
    tools: ['list_staff'],
  },
  {
    id: LOCAL_TOOL_NAMES.clock,
    pattern: /\b(what time|what day|the date|today's date|what is today)\b/i,
    label: 'tell the date and time',
    tools: [LOCAL_TOOL_NAMES.clock],
  },
  {
    id: 'agent_map',
    pattern: /\b(who can help|what can you do|specialists?|assistants?|agent map|help me with)\b/i,
    label: 'show who can help with what',
    tools: [LOCAL_TOOL_NAMES.agentMap],
  },
];

const HELP_TEXT = `I am the offline scripted model, so I understand only a few plain requests, for example: "show the staff", "list departments", "create a department called Sciences", "delete the Drama department", "list my classes", "who is in S1 Kisasi", "take the register for S1 Kisasi, everyone present except Aisha", "what do I teach", "show the gradebook for S1 Kisasi", "record marks for S1 Kisasi in Mathematics: Aisha Okello 78", "write a lesson plan on fractions for next week", "my lesson plans", "lesson plans waiting for review", "approve the lesson plan Linear equations", "results summary", "assign Grace to teach Physics in S3 Kisasi", "show the school branding", "list campuses", "list subjects". Set AGENT_MODEL to a real model for open conversation.`;

export const SCRIPTED_HELP = `${SCRIPTED_LABEL} ${HELP_TEXT}`;

/** A tool call of the turn, and its result once the tool answered. */
export type Step = { name: string; args: Record<string, unknown>; result?: string };
export type Turn = { request: string; steps: Step[] };

type Action = { call: string; args: Record<string, unknown> } | { say: string };

const textOf = (message: BaseMessage): string =>
  typeof message.content === 'string'
    ? message.content
    : message.content.map((block) => ('text' in block && typeof block.text === 'string' ? block.text : '')).join('');

// The turn so far: the last user request and the tool calls made since, with their results. The policy is a
// function of this alone, so a resumed run decides exactly what the interrupted one would have.
export const readTurn = (messages: readonly BaseMessage[]): Turn | null => {
  const start = messages.findLastIndex((message) => message.type === 'human');
  if (start < 0) return null;
  const steps: Step[] = [];
  const byId = new Map<string, Step>();
  for (const message of messages.slice(start + 1)) {
    if (AIMessage.isInstance(message)) {
      for (const call of message.tool_calls ?? []) {
        const step: Step = { name: call.name, args: call.args };
        steps.push(step);
        if (call.id) byId.set(call.id, step);
      }
    } else if (message.type === 'tool') {
      const step = byId.get((message as BaseMessage & { tool_call_id: string }).tool_call_id);
      if (step) step.result = textOf(message);
    }
  }
  return { request: textOf(messages[start]).trim(), steps };
};

const parseJson = (text: string | undefined): unknown => {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const nameOf = (item: Record<string, unknown>): string | undefined =>
  [item['name'], item['fullName'], item['title']].find((value): value is string => typeof value === 'string') ??
  // A teaching assignment is named by its subject and class: "Mathematics in S1 Kisasi".
  (typeof item['subjectName'] === 'string' && typeof item['className'] === 'string' ? `${item['subjectName']} in ${item['className']}` : undefined);

// Items of a list result as (id, name). For an entity, rows that carry it by reference (a teaching assignment's
// classId and className) count too, deduplicated by id.
const namedItems = (result: string | undefined, entity?: string): NamedItem[] => {
  const parsed = parseJson(result);
  const body = isRecord(parsed) ? parsed['data'] : undefined;
  // A list, or a report whose rows are the list (a results summary: { term, rows }).
  const data = isRecord(body) ? body['rows'] : body;
  if (!Array.isArray(data)) return [];
  const items = data.filter(isRecord).flatMap((item): NamedItem[] => {
    const referenced = entity ? [item[`${entity}Id`], item[`${entity}Name`]] : [];
    if (typeof referenced[0] === 'string' && typeof referenced[1] === 'string') return [{ id: referenced[0], name: referenced[1] }];
    const name = nameOf(item);
    return typeof item['id'] === 'string' && name ? [{ id: item['id'], name }] : [];
  });
  return items.filter((item, index) => items.findIndex((other) => other.id === item.id) === index);
};

const findNamed = (items: readonly NamedItem[], wanted: string): NamedItem | undefined => {
  const target = wanted.trim().toLowerCase();
  return items.find((item) => item.name.toLowerCase() === target) ?? items.find((item) => item.name.toLowerCase().includes(target));
};

const words = (identifier: string): string =>
  identifier
    .replace(/_/g, ' ')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase();

const UNCOUNTABLE = new Set(['staff']);

const plural = (entity: string): string =>
  UNCOUNTABLE.has(entity) ? entity : entity.endsWith('s') ? `${entity}es` : entity.endsWith('y') ? `${entity.slice(0, -1)}ies` : `${entity}s`;

const snake = (identifier: string): string => identifier.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();

// The tools that list an entity, by naming convention: departmentId is looked up with list_departments. A
// teacher's assignments name their classes and subjects, so they serve as a last resort for those.
const lookupCandidates = (entity: string): string[] => {
  const many = plural(snake(entity));
  const candidates = [`list_${many}`, `list_my_${many}`, `list_pending_${many}`, `list_class_${many}`, 'list_my_teaching_assignments'];
  // A director of studies has no class list of their own, but the results summary names every class they oversee.
  return entity === 'class' ? [...candidates, 'get_results_summary'] : candidates;
};

const definitionOf = (name: string): AnyAgentTool | undefined => RPC_AGENT_TOOLS.find((definition: AnyAgentTool) => definition.name === name);

const callId = () => `call_${randomUUID()}`;

const say = (text: string): AIMessage => new AIMessage({ content: text ? `${SCRIPTED_LABEL} ${text}` : '' });

const toMessage = (action: Action): AIMessage =>
  'say' in action ? say(action.say) : new AIMessage({ content: '', tool_calls: [{ id: callId(), name: action.call, args: action.args, type: 'tool_call' }] });

const lastCall = (turn: Turn, name: string, matches: (args: Record<string, unknown>) => boolean = () => true): Step | undefined =>
  turn.steps.findLast((step) => step.name === name && matches(step.args));

const askedQuestion = (question: string) => `${SCRIPTED_LABEL} ${question}`;

/** The user's answer to a question asked this turn, or undefined while it has not been asked or answered. */
const answerTo = (turn: Turn, question: string): string | undefined => {
  const parsed = parseJson(lastCall(turn, ASK_USER, (args) => args['question'] === askedQuestion(question))?.result);
  return isRecord(parsed) && typeof parsed['answer'] === 'string' ? parsed['answer'] : undefined;
};

const ask = (question: string): Action => ({ call: ASK_USER, args: { question: askedQuestion(question) } });

// The specialists the task tool offers this turn, read from its own description of subagent_type.
const availableSpecialists = (tools: readonly ScriptedTool[]): AgentToolRole[] => {
  const task = tools.find((candidate) => candidate.name === TASK);
  const listed = task?.parameters.properties?.['subagent_type']?.description?.match(/Available:\s*(.+)$/)?.[1] ?? '';
  const names = listed.split(',').map((name) => name.trim());
  return AGENT_TOOL_ROLES.filter((role) => names.includes(role));
};

// --- answers from tool results -------------------------------------------------------------------------

const singular = (noun: string): string =>
  UNCOUNTABLE.has(noun)
    ? noun
    : /(ss|us|sh|ch|x)es$/.test(noun)
      ? noun.slice(0, -2)
      : /ies$/.test(noun)
        ? `${noun.slice(0, -3)}y`
        : noun.replace(/s$/, '');

const summariseList = (toolName: string, items: unknown[], scopeContext: string): string => {
  const noun = toolName.replace(/^(list|get|search|count)_(my_|pending_|class_)?/, '').replace(/_/g, ' ');
  const names = items.filter(isRecord).map((item) => nameOf(item) ?? JSON.stringify(item));
  if (names.length === 0) return `I found no ${noun}. ${scopeContext}`;
  if (names.length === 1) return `I found 1 ${singular(noun)}: ${names[0]}. ${scopeContext}`;
  const shown = names.slice(0, 25).join(', ');
  const more = names.length > 25 ? `, and ${names.length - 25} more` : '';
  return `I found ${names.length} ${noun}: ${shown}${more}. ${scopeContext}`;
};

const round1 = (value: number) => Math.round(value * 10) / 10;

const average = (values: readonly number[]) => (values.length === 0 ? 0 : round1(values.reduce((sum, value) => sum + value, 0) / values.length));

// Plain sentences for results that are not a list of named things. Each returns undefined for a shape it does not know.
const SUMMARIES: Record<string, (data: unknown, scopeContext: string) => string | undefined> = {
  get_school_branding: (data, scopeContext) => {
    if (!isRecord(data)) return undefined;
    const motto = typeof data['motto'] === 'string' ? `its motto is "${data['motto']}"` : 'it has no motto';
    const logo = typeof data['logoUrl'] === 'string' ? `its logo is at ${data['logoUrl']}` : 'it has no logo yet';
    return `The school is shown as ${String(data['displayName'])}: ${motto}, its main colour is ${String(data['primaryColor'])} and ${logo}. ${scopeContext}`.trim();
  },
  get_gradebook: (data, scopeContext) => {
    if (!isRecord(data) || !Array.isArray(data['subjects'])) return undefined;
    const term = isRecord(data['term']) ? ` for ${String(data['term']['name'])}` : '';
    const subjects = data['subjects'].filter(isRecord).map((subject) => {
      const marks = Array.isArray(subject['marks']) ? subject['marks'].filter(isRecord) : [];
      const scores = marks.map((row) => row['score']).filter((score): score is number => typeof score === 'number');
      const best = marks.filter((row) => typeof row['score'] === 'number').sort((a, b) => Number(b['score']) - Number(a['score']))[0];
      const top = best ? `, highest ${String(best['fullName'])} with ${String(best['score'])}` : '';
      return `${String(subject['subjectName'])}: ${scores.length} of ${marks.length} students marked, average ${average(scores)}${top}`;
    });
    if (subjects.length === 0) return `The gradebook of ${String(data['className'])}${term} has no subjects of yours. ${scopeContext}`.trim();
    return `The gradebook of ${String(data['className'])}${term}. ${subjects.join('; ')}. ${scopeContext}`.trim();
  },
  get_results_summary: (data, scopeContext) => {
    const list = isRecord(data) ? data['rows'] : data;
    if (!Array.isArray(list)) return undefined;
    const term = isRecord(data) && typeof data['term'] === 'string' ? ` of ${data['term']}` : '';
    const rows = list.filter(isRecord).filter((row) => row['average'] !== null && Number.isFinite(Number(row['average'])));
    if (rows.length === 0) return `There are no results${term} to summarise yet. ${scopeContext}`.trim();
    const classes = new Set(rows.map((row) => String(row['className'])));
    const sorted = [...rows].sort((a, b) => Number(b['average']) - Number(a['average']));
    const describe = (row: Record<string, unknown>) => `${String(row['subjectName'])} in ${String(row['className'])} (${round1(Number(row['average']))})`;
    return `Results${term} for ${classes.size} classes and ${rows.length} class subjects: the overall average is ${average(rows.map((row) => Number(row['average'])))}. Highest: ${describe(sorted[0])}. Lowest: ${describe(sorted[sorted.length - 1])}. ${scopeContext}`.trim();
  },
};

const summariseResult = (step: Step): string => {
  const parsed = parseJson(step.result);
  if (step.name === LOCAL_TOOL_NAMES.clock && isRecord(parsed)) return `It is ${String(parsed['weekday'])}, ${String(parsed['now'])} (UTC).`;
  if (step.name === LOCAL_TOOL_NAMES.agentMap && isRecord(parsed) && Array.isArray(parsed['specialists'])) {
    const specialists = parsed['specialists'].filter(isRecord).map((entry) => `${String(entry['name'])}, the ${String(entry['title'])}`);
    return specialists.length > 0
      ? `Besides me, you can work with ${specialists.join('; ')}. Ask for what you need and I will hand it to the right one.`
      : 'You work with me alone here: no specialist assistant is set up for you.';
  }
  if (!isRecord(parsed)) return `The tool answered: ${String(step.result ?? '')}`;
  if (typeof parsed['error'] === 'string') {
    const error = parsed['error'];
    const code = isToolErrorCode(parsed['code']) ? parsed['code'] : undefined;
    if (code === 'CONFIRMATION_DECLINED') return 'All right, I have not done it. Nothing was changed.';
    // A write whose answer was lost in transport: the worker told the model its outcome is unknown.
    const definition = definitionOf(step.name);
    if (code && TRANSPORT_ERROR_CODES.includes(code) && definition && isMutatingEvent(definition.event)) {
      return `I could not confirm whether that worked: the outcome is unknown, and the change may still complete. Please check before trying again. The platform said: ${error}`;
    }
    return `That did not work. The platform said: ${error}`;
  }
  const scopeContext = typeof parsed['scopeContext'] === 'string' ? parsed['scopeContext'] : '';
  const data = parsed['data'];
  const special = SUMMARIES[step.name]?.(data, scopeContext);
  if (special) return special;
  if (Array.isArray(data)) return summariseList(step.name, data, scopeContext);
  const definition = definitionOf(step.name);
  if (definition && isMutatingEvent(definition.event)) {
    const label = definition.streamOnSuccess?.(step.args)?.label ?? `${words(step.name)} done`;
    // The worker says when the person edited the call before approving it: what ran is theirs, not the model's.
    const edited = isRecord(parsed['userEdited']) && Array.isArray(parsed['userEdited']['fields']) ? parsed['userEdited']['fields'].map(String) : [];
    const byYou = edited.length > 0 ? ` You changed ${edited.join(', ')} before approving, and it ran with your values.` : '';
    return `Done: ${label}.${byYou} ${scopeContext}`.trim();
  }
  const shown = JSON.stringify(data);
  return `Here is what I found: ${shown.length > 600 ? `${shown.slice(0, 600)}...` : shown} ${scopeContext}`.trim();
};

// --- filling arguments ----------------------------------------------------------------------------------

type Fill = { args: Record<string, unknown>; names: Mentions } | { action: Action };

const resolveEntity = (turn: Turn, tools: readonly ScriptedTool[], entity: string, mentioned: string | undefined): { id: string; name: string } | Action => {
  // An id given outright is used as it is: the server decides whether the caller may touch it.
  const given = mentioned?.match(GUID_MENTION)?.[1];
  if (given && UUID.test(given)) return { id: given, name: given };
  const lookup = lookupCandidates(entity).find((name) => tools.some((candidate) => candidate.name === name));
  const noun = words(entity);
  if (!lookup) return { say: `I need to know which ${noun} you mean, and I have no tool here to look it up.` };
  const listed = lastCall(turn, lookup);
  if (!listed) return { call: lookup, args: {} };
  if (listed.result === undefined) return { say: '' };
  const items = namedItems(listed.result, entity);
  const parsed = parseJson(listed.result);
  if (isRecord(parsed) && typeof parsed['error'] === 'string') return { say: summariseResult(listed) };
  const question = `Which ${noun}? You can choose from: ${items.map((item) => item.name).join(', ') || 'none found'}.`;
  const wanted = mentioned ?? answerTo(turn, question);
  if (!wanted) return items.length === 0 ? { say: `I found no ${plural(noun)} you can see.` } : ask(question);
  const found = findNamed(items, wanted);
  if (!found) return { say: `I could not find a ${noun} called "${wanted}". The ones you can see are: ${items.map((item) => item.name).join(', ')}.` };
  return found;
};

const fillArguments = (turn: Turn, tools: readonly ScriptedTool[], tool: ScriptedTool, intent: ScriptedIntent, mentions: Mentions): Fill => {
  const schema = tool.parameters;
  const required = new Set(schema.required ?? []);
  const args: Record<string, unknown> = {};
  const names: Mentions = { ...mentions };
  for (const [key, property] of Object.entries(schema.properties ?? {})) {
    const isRequired = required.has(key);
    if (key === 'campusId') continue; // campus mode pins it; school mode leaves the whole school
    if (mentions[key] !== undefined) {
      args[key] = property.type === 'boolean' ? mentions[key] === 'true' : mentions[key];
      continue;
    }
    if (key.endsWith('Id') && key.length > 2) {
      const entity = key.slice(0, -2);
      if (!isRequired && mentions[entity] === undefined) continue;
      const resolved = resolveEntity(turn, tools, entity, mentions[entity]);
      if ('call' in resolved || 'say' in resolved) return { action: resolved };
      args[key] = resolved.id;
      names[entity] = resolved.name;
      continue;
    }
    if (!isRequired) continue;
    const filler = intent.fillArray?.[key];
    if (filler) {
      const lookup = filler.lookup.find((name) => tools.some((candidate) => candidate.name === name));
      if (!lookup) return { action: { say: `I cannot fill in the ${words(key)} here: I have no tool to look them up.` } };
      const lookupArgs = filler.lookupArgs(args);
      const listed = lastCall(turn, lookup, (stepArgs) => JSON.stringify(stepArgs) === JSON.stringify(lookupArgs));
      if (!listed) return { action: { call: lookup, args: lookupArgs } };
      if (listed.result === undefined) return { action: { say: '' } };
      const built = filler.build(filler.items ? filler.items(listed.result) : namedItems(listed.result), mentions);
      if (built.length === 0) return { action: { say: `I could not match anything you named to fill in the ${words(key)}, so I changed nothing.` } };
      args[key] = built;
      continue;
    }
    if (property.format === 'date' || key === 'date') {
      args[key] = new Date().toISOString().slice(0, 10);
      continue;
    }
    if (property.type === 'array' || property.type === 'object') {
      return { action: { say: `I cannot fill in the ${words(key)} for this request offline. A real model can (set AGENT_MODEL).` } };
    }
    const options = property.enum ? ` Choose one of: ${property.enum.join(', ')}.` : '';
    const question = `What ${words(key)} should I use?${property.description ? ` (${property.description})` : ''}${options}`;
    const answer = answerTo(turn, question);
    if (answer === undefined) return { action: ask(question) };
    args[key] = property.type === 'number' || property.type === 'integer' ? Number(answer) : answer;
  }
  return { args, names };
};

// --- the policy ------------------------------------------------------------------------------------------

const delegateOrRefuse = (turn: Turn, tools: readonly ScriptedTool[], intent: ScriptedIntent): Action => {
  const specialists = availableSpecialists(tools);
  for (const name of intent.tools) {
    const role = definitionOf(name)?.roles?.find((candidate: AgentToolRole) => specialists.includes(candidate));
    if (!role) continue;
    const delegated = lastCall(turn, TASK, (args) => args['subagent_type'] === role);
    // The specialist's own answer reached the user under its name; Rover adds nothing.
    if (delegated?.result !== undefined) return { say: '' };
    // Names the specialist cannot look up itself, resolved by Rover with its own tools and passed on as ids.
    const mentions = intent.mentions?.(turn.request) ?? {};
    const resolvedIds: string[] = [];
    for (const entity of intent.resolveBeforeDelegating ?? []) {
      const mentioned = mentions[entity];
      if (!mentioned || mentions[`${entity}Id`] || !lookupCandidates(entity).some((lookup) => tools.some((tool) => tool.name === lookup))) continue;
      const resolved = resolveEntity(turn, tools, entity, mentioned);
      if ('call' in resolved || 'say' in resolved) return resolved;
      resolvedIds.push(`${words(entity)} id ${resolved.id}`);
    }
    const description = resolvedIds.length > 0 ? `${turn.request} (${resolvedIds.join(', ')})` : turn.request;
    return { call: TASK, args: { description, subagent_type: role } };
  }
  const known = intent.tools.some((name) => definitionOf(name) !== undefined || name === LOCAL_TOOL_NAMES.clock || name === LOCAL_TOOL_NAMES.agentMap);
  return {
    say: known
      ? `I cannot ${intent.label} here: none of the assistants you can work with in this chat has that tool.`
      : `I cannot ${intent.label} yet: this platform has no tool for it.`,
  };
};

const decide = (turn: Turn, tools: readonly ScriptedTool[]): Action => {
  const intent = SCRIPTED_INTENTS.find((candidate) => candidate.pattern.test(turn.request));
  if (!intent) return { say: HELP_TEXT };
  const tool = intent.tools.map((name) => tools.find((candidate) => candidate.name === name)).find((candidate) => candidate !== undefined);
  if (!tool) return delegateOrRefuse(turn, tools, intent);

  const done = lastCall(turn, tool.name);
  if (done?.result !== undefined) return { say: summariseResult(done) };

  const mentions = intent.mentions?.(turn.request) ?? {};
  const filled = fillArguments(turn, tools, tool, intent, mentions);
  if ('action' in filled) return filled.action;

  // A tool that needs confirmation is confirmed by its proxy, which asks the server's question from the records: a question
  // of the model's own would be one more to answer, and proves nothing to the server.
  return { call: tool.name, args: filled.args };
};

/** The scripted model's policy: plain requests to tool calls, delegation, questions and plain answers. */
export const scriptedPolicy: ScriptedPolicy = (messages, tools) => {
  const turn = readTurn(messages);
  if (!turn) return say(HELP_TEXT);
  return toMessage(decide(turn, tools));
};
