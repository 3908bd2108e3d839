import type { AgentRunUsageReply, RunUsage } from '@naalya/agent-tools';
import type { RunUsageReports } from '../runs/run-usage.client.js';

/** One scripted answer to a usage report: a reply, a failure (no answer), or a function deciding when it arrives. */
export type FakeUsageAnswer = AgentRunUsageReply | Error | (() => AgentRunUsageReply | Promise<AgentRunUsageReply>);

/**
 * The usage report server as a queue of scripted answers, then "go on" with the reports' running totals. Records every
 * report.
 */
export class FakeRunUsage implements RunUsageReports {
  readonly reports: { dispatchToken: string; usage: RunUsage }[] = [];
  private readonly answers: FakeUsageAnswer[] = [];

  answer(...answers: FakeUsageAnswer[]): this {
    this.answers.push(...answers);
    return this;
  }

  get totals(): RunUsage {
    return this.reports.reduce((sum, { usage }) => ({ inputTokens: sum.inputTokens + usage.inputTokens, outputTokens: sum.outputTokens + usage.outputTokens }), {
      inputTokens: 0,
      outputTokens: 0,
    });
  }

  async report(dispatchToken: string, usage: RunUsage): Promise<AgentRunUsageReply> {
    this.reports.push({ dispatchToken, usage });
    const next = this.answers.shift() ?? { proceed: true, run: this.totals };
    if (next instanceof Error) throw next;
    return typeof next === 'function' ? next() : next;
  }
}
