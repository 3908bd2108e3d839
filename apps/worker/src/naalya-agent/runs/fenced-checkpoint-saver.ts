import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
} from '@langchain/langgraph-checkpoint';

/** Thrown instead of writing a checkpoint once the step no longer holds its lease. */
export class CheckpointFencedError extends Error {
  override readonly name = 'CheckpointFencedError';
}

type Saver = BaseCheckpointSaver;

/**
 * The step's view of the checkpointer: reads pass through, and every write first asks whether the step still holds its
 * lease. The checkpoints are the one thing the worker writes that the server cannot fence by epoch, so a step that lost
 * its lease (cancelled, or taken over by another worker after this one froze) must not add to the thread's history.
 */
export class FencedCheckpointSaver extends BaseCheckpointSaver {
  constructor(
    private readonly inner: Saver,
    private readonly mayWrite: () => boolean,
  ) {
    super(inner.serde);
  }

  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.inner.getTuple(config);
  }

  list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    return this.inner.list(config, options);
  }

  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    this.assertHeld();
    return this.inner.put(config, checkpoint, metadata, newVersions);
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    this.assertHeld();
    return this.inner.putWrites(config, writes, taskId, taskPath);
  }

  deleteThread(threadId: string): Promise<void> {
    return this.inner.deleteThread(threadId);
  }

  override getDeltaChannelHistory(options: Parameters<Saver['getDeltaChannelHistory']>[0]): ReturnType<Saver['getDeltaChannelHistory']> {
    return this.inner.getDeltaChannelHistory(options);
  }

  override getNextVersion(current: number | undefined): number {
    return this.inner.getNextVersion(current);
  }

  private assertHeld(): void {
    if (!this.mayWrite()) throw new CheckpointFencedError('The run step no longer holds its lease: its checkpoint is not written.');
  }
}
