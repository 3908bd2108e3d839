import { ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { IsNull } from 'typeorm';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { repo } from '../core/tenancy/tenant-context.js';
import { DirectorOfStudiesAppointmentEntity } from '../teaching/director-of-studies-appointment.entity.js';
import { ClassEntity } from './class.entity.js';

/**
 * Who may act on a class is a relationship, not a permission: its class teacher, or a director of
 * studies over its campus. Holding STUDENT READ is not enough.
 */
@Injectable()
export class ClassroomAccessService {
  /** A class of another school, or of another campus than the one the call is narrowed to, reads as not found. */
  async findClass(classId: string, campusId: string | undefined): Promise<ClassEntity> {
    const stream = await repo(ClassEntity).findOneBy(campusId ? { id: classId, campusId } : { id: classId });
    if (!stream) throw new NotFoundException('Class not found.');
    return stream;
  }

  async assertClassStudentReadAccess(classId: string, jwt: JwtPayload, campusId?: string): Promise<ClassEntity> {
    const stream = await this.findClass(classId, campusId);
    if (stream.classTeacherId === jwt.sub || (await this.isDirectorOfStudiesFor(stream.campusId, jwt))) return stream;
    throw new ForbiddenException("Only the class teacher or a director of studies can see this class's students.");
  }

  async assertClassTeacher(classId: string, jwt: JwtPayload, campusId?: string): Promise<ClassEntity> {
    const stream = await this.findClass(classId, campusId);
    if (stream.classTeacherId !== jwt.sub) throw new ForbiddenException('Only the class teacher of this class can do that.');
    return stream;
  }

  /** Appointed over this campus, or over the whole school. */
  async isDirectorOfStudiesFor(campusId: string, jwt: JwtPayload): Promise<boolean> {
    return repo(DirectorOfStudiesAppointmentEntity).existsBy([
      { userId: jwt.sub, campusId },
      { userId: jwt.sub, campusId: IsNull() },
    ]);
  }
}
