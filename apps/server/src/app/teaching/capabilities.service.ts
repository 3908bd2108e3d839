import { Injectable } from '@nestjs/common';
import type { AgentCapabilities } from '@naalya/agent-tools';
import { ClassEntity } from '../classes/class.entity.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { repo } from '../core/tenancy/tenant-context.js';
import { DirectorOfStudiesAppointmentEntity } from './director-of-studies-appointment.entity.js';
import { TeachingAssignmentEntity } from './teaching-assignment.entity.js';

/** The caller's hats, from data: the roster of specialists follows them, and the model cannot add one. */
@Injectable()
export class CapabilitiesService {
  async resolve(jwt: JwtPayload): Promise<AgentCapabilities> {
    // One after another: the unit of work has one connection, which runs one query at a time.
    return {
      isClassTeacher: await repo(ClassEntity).existsBy({ classTeacherId: jwt.sub }),
      isSubjectTeacher: await repo(TeachingAssignmentEntity).existsBy({ teacherId: jwt.sub }),
      isDirectorOfStudies: await repo(DirectorOfStudiesAppointmentEntity).existsBy({ userId: jwt.sub }),
    };
  }
}
