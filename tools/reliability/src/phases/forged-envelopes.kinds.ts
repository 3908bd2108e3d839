import { randomUUID } from 'node:crypto';
import type { AgentCallScope, AgentIdentity, AgentToolRequest, AgentToolResult, AnyAgentTool, ToolErrorCode } from '@naalya/agent-tools';
import fc from 'fast-check';
import { withOwnKey } from './tool-args.js';

/**
 * The forged envelopes of phase 1, as pure generators: what each kind of forgery sends and which refusals it may
 * get. Nothing here talks to a broker; forged-envelopes.reliability-spec.ts publishes what these build.
 */

/** How the message left the forger: as the worker's broker user, as another broker user, or claiming the worker's id. */
export type Publisher =
  | { as: 'worker' }
  | { as: 'intruder'; userId: 'own' | 'none' }
  /** RabbitMQ validates user_id against the connection's user: this one never reaches a queue. */
  | { as: 'intruder'; userId: 'worker' };

/** How the server must settle it: answered with a refusal (and acked), dead-lettered, or never delivered at all. */
export type Settlement = 'answered' | 'dead-lettered' | 'broker-refused';

export type ForgedMessage = {
  kind: ForgedKind;
  /** What was forged, short enough for a failure report. */
  variant: string;
  body: Buffer;
  publisher: Publisher;
  /** The envelope's call id, when it has one: the reconciler looks for its ledger and audit rows. */
  callId?: string;
  /** Text a successful run would have written (a department name, a motto): must be found nowhere afterwards. */
  marker?: string;
  expect: { settlement: Settlement; refusals: readonly Refusal[] };
};

/**
 * An answered refusal's code, or what the transport (libs/rmq, which answers with a sentence and no code) says when it
 * refuses a message before any handler: its exact sentence, or a prefix for sentences that name the message.
 */
export type Refusal = { code: ToolErrorCode } | string | { startsWith: string };

export const matchesRefusal = (reply: { text?: string; result?: AgentToolResult }, refusals: readonly Refusal[]): boolean =>
  refusals.some((refusal) => {
    if (typeof refusal === 'object' && 'code' in refusal) return reply.result !== undefined && 'error' in reply.result && reply.result.code === refusal.code;
    if (reply.text === undefined) return false;
    return typeof refusal === 'string' ? reply.text === refusal : reply.text.startsWith(refusal.startsWith);
  });

/** The transport's refusal of a publisher, passed in so the table below reads as a table. */
export type RefusalTexts = { publisherRefused: string };

const code = (value: ToolErrorCode): Refusal => ({ code: value });

export const FORGED_KINDS = [
  'other-publisher',
  'missing-token',
  'tampered-token',
  'expired-token',
  'foreign-token',
  'identity-swapped',
  'replayed-to-another-tool',
  'oversized',
  'non-json',
  'wrong-types',
  'prototype-pollution',
  'past-deadline',
  'unknown-pattern',
] as const;
export type ForgedKind = (typeof FORGED_KINDS)[number];

