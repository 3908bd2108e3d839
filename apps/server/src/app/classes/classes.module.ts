import { Module } from '@nestjs/common';
import { CampusesModule } from '../campuses/campuses.module.js';
import { ClassController } from './class.controller.js';
import { ClassService } from './class.service.js';
import { ClassroomAccessService } from './classroom-access.service.js';

@Module({
  imports: [CampusesModule],
  controllers: [ClassController],
  providers: [ClassService, ClassroomAccessService],
  exports: [ClassService, ClassroomAccessService],
})
export class ClassesModule {}
