/**
 * The cluster's refresh scheduler as a unit (src/cluster/refresh-scheduler.ts), under fake
 * timers, with a scripted refresh: bursts of triggers, the rate limit, the nodes a refresh asks
 * first, `refreshed()` waiters, trouble polling and the down-node watch, the periodic refresh,
 * and close(): what the cluster integration tests reach only by luck of timing.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RefreshScheduler } from '../../src/cluster/refresh-scheduler.js';
import type { NodeAddress } from '../../src/types.js';

const N1 = { host: '10.0.0.1', port: 7000 };
const N2 = { host: '10.0.0.2', port: 7000 };

function harness(o: { minInterval?: number; interval?: number; jitter?: number; watchInterval?: number; random?: () => number } = {}) {
  const runs: Array<{ at: number; prefer: NodeAddress[]; since: number }> = [];
  let hold: (() => void) | undefined;
  let holding = false;
  const serving = new Set(['10.0.0.1:7000', '10.0.0.2:7000']);
  const s = new RefreshScheduler({ minInterval: o.minInterval ?? 1000, interval: o.interval ?? 0, jitter: o.jitter ?? 0, ...(o.watchInterval ? { watchInterval: o.watchInterval } : {}), random: o.random ?? (() => 0) }, {
    refresh: (prefer, since) => {
      runs.push({ at: Date.now(), prefer: [...prefer], since });
      if (!holding) return Promise.resolve();
      return new Promise<void>((r) => (hold = r));
    },
    serving: () => serving,
  });
  return {
    s,
    runs,
    serving,
    /** Refreshes stay in flight until `finish()`. */
    holdRefreshes() {
      holding = true;
    },
    finish() {
      holding = false;
      hold?.();
      hold = undefined;
    },
  };
}

const settle = () => vi.advanceTimersByTimeAsync(0);

beforeEach(() => {
  vi.useFakeTimers({ now: 5_000_000 });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('triggers are coalesced and rate limited', () => {
  it('a burst of 100 triggers during a refresh runs exactly one more, after minInterval', async () => {
    const h = harness({ minInterval: 1000 });
    h.holdRefreshes();
    h.s.request();
    await settle();
    expect(h.runs).toHaveLength(1);
    for (let i = 0; i < 100; i++) h.s.request();
    h.finish();
    await settle();
    expect(h.runs).toHaveLength(1); // the next start waits for minInterval after the last start
    await vi.advanceTimersByTimeAsync(1000);
    expect(h.runs).toHaveLength(2);
    expect(h.runs[1]!.at - h.runs[0]!.at).toBeGreaterThanOrEqual(1000);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(h.runs).toHaveLength(2);
    await h.s.close();
  });

  it('with no rate limit (minInterval 0) a burst during a refresh still runs one at a time, and one more after', async () => {
    const h = harness({ minInterval: 0 });
    h.holdRefreshes();
    h.s.request();
    await settle();
    for (let i = 0; i < 100; i++) h.s.request();
    await settle();
    expect(h.runs).toHaveLength(1); // never two at once
    h.finish();
    await settle();
    expect(h.runs).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1000);
    expect(h.runs).toHaveLength(2);
    await h.s.close();
  });

  it('triggers inside the interval give one delayed refresh that asks every node they named first', async () => {
    const h = harness({ minInterval: 500 });
    h.s.request();
    await settle();
    h.s.request([N1]);
    h.s.request([N2]);
    h.s.request([N1]);
    await vi.advanceTimersByTimeAsync(499);
    expect(h.runs).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.runs).toHaveLength(2);
    expect(h.runs[1]!.prefer).toEqual([N1, N2]);
    await h.s.close();
  });

  it('triggers and refreshed() during the rate-limit wait join the delayed refresh: one more run, then the waiter resolves', async () => {
    const h = harness({ minInterval: 500 });
    h.s.request();
    await settle();
    let done = false;
    for (let i = 0; i < 20; i++) h.s.request();
    void h.s.refreshed().then(() => (done = true));
    await vi.advanceTimersByTimeAsync(250);
    h.s.request([N2]);
    await vi.advanceTimersByTimeAsync(249);
    expect(h.runs).toHaveLength(1);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.runs).toHaveLength(2);
    expect(h.runs[1]!.prefer).toEqual([N2]);
    expect(done).toBe(true);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(h.runs).toHaveLength(2);
    expect(h.s.refreshes).toBe(2);
    await h.s.close();
  });

  it('refreshed() waits for a refresh that starts after the call, not for the one already running', async () => {
    const h = harness({ minInterval: 0 });
    h.holdRefreshes();
    h.s.request();
    await settle();
    let done = false;
    void h.s.refreshed().then(() => (done = true));
    h.finish(); // the first one ends: the waiter asked after it started
    h.holdRefreshes();
    await settle();
    expect(h.runs).toHaveLength(2);
    expect(done).toBe(false);
    h.finish();
    await settle();
    expect(done).toBe(true);
    await h.s.close();
  });
});

