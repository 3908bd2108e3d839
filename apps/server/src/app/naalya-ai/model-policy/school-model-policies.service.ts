import { BadRequestException, ForbiddenException, HttpException, HttpStatus, Inject, Injectable, NotFoundException } from '@nestjs/common';
import { ERROR_SENTENCES, type AgentModelIdentity, type SchoolModelPolicy } from '@naalya/agent-tools';
import { UserType } from '@naalya/access';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import type { ModelList } from '../../core/config/model-list.js';
import { withCode } from '../../core/http/error-code.js';
import { currentManager, currentScope } from '../../core/tenancy/tenant-context.js';
import { effectiveModelList, isModelAllowed } from './model-access.js';

/** A school's day: the UTC date, as the budget's sentence says ("it renews at midnight (UTC)"). */
const UTC_TODAY = `(now() AT TIME ZONE 'UTC')::date`;

export const PLATFORM_ADMINS_ONLY_ERROR = "Only a platform administrator can see or change a school's language model choices.";
export const WRONG_TARGET_SCHOOL_ERROR = 'This school is not the one chosen for this session. Pick it first.';

export const schoolTokenBudgetSpent = () =>
  withCode('SCHOOL_TOKEN_BUDGET_SPENT', new HttpException(ERROR_SENTENCES.SCHOOL_TOKEN_BUDGET_SPENT, HttpStatus.TOO_MANY_REQUESTS));

/** The school a run's data belongs to, as the run row names it: a staff member's own, or a platform admin's target. */
export type RunSchools = { schoolId: string | null; targetSchoolId: string | null };

/** What a school chose, as PUT sets it. */
export type ModelPolicyDto = { allowedModels: string[] | null; dailyTokenBudget: number | null };

type SchoolRow = { id: string; allowed_models: string[] | null; daily_token_budget: string | null };

const asStored = (list: ModelList): string[] => (list === '*' ? ['*'] : [...list]);

/**
 * A school's language model choices, which a platform administrator sets: the models its data may be sent to, and the
 * tokens it may use per UTC day, each NULL for the platform's default (AGENT_MODELS_ALLOWED,
 * AGENT_SCHOOL_DAILY_TOKEN_BUDGET). Also the school's day of tokens, which every usage report adds to. Every method
 * runs in its caller's unit of work, under RLS: a school's frame reads and writes its own row only.
 */
@Injectable()
export class SchoolModelPolicies {
  constructor(@Inject(SERVER_CONFIG) private readonly config: ServerConfig) {}

  async view(schoolId: string, caller: JwtPayload): Promise<SchoolModelPolicy> {
    this.assertPlatformAdmin(caller);
    const school = await this.school(schoolId);
    if (!school) throw new NotFoundException('School not found.');
    const dailyTokenBudget = school.daily_token_budget === null ? null : Number(school.daily_token_budget);
    return {
      schoolId,
      allowedModels: school.allowed_models,
      dailyTokenBudget,
      effective: {
        allowedModels: asStored(effectiveModelList(school.allowed_models, this.config.AGENT_MODELS_ALLOWED)),
        dailyTokenBudget: dailyTokenBudget ?? this.config.AGENT_SCHOOL_DAILY_TOKEN_BUDGET,
      },
      tokensToday: await this.tokensToday(schoolId),
    };
  }

  /** Sets both choices of the school this unit of work is pinned to (the one chosen for the session). */
  async update(schoolId: string, dto: ModelPolicyDto, caller: JwtPayload): Promise<SchoolModelPolicy> {
    this.assertPlatformAdmin(caller);
    const scope = currentScope();
    if (scope.kind !== 'school' || scope.schoolId !== schoolId) throw new BadRequestException(WRONG_TARGET_SCHOOL_ERROR);
    const [, updated] = (await currentManager().query(`UPDATE schools SET allowed_models = $2, daily_token_budget = $3 WHERE id = $1`, [
      schoolId,
      dto.allowedModels,
      dto.dailyTokenBudget,
    ])) as [unknown, number];
    if (updated !== 1) throw new NotFoundException('School not found.');
    return this.view(schoolId, caller);
  }

