/**
 * `redis-ha-pool/bullmq` on a ClusterPool (3 masters, real redis-server cluster) with a
 * `{hash-tag}` prefix, so every queue's keys share one slot: the same flows as standalone
 * (test/support/bullmq-flows.ts), plus what BullMQ asks only of cluster clients: `nodes()`
 * (getWorkers reads every node's CLIENT LIST), one INFO reply, SCAN on the queue's node.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, Worker } from 'bullmq';
import { ClusterPool, keySlot } from '../../src/index.js';
import { asBullMQ } from '../../src/integrations/bullmq.js';
import { bullmqFlows, Closer } from '../support/bullmq-flows.js';
import { startCluster, waitFor, type ClusterTopology } from '../support/topology.js';

let topo: ClusterTopology;
let pool: ClusterPool;

beforeAll(async () => {
  topo = await startCluster({ masters: 3, replicasPerMaster: 0 });
  pool = await ClusterPool.create(topo.seeds);
}, 120_000);
afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

describe('asBullMQ on a ClusterPool, prefix {bull-test}', () => {
  bullmqFlows(() => pool, '{bull-test}');

  it('is a cluster client: nodes() has one handle per master, each answering CLIENT LIST for its node; INFO is one reply', async () => {
    const h = asBullMQ(pool);
    expect(h.isCluster).toBe(true);
    const nodes = h.nodes();
    expect(nodes).toHaveLength(3);
    const ids = await Promise.all(nodes.map(async (n) => /(?:^|\n)(?:.*) laddr=\S+:(\d+)/.exec(await n.clientList())?.[1]));
    expect(new Set(ids)).toEqual(new Set((await topo.masters()).map((m) => String(m.port))));
    const info = await h.info();
    expect(typeof info).toBe('string');
    expect(info).toMatch(/redis_version:/);
  });

  it('the workers\' named connections live on the node owning the queue\'s slot, where getWorkers() finds them', async () => {
    const closer = new Closer();
    try {
      const connection = asBullMQ(pool);
      const queue = closer.add(new Queue('where', { connection, prefix: '{bull-test}' }));
      for (let i = 0; i < 3; i++) closer.add(new Worker('where', async () => 1, { connection, prefix: '{bull-test}', name: `n${i}` }));
      await waitFor(async () => (await queue.getWorkers()).length === 3, 'three workers listed');
      const owner = await topo.nodeForSlot(keySlot('{bull-test}'));
      const names = (await owner.cli('CLIENT', 'LIST')).split('\n').filter((l) => l.includes(':w:n'));
      expect(names).toHaveLength(3);
    } finally {
      await closer.closeAll();
    }
  });

  it('scan() runs on the node of the pattern\'s {hash-tag}; without one it refuses with a TypeError', async () => {
    const h = asBullMQ(pool);
    await pool.mset({ '{scan-tag}:a': '1', '{scan-tag}:b': '2' });
    const seen: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await h.scan(cursor, { MATCH: '{scan-tag}:*', COUNT: 100 });
      seen.push(...keys);
      cursor = next;
    } while (cursor !== '0');
    expect(seen.sort()).toEqual(['{scan-tag}:a', '{scan-tag}:b']);
    await expect(h.scan('0', { MATCH: 'bull:*' })).rejects.toThrow(/\{hash-tag\}/);
  });
});
