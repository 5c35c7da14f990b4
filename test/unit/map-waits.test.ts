/**
 * pauseBeforeRetry: a retry's backoff ends early when the slot map changed in a way that
 * helps (wake() says so), including a change that happened after the attempt failed but
 * before the pause began (a pipeline pauses only once every node group is back).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ClusterHost } from '../../src/cluster/cluster-host.js';
import { pauseBeforeRetry } from '../../src/cluster/map-waits.js';
import type { ResolvedCall } from '../../src/pool/call-options.js';

/** The two things the wait reads from the topology, driven by the test. */
function fakeTopology(version: number) {
  let ctl = new AbortController();
  const t = {
    version,
    get changed() {
      return ctl.signal;
    },
    change() {
      t.version++;
      const old = ctl;
      ctl = new AbortController();
      old.abort();
    },
  };
  return t;
}

const call = { signal: undefined, deadline: 0 } as unknown as ResolvedCall;

/** Whether `p` settled after the microtasks queued so far ran (timers frozen). */
async function settledNow(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  for (let i = 0; i < 10; i++) await Promise.resolve();
  return done;
}

describe('pauseBeforeRetry', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it.each([
    // [case, version at failure, version now, wake(), ends at once]
    ['the map changed since the failure and helps: no wait', 3, 4, true, true],
    ['the map changed since the failure but does not help: the whole delay', 3, 4, false, false],
    ['no change since the failure: the whole delay', 4, 4, true, false],
    ['no version given (single command, nothing in between): the whole delay', undefined, 4, true, false],
  ])('%s', async (_case, since, now, wake, atOnce) => {
    const top = fakeTopology(now);
    const h = { topology: top, isClosed: () => false } as unknown as ClusterHost;
    const p = pauseBeforeRetry(h, 10_000, call, () => wake, since);
    expect(await settledNow(p)).toBe(atOnce);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await settledNow(p)).toBe(true);
  });

  it('a change during the wait that helps ends it; one that does not keeps waiting', async () => {
    const top = fakeTopology(1);
    const h = { topology: top, isClosed: () => false } as unknown as ClusterHost;
    let helps = false;
    const p = pauseBeforeRetry(h, 10_000, call, () => helps, 1);
    top.change();
    expect(await settledNow(p)).toBe(false);
    helps = true;
    top.change();
    expect(await settledNow(p)).toBe(true);
  });
});
