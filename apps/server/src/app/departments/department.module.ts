import { Module } from '@nestjs/common';
import { CampusesModule } from '../campuses/campuses.module.js';
import { DepartmentController } from './department.controller.js';
import { DepartmentService } from './department.service.js';

@Module({
  imports: [CampusesModule],
  controllers: [DepartmentController],
  providers: [DepartmentService],
  exports: [DepartmentService],
})
export class DepartmentModule {}
