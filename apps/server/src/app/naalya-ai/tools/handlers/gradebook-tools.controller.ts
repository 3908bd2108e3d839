import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Action, ActionAuditAction, AuditResourceType, Resource } from '@naalya/access';
import { getGradebookTool, getResultsSummaryTool, recordMarksTool, type AgentToolPayload } from '@naalya/agent-tools';
import { GradebookService, type MarksRecorded } from '../../../gradebook/gradebook.service.js';
import { ToolExecutor } from '../tool-executor.js';

export type GetGradebookPayload = AgentToolPayload[typeof getGradebookTool.event];
export type RecordMarksPayload = AgentToolPayload[typeof recordMarksTool.event];
export type GetResultsSummaryPayload = AgentToolPayload[typeof getResultsSummaryTool.event];

@Controller()
export class GradebookToolsController {
  constructor(
    private readonly executor: ToolExecutor,
    private readonly gradebookService: GradebookService,
  ) {}

  /** Relationship, never STUDENT READ: only the subjects and streams the caller teaches. */
  @MessagePattern(getGradebookTool.event)
  getGradebook(@Payload() payload: GetGradebookPayload) {
    return this.executor.execute(
      payload,
      getGradebookTool.schema,
      { auth: 'relationship', scopeNote: 'This covers only the subjects you teach in this class, not the whole class.' },
      (dto, jwt) => this.gradebookService.getGradebook(dto, jwt),
    );
  }

  /** One audit row for one call, however many marks it writes. */
  @MessagePattern(recordMarksTool.event)
  recordMarks(@Payload() payload: RecordMarksPayload) {
    return this.executor.execute(
      payload,
      recordMarksTool.schema,
      {
        auth: 'relationship',
        audit: {
          action: ActionAuditAction.RECORD,
          resourceType: AuditResourceType.MARKS,
          resourceId: (result: MarksRecorded) => result.teachingAssignmentId,
        },
      },
      (dto, jwt) => this.gradebookService.recordMarks(dto, jwt),
    );
  }

  @MessagePattern(getResultsSummaryTool.event)
  getResultsSummary(@Payload() payload: GetResultsSummaryPayload) {
    return this.executor.execute(
      payload,
      getResultsSummaryTool.schema,
      { auth: 'casl', gate: { action: Action.READ, resource: Resource.RESULT } },
      (dto, jwt) => this.gradebookService.resultsSummary(dto, jwt),
    );
  }
}