describe('trouble polling', () => {
  it('while a command fails: refreshes from minInterval, doubling up to watchInterval, until it finishes, then none', async () => {
    const h = harness({ minInterval: 200, watchInterval: 800 });
    h.s.started();
    const done = h.s.failing();
    expect(h.s.polling).toBe(true);
    // A second failing command does not restart the doubling.
    const done2 = h.s.failing();
    await vi.advanceTimersByTimeAsync(200 + 400 + 800 + 800 + 1);
    expect(h.runs.map((r) => r.at - 5_000_000)).toEqual([200, 600, 1400, 2200]);
    done();
    done(); // idempotent
    done2();
    const n = h.runs.length;
    await vi.advanceTimersByTimeAsync(5000);
    expect(h.runs.length).toBeLessThanOrEqual(n + 1); // at most the poll already armed
    expect(h.s.polling).toBe(false);
    await h.s.close();
  });

  it('a down node that serves slots is watched with a doubling period, and no longer once it serves none', async () => {
    const h = harness({ minInterval: 100, interval: 0 });
    h.s.started();
    h.s.nodeDown(N1);
    await vi.advanceTimersByTimeAsync(100 + 200 + 400 + 800);
    const gaps = h.runs.map((r, i) => (i === 0 ? 0 : r.at - h.runs[i - 1]!.at)).slice(1);
    expect(h.runs.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < gaps.length; i++) expect(gaps[i]).toBeGreaterThanOrEqual(gaps[i - 1]!);
    expect(h.s.downKeys()).toEqual(new Set(['10.0.0.1:7000']));
    // The cluster moved its slots away: nothing left to watch, polling stops.
    h.serving.delete('10.0.0.1:7000');
    await vi.advanceTimersByTimeAsync(5000);
    expect(h.s.polling).toBe(false);
    expect(h.s.downKeys().size).toBe(0);
    await h.s.close();
  });

  it('a node that came back (nodeUp) is no longer watched', async () => {
    const h = harness({ minInterval: 100 });
    h.s.nodeDown(N2);
    h.s.nodeUp(N2);
    await vi.advanceTimersByTimeAsync(1000);
    expect(h.s.polling).toBe(false);
    expect(h.runs).toEqual([]);
    await h.s.close();
  });

  it('a command that starts failing while a slow down-node poll is pending speeds polling up', async () => {
    const h = harness({ minInterval: 100, interval: 60_000 });
    h.s.started();
    h.s.nodeDown(N1);
    await vi.advanceTimersByTimeAsync(100 + 200 + 400 + 800 + 1600); // period now 3200 ms
    const before = h.runs.length;
    h.s.failing();
    await vi.advanceTimersByTimeAsync(300);
    expect(h.runs.length).toBeGreaterThanOrEqual(before + 2);
    await h.s.close();
  });
});

