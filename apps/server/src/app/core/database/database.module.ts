import { Global, Inject, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { SERVER_CONFIG, type ServerConfig } from '../config/server-config.js';
import { watchDatabasePool } from '../observability/server-metrics.js';
import { registerDataSource } from '../tenancy/tenant-context.js';
import { createAppDataSource, type EntityList } from './data-source.js';

/**
 * The app must connect as a role row-level security applies to. This machine's default roles are
 * superusers, which bypass RLS: starting on one would make every tenant test prove nothing.
 */
export const assertRowLevelSecurityApplies = async (dataSource: DataSource): Promise<void> => {
  const [role] = (await dataSource.query(
    `SELECT current_user AS name, r.rolsuper AS superuser, r.rolbypassrls AS bypass,
            (SELECT count(*)::int FROM pg_tables t WHERE t.schemaname = 'public' AND t.tableowner = current_user) AS owned
       FROM pg_roles r WHERE r.rolname = current_user`,
  )) as { name: string; superuser: boolean; bypass: boolean; owned: number }[];
  if (role.superuser || role.bypass || role.owned > 0) {
    throw new Error(
      `DATABASE_URL connects as "${role.name}", which bypasses row-level security (superuser, BYPASSRLS or table owner). ` +
        'Use the app role that `npm run db:setup` creates.',
    );
  }
};

@Global()
@Module({})
export class DatabaseModule implements OnApplicationShutdown {
  /** The app's DataSource over `entities`, the list the app hands down. */
  static forRoot(entities: EntityList): DynamicModule {
    return {
      module: DatabaseModule,
      providers: [
        {
          provide: DataSource,
          inject: [SERVER_CONFIG],
          useFactory: async (config: ServerConfig) => {
            const dataSource = createAppDataSource({
              url: config.DATABASE_URL,
              entities,
              poolSize: config.DATABASE_POOL_SIZE,
              statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
            });
            await dataSource.initialize();
            await assertRowLevelSecurityApplies(dataSource);
            registerDataSource(dataSource);
            // pg's Pool behind TypeORM's postgres driver: read at each scrape, never held.
            watchDatabasePool(() => (dataSource.driver as unknown as { master?: { totalCount: number; idleCount: number; waitingCount: number; options?: { max?: number } } }).master);
            return dataSource;
          },
        },
      ],
      exports: [DataSource],
    };
  }

  constructor(@Inject(DataSource) private readonly dataSource: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}
