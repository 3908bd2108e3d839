import { Module } from '@nestjs/common';
import { BrandingModule } from '../../branding/branding.module.js';
import { CampusesModule } from '../../campuses/campuses.module.js';
import { ClassesModule } from '../../classes/classes.module.js';
import { DepartmentModule } from '../../departments/department.module.js';
import { GradebookModule } from '../../gradebook/gradebook.module.js';
import { LessonPlansModule } from '../../lesson-plans/lesson-plans.module.js';
import { SubjectsModule } from '../../subjects/subjects.module.js';
import { TeachingModule } from '../../teaching/teaching.module.js';
import { StaffModule } from '../../staff/staff.module.js';
import { BrandingToolsController } from './handlers/branding-tools.controller.js';
import { CampusesToolsController } from './handlers/campuses-tools.controller.js';
import { ClassesToolsController } from './handlers/classes-tools.controller.js';
import { DepartmentToolsController } from './handlers/department-tools.controller.js';
import { GradebookToolsController } from './handlers/gradebook-tools.controller.js';
import { LessonPlansToolsController } from './handlers/lesson-plans-tools.controller.js';
import { StaffToolsController } from './handlers/staff-tools.controller.js';
import { SubjectsToolsController } from './handlers/subjects-tools.controller.js';
import { TeachingToolsController } from './handlers/teaching-tools.controller.js';
import { ToolCallsToolsController } from './handlers/tool-calls-tools.controller.js';
import { ToolCallLedgerService } from './tool-call-ledger.service.js';
import { ToolCallOutcomeController } from './tool-call-outcome.controller.js';
import { ToolCallOutcomeService } from './tool-call-outcome.service.js';
import { ToolCallQuota } from './tool-call-quota.js';
import { ToolExecutor } from './tool-executor.js';

/** Tool handlers: one @MessagePattern per registered tool, each through ToolExecutor.execute. */
export const TOOL_HANDLER_CONTROLLERS = [
  StaffToolsController,
  DepartmentToolsController,
  BrandingToolsController,
  CampusesToolsController,
  SubjectsToolsController,
  ClassesToolsController,
  TeachingToolsController,
  GradebookToolsController,
  LessonPlansToolsController,
  ToolCallsToolsController,
];

@Module({
  imports: [
    StaffModule,
    DepartmentModule,
    BrandingModule,
    CampusesModule,
    SubjectsModule,
    ClassesModule,
    TeachingModule,
    GradebookModule,
    LessonPlansModule,
  ],
  // The REST route of get_tool_call_outcome lives here, with the ledger it reads.
  controllers: [...TOOL_HANDLER_CONTROLLERS, ToolCallOutcomeController],
  providers: [ToolExecutor, ToolCallLedgerService, ToolCallQuota, ToolCallOutcomeService],
  // The quota also counts the MCP door's calls per client (McpDoorService).
  exports: [ToolExecutor, ToolCallQuota],
})
export class NaalyaAiToolsModule {}
