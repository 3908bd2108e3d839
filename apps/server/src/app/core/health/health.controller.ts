import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Public } from '../auth/current-user.decorator.js';

@Controller()
export class HealthController {
  constructor(private readonly dataSource: DataSource) {}

  /** Liveness: the process answers. */
  @Public()
  @Get('health')
  health() {
    return { status: 'ok' };
  }

  /** Readiness: the dependencies a call needs are reachable. */
  @Public()
  @Get('ready')
  async ready() {
    const database = await this.dataSource.query('SELECT 1').then(
      () => 'up',
      () => 'down',
    );
    const result = { status: database === 'up' ? 'ready' : 'not ready', database };
    if (database !== 'up') throw new ServiceUnavailableException(result);
    return result;
  }
}
