import { Injectable, NotFoundException } from '@nestjs/common';
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
}
