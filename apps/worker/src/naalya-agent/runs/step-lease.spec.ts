import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeRunLeases, TEST_DISPATCH_TOKEN } from '../testing/fake-run-leases.fixture.js';
import { RunLeaseLostError, StepLease, type ClaimResult } from './step-lease.js';

const logger = () => ({ log: vi.fn(), warn: vi.fn(), error: vi.fn() });

const claim = async (leases: FakeRunLeases, log = logger()) => {
  const result: ClaimResult = await StepLease.claim({ leases, dispatchToken: TEST_DISPATCH_TOKEN, runId: 'run-1', logger: log });
  if (!result.granted) throw new Error(`not granted: ${result.reason}`);
  return result.lease;
};

describe('StepLease: claim', () => {
  it('a refusal is returned with its reason, and nothing is scheduled', async () => {
    const leases = new FakeRunLeases().answer('claim', { granted: false, reason: 'superseded' });

    expect(await StepLease.claim({ leases, dispatchToken: TEST_DISPATCH_TOKEN, runId: 'run-1', logger: logger() })).toEqual({ granted: false, reason: 'superseded' });
  });

  it('no answer for the whole claim timeout is a refusal too (unanswered), never a throw', async () => {
    const leases = new FakeRunLeases().answer('claim', ...Array.from({ length: 20 }, () => new Error('not connected to RabbitMQ')));

    expect(await StepLease.claim({ leases, dispatchToken: TEST_DISPATCH_TOKEN, runId: 'run-1', logger: logger() })).toEqual({
      granted: false,
      reason: 'unanswered',
      detail: 'not connected to RabbitMQ',
    });
  });

  it('the heartbeat timer does not keep the process alive', async () => {
    const timeouts = () => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
    const before = timeouts();
    const lease = await claim(new FakeRunLeases(60_000));

    expect(timeouts()).toBe(before);
    lease.stop();
  });
});

describe('StepLease: the heartbeat', () => {
  beforeEach(() => {
    // The lease is counted on the monotonic clock, so it is faked too.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('renews every third of the lease, each renew given up within that third', async () => {
    const leases = new FakeRunLeases(3_000);
    const lease = await claim(leases);
    expect(lease.renewIntervalMs).toBe(1_000);

    await vi.advanceTimersByTimeAsync(999);
    expect(leases.requestsOf('renew')).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(leases.requestsOf('renew')).toEqual([expect.objectContaining({ dispatchToken: TEST_DISPATCH_TOKEN, timeoutMs: 1_000 })]);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(leases.requestsOf('renew')).toHaveLength(3);
    expect(lease.signal.aborted).toBe(false);
    lease.stop();
  });

  it('follows the lease the server grants on a renew', async () => {
    const leases = new FakeRunLeases(3_000).answer('renew', { granted: true, leaseMs: 600 });
    const lease = await claim(leases);

    await vi.advanceTimersByTimeAsync(1_000);
    expect(lease.renewIntervalMs).toBe(200);
    await vi.advanceTimersByTimeAsync(200);
    expect(leases.requestsOf('renew')).toHaveLength(2);
    lease.stop();
  });

  it.each(['cancelled', 'superseded', 'ended', 'refused'] as const)('a renew refused as %s aborts the signal with that loss, and renews no more', async (reason) => {
    const leases = new FakeRunLeases(3_000).answer('renew', { granted: false, reason });
    const log = logger();
    const lease = await claim(leases, log);

    await vi.advanceTimersByTimeAsync(1_000);

    expect(lease.signal.aborted).toBe(true);
    expect(lease.signal.reason).toBeInstanceOf(RunLeaseLostError);
    expect((lease.signal.reason as RunLeaseLostError).loss).toBe(reason);
    expect(lease.lost).toBe(reason);
    expect([...log.log.mock.calls, ...log.warn.mock.calls].flat().join('\n')).toContain(`Run run-1: its lease was lost (${reason})`);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(leases.requestsOf('renew')).toHaveLength(1);
    lease.release();
    expect(leases.requestsOf('release')).toEqual([]);
  });

  it('a renew that gets no answer is retried at the next tick, and a later grant keeps the lease', async () => {
    const leases = new FakeRunLeases(3_000).answer('renew', new Error('no reply within 1000 ms'));
    const log = logger();
    const lease = await claim(leases, log);

    await vi.advanceTimersByTimeAsync(1_000);
    expect(lease.signal.aborted).toBe(false);
    expect(log.warn).toHaveBeenCalledWith(expect.stringContaining('renewing its lease got no answer, retrying'));
    await vi.advanceTimersByTimeAsync(1_000);
    await vi.advanceTimersByTimeAsync(3_000);

    expect(leases.requestsOf('renew')).toHaveLength(5);
    expect(lease.signal.aborted).toBe(false);
    lease.stop();
  });

  it('renews that get no answer abort once the lease would have expired before the next one (expired)', async () => {
    const leases = new FakeRunLeases(3_000).answer('renew', new Error('no answer'), new Error('no answer'), new Error('no answer'));
    const lease = await claim(leases);

    // At 1 s: no answer, the next chance (2 s) is within the lease: retried.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(lease.signal.aborted).toBe(false);
    // At 2 s: no answer again, and by the next chance (3 s) the lease granted at 0 has run out.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(lease.signal.aborted).toBe(true);
    expect(lease.lost).toBe('expired');
    expect(leases.requestsOf('renew')).toHaveLength(2);
  });

  it('held(): by its own clock, a step whose last grant is a whole lease old no longer holds it (a frozen process waking up)', async () => {
    // The renew is sent but its answer never comes back: nothing else will tell the step.
    const leases = new FakeRunLeases(3_000).answer('renew', () => new Promise(() => undefined));
    const lease = await claim(leases);

    await vi.advanceTimersByTimeAsync(2_999);
    expect(lease.held()).toBe(true);
    await vi.advanceTimersByTimeAsync(1);

    expect(lease.held()).toBe(false);
    expect(lease.lost).toBe('expired');
    expect(lease.signal.aborted).toBe(true);
  });

  it('stop() ends the heartbeat; release() gives the lease back once, without waiting for the answer', async () => {
    const leases = new FakeRunLeases(3_000).answer('release', () => new Promise(() => undefined));
    const lease = await claim(leases);

    lease.release();
    lease.stop();
    await vi.advanceTimersByTimeAsync(10_000);

    expect(leases.requests.map(({ action, timeoutMs }) => ({ action, timeoutMs }))).toEqual([
      { action: 'claim', timeoutMs: 1_000 },
      { action: 'release', timeoutMs: 2_000 },
    ]);
  });

  it('a release that fails is logged, never thrown', async () => {
    const leases = new FakeRunLeases(3_000).answer('release', new Error('not connected to RabbitMQ'));
    const log = logger();
    const lease = await claim(leases, log);

    lease.release();
    await vi.advanceTimersByTimeAsync(0);

    expect(log.warn).toHaveBeenCalledWith(expect.stringContaining('releasing its lease failed (it will expire): not connected to RabbitMQ'));
  });
});
