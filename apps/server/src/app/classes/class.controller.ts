import { Body, Controller, Get, Param, Post, Query } from '@nestjs/common';
import { ActionAuditAction, AuditResourceType } from '@naalya/access';
import { listClassStudentsTool, listMyClassesTool, recordAttendanceTool } from '@naalya/agent-tools';
import { Audit } from '../core/audit/audit.decorator.js';
import { CurrentUser } from '../core/auth/current-user.decorator.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { parseDto } from '../core/http/parse-dto.js';
import { ClassService } from './class.service.js';

/** Relationship routes: the service checks that the caller is the class teacher (or a director of studies). */
@Controller('classes')
export class ClassController {
  constructor(private readonly classService: ClassService) {}

  @Get('mine')
  listMine(@Query() query: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.classService.listMine(parseDto(listMyClassesTool.schema, query), jwt);
  }

  @Get(':classId/students')
  listStudents(@Param('classId') classId: string, @Query() query: object, @CurrentUser() jwt: JwtPayload) {
    return this.classService.listStudents(parseDto(listClassStudentsTool.schema, { ...query, classId }), jwt);
  }

  @Post(':classId/attendance')
  @Audit({
    action: ActionAuditAction.RECORD,
    resourceType: AuditResourceType.ATTENDANCE,
    resourceId: (_result, params) => params['classId'],
  })
  recordAttendance(@Param('classId') classId: string, @Body() body: object, @CurrentUser() jwt: JwtPayload) {
    return this.classService.recordAttendance(parseDto(recordAttendanceTool.schema, { ...body, classId }), jwt);
  }
}
