import { Module } from '@nestjs/common';
import { CampusService } from '../campuses/campus.service.js';
import { StaffController } from './staff.controller.js';
import { StaffService } from './staff.service.js';

@Module({
  controllers: [StaffController],
  providers: [StaffService, CampusService],
  exports: [StaffService, CampusService],
})
export class StaffModule {}
