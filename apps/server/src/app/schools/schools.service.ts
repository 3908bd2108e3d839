import { BadRequestException, ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { UserType, type SchoolSummary } from '@naalya/access';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { currentManager, currentSchoolId } from '../core/tenancy/tenant-context.js';
import { isKnownTimeZone, unknownTimeZoneMessage } from './time-zones.js';

export const PLATFORM_SCHOOL_LIST_ERROR = 'Only a platform administrator can list the schools to act in.';

/** At most this many schools in the picker's list (alphabetical): a bound, far above the platform's size. */
export const SCHOOL_LIST_LIMIT = 1_000;

export type UpdateSchoolDto = { timeZone: string };

type SchoolRow = { id: string; name: string; time_zone: string };
const summary = (row: SchoolRow): SchoolSummary => ({ id: row.id, name: row.name, timeZone: row.time_zone });

/** Schools as a whole: the list a platform administrator picks from, and a school's own settings. */
@Injectable()
export class SchoolsService {
  /**
   * Every school a platform administrator may act in. Read in their unscoped frame, where row-level security shows
   * every school; staff are refused outright (their frame would only show their own school anyway).
   */
  async list(caller: JwtPayload): Promise<SchoolSummary[]> {
    if (caller.type !== UserType.PLATFORM_ADMIN) throw new ForbiddenException(PLATFORM_SCHOOL_LIST_ERROR);
    const rows = (await currentManager().query(`SELECT id, name, time_zone FROM schools ORDER BY name, id LIMIT $1`, [SCHOOL_LIST_LIMIT])) as SchoolRow[];
    return rows.map(summary);
  }

  /**
   * Sets the settings of the school this unit of work is pinned to: the caller's own, or the one a platform
   * administrator chose for the session. An unknown zone is refused before anything is written.
   */
  async update(dto: UpdateSchoolDto): Promise<SchoolSummary> {
    if (!isKnownTimeZone(dto.timeZone)) throw new BadRequestException(unknownTimeZoneMessage(dto.timeZone));
    const [rows] = (await currentManager().query(`UPDATE schools SET time_zone = $2 WHERE id = $1 RETURNING id, name, time_zone`, [
      currentSchoolId(),
      dto.timeZone,
    ])) as [SchoolRow[], number];
    const [row] = rows;
    if (!row) throw new NotFoundException('School not found.');
    return summary(row);
  }
}
