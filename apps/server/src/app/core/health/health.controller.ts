import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Public } from '../auth/current-user.decorator.js';
import { BrokerStatus } from './broker-status.js';

@Controller()
export class HealthController {
  constructor(
    private readonly dataSource: DataSource,
    private readonly brokerStatus: BrokerStatus,
  ) {}

  /** Liveness: the process answers. */
  @Public()
  @Get('health')
  health() {
    return { status: 'ok' };
  }

  /** Readiness: the database answers and the tool transport is connected to the broker. */
  @Public()
  @Get('ready')
  async ready() {
    const database = await this.dataSource.query('SELECT 1').then(
      () => 'up',
      () => 'down',
    );
    const broker = this.brokerStatus.isConnected() ? 'up' : 'down';
    const result = { status: database === 'up' && broker === 'up' ? 'ready' : 'not ready', database, broker };
    if (result.status !== 'ready') throw new ServiceUnavailableException(result);
    return result;
  }
}
