import { Module } from '@nestjs/common';
import { CampusesModule } from '../campuses/campuses.module.js';
import { ClassesModule } from '../classes/classes.module.js';
import { TeachingModule } from '../teaching/teaching.module.js';
import { GradebookController } from './gradebook.controller.js';
import { GradebookService } from './gradebook.service.js';

@Module({
  imports: [CampusesModule, ClassesModule, TeachingModule],
  controllers: [GradebookController],
  providers: [GradebookService],
  exports: [GradebookService],
})
export class GradebookModule {}
