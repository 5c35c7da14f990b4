/**
 * `redis-ha-pool/ioredis` and `redis-ha-pool/nestjs` on a ClusterPool (a real 3+3 Redis Cluster
 * 7.0): every library flow (graphql-redis-subscriptions, @fastify/redis, redlock 4 and 5,
 * rate-limiter-flexible, the Nest throttler app), plus what a cluster changes for the facade:
 * pipelines spanning slots, scripts and transactions refused across slots, hash tags.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, CrossSlotError } from '../../src/index.js';
import { asIoredis } from '../../src/integrations/ioredis.js';
import { allIoredisFlows, unique } from '../support/ioredis-flows.js';
import { nestThrottlerFlows } from '../support/nest-throttler-flow.js';
import { startCluster, type ClusterTopology } from '../support/topology.js';

let topo: ClusterTopology;
let pool: ClusterPool;

beforeAll(async () => {
  topo = await startCluster({ masters: 3, replicasPerMaster: 1 });
  await topo.waitForClusterOk(60_000);
  pool = await ClusterPool.create(topo.seeds, { commandTimeout: 15_000 });
}, 120_000);

afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

async function numsub(channel: string): Promise<number> {
  let n = 0;
  for (const node of topo.nodes) {
    if (node.isAlive() && !node.isPaused()) n += Number((await node.cli('PUBSUB', 'NUMSUB', channel)).split('\n')[1]);
  }
  return n;
}

describe('the facade on a cluster', () => {
  it('pipelines span slots; scripts and transactions must stay in one slot (CrossSlotError), hash tags make them work', async () => {
    const r = asIoredis(pool);
    const keys = Array.from({ length: 6 }, (_, i) => unique(`spread${i}`));
    const p = r.pipeline();
    for (const k of keys) p.set(k, k);
    for (const k of keys) p.get(k);
    const out = await p.exec();
    expect(out!.slice(6)).toEqual(keys.map((k) => [null, k]));

    r.defineCommand('pair', { numberOfKeys: 2, lua: 'return {KEYS[1], KEYS[2]}' });
    const pair = (r as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>).pair!;
    await expect(pair('a', 'b')).rejects.toBeInstanceOf(CrossSlotError);
    expect(await pair('{u}a', '{u}b')).toEqual(['{u}a', '{u}b']);
    await expect(r.multi().set('a', 1).set('b', 2).exec()).rejects.toBeInstanceOf(CrossSlotError);
    expect(await r.multi().set('{u}a', 1).incr('{u}a').exec()).toEqual([[null, 'OK'], [null, 2]]);
  });
});

describe('the libraries on a cluster', () => {
  allIoredisFlows({ pool: () => pool, numsub });
  nestThrottlerFlows(() => pool);
});
