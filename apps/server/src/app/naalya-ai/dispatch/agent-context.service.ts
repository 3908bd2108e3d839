import { randomUUID } from 'node:crypto';
import { dispatchKeyRing } from '../../core/config/signing-key-ring.js';
import { ForbiddenException, Inject, Injectable, NotFoundException } from '@nestjs/common';
import { UserType } from '@naalya/access';
import { agentRuntimeContextSchema, type AgentRuntimeContext } from '@naalya/agent-tools';
import { CampusService } from '../../campuses/campus.service.js';
import { AppAbilityFactory } from '../../core/authorization/app-ability.factory.js';
import { IdentityService } from '../../core/auth/identity.service.js';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { repo } from '../../core/tenancy/tenant-context.js';
import { SchoolEntity } from '../../core/identity/school.entity.js';
import { CapabilitiesService } from '../../teaching/capabilities.service.js';
import { scopeOfRunMode, signDispatchToken } from './dispatch-token.js';

/**
 * `runId` and `threadId` are the recorded run's and thread's when a run is dispatched; fresh ones otherwise. `epoch` is
 * the run's dispatch epoch (see AgentRunStore); `ttlSeconds` shortens the token's life (never lengthens it).
 */
export type MintContextDto = { campusId?: string; targetSchoolId?: string; runId?: string; threadId?: string; epoch?: number; ttlSeconds?: number };

/**
 * Mints the runtime context a run carries to the worker: the only source of identity and call scope
 * there. Runs inside the caller's unit of work, so the user and the campus are read fresh under RLS.
 */
@Injectable()
export class AgentContextService {
  constructor(
    private readonly identityService: IdentityService,
    private readonly abilityFactory: AppAbilityFactory,
    private readonly campusService: CampusService,
    private readonly capabilitiesService: CapabilitiesService,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  async mint(dto: MintContextDto, jwt: JwtPayload): Promise<AgentRuntimeContext> {
    const user = await this.identityService.assertCurrent(jwt);
    if (dto.targetSchoolId && user.userType !== UserType.PLATFORM_ADMIN) {
      throw new ForbiddenException('Only platform administrators choose a target school.');
    }
    // Platform admins read every school: a target that is not there is a mistake worth saying now, not at the first write.
    if (dto.targetSchoolId && !(await repo(SchoolEntity).existsBy({ id: dto.targetSchoolId }))) {
      throw new NotFoundException('School not found.');
    }
    const runMode: AgentRuntimeContext['runMode'] = dto.campusId
      ? { mode: 'campus', campus: await this.campusInReach(dto.campusId, user.campusId) }
      : { mode: 'school', ...(dto.targetSchoolId ? { targetSchoolId: dto.targetSchoolId } : {}) };
    const ability = this.abilityFactory.fromPermissions(jwt, await this.identityService.assertCurrentWithPermissions(jwt));
    const run = { runId: dto.runId ?? randomUUID(), threadId: dto.threadId ?? randomUUID() };
    // Signs exactly what was minted here; a tool call runs only if it carries this and matches it (ToolExecutor).
    const dispatchToken = signDispatchToken(dispatchKeyRing(this.config), {
      identity: { sub: user.id, type: user.userType, schoolId: user.schoolId, campusId: user.campusId },
      scope: scopeOfRunMode(runMode),
      ...run,
      epoch: dto.epoch ?? 0,
      exp: Math.floor(Date.now() / 1000) + Math.min(dto.ttlSeconds ?? Infinity, this.config.DISPATCH_TOKEN_TTL_SECONDS),
    });
    return agentRuntimeContextSchema.parse({
      userDetails: {
        id: user.id,
        userType: user.userType,
        schoolId: user.schoolId,
        campusId: user.campusId,
        fullName: user.fullName,
        email: user.email,
      },
      runMode,
      run,
      // Display only: the worker shapes what Rover offers from it and never decides with it.
      userPermissions: JSON.parse(JSON.stringify(ability.rules)),
      // The caller's hats decide which specialists join the run; resolved from data here, never by the model.
      capabilities: await this.capabilitiesService.resolve(jwt),
      dispatchToken,
    });
  }

  /** A campus-limited member of staff may only open a chat (or a connected app's campus mode) on their own campus. */
  async campusInReach(campusId: string, homeCampusId: string | null) {
    const campus = await this.campusService.findVisible(campusId);
    if (homeCampusId && homeCampusId !== campus.id) throw new ForbiddenException('You can only work in your own campus.');
    return { id: campus.id, name: campus.name };
  }
}
