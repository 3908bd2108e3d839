import { MESSAGE_SIGNATURE_HEADER, foreignPublisher, verifyMessage, type MessageVerifyingKeys, type RmqMessageFrame } from '@naalya/rmq';
import { Logger } from '@nestjs/common';

export type RunStepAuthenticityOptions = {
  /** The server's broker user: the only AMQP user_id a run step may carry (RabbitMQ validates it against the connection). */
  serverBrokerUser: string;
  /** The public halves of the server's RUN_SIGNING_KEY, by key id. */
  publicKeys: MessageVerifyingKeys;
};

export type RunStepVerdict = { authentic: true; kid: string } | { authentic: false; reason: string };

const LOGGED_ID_LIMIT = 80;
const FAILURES = {
  missing: 'it carries no signature',
  malformed: 'its signature header is malformed',
  'unknown-key': 'its signature names a key this worker does not hold',
  'bad-signature': 'its signature does not match its body',
} as const;

/**
 * Whether a delivery on the runs queue is a run step the server wrote: published by the server's broker user, and its
 * exact body bytes signed (`x-naalya-signature: <kid>.<signature>`) by a key whose public half this worker holds. A
 * broker administrator can publish to the runs queue, and any user with write access could claim a step's shape; the
 * worker must not run their steps on a user's conversation. Fails closed: no frame, no step.
 */
export const checkRunStepAuthenticity = (frame: RmqMessageFrame | undefined, options: RunStepAuthenticityOptions): RunStepVerdict => {
  if (!frame) return { authentic: false, reason: 'it was not delivered by the runs transport' };
  const claimed = foreignPublisher(frame.properties.userId, options.serverBrokerUser);
  if (claimed !== undefined) return { authentic: false, reason: `it was published with ${claimed}, and only ${options.serverBrokerUser} publishes run steps` };
  const check = verifyMessage(frame.content, frame.properties.headers?.[MESSAGE_SIGNATURE_HEADER], options.publicKeys);
  if (!check.ok) return { authentic: false, reason: `${FAILURES[check.failure]}${check.kid === undefined ? '' : ` (key id "${check.kid}")`}` };
  return { authentic: true, kid: check.kid };
};

/**
 * The runs consumer's first check. A refused step is logged as a security event (what was wrong and the message's
 * id, never its body: it may carry a user's message) and dropped: the handler returns, so the transport acknowledges
 * it. Not dead-lettered: a forged step has nothing to retry, and nothing of it should be kept.
 */
export class RunStepAuthenticity {
  private readonly logger = new Logger('RunStepAuthenticity');

  constructor(private readonly options: RunStepAuthenticityOptions) {}

  /** True when the step may run; false when it was refused (and logged). */
  admits(frame: RmqMessageFrame | undefined): boolean {
    const verdict = checkRunStepAuthenticity(frame, this.options);
    if (verdict.authentic) return true;
    const messageId = frame?.properties.messageId === undefined ? 'none' : JSON.stringify(String(frame.properties.messageId).slice(0, LOGGED_ID_LIMIT));
    this.logger.warn(`security event: run step refused and dropped unrun: ${verdict.reason} (message id ${messageId})`);
    return false;
  }
}