describe('periodic refresh and close()', () => {
  it('refreshes every interval once started, and close() stops every timer and wakes waiters', async () => {
    const h = harness({ minInterval: 0, interval: 1000 });
    h.s.started();
    h.s.startPeriodic();
    await vi.advanceTimersByTimeAsync(3000);
    expect(h.runs).toHaveLength(3);
    h.holdRefreshes();
    await vi.advanceTimersByTimeAsync(1000);
    let woke = false;
    void h.s.refreshed().then(() => (woke = true));
    h.s.nodeDown(N1);
    h.s.failing();
    const closing = h.s.close();
    await settle();
    expect(woke).toBe(true);
    h.finish();
    await closing;
    expect(vi.getTimerCount()).toBe(0);
    h.s.request();
    await vi.advanceTimersByTimeAsync(5000);
    expect(h.runs).toHaveLength(4);
  });
});

describe('a fleet does not ask in step', () => {
  it('trouble polls wait minInterval plus a random 0..jitter ms', async () => {
    // Fixed random draws: 0, 0.5, 1 of a 100 ms jitter.
    const draws = [0, 0.5, 0.999];
    let i = 0;
    const h = harness({ minInterval: 200, watchInterval: 200, jitter: 100, random: () => draws[i++ % draws.length]! });
    h.s.started();
    h.s.failing();
    await vi.advanceTimersByTimeAsync(200 + 250 + 300 + 200 + 1);
    const gaps = h.runs.map((r, k) => (k === 0 ? 0 : r.at - h.runs[k - 1]!.at)).slice(1);
    expect(h.runs.map((r) => r.at - 5_000_000)).toEqual([200, 450, 750, 950]);
    expect(gaps).toEqual([250, 300, 200]);
    await h.s.close();
  });

  it('without jitter, polls keep exactly minInterval', async () => {
    const h = harness({ minInterval: 200, watchInterval: 200, jitter: 0, random: () => 0.9 });
    h.s.started();
    h.s.failing();
    await vi.advanceTimersByTimeAsync(601);
    expect(h.runs.map((r) => r.at - 5_000_000)).toEqual([200, 400, 600]);
    await h.s.close();
  });

  it('the first periodic refresh comes after a random half to whole interval, then every interval', async () => {
    const h = harness({ minInterval: 0, interval: 1000, random: () => 0.6 });
    h.s.started();
    h.s.startPeriodic();
    await vi.advanceTimersByTimeAsync(2701);
    expect(h.runs.map((r) => r.at - 5_000_000)).toEqual([700, 1700, 2700]);
    await h.s.close();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('each refresh says since when its oldest trigger waited: triggers during the rate-limit wait keep the first one', async () => {
    const h = harness({ minInterval: 500 });
    h.s.started();
    await vi.advanceTimersByTimeAsync(100);
    const first = performance.now();
    h.s.request();
    await vi.advanceTimersByTimeAsync(100);
    h.s.request();
    await vi.advanceTimersByTimeAsync(400);
    expect(h.runs).toHaveLength(1);
    expect(h.runs[0]!.since).toBe(first);
    h.s.request();
    await vi.advanceTimersByTimeAsync(500);
    expect(h.runs).toHaveLength(2);
    expect(h.runs[1]!.since).toBeGreaterThan(first);
    await h.s.close();
  });
});

describe('the down-node watch is capped by watchInterval', () => {
  it('the period doubles from minInterval up to watchInterval, not up to the watch window', async () => {
    const h = harness({ minInterval: 100, interval: 30_000, watchInterval: 400 });
    h.s.started();
    h.s.nodeDown(N1);
    await vi.advanceTimersByTimeAsync(100 + 200 + 400 + 400 + 400 + 1);
    expect(h.runs.map((r) => r.at - 5_000_000)).toEqual([100, 300, 700, 1100, 1500]);
    await h.s.close();
  });
});
