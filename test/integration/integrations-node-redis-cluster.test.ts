/**
 * `redis-ha-pool/node-redis` on a ClusterPool (a real 3-master Redis Cluster 7.0): every library
 * flow (connect-redis, rate-limiter-flexible, the Socket.IO classic, sharded and streams
 * adapters, rate-limit-redis), plus what a cluster changes for the facade: PUBSUB NUMSUB summed
 * over the masters (how the Socket.IO adapters count servers), multi-key commands split per
 * slot, SCAN walked per master, transactions kept in one slot.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, CrossSlotError } from '../../src/index.js';
import { asNodeRedis } from '../../src/integrations/node-redis.js';
import { allNodeRedisFlows, unique } from '../support/node-redis-flows.js';
import { startCluster, type ClusterTopology } from '../support/topology.js';
import { server } from '../support/server-features.js';

let topo: ClusterTopology;
let pool: ClusterPool;

const create = (): Promise<ClusterPool> => ClusterPool.create(topo.seeds, { commandTimeout: 15_000 });

beforeAll(async () => {
  topo = await startCluster({ masters: 3, replicasPerMaster: 0 });
  await topo.waitForClusterOk(60_000);
  pool = await create();
}, 120_000);

afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

async function count(kind: 'NUMSUB' | 'SHARDNUMSUB', channel: string): Promise<number> {
  let n = 0;
  for (const node of topo.nodes) n += Number((await node.cli('PUBSUB', kind, channel)).split('\n')[1]);
  return n;
}

describe('the facade on a cluster', () => {
  it.skipIf(!server.has('sharded-pubsub'))(`PUBSUB NUMSUB / SHARDNUMSUB through sendCommand count the subscribers of every master, whichever node a keyless call would reach ${server.needs('sharded-pubsub')}`, async () => {
    const other = await create();
    try {
      const [c, d] = [asNodeRedis(pool), asNodeRedis(other)];
      const channels = [unique('n1'), unique('n2'), unique('n3')];
      for (const ch of channels) {
        await c.subscribe(ch, () => {});
        await d.subscribe(ch, () => {});
        await d.sSubscribe(ch, () => {});
      }
      // Keyless commands go round robin over the masters: every answer must be the cluster's total.
      for (let i = 0; i < 6; i++) {
        expect(await c.sendCommand(['PUBSUB', 'NUMSUB', ...channels])).toEqual(channels.flatMap((ch) => [ch, 2]));
        expect(await c.sendCommand(['pubsub', 'shardnumsub', channels[i % 3]!])).toEqual([channels[i % 3], 1]);
      }
      for (const ch of channels) expect(await count('NUMSUB', ch)).toBe(2);
      await d.quit();
      expect(await c.sendCommand(['PUBSUB', 'SHARDNUMSUB', channels[0]!])).toEqual([channels[0], 0]);
    } finally {
      await other.close();
    }
  });

  it('multi-key commands span slots; SCAN steps are refused, scanIterator walks every master; transactions stay in one slot', async () => {
    const c = asNodeRedis(pool);
    const prefix = unique('spread');
    const keys = Array.from({ length: 30 }, (_, i) => `${prefix}:${i}`);
    for (const k of keys) await c.set(k, k);
    expect(await c.mGet(keys)).toEqual(keys);
    expect(await c.exists(keys)).toBe(30);
    const seen: string[] = [];
    for await (const batch of c.scanIterator({ MATCH: `${prefix}:*`, COUNT: 7 })) {
      expect(batch.length).toBeLessThanOrEqual(7);
      seen.push(...batch);
    }
    expect(seen.sort()).toEqual([...keys].sort());
    await expect(c.scan('0', { MATCH: '*' })).rejects.toThrow(TypeError);
    await expect(c.multi().set(keys[0]!, '1').set(keys[1]!, '2').exec()).rejects.toBeInstanceOf(CrossSlotError);
    expect(await c.multi().set(keys[0]!, '1').set(keys[1]!, '2').exec(true)).toEqual(['OK', 'OK']);
    expect(await c.multi().set('{t}a', '1').incrBy('{t}a', 2).exec()).toEqual(['OK', 3]);
    expect(await c.del(keys)).toBe(30);
  });
});

describe('the libraries on a cluster', () => {
  allNodeRedisFlows({ pool: () => pool, createPool: create, numsub: (ch) => count('NUMSUB', ch) });
});
