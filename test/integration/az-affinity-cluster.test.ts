/**
 * Zone-aware reads on a real Redis Cluster (3 masters, 2 replicas each), every node behind an
 * AzProxy that makes Redis 7 report a zone as Valkey 8 does (HELLO and INFO server); the pool
 * reaches the announced addresses through natMap. Which node served the reads is read from
 * each node's own INFO commandstats (GET calls), never from the pool. The client is in az-1:
 *
 *   shard 1: master az-1, replica a az-1, replica b az-2    (a same-zone replica)
 *   shard 2: master az-1, replicas az-2, az-2               (only the master is in our zone)
 *   shard 3: master az-2, replicas (no zone), az-3          (nothing in our zone)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, keySlot } from '../../src/index.js';
import type { AzReadFrom } from '../../src/pool/read-from.js';
import { AzProxies } from '../support/az-proxy.js';
import { sendCommand, sendCommands } from '../support/mini-client.js';
import { calls } from '../support/replicated.js';
import { startCluster, waitFor, type ClusterTopology, type ServerHandle } from '../support/topology.js';
import { server } from '../support/server-features.js';

interface Shard {
  key: string;
  master: ServerHandle;
  replicas: [ServerHandle, ServerHandle];
}

let topo: ClusterTopology;
let proxies: AzProxies;
let shards: [Shard, Shard, Shard];
const N = 200;

/** Each master with its two replicas (by ROLE, once both are linked) and a key it owns. */
async function layout(): Promise<[Shard, Shard, Shard]> {
  const slots = (await sendCommand(topo.seeds[0]!, ['CLUSTER', 'SLOTS'])) as Array<[number, number, [string, number]]>;
  const owner = (slot: number) => slots.find(([from, to]) => slot >= from && slot <= to)![2][1];
  const masters = await topo.masters();
  return Promise.all(masters.map(async (m) => {
    const replicas = await waitFor(async () => {
      const role = (await sendCommand(m.address, ['ROLE'])) as [string, number, Array<[string, string, string]>];
      const ports = role[2].map((r) => Number(r[1]));
      return ports.length === 2 ? ports.map((p) => topo.nodes.find((n) => n.port === p)!) : undefined;
    }, `two replicas linked to ${m.port}`);
    let i = 0;
    while (owner(keySlot(`az:${i}`)) !== m.port) i++;
    return { key: `az:${i}`, master: m, replicas: replicas as [ServerHandle, ServerHandle] };
  })) as Promise<[Shard, Shard, Shard]>;
}

beforeAll(async () => {
  topo = await startCluster({ masters: 3, replicasPerMaster: 2 });
  await topo.waitForClusterOk();
  shards = await layout();
  const [s1, s2, s3] = shards;
  const zone = new Map<ServerHandle, string | undefined>([
    [s1.master, 'az-1'], [s1.replicas[0], 'az-1'], [s1.replicas[1], 'az-2'],
    [s2.master, 'az-1'], [s2.replicas[0], 'az-2'], [s2.replicas[1], 'az-2'],
    [s3.master, 'az-2'], [s3.replicas[0], undefined], [s3.replicas[1], 'az-3'],
  ]);
  proxies = await AzProxies.start(topo.nodes, (n) => zone.get(n));
  for (const s of shards) await sendCommand(s.master.address, ['SET', s.key, 'v']);
  await waitFor(async () => {
    for (const s of shards) for (const r of s.replicas) if ((await sendCommands(r.address, [['READONLY'], ['GET', s.key]]))[1] !== 'v') return false;
    return true;
  }, 'the keys on every replica');
});
afterAll(async () => {
  await proxies?.close();
  await topo?.stop();
});

async function create(readFrom: AzReadFrom): Promise<ClusterPool> {
  // A replica the cluster marked failed is used again once a refresh shows it online: refresh often.
  const pool = await ClusterPool.create(topo.seeds.map(proxies.natMap), { readFrom, clientAz: 'az-1', natMap: proxies.natMap, refresh: { interval: 500 } });
  // Right after the cluster forms (or a node rejoins), a node may still report replicas as empty masters.
  await waitFor(async () => {
    await pool.refresh();
    // A map from CLUSTER SLOTS (Redis 6.2 has no CLUSTER SHARDS) carries no health: 'unknown', which reads use.
    const ready = server.has('cluster-shards') ? 'online' : 'unknown';
    return pool.nodes().filter((n) => n.role === 'replica' && n.health === ready).length === 6;
  }, 'six online replicas in the slot map');
  return pool;
}