/** The expected-refusal table: every kind, how it must be settled and what it may be told. */
export const expectedRefusals = (texts: RefusalTexts): Record<ForgedKind, { settlement: Settlement; refusals: readonly Refusal[] }[]> => {
  const transport = (...reasons: Refusal[]) => ({ settlement: 'dead-lettered' as const, refusals: reasons });
  const answered = (...refusals: Refusal[]) => ({ settlement: 'answered' as const, refusals });
  return {
    'other-publisher': [transport(texts.publisherRefused), { settlement: 'broker-refused', refusals: [] }],
    'missing-token': [answered(code('DISPATCH_REFUSED'), code('ENVELOPE_MALFORMED'))],
    'tampered-token': [answered(code('DISPATCH_REFUSED'), code('ENVELOPE_MALFORMED'))],
    'expired-token': [answered(code('DISPATCH_REFUSED'))],
    'foreign-token': [answered(code('DISPATCH_REFUSED'))],
    'identity-swapped': [answered(code('DISPATCH_REFUSED'))],
    // A replay may land on a tool that needs the user's approval, which it does not have.
    'replayed-to-another-tool': [answered(code('CALL_ID_REUSED'), code('INVALID_ARGUMENTS'), code('CONFIRMATION_REQUIRED'))],
    oversized: [transport({ startsWith: 'Message of ' })],
    'non-json': [
      transport(
        'Message body is not valid UTF-8.',
        'Message body is not JSON.',
        'Message body is not an object.',
        'Message has no valid pattern.',
        'Message id is not a string.',
      ),
    ],
    'wrong-types': [answered(code('ENVELOPE_MALFORMED'), code('IDENTITY_MISSING'), code('INVALID_ARGUMENTS'))],
    'prototype-pollution': [answered(code('ENVELOPE_MALFORMED'), code('INVALID_ARGUMENTS'))],
    'past-deadline': [answered(code('DEADLINE_PASSED'))],
    'unknown-pattern': [transport({ startsWith: 'There is no handler for pattern ' })],
  };
};

/** One genuine call a forgery starts from: who, which tool, which arguments, and the text its success would write. */
export type BaseCall = { identity: AgentIdentity; scope: AgentCallScope; tool: AnyAgentTool; args: Record<string, unknown>; marker?: string };

/** What the phase gives the generators: genuine envelopes as the server would mint them, and the facts around them. */
export type ForgeContext = {
  /** Calls to start from, each given a new marker (the text its success would write) every time it is used. */
  baseCalls: readonly ((marker: string) => BaseCall)[];
  /** A genuine envelope for the call, signed for the caller's run in flight; options weaken one thing. */
  genuine: (
    call: BaseCall,
    options?: { tokenTtlSeconds?: number; signingKey?: string; run?: { runId: string; threadId: string }; deadline?: number },
  ) => AgentToolRequest;
  /** Every demo identity of both schools and the platform administrator, to swap in. */
  identities: readonly AgentIdentity[];
  schoolIds: readonly string[];
  campusIds: readonly string[];
  /** Envelopes of writes that ran, replayed to other tools; and the tools to replay them to. */
  completedWrites: readonly { tool: AnyAgentTool; envelope: AgentToolRequest }[];
  tools: readonly AnyAgentTool[];
  maxMessageBytes: number;
  texts: RefusalTexts;
};

type Packet = { pattern: string; data: unknown; id: string };

const packetBytes = (packet: Packet | unknown): Buffer => Buffer.from(JSON.stringify(packet));
const packetOf = (tool: AnyAgentTool, envelope: unknown): Packet => ({ pattern: tool.event, data: envelope, id: randomUUID() });


const fresh = () => randomUUID().slice(0, 8);

const message = (
  kind: ForgedKind,
  variant: string,
  body: Buffer,
  expectation: { settlement: Settlement; refusals: readonly Refusal[] },
  extra: { publisher?: Publisher; callId?: string; marker?: string } = {},
): ForgedMessage => ({ kind, variant, body, publisher: extra.publisher ?? { as: 'worker' }, callId: extra.callId, marker: extra.marker, expect: expectation });

/** Picks one genuine base call (fresh markers each time). */
const baseCall = (context: ForgeContext): fc.Arbitrary<BaseCall> =>
  fc.constantFrom(...context.baseCalls).map((make) => make(`Forged ${fresh()}`));

const envelopeMessage = (
  kind: ForgedKind,
  variant: string,
  call: BaseCall,
  envelope: unknown,
  expectation: { settlement: Settlement; refusals: readonly Refusal[] },
  publisher?: Publisher,
): ForgedMessage => {
  const callId = (envelope as { meta?: { callId?: unknown } })?.meta?.callId;
  return message(kind, `${call.tool.name}: ${variant}`, packetBytes(packetOf(call.tool, envelope)), expectation, {
    publisher,
    callId: typeof callId === 'string' ? callId : undefined,
    marker: call.marker,
  });
};

