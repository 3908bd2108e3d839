import { AGENT_THREAD_DELETED_PATTERN, agentThreadDeletedSchema } from '@naalya/agent-tools';
import { currentRmqMessage } from '@naalya/rmq';
import { Controller, Logger } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { CheckpointStore } from '../core/checkpoint/checkpoint-store.js';
import { RunStepAuthenticity } from './run-step-authenticity.js';

/**
 * A thread its owner deleted on the server: its checkpoints (the conversation's state, in the worker's checkpoint
 * database, which the server cannot reach) are deleted here. The message arrives on the runs queue and must pass the
 * same check as a run step (the server's broker user and its run signing key): anyone else could otherwise erase a
 * user's conversation. A refused one is dropped; a malformed one is thrown back and dead-lettered; a database failure
 * is thrown back too, and the transport dead-letters it (the checkpoint retention sweep removes the thread later).
 */
@Controller()
export class ThreadDeletionConsumer {
  private readonly logger = new Logger(ThreadDeletionConsumer.name);

  constructor(
    private readonly checkpoints: CheckpointStore,
    private readonly authenticity: RunStepAuthenticity,
  ) {}

  @EventPattern(AGENT_THREAD_DELETED_PATTERN)
  async handle(@Payload() payload: unknown): Promise<void> {
    if (!this.authenticity.admits(currentRmqMessage())) return;
    const parsed = agentThreadDeletedSchema.safeParse(payload);
    if (!parsed.success) throw new Error('Malformed thread deletion, dead-lettered.');
    await this.checkpoints.deleteThread(parsed.data.threadId);
    this.logger.log(`Thread ${parsed.data.threadId} was deleted: its checkpoints are gone.`);
  }
}