type Counts = { master: number; a: number; b: number };

/** GET calls on the shard's nodes while `n` reads of its key run; a dead node counts none. */
async function reads(pool: ClusterPool, s: Shard, n = N): Promise<Counts & { failed: number }> {
  const nodes = { master: s.master, a: s.replicas[0], b: s.replicas[1] };
  const count = async () => Object.fromEntries(await Promise.all(Object.entries(nodes).map(async ([k, h]) => [k, h.isAlive() ? await calls(h.address, 'get') : 0]))) as Counts;
  const before = await count();
  let failed = 0;
  for (let i = 0; i < n; i++) await pool.get(s.key).catch(() => failed++);
  const after = await count();
  return { master: after.master - before.master, a: after.a - before.a, b: after.b - before.b, failed };
}

/** Reads of `key` (2 at a time) until stopped. */
function readLoad(pool: ClusterPool, key: string): { stop(): Promise<{ ok: number; failed: number; errors: string[] }> } {
  let running = true;
  const r = { ok: 0, failed: 0, errors: [] as string[] };
  const worker = async () => {
    while (running) {
      await pool.get(key).then(() => r.ok++, (e: Error) => {
        r.failed++;
        if (r.errors.length < 5) r.errors.push(e.message);
      });
    }
  };
  const workers = Array.from({ length: 2 }, worker);
  return {
    stop: async () => {
      running = false;
      await Promise.all(workers);
      return r;
    },
  };
}

