import { describe, expect, it } from 'vitest';
import { sendUntilDeadline, type ResendClock, type SendOutcome, type SendUntilDeadline } from './send-until-deadline.js';

const POLICY = { maxSends: 5, initialPauseMs: 50, maxPauseMs: 400 };

/** A clock that only moves when the loop sleeps or a send takes time: every number below is exact. */
const fakeClock = (start = 1_000_000, random = 0.5) => {
  const clock = { at: start, slept: [] as number[] };
  const api: ResendClock = {
    now: () => clock.at,
    sleep: async (ms) => {
      clock.slept.push(ms);
      clock.at += ms;
    },
    random: () => random,
  };
  return { clock, api };
};

type Script = (SendOutcome<string> | { takesMs: number; then: SendOutcome<string> })[];

/** Runs the loop over a scripted list of send outcomes, recording the time each send was given. */
const run = async (script: Script, options: { deadlineIn: number; connected?: (timeoutMs: number) => boolean; random?: number } = { deadlineIn: 5_000 }) => {
  const { clock, api } = fakeClock(undefined, options.random);
  const deadline = clock.at + options.deadlineIn;
  const given: number[] = [];
  const resends: { sendNumber: number; reason: string; timeLeftMs: number }[] = [];
  const input: SendUntilDeadline<string> = {
    deadline,
    send: async (timeLeftMs) => {
      given.push(timeLeftMs);
      const step = script[given.length - 1] ?? { kind: 'lost', reason: 'script ran out' };
      if ('takesMs' in step) {
        clock.at += Math.min(step.takesMs, timeLeftMs);
        return step.then;
      }
      return step;
    },
    resendReply: (reply, afterUnsettled) => reply === 'unknown commit' || (afterUnsettled && reply === 'this delivery failed'),
    waitForConnection: async (timeoutMs) => {
      const up = options.connected?.(timeoutMs) ?? true;
      if (!up) clock.at += timeoutMs;
      return up;
    },
    onResend: (sendNumber, reason, timeLeftMs) => resends.push({ sendNumber, reason, timeLeftMs }),
    policy: POLICY,
    clock: api,
  };
  const result = await sendUntilDeadline(input);
  return { ...result, given, resends, clock, deadline };
};

const lost: SendOutcome<string> = { kind: 'lost', reason: 'the connection to RabbitMQ was lost' };

describe('sendUntilDeadline', () => {
  it('returns the first answer without sending again', async () => {
    const { outcome, sends, resends } = await run([{ kind: 'reply', reply: 'done' }], { deadlineIn: 5_000 });
    expect(outcome).toEqual({ kind: 'reply', reply: 'done' });
    expect(sends).toBe(1);
    expect(resends).toEqual([]);
  });

  it('sends a lost call again until it is answered, logging each re-send with its number', async () => {
    const { outcome, sends, resends } = await run([lost, lost, { kind: 'reply', reply: 'done' }], { deadlineIn: 5_000 });
    expect(outcome).toEqual({ kind: 'reply', reply: 'done' });
    expect(sends).toBe(3);
    expect(resends.map((resend) => resend.sendNumber)).toEqual([2, 3]);
    expect(resends[0].reason).toBe('the connection to RabbitMQ was lost');
  });

  it('sends again on a reply that says the outcome is unknown, and returns the answer of the repeat', async () => {
    const { outcome, sends } = await run([{ kind: 'reply', reply: 'unknown commit' }, { kind: 'reply', reply: 'from the ledger' }], { deadlineIn: 5_000 });
    expect(outcome).toEqual({ kind: 'reply', reply: 'from the ledger' });
    expect(sends).toBe(2);
  });

  it('tells resendReply whether an earlier send went unsettled, and says so with the outcome', async () => {
    const first = await run([{ kind: 'reply', reply: 'this delivery failed' }], { deadlineIn: 5_000 });
    expect(first).toMatchObject({ outcome: { kind: 'reply', reply: 'this delivery failed' }, sends: 1, unsettled: false });
    const after = await run([lost, { kind: 'reply', reply: 'this delivery failed' }, { kind: 'reply', reply: 'from the ledger' }], { deadlineIn: 5_000 });
    expect(after).toMatchObject({ outcome: { kind: 'reply', reply: 'from the ledger' }, sends: 3, unsettled: true });
  });

  it('never extends the deadline: each send is given exactly the time left, and nothing is sent past it', async () => {
    const slow = { takesMs: 700, then: lost };
    const { given, deadline, clock, outcome } = await run([slow, slow, slow, slow, slow], { deadlineIn: 2_000 });
    // Every send had only what was left, less than the one before, and the loop ended by the deadline.
    for (const [index, ms] of given.entries()) expect(ms).toBeLessThanOrEqual(2_000 - index * 700);
    expect(given.every((ms, index) => index === 0 || ms < given[index - 1])).toBe(true);
    expect(clock.at).toBeLessThanOrEqual(deadline);
    expect(outcome.kind).toBe('lost');
  });

  it('a timeout ends it: the send had all the time left, so the deadline has passed', async () => {
    const { outcome, sends } = await run([{ kind: 'timeout', reason: 'no reply' }, { kind: 'reply', reply: 'never asked' }], { deadlineIn: 5_000 });
    expect(outcome.kind).toBe('timeout');
    expect(sends).toBe(1);
  });

  it('a failure another send would only repeat is not sent again', async () => {
    const { outcome, sends } = await run([{ kind: 'failed', reason: 'error packet' }], { deadlineIn: 5_000 });
    expect(outcome.kind).toBe('failed');
    expect(sends).toBe(1);
  });

  it('bounds the sends, however much time is left', async () => {
    const { sends, outcome } = await run([], { deadlineIn: 600_000 });
    expect(sends).toBe(POLICY.maxSends);
    expect(outcome).toEqual({ kind: 'lost', reason: 'script ran out' });
  });

  it('pauses with exponential backoff up to its cap, with jitter taking up to half off', async () => {
    const { clock } = await run([], { deadlineIn: 600_000, random: 0.5 });
    // 50, 100, 200, 400 (capped) ms, each less a quarter (random 0.5 takes half of the half off).
    expect(clock.slept).toEqual([37.5, 75, 150, 300]);
    const noJitter = await run([], { deadlineIn: 600_000, random: 0 });
    expect(noJitter.clock.slept).toEqual([50, 100, 200, 400]);
  });

  it('does not send again while disconnected: it waits for the connection only as long as the deadline allows', async () => {
    const waits: number[] = [];
    const { sends, outcome, clock, deadline } = await run([lost], {
      deadlineIn: 3_000,
      connected: (timeoutMs) => {
        waits.push(timeoutMs);
        return false;
      },
    });
    expect(sends).toBe(1);
    expect(outcome.kind).toBe('lost');
    expect(waits).toHaveLength(1);
    expect(clock.at).toBeLessThanOrEqual(deadline);
  });

  it('sends nothing when the deadline has already passed', async () => {
    const { sends, outcome } = await run([{ kind: 'reply', reply: 'never asked' }], { deadlineIn: 0 });
    expect(sends).toBe(0);
    expect(outcome.kind).toBe('timeout');
  });

  it('does not pause past the deadline: a pause longer than the time left ends the loop at once', async () => {
    const { sends, clock, deadline } = await run([{ takesMs: 1_980, then: lost }], { deadlineIn: 2_000 });
    expect(sends).toBe(1);
    expect(clock.slept).toEqual([]);
    expect(clock.at).toBeLessThan(deadline);
  });
});
