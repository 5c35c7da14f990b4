/**
 * Slot-map fetches shared by the pools of one process (src/cluster/shared-refresh.ts): which
 * requests join a fetch, which wait for a fresh one (never two in flight), and which options
 * keep pools apart. Pure: the "fetch" is a scripted promise, no sockets.
 */
import { describe, expect, it } from 'vitest';
import { joinRefreshGroup, RefreshGroup, refreshGroupCount, refreshShareKey } from '../../src/cluster/shared-refresh.js';
import { SlotMap } from '../../src/cluster/slot-map.js';
import { deferred } from '../support/deferred.js';

const mapA = SlotMap.empty({});
const mapB = SlotMap.empty({});

describe('RefreshGroup.fetch', () => {
  it('a request made before a fetch started joins it: one fetch for both', async () => {
    const g = new RefreshGroup();
    const since = performance.now() - 1;
    const d = deferred<SlotMap | undefined>();
    let runs = 0;
    const run = () => {
      runs++;
      return d.promise;
    };
    const first = g.fetch(since, run);
    const second = g.fetch(since, run);
    d.resolve(mapA);
    expect(await first).toEqual({ map: mapA, fetched: true });
    expect(await second).toEqual({ map: mapA, fetched: false });
    expect(runs).toBe(1);
    expect([g.fetches, g.joined]).toEqual([1, 1]);
  });

  it('a request made after a fetch started waits for it, then fetches anew (never two in flight)', async () => {
    const g = new RefreshGroup();
    const d1 = deferred<SlotMap | undefined>();
    const d2 = deferred<SlotMap | undefined>();
    let inFlight = 0;
    let most = 0;
    const script = [d1, d2];
    const run = () => {
      inFlight++;
      most = Math.max(most, inFlight);
      const d = script.shift()!;
      return d.promise.finally(() => inFlight--);
    };
    const first = g.fetch(performance.now() - 1, run);
    await Promise.resolve();
    // The event behind this request came after the first fetch was sent: its answer may predate it.
    const later = performance.now() + 1e-6;
    while (performance.now() <= later) { /* let the clock pass the first start */ }
    const second = g.fetch(performance.now(), run);
    d1.resolve(mapA);
    expect((await first).map).toBe(mapA);
    await Promise.resolve();
    d2.resolve(mapB);
    expect(await second).toEqual({ map: mapB, fetched: true });
    expect(most).toBe(1);
  });

  it('the last map answers a request whose trigger is older than its fetch', async () => {
    const g = new RefreshGroup();
    const since = performance.now() - 1;
    await g.fetch(since, () => Promise.resolve(mapA));
    expect(await g.fetch(since, () => Promise.resolve(mapB))).toEqual({ map: mapA, fetched: false });
  });

  it('a failed fetch (no map) is not kept: the next request fetches', async () => {
    const g = new RefreshGroup();
    const since = performance.now() - 1;
    expect((await g.fetch(since, () => Promise.resolve(undefined))).map).toBeUndefined();
    expect(await g.fetch(since, () => Promise.resolve(mapB))).toEqual({ map: mapB, fetched: true });
  });
});

describe('joinRefreshGroup', () => {
  it('pools with one key share a group; the group goes with its last member (leave is idempotent)', () => {
    const before = refreshGroupCount();
    const a = joinRefreshGroup('k1');
    const b = joinRefreshGroup('k1');
    const c = joinRefreshGroup('k2');
    expect(a.group).toBe(b.group);
    expect(c.group).not.toBe(a.group);
    expect(refreshGroupCount()).toBe(before + 2);
    a.leave();
    a.leave();
    expect(refreshGroupCount()).toBe(before + 2);
    b.leave();
    c.leave();
    expect(refreshGroupCount()).toBe(before);
  });
});

describe('refreshShareKey', () => {
  const seeds = [{ host: '10.0.0.1', port: 7000 }, { host: '10.0.0.2', port: 7000 }];
  const base = { seeds };
  const fn = () => ({ password: 'x' });
  it.each([
    ['seeds in another order', { seeds: [...seeds].reverse() }, true],
    ['another seed set', { seeds: seeds.slice(0, 1) }, false],
    ['a password', { ...base, password: 'secret' }, false],
    ['a user', { ...base, username: 'app' }, false],
    ['TLS on', { ...base, tls: true }, false],
    ['another credentials provider', { ...base, credentials: () => ({ password: 'x' }) }, false],
    ['a natMap', { ...base, natMap: { '10.0.0.1:7000': 'h:1' } }, false],
    ['protocol 3', { ...base, protocol: 3 }, false],
  ])('%s: shared = %s', (_case, other, shared) => {
    expect(refreshShareKey(other) === refreshShareKey(base)).toBe(shared);
  });

  it('the same provider function and equal natMap objects share; the key holds no secret', () => {
    expect(refreshShareKey({ ...base, credentials: fn })).toBe(refreshShareKey({ ...base, credentials: fn }));
    expect(refreshShareKey({ ...base, natMap: { a: 'b' } })).toBe(refreshShareKey({ ...base, natMap: { a: 'b' } }));
    expect(refreshShareKey({ ...base, password: 'hunter2' })).not.toContain('hunter2');
    expect(refreshShareKey({ ...base, password: 'a' })).not.toBe(refreshShareKey({ ...base, password: 'b' }));
  });
});