describe('ClusterPool readFrom by zone', () => {
  it("'az-affinity': per shard, the same-zone replica, else any replica; with it down, the other replica; back when it returns", async () => {
    const pool = await create('az-affinity');
    const [s1, s2, s3] = shards;
    const phases: Record<string, unknown> = {};
    try {
      const zones = pool.stats().reads!.nodes;
      expect(zones[`127.0.0.1:${proxies.of(s1.replicas[0]).address.port}`]).toBe('az-1');
      expect(zones[`127.0.0.1:${proxies.of(s3.replicas[0]).address.port}`]).toBeNull();
      expect(Object.keys(zones)).toHaveLength(9);

      const up = { s1: await reads(pool, s1), s2: await reads(pool, s2), s3: await reads(pool, s3) };
      phases.up = up;
      expect(up.s1).toEqual({ master: 0, a: N, b: 0, failed: 0 });
      // No replica in our zone: any replica, never the master (even the one in our zone).
      expect(up.s2.master).toBe(0);
      expect(up.s2.a + up.s2.b).toBe(N);
      expect(Math.min(up.s2.a, up.s2.b)).toBeGreaterThan(0);
      expect(up.s3.master).toBe(0);
      expect(Math.min(up.s3.a, up.s3.b)).toBeGreaterThan(0);
      expect(pool.stats().reads).toMatchObject({ sameZone: N, otherZone: 2 * N, primary: 0 });
      expect(pool.stats().reads!.byZone).toEqual({ 'az-1': N, 'az-2': up.s2.a + up.s2.b, '': up.s3.a, 'az-3': up.s3.b });

      const load = readLoad(pool, s1.key);
      await s1.replicas[0].kill();
      await waitFor(async () => (await reads(pool, s1, 20)).b >= 20, 'reads of shard 1 on its other replica');
      const duringKill = await load.stop();
      phases.duringKill = duringKill;
      expect(duringKill.failed, duringKill.errors.join('; ')).toBe(0);
      const down = await reads(pool, s1);
      phases.down = down;
      expect(down).toEqual({ master: 0, a: 0, b: N, failed: 0 });

      // A longer outage: the cluster marks the replica failed, and the pool's map says so.
      const aAddress = proxies.of(s1.replicas[0]).address;
      await waitFor(() => pool.nodes().some((n) => n.port === aAddress.port && n.health === 'failed'), 'the slot map to mark the replica failed', 30_000);
      const load2 = readLoad(pool, s1.key);
      await s1.replicas[0].restart();
      await waitFor(async () => {
        const r = await reads(pool, s1, 20);
        return r.a >= 20 && r.b === 0;
      }, 'reads of shard 1 back on the same-zone replica', 60_000, 200);
      const duringRestart = await load2.stop();
      phases.duringRestart = duringRestart;
      expect(duringRestart.failed, duringRestart.errors.join('; ')).toBe(0);
      const back = await reads(pool, s1);
      phases.back = back;
      expect(back).toEqual({ master: 0, a: N, b: 0, failed: 0 });
    } finally {
      console.log(`[az-affinity-cluster] az-affinity GET calls per node per phase (N=${N}): ${JSON.stringify(phases)}; stats().reads: ${JSON.stringify({ ...pool.stats().reads, nodes: undefined })}`);
      await pool.close();
    }
  }, 150_000);

  it("'az-affinity-replicas-and-primary': the same-zone replica, then the same-zone master, then any replica", async () => {
    await topo.waitForClusterOk();
    const pool = await create('az-affinity-replicas-and-primary');
    const [s1, s2, s3] = shards;
    const phases: Record<string, unknown> = {};
    try {
      const up = { s1: await reads(pool, s1), s2: await reads(pool, s2), s3: await reads(pool, s3) };
      phases.up = up;
      expect(up.s1).toEqual({ master: 0, a: N, b: 0, failed: 0 });
      expect(up.s2).toEqual({ master: N, a: 0, b: 0, failed: 0 }); // the master is in our zone, its replicas are not
      expect(up.s3.master).toBe(0);
      expect(Math.min(up.s3.a, up.s3.b)).toBeGreaterThan(0);
      expect(pool.stats().reads).toMatchObject({ sameZone: 2 * N, otherZone: N, primary: N });

      // The same-zone replica goes away behind its proxy (the cluster sees nothing): the master of our zone serves.
      const load = readLoad(pool, s1.key);
      await proxies.of(s1.replicas[0]).stop();
      await waitFor(async () => (await reads(pool, s1, 20)).master >= 20, 'reads of shard 1 on its same-zone master');
      const duringStop = await load.stop();
      phases.duringStop = duringStop;
      expect(duringStop.failed, duringStop.errors.join('; ')).toBe(0);
      const down = await reads(pool, s1);
      phases.down = down;
      expect(down).toEqual({ master: N, a: 0, b: 0, failed: 0 });

      await proxies.of(s1.replicas[0]).resume();
      await waitFor(async () => {
        const r = await reads(pool, s1, 20);
        return r.a >= 20 && r.master === 0;
      }, 'reads of shard 1 back on the same-zone replica', 60_000, 200);
      const back = await reads(pool, s1);
      phases.back = back;
      expect(back).toEqual({ master: 0, a: N, b: 0, failed: 0 });
    } finally {
      console.log(`[az-affinity-cluster] az-affinity-replicas-and-primary GET calls per node per phase (N=${N}): ${JSON.stringify(phases)}; stats().reads: ${JSON.stringify({ ...pool.stats().reads, nodes: undefined })}`);
      await pool.close();
    }
  }, 150_000);

  it('writes still go to the master; a zone-aware readFrom needs clientAz', async () => {
    const pool = await create('az-affinity');
    try {
      const s1 = shards[0];
      const before = await calls(s1.master.address, 'set');
      await pool.set(s1.key, 'w');
      expect(await calls(s1.master.address, 'set')).toBe(before + 1);
    } finally {
      await pool.close();
    }
    await expect(ClusterPool.create(topo.seeds, { readFrom: 'az-affinity' })).rejects.toThrow(/readFrom: 'az-affinity' of ClusterPool needs option clientAz/);
    await expect(ClusterPool.create(topo.seeds, { readFrom: 'replica', clientAz: 'az-1' })).rejects.toThrow(/clientAz of ClusterPool applies only with readFrom/);
  });
});
