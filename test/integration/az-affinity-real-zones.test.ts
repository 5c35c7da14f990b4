/**
 * Zone-aware reads against servers that know their own zone: Valkey 8's `availability-zone`
 * config, reported in `INFO server` (HELLO reports it from 8.1 on), set on every data node; no
 * proxy, no natMap. The proxy-based tests (az-affinity-sentinel, az-affinity-cluster) cover the
 * failure phases on every server; this file proves the pool reads real zones. Which node served
 * the reads is read from each node's own INFO commandstats, never from the pool.
 *
 * Sentinel: master az-1, replica A az-1, replica B az-2. Cluster (3 masters, 1 replica each):
 * replicas in az-1, az-2 and none. The client is in az-1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, keySlot, SentinelPool } from '../../src/index.js';
import { sendCommand, sendCommands } from '../support/mini-client.js';
import { calls } from '../support/replicated.js';
import { server } from '../support/server-features.js';
import { startCluster, startSentinel, waitFor, type ClusterTopology, type SentinelTopology, type ServerHandle } from '../support/topology.js';

const N = 200;
const needs = server.needs('availability-zone');

async function setZone(node: ServerHandle, zone: string): Promise<void> {
  await sendCommand(node.address, ['CONFIG', 'SET', 'availability-zone', zone]);
}

/** GET calls on each named node while `n` reads of `key` run. */
async function readsOn<K extends string>(nodes: Record<K, ServerHandle>, read: () => Promise<unknown>, n = N): Promise<Record<K, number> & { failed: number }> {
  const count = async () => Object.fromEntries(await Promise.all(Object.entries<ServerHandle>(nodes).map(async ([k, h]) => [k, await calls(h.address, 'get')]))) as Record<K, number>;
  const before = await count();
  let failed = 0;
  for (let i = 0; i < n; i++) await read().catch(() => failed++);
  const after = await count();
  const out = { failed } as Record<K, number> & { failed: number };
  for (const k of Object.keys(nodes) as K[]) (out as Record<K, number>)[k] = after[k] - before[k];
  return out;
}

describe.skipIf(!server.has('availability-zone'))(`Sentinel replicas in real zones (availability-zone config) ${needs}`, () => {
  let topo: SentinelTopology;
  let A: ServerHandle, B: ServerHandle;
  const KEY = 'az-real:key';

  beforeAll(async () => {
    topo = await startSentinel({ replicas: 2 });
    [A, B] = topo.replicas as [ServerHandle, ServerHandle];
    await setZone(topo.master, 'az-1');
    await setZone(A, 'az-1');
    await setZone(B, 'az-2');
    await sendCommand(topo.master.address, ['SET', KEY, 'v']);
    await waitFor(async () => (await sendCommand(A.address, ['GET', KEY])) === 'v' && (await sendCommand(B.address, ['GET', KEY])) === 'v', 'the key on both replicas');
  }, 120_000);
  afterAll(async () => {
    await topo?.stop();
  });

  it(`'az-affinity' reads from the replica whose INFO server says availability_zone:az-1 only ${needs}`, async () => {
    expect(String(await sendCommand(A.address, ['INFO', 'server']))).toMatch(/^availability_zone:az-1\r$/m);
    const pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { role: 'replica', readFrom: 'az-affinity', clientAz: 'az-1' });
    try {
      expect(pool.stats().reads?.nodes).toMatchObject({ [`127.0.0.1:${A.port}`]: 'az-1', [`127.0.0.1:${B.port}`]: 'az-2' });
      expect(await readsOn({ master: topo.master, A, B }, () => pool.get(KEY))).toEqual({ master: 0, A: N, B: 0, failed: 0 });
      expect(pool.stats().reads).toMatchObject({ sameZone: N, otherZone: 0, primary: 0, byZone: { 'az-1': N } });
    } finally {
      await pool.close();
    }
  });

  it(`a client in az-2 reads from the az-2 replica; one in a zone nobody is in, from any replica ${needs}`, async () => {
    const inTwo = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { role: 'replica', readFrom: 'az-affinity', clientAz: 'az-2' });
    const elsewhere = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { role: 'replica', readFrom: 'az-affinity', clientAz: 'az-9' });
    try {
      expect(await readsOn({ master: topo.master, A, B }, () => inTwo.get(KEY))).toEqual({ master: 0, A: 0, B: N, failed: 0 });
      const any = await readsOn({ master: topo.master, A, B }, () => elsewhere.get(KEY));
      expect(any.master).toBe(0);
      expect(any.A + any.B).toBe(N);
      expect(Math.min(any.A, any.B)).toBeGreaterThan(0);
    } finally {
      await inTwo.close();
      await elsewhere.close();
    }
  });
});

