import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Action, Resource } from '@naalya/access';
import { listCampusesTool, type AgentToolPayload } from '@naalya/agent-tools';
import { CampusService } from '../../../campuses/campus.service.js';
import { ToolExecutor } from '../tool-executor.js';

export type ListCampusesPayload = AgentToolPayload[typeof listCampusesTool.event];

@Controller()
export class CampusesToolsController {
  constructor(
    private readonly executor: ToolExecutor,
    private readonly campusService: CampusService,
  ) {}

  @MessagePattern(listCampusesTool.event)
  listCampuses(@Payload() payload: ListCampusesPayload) {
    return this.executor.execute(
      payload,
      listCampusesTool.schema,
      { auth: 'casl', gate: { action: Action.LIST, resource: Resource.CAMPUS } },
      (_args, jwt) => this.campusService.list(jwt),
    );
  }
}
