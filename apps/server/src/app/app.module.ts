import { Module, type DynamicModule } from '@nestjs/common';
import { APP_ENTITIES } from './app.entities.js';
import { BrandingModule } from './branding/branding.module.js';
import { CampusesModule } from './campuses/campuses.module.js';
import { ClassesModule } from './classes/classes.module.js';
import type { ServerConfig } from './core/config/server-config.js';
import { CoreModule } from './core/core.module.js';
import { DepartmentModule } from './departments/department.module.js';
import { GradebookModule } from './gradebook/gradebook.module.js';
import { LessonPlansModule } from './lesson-plans/lesson-plans.module.js';
import { AgentRunsModule } from './naalya-ai/agent-runs.module.js';
import { NaalyaAiToolsModule } from './naalya-ai/tools/naalya-ai-tools.module.js';
import { SchoolsModule } from './schools/schools.module.js';
import { StaffModule } from './staff/staff.module.js';
import { SubjectsModule } from './subjects/subjects.module.js';
import { TeachingModule } from './teaching/teaching.module.js';

/** Every domain's REST routes are mounted here, by the app: none exists only because the agent seam imports it. */
const DOMAIN_MODULES = [
  StaffModule,
  DepartmentModule,
  CampusesModule,
  SubjectsModule,
  ClassesModule,
  TeachingModule,
  GradebookModule,
  LessonPlansModule,
  BrandingModule,
  SchoolsModule,
];

/** The floors, assembled: core (plumbing), the domain (rules and REST), the agent seam (tools and runs). */
@Module({})
export class AppModule {
  static forRoot(config: ServerConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [CoreModule.forRoot(config, APP_ENTITIES), ...DOMAIN_MODULES, NaalyaAiToolsModule, AgentRunsModule],
    };
  }
}
