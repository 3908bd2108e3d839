import { Global, Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { AuditInterceptor } from './audit/audit.interceptor.js';
import { AuditLogController } from './audit/audit-log.controller.js';
import { AuditLogService } from './audit/audit-log.service.js';
import { AuthController } from './auth/auth.controller.js';
import { BrokerStatus } from './health/broker-status.js';
import { DeadLetterDepths } from './health/dead-letter-depths.js';
import { HealthController } from './health/health.controller.js';
import { AuthService } from './auth/auth.service.js';
import { LoginAttemptLimiter } from './auth/login-attempt-limiter.js';
import { IdentityService } from './auth/identity.service.js';
import { JwtAuthGuard } from './auth/jwt-auth.guard.js';
import { MeController } from './auth/me.controller.js';
import { AppAbilityFactory } from './authorization/app-ability.factory.js';
import { SERVER_CONFIG, type ServerConfig } from './config/server-config.js';
import type { EntityList } from './database/data-source.js';
import { DatabaseModule } from './database/database.module.js';
import { ErrorCodeFilter } from './http/error-code.js';
import { NulCharacterGuard } from './http/hostile-input.js';
import { UnitOfWorkInterceptor } from './http/unit-of-work.interceptor.js';

/** Plumbing shared by every domain: config, database, auth, the unit of work, permissions and audit. */
@Global()
@Module({})
export class CoreModule {
  /** `entities`: every entity the app maps, handed down by the app (core does not know the domain). */
  static forRoot(config: ServerConfig, entities: EntityList): DynamicModule {
    return {
      module: CoreModule,
      imports: [DatabaseModule.forRoot(entities)],
      controllers: [AuthController, MeController, HealthController, AuditLogController],
      providers: [
        { provide: SERVER_CONFIG, useValue: config },
        AuthService,
        LoginAttemptLimiter,
        IdentityService,
        AppAbilityFactory,
        AuditLogService,
        BrokerStatus,
        DeadLetterDepths,
        // Before authentication: a NUL character is refused the same way whoever sends it.
        { provide: APP_GUARD, useClass: NulCharacterGuard },
        { provide: APP_GUARD, useClass: JwtAuthGuard },
        { provide: APP_FILTER, useClass: ErrorCodeFilter },
        // Order matters: the unit of work opens first, so the audit row lands in its transaction.
        { provide: APP_INTERCEPTOR, useClass: UnitOfWorkInterceptor },
        { provide: APP_INTERCEPTOR, useClass: AuditInterceptor },
      ],
      exports: [SERVER_CONFIG, AuthService, IdentityService, AppAbilityFactory, AuditLogService, BrokerStatus],
    };
  }
}
