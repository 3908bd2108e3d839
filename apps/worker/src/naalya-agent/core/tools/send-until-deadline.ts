/** What one send of a request came to. Only `lost`, and a reply `resendReply` picks, are sent again. */
export type SendOutcome<R> =
  | { kind: 'reply'; reply: R }
  /** The request or its reply was lost on the way (connection or channel gone, not connected, refused by the broker). */
  | { kind: 'lost'; reason: string }
  /** No reply within the time the send was given, which was all the time left: the deadline has passed. */
  | { kind: 'timeout'; reason: string }
  /** A failure that another send would only repeat (an error packet from the server). */
  | { kind: 'failed'; reason: string };

export type ResendPolicy = {
  /** Sends of one request at most, the first included. */
  maxSends: number;
  /** The pause before the second send; it doubles with each send up to maxPauseMs, then jitter takes up to half off. */
  initialPauseMs: number;
  maxPauseMs: number;
};

/**
 * A tool call under a 15 s default deadline: a dropped connection is back within a few seconds (the client's own
 * reconnection backoff starts at 100 ms), and eight sends are plenty for an outage that short without letting a broken
 * path turn one call into a stream of deliveries.
 */
export const TOOL_CALL_RESENDS: ResendPolicy = { maxSends: 8, initialPauseMs: 50, maxPauseMs: 1_000 };

export type ResendClock = {
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  /** In [0, 1): the jitter, so calls lost together are not all sent again in the same millisecond. */
  random: () => number;
};

export const SYSTEM_CLOCK: ResendClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  random: () => Math.random(),
};

export type SendUntilDeadline<R> = {
  /** Epoch ms: the one limit. Every send is given only the time left until it, so sending again never extends it. */
  deadline: number;
  /** One send of the unchanged request, with the time it has left (its message expires with it). */
  send: (timeLeftMs: number, sendNumber: number) => Promise<SendOutcome<R>>;
  /**
   * A reply that leaves the outcome open, which the same request sent again can settle: one that says so, or, once an
   * earlier send went unsettled (`afterUnsettled`), one that speaks only for its own delivery (a repeat that failed
   * says nothing of the earlier copy, which may have committed).
   */
  resendReply: (reply: R, afterUnsettled: boolean) => boolean;
  /** Resolves true once a send could go out again, false if not within the time given. */
  waitForConnection: (timeoutMs: number) => Promise<boolean>;
  /** Called before every send after the first: the caller logs and counts it. */
  onResend: (sendNumber: number, reason: string, timeLeftMs: number) => void;
  policy?: ResendPolicy;
  clock?: ResendClock;
};

const reasonOf = <R>(outcome: SendOutcome<R>): string => (outcome.kind === 'reply' ? 'the reply said the outcome is unknown' : outcome.reason);

/**
 * Sends one request until an answer worth returning arrives, the deadline passes or the policy's sends are spent, and
 * returns the last outcome with the number of sends. Safe only for a request whose repeats the receiver answers as one
 * (a tool call: the server's ledger answers a repeated write by its call id, and a read may simply run again).
 */
export const sendUntilDeadline = async <R>(input: SendUntilDeadline<R>): Promise<{ outcome: SendOutcome<R>; sends: number; unsettled: boolean }> => {
  const policy = input.policy ?? TOOL_CALL_RESENDS;
  const clock = input.clock ?? SYSTEM_CLOCK;
  const left = () => input.deadline - clock.now();
  let sends = 0;
  let last: SendOutcome<R> = { kind: 'lost', reason: 'not sent' };
  // Whether a send before the last left the outcome open (lost, or a reply resendReply picked).
  let unsettled = false;
  for (;;) {
    if (sends > 0) {
      if (sends >= policy.maxSends) return { outcome: last, sends, unsettled };
      const pause = Math.min(policy.maxPauseMs, policy.initialPauseMs * 2 ** (sends - 1)) * (1 - clock.random() / 2);
      if (pause >= left()) return { outcome: last, sends, unsettled };
      await clock.sleep(pause);
      if (!(await input.waitForConnection(left())) || left() <= 0) return { outcome: last, sends, unsettled };
      input.onResend(sends + 1, reasonOf(last), left());
    } else if (left() <= 0) {
      return { outcome: { kind: 'timeout', reason: 'the deadline passed before the call was sent' }, sends, unsettled };
    }
    if (sends > 0) unsettled = true;
    sends += 1;
    last = await input.send(left(), sends);
    if (last.kind === 'timeout' || last.kind === 'failed') return { outcome: last, sends, unsettled };
    if (last.kind === 'reply' && !input.resendReply(last.reply, unsettled)) return { outcome: last, sends, unsettled };
  }
};
