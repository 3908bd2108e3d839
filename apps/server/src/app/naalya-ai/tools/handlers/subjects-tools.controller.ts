import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Action, Resource } from '@naalya/access';
import { listSubjectsTool, type AgentToolPayload } from '@naalya/agent-tools';
import { SubjectService } from '../../../subjects/subject.service.js';
import { ToolExecutor } from '../tool-executor.js';

export type ListSubjectsPayload = AgentToolPayload[typeof listSubjectsTool.event];

@Controller()
export class SubjectsToolsController {
  constructor(
    private readonly executor: ToolExecutor,
    private readonly subjectService: SubjectService,
  ) {}

  @MessagePattern(listSubjectsTool.event)
  listSubjects(@Payload() payload: ListSubjectsPayload) {
    return this.executor.execute(
      payload,
      listSubjectsTool.schema,
      { auth: 'casl', gate: { action: Action.LIST, resource: Resource.SUBJECT } },
      (_args, jwt) => this.subjectService.list(jwt),
    );
  }
}
