import { Injectable } from '@nestjs/common';

/** Whether the tool transport holds a live broker connection; the transport reports, readiness reads. */
@Injectable()
export class BrokerStatus {
  private connected = false;

  report(connected: boolean): void {
    this.connected = connected;
  }

  isConnected(): boolean {
    return this.connected;
  }
}
