import { Module } from '@nestjs/common';
import { StaffModule } from '../staff/staff.module.js';
import { DepartmentController } from './department.controller.js';
import { DepartmentService } from './department.service.js';

@Module({
  imports: [StaffModule],
  controllers: [DepartmentController],
  providers: [DepartmentService],
  exports: [DepartmentService],
})
export class DepartmentModule {}
