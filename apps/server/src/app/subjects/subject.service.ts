import { Injectable } from '@nestjs/common';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { repo } from '../core/tenancy/tenant-context.js';
import { SubjectEntity } from './subject.entity.js';

@Injectable()
export class SubjectService {
  async list(_jwt: JwtPayload): Promise<Pick<SubjectEntity, 'id' | 'name' | 'code'>[]> {
    return repo(SubjectEntity).find({ select: { id: true, name: true, code: true }, order: { name: 'ASC' } });
  }
}
