/**
 * Zone-aware replica reads on a real Sentinel deployment: a master and three replicas in two
 * zones, each data node behind an AzProxy that makes Redis 7 report its zone as Valkey 8 does
 * (HELLO and INFO server); the pools reach the nodes through natMap. Which node served the
 * reads is read from each node's own INFO commandstats (GET calls), never from the pool.
 *
 *   master  az-1      replica A  az-1      replica B  az-2      replica C  az-2
 *
 * A client in az-1: 'az-affinity' reads from A only; with A down, from B and C (any replica);
 * 'az-affinity-replicas-and-primary' reads from A only; with A down, from the master (in az-1)
 * before the replicas of az-2. Both come back to A when it returns.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SentinelPool, type SentinelOptions } from '../../src/index.js';
import type { AzReadFrom } from '../../src/pool/read-from.js';
import { AzProxies } from '../support/az-proxy.js';
import { sendCommand, sendCommands } from '../support/mini-client.js';
import { calls } from '../support/replicated.js';
import { startSentinel, waitFor, type SentinelTopology, type ServerHandle } from '../support/topology.js';
import { server } from '../support/server-features.js';

let topo: SentinelTopology;
let proxies: AzProxies;
let A: ServerHandle, B: ServerHandle, C: ServerHandle;
const KEY = 'az:key';
const N = 300;

beforeAll(async () => {
  topo = await startSentinel({ replicas: 3, downAfterMs: 1000 });
  [A, B, C] = topo.replicas as [ServerHandle, ServerHandle, ServerHandle];
  const zone = new Map<ServerHandle, string>([[topo.master, 'az-1'], [A, 'az-1'], [B, 'az-2'], [C, 'az-2']]);
  proxies = await AzProxies.start(topo.dataNodes, (n) => zone.get(n));
  await sendCommand(topo.master.address, ['SET', KEY, 'v']);
  await waitFor(async () => {
    for (const r of topo.replicas) if ((await sendCommand(r.address, ['GET', KEY])) !== 'v') return false;
    return true;
  }, 'the key on every replica');
});
afterAll(async () => {
  await proxies?.close();
  await topo?.stop();
});

function create(readFrom: AzReadFrom, extra: SentinelOptions = {}): Promise<SentinelPool> {
  return SentinelPool.create(topo.masterName, topo.sentinelAddresses, {
    role: 'replica', readFrom, clientAz: 'az-1', natMap: proxies.natMap, pollInterval: 500, ...extra,
  });
}

/** GET calls per data node (by role name) while `n` reads run; a dead node counts none. */
async function readsPerNode(pool: SentinelPool, n = N): Promise<Record<'master' | 'A' | 'B' | 'C', number> & { failed: number }> {
  const named = { master: topo.master, A, B, C } as const;
  const count = async () => Object.fromEntries(await Promise.all(Object.entries(named).map(async ([k, h]) => [k, h.isAlive() ? await calls(h.address, 'get') : 0]))) as Record<keyof typeof named, number>;
  const before = await count();
  let failed = 0;
  for (let i = 0; i < n; i++) await pool.get(KEY).catch(() => failed++);
  const after = await count();
  return { master: after.master - before.master, A: after.A - before.A, B: after.B - before.B, C: after.C - before.C, failed };
}