describe.skipIf(!server.has('availability-zone'))(`Cluster nodes in real zones (availability-zone config) ${needs}`, () => {
  let topo: ClusterTopology;
  /** Per master: its replica and a key it owns. */
  let shards: Array<{ master: ServerHandle; replica: ServerHandle; key: string }>;

  beforeAll(async () => {
    topo = await startCluster({ masters: 3, replicasPerMaster: 1 });
    await topo.waitForClusterOk();
    const slots = (await sendCommand(topo.seeds[0]!, ['CLUSTER', 'SLOTS'])) as Array<[number, number, [string, number]]>;
    const owner = (slot: number) => slots.find(([from, to]) => slot >= from && slot <= to)![2][1];
    shards = await Promise.all((await topo.masters()).map(async (master) => {
      const replica = await waitFor(async () => {
        const role = (await sendCommand(master.address, ['ROLE'])) as [string, number, Array<[string, string, string]>];
        return role[2].length === 1 ? topo.nodes.find((n) => n.port === Number(role[2][0]![1])) : undefined;
      }, `the replica of ${master.port} linked`);
      let i = 0;
      while (owner(keySlot(`azr:${i}`)) !== master.port) i++;
      return { master, replica, key: `azr:${i}` };
    }));
    // Every master in az-1; the replicas in az-1, az-2 and none.
    for (const s of shards) await setZone(s.master, 'az-1');
    await setZone(shards[0]!.replica, 'az-1');
    await setZone(shards[1]!.replica, 'az-2');
    for (const s of shards) await sendCommand(s.master.address, ['SET', s.key, 'v']);
    await waitFor(async () => {
      for (const s of shards) if ((await sendCommands(s.replica.address, [['READONLY'], ['GET', s.key]]))[1] !== 'v') return false;
      return true;
    }, 'the keys on every replica');
  }, 120_000);
  afterAll(async () => {
    await topo?.stop();
  });

  it(`'az-affinity': the same-zone replica, else the shard's replica, never the az-1 master; 'az-affinity-replicas-and-primary' prefers the az-1 master to an other-zone replica ${needs}`, async () => {
    const affinity = await ClusterPool.create(topo.seeds, { readFrom: 'az-affinity', clientAz: 'az-1' });
    const withPrimary = await ClusterPool.create(topo.seeds, { readFrom: 'az-affinity-replicas-and-primary', clientAz: 'az-1' });
    try {
      for (const p of [affinity, withPrimary]) {
        await waitFor(async () => {
          await p.refresh();
          return p.nodes().filter((n) => n.role === 'replica' && n.health === 'online').length === 3;
        }, 'three online replicas in the slot map');
      }
      const zones = affinity.stats().reads!.nodes;
      expect(zones[`127.0.0.1:${shards[0]!.replica.port}`]).toBe('az-1');
      expect(zones[`127.0.0.1:${shards[1]!.replica.port}`]).toBe('az-2');
      expect(zones[`127.0.0.1:${shards[2]!.replica.port}`]).toBeNull();
      const [s1, s2, s3] = shards as [typeof shards[0], typeof shards[0], typeof shards[0]];
      const on = (s: typeof s1, p: ClusterPool) => readsOn({ master: s.master, replica: s.replica }, () => p.get(s.key));
      expect(await on(s1, affinity)).toEqual({ master: 0, replica: N, failed: 0 });
      expect(await on(s2, affinity)).toEqual({ master: 0, replica: N, failed: 0 });
      expect(await on(s3, affinity)).toEqual({ master: 0, replica: N, failed: 0 });
      expect(await on(s1, withPrimary)).toEqual({ master: 0, replica: N, failed: 0 });
      // No replica in az-1 but the master is: the master, before any other-zone replica.
      expect(await on(s2, withPrimary)).toEqual({ master: N, replica: 0, failed: 0 });
      expect(await on(s3, withPrimary)).toEqual({ master: N, replica: 0, failed: 0 });
    } finally {
      await affinity.close();
      await withPrimary.close();
    }
  });
});
