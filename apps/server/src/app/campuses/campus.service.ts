import { Injectable, NotFoundException } from '@nestjs/common';
import type { CampusSummary } from '@naalya/access';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { repo } from '../core/tenancy/tenant-context.js';
import { CampusEntity } from './campus.entity.js';

@Injectable()
export class CampusService {
  /** Resolved inside the tenant frame: another school's campus reads as not found, never as forbidden. */
  async findVisible(campusId: string): Promise<CampusEntity> {
    const campus = await repo(CampusEntity).findOneBy({ id: campusId });
    if (!campus) throw new NotFoundException('Campus not found.');
    return campus;
  }

  /** A campus the call is narrowed to (pinned by campus mode or named by the model), checked to be in this school. */
  async narrowTo(campusId: string | undefined): Promise<string | undefined> {
    return campusId ? (await this.findVisible(campusId)).id : undefined;
  }

  async list(_jwt: JwtPayload): Promise<CampusSummary[]> {
    return repo(CampusEntity).find({ select: { id: true, name: true }, order: { name: 'ASC' } });
  }
}
