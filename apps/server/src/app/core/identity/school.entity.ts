import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { BIGINT_AS_NUMBER } from '../database/bigint-column.js';

@Entity({ name: 'schools' })
export class SchoolEntity {
  @PrimaryGeneratedColumn('uuid') id: string;
  @Column({ type: 'text' }) name: string;
  /** IANA name of the zone every date of the school is shown in (SchoolsService checks it). */
  @Column({ name: 'time_zone', type: 'text', default: 'Africa/Kampala' }) timeZone: string;
  /** The school's data choice: the models that may see its data; null for the platform's default (AGENT_MODELS_ALLOWED). */
  @Column({ name: 'allowed_models', type: 'text', array: true, nullable: true }) allowedModels: string[] | null;
  /** Tokens the school may use per UTC day; null for the platform's default (AGENT_SCHOOL_DAILY_TOKEN_BUDGET). */
  @Column({ name: 'daily_token_budget', type: 'bigint', nullable: true, transformer: BIGINT_AS_NUMBER }) dailyTokenBudget: number | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
