import { randomUUID } from 'node:crypto';
import { ForbiddenException, Injectable } from '@nestjs/common';
import { UserType } from '@naalya/access';
import { agentRuntimeContextSchema, type AgentRuntimeContext } from '@naalya/agent-tools';
import { CampusService } from '../../campuses/campus.service.js';
import { AppAbilityFactory } from '../../core/authorization/app-ability.factory.js';
import { IdentityService } from '../../core/auth/identity.service.js';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';

export type MintContextDto = { campusId?: string; targetSchoolId?: string; threadId?: string };

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
  ) {}

  async mint(dto: MintContextDto, jwt: JwtPayload): Promise<AgentRuntimeContext> {
    const user = await this.identityService.assertCurrent(jwt);
    if (dto.targetSchoolId && user.userType !== UserType.PLATFORM_ADMIN) {
      throw new ForbiddenException('Only platform administrators choose a target school.');
    }
    const runMode: AgentRuntimeContext['runMode'] = dto.campusId
      ? { mode: 'campus', campus: await this.campusInReach(dto.campusId, user.campusId) }
      : { mode: 'school', ...(dto.targetSchoolId ? { targetSchoolId: dto.targetSchoolId } : {}) };
    const ability = await this.abilityFactory.createForUser(jwt);
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
      run: { runId: randomUUID(), threadId: dto.threadId ?? randomUUID() },
      // Display only: the worker shapes what Rover offers from it and never decides with it.
      userPermissions: JSON.parse(JSON.stringify(ability.rules)),
      // Teaching hats arrive with the school domain; until then nobody is eligible for a specialist.
      capabilities: { isClassTeacher: false, isSubjectTeacher: false, isDirectorOfStudies: false },
    });
  }

  /** A campus-limited member of staff may only open a chat on their own campus. */
  private async campusInReach(campusId: string, homeCampusId: string | null) {
    const campus = await this.campusService.findVisible(campusId);
    if (homeCampusId && homeCampusId !== campus.id) throw new ForbiddenException('You can only work in your own campus.');
    return { id: campus.id, name: campus.name };
  }
}