const setMeta = (envelope: AgentToolRequest, meta: Record<string, unknown>) => ({ ...envelope, meta: { ...envelope.meta, ...meta } });

/** A token's parts: `v2.<kid>.<claims>.<mac>`; `head` is the version and key id, which the MAC covers with the claims. */
const tokenParts = (token: string) => {
  const [version = '', kid = '', body = '', signature = ''] = token.split('.');
  return { version, kid, head: `${version}.${kid}`, body, signature, claims: JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown> };
};

const encode = (claims: unknown) => Buffer.from(JSON.stringify(claims)).toString('base64url');

/** A character of a base64url string changed to a different one. */
const flipAt = (text: string, at: number, to: string): string => {
  const index = at % Math.max(text.length, 1);
  const replacement = text[index] === to ? (to === 'A' ? 'B' : 'A') : to;
  return `${text.slice(0, index)}${replacement}${text.slice(index + 1)}`;
};

const otherThan = (values: readonly string[], current: unknown, seed: number): string => {
  const others = values.filter((value) => value !== current);
  return others[seed % others.length] ?? 'no-such-school';
};

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.split('');

/** Every generator: kind → arbitrary of one forged message. */
export const forgedMessage = (context: ForgeContext): Record<ForgedKind, fc.Arbitrary<ForgedMessage>> => {
  const table = expectedRefusals(context.texts);
  const answeredOnly = (kind: ForgedKind) => table[kind][0]!;
  const otherIdentity = (than: AgentIdentity) => fc.constantFrom(...context.identities.filter((identity) => identity.sub !== than.sub));

  return {
    // The strongest forgery: a perfectly genuine envelope, valid token and all, published by someone who is not the worker.
    'other-publisher': fc
      .tuple(baseCall(context), fc.constantFrom<Publisher>({ as: 'intruder', userId: 'own' }, { as: 'intruder', userId: 'none' }, { as: 'intruder', userId: 'worker' }))
      .map(([call, publisher]) =>
        envelopeMessage(
          'other-publisher',
          `genuine envelope published as another broker user (user_id ${publisher.as === 'intruder' ? publisher.userId : 'worker'})`,
          call,
          context.genuine(call),
          publisher.as === 'intruder' && publisher.userId === 'worker' ? table['other-publisher'][1]! : table['other-publisher'][0]!,
          publisher,
        ),
      ),

    'missing-token': fc
      .tuple(baseCall(context), fc.constantFrom<['absent' | 'empty' | 'null' | 'undefined-like', unknown]>(['absent', undefined], ['empty', ''], ['null', null], ['undefined-like', 'undefined']))
      .map(([call, [how, value]]) => {
        const envelope = context.genuine(call);
        const { dispatchToken: _dropped, ...meta } = envelope.meta;
        const forged = how === 'absent' ? { ...envelope, meta } : setMeta(envelope, { dispatchToken: value });
        return envelopeMessage('missing-token', `token ${how}`, call, forged, answeredOnly('missing-token'));
      }),

    'tampered-token': fc
      .tuple(
        baseCall(context),
        fc.oneof(
          fc.record({ how: fc.constant('claim edited' as const), claim: fc.constantFrom('exp', 'runId', 'threadId', 'sub', 'schoolId', 'type', 'scope'), seed: fc.nat() }),
          fc.record({ how: fc.constant('signature character changed' as const), at: fc.nat(), to: fc.constantFrom(...BASE64URL) }),
          fc.record({ how: fc.constant('body character changed' as const), at: fc.nat(), to: fc.constantFrom(...BASE64URL) }),
          fc.record({ how: fc.constant('signature truncated' as const), keep: fc.integer({ min: 1, max: 42 }) }),
          fc.record({ how: fc.constant('version changed' as const), version: fc.constantFrom('v0', 'v1', 'v3', 'V2', 'v2 ', 'jwt') }),
          fc.record({ how: fc.constant('parts reshuffled' as const), shape: fc.constantFrom('extra part', 'body and signature swapped', 'no signature', 'signature of another token') }),
        ),
      )
      .map(([call, tamper]) => {
        const envelope = context.genuine(call);
        const token = envelope.meta.dispatchToken as string;
        const { kid, head, body, signature, claims } = tokenParts(token);
        let forgedToken: string;
        let detail: string = tamper.how;
        switch (tamper.how) {
          case 'claim edited': {
            const identity = claims['identity'] as Record<string, unknown>;
            const edits: Record<string, () => unknown> = {
              exp: () => ({ ...claims, exp: (claims['exp'] as number) + 1 + (tamper.seed % 100_000) }),
              runId: () => ({ ...claims, runId: randomUUID() }),
              threadId: () => ({ ...claims, threadId: randomUUID() }),
              sub: () => ({ ...claims, identity: { ...identity, sub: randomUUID() } }),
              // Always another value than the signed one: an edit that changes nothing leaves a genuine token.
              schoolId: () => ({ ...claims, identity: { ...identity, schoolId: otherThan(context.schoolIds, identity['schoolId'], tamper.seed) } }),
              type: () => ({ ...claims, identity: { ...identity, type: 'platform_admin' } }),
              scope: () => ({ ...claims, scope: { mode: 'school', targetSchoolId: otherThan(context.schoolIds, undefined, tamper.seed) } }),
            };
            forgedToken = `${head}.${encode(edits[tamper.claim]!())}.${signature}`;
            detail = `${tamper.how} (${tamper.claim})`;
            break;
          }
          case 'signature character changed':
            forgedToken = `${head}.${body}.${flipAt(signature, tamper.at, tamper.to)}`;
            break;
          case 'body character changed':
            forgedToken = `${head}.${flipAt(body, tamper.at, tamper.to)}.${signature}`;
            break;
          case 'signature truncated':
            forgedToken = `${head}.${body}.${signature.slice(0, tamper.keep)}`;
            break;
          case 'version changed':
            forgedToken = `${tamper.version}.${kid}.${body}.${signature}`;
            detail = `${tamper.how} (${tamper.version})`;
            break;
          case 'parts reshuffled': {
            const other = tokenParts(context.genuine(call).meta.dispatchToken as string);
            forgedToken = {
              'extra part': `${token}.${signature}`,
              'body and signature swapped': `${head}.${signature}.${body}`,
              'no signature': `${head}.${body}.`,
              // Same claims but minted a moment apart have different bytes (exp may differ); equal bytes would be genuine.
              'signature of another token': `${head}.${encode({ ...claims, exp: (claims['exp'] as number) + 7 })}.${other.signature}`,
            }[tamper.shape];
            detail = `${tamper.how} (${tamper.shape})`;
            break;
          }
        }
        return envelopeMessage('tampered-token', detail, call, setMeta(envelope, { dispatchToken: forgedToken }), answeredOnly('tampered-token'));
      }),

    'expired-token': fc
      .tuple(baseCall(context), fc.integer({ min: 0, max: 30 * 86_400 }))
      .map(([call, secondsAgo]) =>
        envelopeMessage('expired-token', `token expired ${secondsAgo} s ago`, call, context.genuine(call, { tokenTtlSeconds: -secondsAgo }), answeredOnly('expired-token')),
      ),

    'foreign-token': fc
      .tuple(
        baseCall(context),
        fc.oneof(
          fc.record({ how: fc.constant('signed with a forger key' as const), key: fc.string({ minLength: 32, maxLength: 64 }) }),
          fc.record({ how: fc.constant("another person's genuine token" as const), pick: fc.nat() }),
          fc.constant({ how: 'genuine signature, run not in flight' as const }),
        ),
      )
      .map(([call, foreign]) => {
        const envelope = context.genuine(call);
        if (foreign.how === 'signed with a forger key') {
          return envelopeMessage('foreign-token', foreign.how, call, context.genuine(call, { signingKey: foreign.key }), answeredOnly('foreign-token'));
        }
        if (foreign.how === "another person's genuine token") {
          const others = context.identities.filter((identity) => identity.sub !== call.identity.sub);
          const other = others[foreign.pick % others.length]!;
          const theirs = context.genuine({ ...call, identity: other, scope: { mode: 'school' } });
          return envelopeMessage('foreign-token', `${foreign.how} (${other.sub.slice(0, 8)})`, call, setMeta(envelope, { dispatchToken: theirs.meta.dispatchToken }), answeredOnly('foreign-token'));
        }
        const forged = context.genuine(call, { run: { runId: randomUUID(), threadId: randomUUID() } });
        return envelopeMessage('foreign-token', foreign.how, call, forged, answeredOnly('foreign-token'));
      }),

    'identity-swapped': baseCall(context).chain((call) =>
      fc
        .oneof(
          otherIdentity(call.identity).map((identity) => ({ what: `identity of ${identity.sub.slice(0, 8)}`, change: { identity } as Record<string, unknown> })),
          fc.constantFrom(...context.schoolIds.filter((id) => id !== call.identity.schoolId)).map((schoolId) => ({
            what: 'schoolId of the other school',
            change: { identity: { ...call.identity, schoolId } },
          })),
          fc.constant({ what: 'type platform_admin, no school', change: { identity: { ...call.identity, type: 'platform_admin', schoolId: null, campusId: null } } }),
          fc.constantFrom(...context.campusIds).map((campusId) => ({ what: 'campusId changed', change: { identity: { ...call.identity, campusId } } })),
          fc.constantFrom(...context.campusIds).map((campusId) => ({ what: 'scope pinned to a campus', change: { scope: { mode: 'campus', campusId } } })),
          fc.constantFrom(...context.schoolIds).map((targetSchoolId) => ({ what: 'scope names a target school', change: { scope: { mode: 'school', targetSchoolId } } })),
        )
        .map(({ what, change }) =>
          envelopeMessage('identity-swapped', what, call, { ...context.genuine(call), ...change }, answeredOnly('identity-swapped')),
        ),
    ),

    // A write that ran, sent again with its own call id to another tool's pattern: the ledger knows the call id.
    'replayed-to-another-tool': fc
      .tuple(fc.constantFrom(...context.completedWrites), fc.constantFrom(...context.tools))
      .filter(([write, tool]) => write.tool.event !== tool.event)
      .map(([write, tool]) =>
        message('replayed-to-another-tool', `${write.tool.name} replayed to ${tool.name}`, packetBytes(packetOf(tool, write.envelope)), answeredOnly('replayed-to-another-tool'), {
          callId: write.envelope.meta.callId,
        }),
      ),

    oversized: fc
      .tuple(baseCall(context), fc.integer({ min: 1, max: 256 * 1024 }), fc.constantFrom('args', 'meta', 'identity', 'packet'))
      .map(([call, excess, where]) => {
        const envelope = context.genuine(call);
        const padTo = (bytes: number) => 'x'.repeat(Math.max(0, bytes));
        const base = packetOf(call.tool, envelope);
        const size = packetBytes(base).length;
        const pad = padTo(context.maxMessageBytes - size + excess + 16);
        const data =
          where === 'args'
            ? { ...envelope, args: { ...call.args, padding: pad } }
            : where === 'meta'
              ? setMeta(envelope, { padding: pad })
              : where === 'identity'
                ? { ...envelope, identity: { ...envelope.identity, padding: pad } }
                : envelope;
        const packet = where === 'packet' ? { ...base, padding: pad } : { ...base, data };
        return message('oversized', `${call.tool.name}: ${excess} bytes over, padding in ${where}`, packetBytes(packet), table.oversized[0]!, {
          callId: envelope.meta.callId,
          marker: call.marker,
        });
      }),

    'non-json': fc
      .tuple(
        baseCall(context),
        fc.oneof(
          fc.record({ how: fc.constant('random bytes' as const), bytes: fc.uint8Array({ minLength: 1, maxLength: 512 }) }),
          fc.record({ how: fc.constant('truncated packet' as const), keep: fc.double({ min: 0.05, max: 0.95, noNaN: true }) }),
          fc.record({ how: fc.constant('trailing garbage' as const), garbage: fc.constantFrom('}', ',', ' x', '\u0000', ']') }),
          fc.record({ how: fc.constant('invalid UTF-8' as const), bytes: fc.constantFrom([0xc3, 0x28], [0xa0, 0xa1], [0xff, 0xfe, 0xfd], [0xe2, 0x28, 0xa1]) }),
          fc.record({ how: fc.constant('JSON but not an object' as const), value: fc.oneof(fc.integer(), fc.string(), fc.constant(null), fc.array(fc.integer(), { maxLength: 3 }), fc.boolean()) }),
          fc.record({ how: fc.constant('object without a valid pattern' as const), pattern: fc.oneof(fc.constant(undefined), fc.constant(null), fc.boolean(), fc.array(fc.string(), { maxLength: 2 })) }),
          fc.record({ how: fc.constant('id not a string' as const), id: fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 2 })) }),
        ),
      )
      .map(([call, shape]) => {
        const envelope = context.genuine(call);
        const json = JSON.stringify(packetOf(call.tool, envelope));
        const extra = { callId: envelope.meta.callId, marker: call.marker };
        const expectation = table['non-json'][0]!;
        switch (shape.how) {
          case 'random bytes':
            // A random buffer that happens to be a JSON object with a valid pattern is not a forgery of this kind.
            return message('non-json', `${shape.bytes.length} random bytes`, Buffer.concat([Buffer.from([0xff]), Buffer.from(shape.bytes)]), expectation, extra);
          case 'truncated packet':
            return message('non-json', `packet cut at ${Math.round(shape.keep * 100)} %`, Buffer.from(json.slice(0, Math.max(1, Math.floor(json.length * shape.keep)))), expectation, extra);
          case 'trailing garbage':
            return message('non-json', `packet with trailing ${JSON.stringify(shape.garbage)}`, Buffer.from(json + shape.garbage), expectation, extra);
          // Between tokens, not inside a string: decoded leniently, bytes inside a string would just be odd characters.
          case 'invalid UTF-8':
            return message('non-json', 'invalid UTF-8 between the packet\'s tokens', Buffer.concat([Buffer.from('{'), Buffer.from(shape.bytes), Buffer.from(json.slice(1))]), expectation, extra);
          case 'JSON but not an object':
            return message('non-json', `JSON ${Array.isArray(shape.value) ? 'array' : typeof shape.value}`, Buffer.from(JSON.stringify(shape.value)), expectation);
          case 'object without a valid pattern':
            return message('non-json', `pattern ${JSON.stringify(shape.pattern) ?? 'absent'}`, packetBytes({ pattern: shape.pattern, data: envelope, id: randomUUID() }), expectation, extra);
          case 'id not a string':
            return message('non-json', `packet id ${JSON.stringify(shape.id)}`, packetBytes({ pattern: call.tool.event, data: envelope, id: shape.id }), expectation, extra);
        }
      }),

    'wrong-types': baseCall(context).chain((call) => {
      const notString = fc.anything().filter((value) => typeof value !== 'string');
      const notInteger = fc.anything().filter((value) => typeof value !== 'number' || !Number.isInteger(value) || value <= 0);
      const notObject = fc.anything().filter((value) => typeof value !== 'object' || value === null || Array.isArray(value));
      const targets: [string, fc.Arbitrary<unknown>][] = [
        ['identity.sub', notString],
        ['identity.type', fc.oneof(notString, fc.constantFrom('superuser', 'admin', 'root', 'STAFF', ''))],
        ['identity.schoolId', fc.anything().filter((value) => typeof value !== 'string' && value !== null)],
        ['identity.campusId', fc.anything().filter((value) => typeof value !== 'string' && value !== null)],
        ['identity', notObject],
        ['scope', fc.oneof(notObject, fc.constant({ mode: 'global' }), fc.constant({ mode: 'campus' }), fc.record({ mode: fc.constant('school'), targetSchoolId: notString.filter((value) => value !== undefined) }))],
        ['meta.callId', fc.oneof(notString, fc.string({ maxLength: 7 }), fc.string({ minLength: 129, maxLength: 200 }))],
        ['meta.deadline', notInteger],
        ['meta.dispatchToken', fc.oneof(notString.filter((value) => value !== undefined), fc.constant('x'.repeat(4097)))],
        ['meta', notObject],
        ['args', notObject],
      ];
      return fc.constantFrom(...targets).chain(([path, values]) =>
        values.map((value) => {
          const envelope = context.genuine(call) as unknown as Record<string, Record<string, unknown>>;
          const [outer, inner] = path.split('.') as [string, string | undefined];
          const forged = inner ? { ...envelope, [outer]: { ...envelope[outer], [inner]: value } } : { ...envelope, [outer]: value };
          return envelopeMessage('wrong-types', `${path} = ${JSON.stringify(value)?.slice(0, 60) ?? 'undefined'}`, call, forged, answeredOnly('wrong-types'));
        }),
      );
    }),

    // JSON.parse makes "__proto__" an own key; a lenient parse or a merge would turn it into a prototype.
    'prototype-pollution': fc
      .tuple(
        baseCall(context),
        fc.constantFrom('envelope', 'identity', 'scope', 'meta', 'args'),
        fc.constantFrom('__proto__', 'constructor', 'prototype'),
        fc.constantFrom<unknown>(
          { polluted: 'yes' },
          { isActive: true },
          { type: 'platform_admin', schoolId: null },
          { prototype: { polluted: 'yes' } },
          { toString: 'polluted' },
          null,
        ),
      )
      .map(([call, where, key, value]) => {
        const envelope = context.genuine(call) as unknown as Record<string, object>;
        const forged = where === 'envelope' ? withOwnKey(envelope, key, value) : { ...envelope, [where]: withOwnKey(envelope[where] ?? {}, key, value) };
        return envelopeMessage('prototype-pollution', `${key} in ${where} = ${JSON.stringify(value)}`, call, forged, answeredOnly('prototype-pollution'));
      }),

    // Past the 2 s of clock skew the server allows.
    'past-deadline': fc
      .tuple(baseCall(context), fc.oneof(fc.integer({ min: 3_000, max: 60_000 }), fc.integer({ min: 60_000, max: 30 * 86_400_000 })))
      .map(([call, late]) =>
        envelopeMessage('past-deadline', `deadline ${late} ms ago`, call, context.genuine(call, { deadline: Date.now() - late }), answeredOnly('past-deadline')),
      ),

    // Guessing at tool names: a pattern shaped like a tool event that no handler serves.
    'unknown-pattern': fc
      .tuple(baseCall(context), fc.constantFrom('drop', 'delete', 'grant', 'list', 'get', 'update', 'exec', 'run'), fc.stringMatching(/^[a-z]{3,12}(-[a-z]{2,8})?$/))
      .filter(([, verb, noun]) => !context.tools.some((tool) => tool.event === `${verb}.${noun}`))
      .map(([call, verb, noun]) =>
        message('unknown-pattern', `pattern ${verb}.${noun}`, packetBytes({ pattern: `${verb}.${noun}`, data: context.genuine(call), id: randomUUID() }), table['unknown-pattern'][0]!, {
          marker: call.marker,
        }),
      ),
  };
};
