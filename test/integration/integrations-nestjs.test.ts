/**
 * `redis-ha-pool/nestjs` on a StandalonePool (one real redis-server 7.0): `ThrottlerStorageRedis`
 * inside a real Nest app (ThrottlerModule + global ThrottlerGuard + @Throttle), then the storage's
 * own contract: the library's units, both blocking modes, a new window, a block that ends,
 * atomic counting under concurrency, and TypeErrors. The same app runs on a SentinelPool and a
 * ClusterPool in integrations-ioredis-sentinel/-cluster.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ThrottlerStorage } from '@nestjs/throttler';
import { StandalonePool } from '../../src/index.js';
import { ThrottlerStorageRedis } from '../../src/integrations/nestjs.js';
import { unique } from '../support/ioredis-flows.js';
import { nestThrottlerFlows } from '../support/nest-throttler-flow.js';
import { startStandalone, waitFor, type StandaloneTopology } from '../support/topology.js';

let topo: StandaloneTopology;
let pool: StandalonePool;

beforeAll(async () => {
  topo = await startStandalone();
  pool = await StandalonePool.create(topo.url);
}, 60_000);

afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

describe('in a Nest app', () => {
  nestThrottlerFlows(() => pool);
});

describe('ThrottlerStorageRedis', () => {
  const storage = (): ThrottlerStorage => new ThrottlerStorageRedis(pool, { prefix: `${unique('t')}:` });

  it('with a blockDuration: counts to the limit, blocks for blockDuration (seconds out), does not count while blocked', async () => {
    const s = storage();
    const hits = [];
    for (let i = 0; i < 5; i++) hits.push(await s.increment('k', 60_000, 2, 30_000, 'default'));
    expect(hits.map((h) => [h.totalHits, h.isBlocked])).toEqual([[1, false], [2, false], [3, true], [3, true], [3, true]]);
    for (const h of hits) expect(h.timeToExpire === 60 || h.timeToExpire === 59).toBe(true);
    expect(hits[0]!.timeToBlockExpire).toBe(0);
    expect(hits[2]!.timeToBlockExpire).toBe(30);
    expect(hits[4]!.timeToBlockExpire).toBeGreaterThanOrEqual(29);
    expect(hits[4]!.timeToBlockExpire).toBeLessThanOrEqual(30);
    // Another throttler name and another key count on their own.
    expect((await s.increment('k', 60_000, 2, 30_000, 'long')).totalHits).toBe(1);
    expect((await s.increment('other', 60_000, 2, 30_000, 'default')).totalHits).toBe(1);
  });

  it('without a blockDuration: a hit over the limit is refused and not counted, until the window ends', async () => {
    const s = storage();
    const hits = [];
    for (let i = 0; i < 4; i++) hits.push(await s.increment('k', 60_000, 2, 0, 'default'));
    expect(hits.map((h) => [h.totalHits, h.isBlocked])).toEqual([[1, false], [2, false], [3, true], [3, true]]);
    expect(hits[3]!.timeToBlockExpire).toBeGreaterThanOrEqual(59);
  });

  it('a block that ends starts a new count; so does a window that ends', async () => {
    const s = storage();
    await s.increment('b', 60_000, 1, 300, 'default');
    expect((await s.increment('b', 60_000, 1, 300, 'default')).isBlocked).toBe(true);
    // Polling while blocked counts nothing, so the first unblocked answer is hit 1 of a new count.
    const after = await waitFor(async () => {
      const r = await s.increment('b', 60_000, 1, 300, 'default');
      return r.isBlocked ? undefined : r;
    }, 'the 300 ms block to end');
    expect(after.totalHits).toBe(1);

    await s.increment('w', 300, 1, 0, 'default');
    expect((await s.increment('w', 300, 1, 0, 'default')).isBlocked).toBe(true);
    const next = await waitFor(async () => {
      const r = await s.increment('w', 300, 1, 0, 'default');
      return r.isBlocked ? undefined : r;
    }, 'the 300 ms window to end');
    expect(next.totalHits).toBe(1);
  });

  it('counts atomically: 50 concurrent hits get the counts 1..50 once each, and the key expires with the window', async () => {
    const prefix = `${unique('t')}:`;
    const s = new ThrottlerStorageRedis(pool, { prefix });
    const results = await Promise.all(Array.from({ length: 50 }, () => s.increment('c', 60_000, 1000, 1000, 'default')));
    expect(results.map((r) => r.totalHits).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    const pttl = Number(await pool.pttl(`${prefix}c:default`));
    expect(pttl).toBeGreaterThan(50_000);
    expect(pttl).toBeLessThanOrEqual(60_000);
  });

  it('refuses bad input with a TypeError naming the storage', async () => {
    expect(() => new ThrottlerStorageRedis(pool, { prefx: 'x' } as never)).toThrow(/ThrottlerStorageRedis: unknown option prefx/);
    expect(() => new ThrottlerStorageRedis({} as never)).toThrow(/ThrottlerStorageRedis\(pool, options\) needs a redis-ha-pool pool/);
    const s = storage();
    await expect(s.increment('k', -1, 1, 0, 'default')).rejects.toThrow(/ThrottlerStorageRedis.increment: ttl/);
    await expect(s.increment(7 as never, 1000, 1, 0, 'default')).rejects.toThrow(/ThrottlerStorageRedis.increment: key must be a string/);
  });
});
