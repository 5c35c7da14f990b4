/**
 * `redis-ha-pool/ioredis` and `redis-ha-pool/nestjs` on a SentinelPool (real redis-server and
 * redis-sentinel 7.0: 1 master, 2 replicas, 3 sentinels): every library flow, the Nest throttler
 * app, then the fault case: locks held through a `SENTINEL FAILOVER` are extended, refused to
 * contenders and released on the new master (whose empty script cache sends redlock through
 * NOSCRIPT -> EVAL), and a graphql-redis-subscriptions subscription keeps delivering.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisPubSub } from 'graphql-redis-subscriptions';
import { SentinelPool, type FailoverEvent } from '../../src/index.js';
import { asIoredis } from '../../src/integrations/ioredis.js';
import { allIoredisFlows, ExecutionError, Redlock4, Redlock5, unique } from '../support/ioredis-flows.js';
import { nestThrottlerFlows } from '../support/nest-throttler-flow.js';
import { commandCalls, fmt, sameAddr, waitSettled } from '../support/sentinel-helpers.js';
import { startSentinel, waitFor, type SentinelTopology } from '../support/topology.js';

let topo: SentinelTopology;
let pool: SentinelPool;

beforeAll(async () => {
  topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
  await waitSettled(topo, 2);
  pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { commandTimeout: 15_000, queueTimeout: 15_000 });
}, 90_000);

afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

async function numsub(channel: string): Promise<number> {
  let n = 0;
  for (const node of topo.dataNodes) {
    if (node.isAlive() && !node.isPaused()) n += Number((await node.cli('PUBSUB', 'NUMSUB', channel)).split('\n')[1]);
  }
  return n;
}

describe('the libraries on a Sentinel pool', () => {
  allIoredisFlows({ pool: () => pool, numsub });
  nestThrottlerFlows(() => pool);
});

describe('through SENTINEL FAILOVER', () => {
  it('redlock 4 and 5 locks survive the switch (extend, contention, release on the new master); a graphql subscription keeps delivering', async () => {
    const from = pool.master();
    const pubsub = new RedisPubSub({ publisher: asIoredis(pool) as never, subscriber: asIoredis(pool) as never });
    const trigger = unique('gql-failover');
    const got: number[] = [];
    await pubsub.subscribe(trigger, (p: { n: number }) => got.push(p.n));
    await pubsub.publish(trigger, { n: 0 });
    await waitFor(() => got.includes(0), 'the first payload');

    const r4 = new Redlock4([asIoredis(pool)], { retryCount: 0 });
    const r5 = new Redlock5([asIoredis(pool)], { retryCount: 0 });
    const res4 = unique('failover-lock4');
    const res5 = unique('failover-lock5');
    const lock4 = await r4.lock(res4, 60_000);
    let lock5 = await r5.acquire([res5], 60_000);
    // SENTINEL FAILOVER does not wait for replication: the locks must be on the replicas first.
    await waitFor(async () => {
      for (const node of topo.dataNodes) {
        if (sameAddr(node.address, from)) continue;
        if ((await node.cli('GET', res4)) !== lock4.value || (await node.cli('GET', res5)) !== lock5.value) return false;
      }
      return true;
    }, 'the locks to reach both replicas');

    const switched = new Promise<FailoverEvent>((resolve) => pool.once('failover', resolve));
    expect(await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', topo.masterName)).toBe('OK');
    const event = await switched;
    expect(sameAddr(event.to, from)).toBe(false);
    const to = pool.master();
    const switchedAt = Date.now();
    console.log(`SENTINEL FAILOVER ${fmt(from)} -> ${fmt(to)} (detected by ${event.detectedBy})`);

    await lock4.extend(60_000);
    lock5 = await lock5.extend(60_000);
    await expect(new Redlock4([asIoredis(pool)], { retryCount: 0 }).lock(res4, 1_000)).rejects.toMatchObject({ name: 'LockError' });
    await expect(new Redlock5([asIoredis(pool)], { retryCount: 0 }).acquire([res5], 1_000)).rejects.toBeInstanceOf(ExecutionError);
    expect(await pool.get(res4)).toBe(lock4.value);
    await lock4.unlock();
    await lock5.release();
    expect(await pool.get(res4)).toBeNull();
    expect(await pool.get(res5)).toBeNull();
    const again = await r5.acquire([res5], 5_000);
    await again.release();
    // The promoted replica had not cached the scripts: redlock's NOSCRIPT fallback ran there.
    expect((await commandCalls(to)).get('eval') ?? 0).toBeGreaterThan(0);

    // Pub/sub is at most once: messages in the gap may be lost; once one arrives, every later one does, in order.
    let n = 1;
    await waitFor(async () => {
      await pubsub.publish(trigger, { n: n++ });
      return got.some((x) => x > 0);
    }, 'a payload after the failover', 30_000, 100);
    const mark = n;
    console.log(`locks extended, refused and released on the new master, then a graphql payload got through, ${Date.now() - switchedAt} ms after the failover event`);
    for (let i = 0; i < 5; i++) await pubsub.publish(trigger, { n: n++ });
    await waitFor(() => got.filter((x) => x >= mark).length === 5, 'the five payloads after the first');
    expect(got.filter((x) => x >= mark)).toEqual([mark, mark + 1, mark + 2, mark + 3, mark + 4]);
    expect(got).toEqual([...got].sort((a, b) => a - b));
    await Promise.all([pubsub.close(), r4.quit(), r5.quit()]);
  });
});
