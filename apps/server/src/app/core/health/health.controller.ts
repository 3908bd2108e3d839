import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Public } from '../auth/current-user.decorator.js';
import { BrokerStatus } from './broker-status.js';
import { DeadLetterDepths } from './dead-letter-depths.js';

@Controller()
export class HealthController {
  constructor(
    private readonly dataSource: DataSource,
    private readonly brokerStatus: BrokerStatus,
    private readonly deadLetterDepths: DeadLetterDepths,
  ) {}

  /** Liveness: the process answers. */
  @Public()
  @Get('health')
  health() {
    return { status: 'ok' };
  }

  /**
   * Readiness: the database answers and the tool transport is connected to the broker. The detail also reports how
   * many messages wait in each dead-letter queue (null when the broker does not say); their depth never makes the
   * server unready.
   */
  @Public()
  @Get('ready')
  async ready() {
    const [database, deadLetters] = await Promise.all([
      this.dataSource.query('SELECT 1').then(
        () => 'up',
        () => 'down',
      ),
      this.deadLetterDepths.read(),
    ]);
    const broker = this.brokerStatus.isConnected() ? 'up' : 'down';
    const result = { status: database === 'up' && broker === 'up' ? 'ready' : 'not ready', database, broker, deadLetters };
    if (result.status !== 'ready') throw new ServiceUnavailableException(result);
    return result;
  }
}
