import { Module } from '@nestjs/common';
import { DepartmentModule } from '../../departments/department.module.js';
import { StaffModule } from '../../staff/staff.module.js';
import { DepartmentToolsController } from './handlers/department-tools.controller.js';
import { StaffToolsController } from './handlers/staff-tools.controller.js';
import { ToolCallLedgerService } from './tool-call-ledger.service.js';
import { ToolExecutor } from './tool-executor.js';

/** Tool handlers: one @MessagePattern per registered tool, each through ToolExecutor.execute. */
export const TOOL_HANDLER_CONTROLLERS = [StaffToolsController, DepartmentToolsController];

@Module({
  imports: [StaffModule, DepartmentModule],
  controllers: TOOL_HANDLER_CONTROLLERS,
  providers: [ToolExecutor, ToolCallLedgerService],
  exports: [ToolExecutor],
})
export class NaalyaAiToolsModule {}