/** Reads in a loop (2 at a time) until stopped: how many succeeded and failed. */
function readLoad(pool: SentinelPool): { stop(): Promise<{ ok: number; failed: number; errors: string[] }> } {
  let running = true;
  const r = { ok: 0, failed: 0, errors: [] as string[] };
  const worker = async () => {
    while (running) {
      await pool.get(KEY).then(() => r.ok++, (e: Error) => {
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

describe('the zone-reporting proxy', () => {
  it('makes Redis 7 report its zone in HELLO (RESP2 and RESP3) and INFO server, and forwards the rest', async () => {
    const p = proxies.of(A);
    const [hello2, hello3, info, get] = await sendCommands(p.address, [['HELLO'], ['HELLO', '3'], ['INFO', 'server'], ['GET', KEY]]);
    expect(hello2).toContain('availability_zone');
    expect((hello2 as string[])[(hello2 as string[]).indexOf('availability_zone') + 1]).toBe('az-1');
    expect((hello3 as string[]).slice(-2)).toEqual(['availability_zone', 'az-1']);
    expect(String(info)).toMatch(/^availability_zone:az-1\r$/m);
    expect(String(info)).toMatch(new RegExp(`^redis_version:${server.version.replace(/\./g, '\\.')}\r$`, 'm'));
    expect(get).toBe('v');
  });
});

describe('SentinelPool readFrom by zone', () => {
  it("'az-affinity': the same-zone replica only; with it down, the other zone's replicas; back when it returns", async () => {
    const pool = await create('az-affinity');
    const phases: Record<string, unknown> = {};
    try {
      expect(pool.stats().reads?.nodes).toMatchObject({
        [`127.0.0.1:${proxies.of(A).address.port}`]: 'az-1',
        [`127.0.0.1:${proxies.of(B).address.port}`]: 'az-2',
        [`127.0.0.1:${proxies.of(C).address.port}`]: 'az-2',
      });
      const up = await readsPerNode(pool);
      phases.up = up;
      expect(up).toEqual({ master: 0, A: N, B: 0, C: 0, failed: 0 });
      expect(pool.stats().reads).toMatchObject({ readFrom: 'az-affinity', clientAz: 'az-1', sameZone: N, otherZone: 0, primary: 0, byZone: { 'az-1': N } });

      // Reads keep working through the loss (those on the dead replica are retried on another) and settle on zone 2.
      const load = readLoad(pool);
      await A.kill();
      await waitFor(async () => {
        const r = await readsPerNode(pool, 20);
        return r.B + r.C >= 20 && r.master === 0;
      }, 'reads to go to the replicas of zone 2');
      const during = await load.stop();
      phases.duringKill = during;
      expect(during.failed, during.errors.join('; ')).toBe(0);
      expect(during.ok).toBeGreaterThan(0);
      const down = await readsPerNode(pool);
      phases.down = down;
      expect(down.failed).toBe(0);
      expect(down.master).toBe(0);
      expect(down.B + down.C).toBe(N);
      expect(down.B).toBeGreaterThan(0); // any replica: both of zone 2 take turns
      expect(down.C).toBeGreaterThan(0);
      expect(pool.stats().reads!.byZone['az-2']).toBeGreaterThanOrEqual(N);

      const load2 = readLoad(pool);
      await A.restart();
      await waitFor(async () => {
        const r = await readsPerNode(pool, 20);
        return r.A >= 20 && r.B + r.C === 0;
      }, 'reads to come back to the same-zone replica', 60_000, 200);
      const during2 = await load2.stop();
      phases.duringRestart = during2;
      expect(during2.failed, during2.errors.join('; ')).toBe(0);
      const back = await readsPerNode(pool);
      phases.back = back;
      expect(back).toEqual({ master: 0, A: N, B: 0, C: 0, failed: 0 });
    } finally {
      console.log(`[az-affinity-sentinel] az-affinity GET calls per node per phase (N=${N}): ${JSON.stringify(phases)}; stats().reads: ${JSON.stringify(pool.stats().reads)}`);
      await pool.close();
    }
  }, 120_000);

  it("'az-affinity-replicas-and-primary': the same-zone replica, then the same-zone master before other zones' replicas", async () => {
    const pool = await create('az-affinity-replicas-and-primary');
    const phases: Record<string, unknown> = {};
    try {
      const up = await readsPerNode(pool);
      phases.up = up;
      expect(up).toEqual({ master: 0, A: N, B: 0, C: 0, failed: 0 });

      // The replica goes away behind its proxy (the server keeps running and the sentinels see
      // nothing): the pool alone notices.
      const load = readLoad(pool);
      await proxies.of(A).stop();
      await waitFor(async () => {
        const r = await readsPerNode(pool, 20);
        return r.master >= 20 && r.A === 0;
      }, 'reads to move to the same-zone master');
      const during = await load.stop();
      phases.duringStop = during;
      expect(during.failed, during.errors.join('; ')).toBe(0);
      const down = await readsPerNode(pool);
      phases.down = down;
      expect(down).toEqual({ master: N, A: 0, B: 0, C: 0, failed: 0 });
      expect(pool.stats().reads!.primary).toBeGreaterThanOrEqual(N);

      await proxies.of(A).resume();
      await waitFor(async () => (await readsPerNode(pool, 20)).A === 20, 'reads to come back to the same-zone replica', 60_000, 200);
      const back = await readsPerNode(pool);
      phases.back = back;
      expect(back).toEqual({ master: 0, A: N, B: 0, C: 0, failed: 0 });
    } finally {
      console.log(`[az-affinity-sentinel] az-affinity-replicas-and-primary GET calls per node per phase (N=${N}): ${JSON.stringify(phases)}; stats().reads: ${JSON.stringify(pool.stats().reads)}`);
      await pool.close();
    }
  }, 120_000);

  it('a node without a zone counts as another zone; a master in another zone is not preferred', async () => {
    const saved = [proxies.of(topo.master).zone, proxies.of(A).zone];
    proxies.of(topo.master).zone = 'az-2';
    proxies.of(A).zone = undefined;
    const pool = await create('az-affinity-replicas-and-primary');
    try {
      expect(pool.stats().reads?.nodes[`127.0.0.1:${proxies.of(A).address.port}`]).toBeNull();
      const r = await readsPerNode(pool);
      // No replica and no master in az-1: every replica takes its turn, the master none.
      expect(r.master).toBe(0);
      expect(r.A).toBeGreaterThan(0);
      expect(r.B).toBeGreaterThan(0);
      expect(r.C).toBeGreaterThan(0);
      expect(r.A + r.B + r.C).toBe(N);
      expect(pool.stats().reads).toMatchObject({ sameZone: 0, otherZone: N });
      expect(pool.stats().reads!.byZone['']).toBe(r.A);
    } finally {
      [proxies.of(topo.master).zone, proxies.of(A).zone] = saved;
      await pool.close();
    }
  });

  it("refuses readFrom with role 'master' and without clientAz (TypeError naming the options)", async () => {
    await expect(SentinelPool.create(topo.masterName, topo.sentinelAddresses, { readFrom: 'az-affinity', clientAz: 'az-1' })).rejects.toThrow(/readFrom: 'az-affinity' of SentinelPool needs role: 'replica'/);
    await expect(SentinelPool.create(topo.masterName, topo.sentinelAddresses, { role: 'master', readFrom: 'az-affinity', clientAz: 'az-1' })).rejects.toThrow(TypeError);
    await expect(SentinelPool.create(topo.masterName, topo.sentinelAddresses, { role: 'replica', readFrom: 'az-affinity' })).rejects.toThrow(/needs option clientAz/);
  });
});
