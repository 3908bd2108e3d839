import { Module } from '@nestjs/common';
import { CampusesModule } from '../campuses/campuses.module.js';
import { LessonPlanController } from './lesson-plan.controller.js';
import { LessonPlanService } from './lesson-plan.service.js';

@Module({
  imports: [CampusesModule],
  controllers: [LessonPlanController],
  providers: [LessonPlanService],
  exports: [LessonPlanService],
})
export class LessonPlansModule {}
