import { Module, type DynamicModule } from '@nestjs/common';
import type { ServerConfig } from './core/config/server-config.js';
import { CoreModule } from './core/core.module.js';
import { DepartmentModule } from './departments/department.module.js';
import { AgentRunsModule } from './naalya-ai/agent-runs.module.js';
import { NaalyaAiToolsModule } from './naalya-ai/tools/naalya-ai-tools.module.js';
import { StaffModule } from './staff/staff.module.js';

@Module({})
export class AppModule {
  static forRoot(config: ServerConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [CoreModule.forRoot(config), StaffModule, DepartmentModule, NaalyaAiToolsModule, AgentRunsModule],
    };
  }
}
