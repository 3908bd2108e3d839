import { Module } from '@nestjs/common';
import { RunLifecycleModule } from '../lifecycle/run-lifecycle.module.js';
import { RunSweeper } from '../lifecycle/run-sweeper.service.js';
import { DEAD_LETTERED_STEP_HANDLER, DeadLetteredStepConsumer, type DeadLetteredStepHandler } from './dead-lettered-step.consumer.js';

/**
 * The runs dead-letter queue's consumer, and who decides what a dead-lettered step means for its run: the sweeper,
 * which fails the run if that step is still its current one.
 */
@Module({
  imports: [RunLifecycleModule],
  providers: [
    DeadLetteredStepConsumer,
    {
      provide: DEAD_LETTERED_STEP_HANDLER,
      inject: [RunSweeper],
      useFactory: (sweeper: RunSweeper): DeadLetteredStepHandler => ({
        failDeadLetteredStep: (runId, dispatchToken) => sweeper.failDeadLettered(runId, dispatchToken),
      }),
    },
  ],
  exports: [DeadLetteredStepConsumer],
})
export class DeadLetteredStepsModule {}