  /**
   * Whether the run's data may be sent to `model`: its school's choice decides. A platform administrator's run with no
   * target school reads across schools, so every school's choice must allow the model.
   */
  async allowsModel(run: RunSchools, model: AgentModelIdentity | undefined): Promise<boolean> {
    const schoolId = run.schoolId ?? run.targetSchoolId;
    const rows = (await currentManager().query(
      schoolId ? `SELECT allowed_models FROM schools WHERE id = $1` : `SELECT allowed_models FROM schools`,
      schoolId ? [schoolId] : [],
    )) as Pick<SchoolRow, 'allowed_models'>[];
    // A school this frame cannot read is not known to allow anything.
    if (schoolId && rows.length === 0) return false;
    const lists = rows.length > 0 ? rows.map((row) => effectiveModelList(row.allowed_models, this.config.AGENT_MODELS_ALLOWED)) : [this.config.AGENT_MODELS_ALLOWED];
    return lists.every((list) => isModelAllowed(list, model));
  }

  /**
   * Adds tokens to the school's day, in one statement whatever the replica (the row lock makes concurrent reports add
   * up), and says whether the day's total has reached the school's budget.
   */
  async addToDay(schoolId: string, tokens: number): Promise<{ tokens: number; spent: boolean }> {
    const [row] = (await currentManager().query(
      `INSERT INTO school_token_days AS d (school_id, day, tokens) VALUES ($1, ${UTC_TODAY}, $2)
       ON CONFLICT (school_id, day) DO UPDATE SET tokens = d.tokens + EXCLUDED.tokens
       RETURNING d.tokens`,
      [schoolId, tokens],
    )) as { tokens: string }[];
    const total = Number(row.tokens);
    const budget = await this.dailyBudget(schoolId);
    return { tokens: total, spent: budget !== null && total >= budget };
  }

  /** Whether the school's day is spent: a new run would be stopped at its first model call. */
  async daySpent(schoolId: string): Promise<boolean> {
    const budget = await this.dailyBudget(schoolId);
    return budget !== null && (await this.tokensToday(schoolId)) >= budget;
  }

  /** Refuses to start anything for a school whose day is spent (429, SCHOOL_TOKEN_BUDGET_SPENT); a school-less caller has no day. */
  async assertDayNotSpent(schoolId: string | null): Promise<void> {
    if (schoolId && (await this.daySpent(schoolId))) throw schoolTokenBudgetSpent();
  }

  private async dailyBudget(schoolId: string): Promise<number | null> {
    const school = await this.school(schoolId);
    return school?.daily_token_budget ? Number(school.daily_token_budget) : this.config.AGENT_SCHOOL_DAILY_TOKEN_BUDGET;
  }

  private async tokensToday(schoolId: string): Promise<number> {
    const [row] = (await currentManager().query(`SELECT tokens FROM school_token_days WHERE school_id = $1 AND day = ${UTC_TODAY}`, [schoolId])) as {
      tokens: string;
    }[];
    return row ? Number(row.tokens) : 0;
  }

  private async school(schoolId: string): Promise<SchoolRow | null> {
    const [row] = (await currentManager().query(`SELECT id, allowed_models, daily_token_budget FROM schools WHERE id = $1`, [schoolId])) as SchoolRow[];
    return row ?? null;
  }

  /**
   * School administrators hold `manage all` in their school, so no permission pair tells them from a platform
   * administrator: the choice is the platform's, by the caller's type (reloaded fresh by the unit of work).
   */
  private assertPlatformAdmin(caller: JwtPayload): void {
    if (caller.type !== UserType.PLATFORM_ADMIN) throw new ForbiddenException(PLATFORM_ADMINS_ONLY_ERROR);
  }
}
