import { Controller, Get } from '@nestjs/common';
import type { CallerProfile } from '@naalya/access';
import { currentManager } from '../tenancy/tenant-context.js';
import { CurrentUser } from './current-user.decorator.js';
import { IdentityService } from './identity.service.js';
import type { JwtPayload } from './jwt-payload.js';

/**
 * Who the caller is, read fresh in their unit of work (the Hub's header): display only, it grants nothing. Reads with
 * no side effect, unlike POST /agent/context, which opens a run and mints a dispatch token.
 */
@Controller('auth')
export class MeController {
  constructor(private readonly identityService: IdentityService) {}

  @Get('me')
  async me(@CurrentUser() jwt: JwtPayload): Promise<CallerProfile> {
    const user = await this.identityService.assertCurrent(jwt);
    const [place] = (await currentManager().query(
      `SELECT (SELECT name FROM schools WHERE id = $1) AS "schoolName", (SELECT time_zone FROM schools WHERE id = $1) AS "schoolTimeZone",
              (SELECT name FROM campuses WHERE id = $2) AS "campusName",
              (SELECT COALESCE(array_agg(r.name ORDER BY r.name), '{}') FROM roles r INNER JOIN user_x_roles ur ON ur.role_id = r.id
                WHERE ur.user_id = $3) AS roles`,
      [user.schoolId, user.campusId, user.id],
    )) as { schoolName: string | null; schoolTimeZone: string | null; campusName: string | null; roles: string[] }[];
    return {
      id: user.id,
      fullName: user.fullName,
      email: user.email,
      userType: user.userType,
      schoolId: user.schoolId,
      schoolName: place?.schoolName ?? null,
      schoolTimeZone: place?.schoolTimeZone ?? null,
      campusId: user.campusId,
      campusName: place?.campusName ?? null,
      roles: place?.roles ?? [],
    };
  }
}
