import { describe, expect, it } from 'vitest';
import { FakeToolCaller } from '../../testing/fake-tool-caller.fixture.js';
import { TimedToolCaller } from './timed-tool-caller.js';
import { listStaffPayload } from './tool-context.fixture.js';

/** Records every call, then never answers. */
class HangingToolCaller extends FakeToolCaller {
  override async call(...args: Parameters<FakeToolCaller['call']>): ReturnType<FakeToolCaller['call']> {
    await super.call(...args);
    return new Promise<never>(() => undefined);
  }
}

describe('TimedToolCaller: the step signal', () => {
  it('a call waiting for its answer stops waiting when the step is aborted, with the abort reason', async () => {
    const inner = new HangingToolCaller();
    const step = new AbortController();
    const caller = new TimedToolCaller(inner, step.signal);
    const reason = new Error('the lease was lost');

    const waiting = caller.call('list.staff', listStaffPayload());
    step.abort(reason);

    await expect(waiting).rejects.toBe(reason);
    expect(inner.calls).toHaveLength(1);
    expect(caller.hopMs(listStaffPayload().meta.callId)).toEqual(expect.any(Number));
  });

  it('no call is sent once the step is aborted', async () => {
    const inner = new FakeToolCaller();
    const step = new AbortController();
    step.abort(new Error('cancelled'));

    await expect(new TimedToolCaller(inner, step.signal).call('list.staff', listStaffPayload())).rejects.toThrow('cancelled');
    expect(inner.calls).toEqual([]);
  });

  it('an answer before any abort passes through unchanged', async () => {
    const inner = new FakeToolCaller().answer('list.staff', { data: [], scopeContext: 'ok' });
    const step = new AbortController();

    expect(await new TimedToolCaller(inner, step.signal).call('list.staff', listStaffPayload())).toEqual({ data: [], scopeContext: 'ok' });
    step.abort();
  });
});
