import { Module } from '@nestjs/common';
import { CampusesModule } from '../campuses/campuses.module.js';
import { ClassesModule } from '../classes/classes.module.js';
import { CapabilitiesService } from './capabilities.service.js';
import { TeachingController } from './teaching.controller.js';
import { TeachingService } from './teaching.service.js';

@Module({
  imports: [CampusesModule, ClassesModule],
  controllers: [TeachingController],
  providers: [TeachingService, CapabilitiesService],
  exports: [TeachingService, CapabilitiesService],
})
export class TeachingModule {}
