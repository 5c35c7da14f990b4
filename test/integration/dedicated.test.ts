/**
 * `pool.dedicated()`: connections of their own, outside `pool.max`, for named and blocking
 * clients (BullMQ workers), against real servers in the three modes: many blocked at once
 * while the pool still answers, the name set again on every new connection, closed with the
 * handle or the pool, a new connection on the new master after a Sentinel failover, and in a
 * cluster the slot owner's master, following a slot that moved.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool, ConnectionError, PoolClosedError, SentinelPool, StandalonePool, keySlot, type DedicatedConnection } from '../../src/index.js';
import { startCluster, startSentinel, startStandalone, waitFor, type ClusterTopology, type SentinelTopology, type StandaloneTopology } from '../support/topology.js';
import { migrateSlot } from '../support/cluster-ops.js';
import { sameAddr, waitSettled } from '../support/sentinel-helpers.js';

/** Names in CLIENT LIST of a node, asked through the harness (not the library under test). */
async function clientNames(cli: (...a: string[]) => Promise<string>): Promise<string[]> {
  const list = await cli('CLIENT', 'LIST');
  return list.split('\n').map((l) => /(?:^| )name=(\S*)/.exec(l)?.[1] ?? '').filter(Boolean);
}

describe('StandalonePool.dedicated()', () => {
  let topo: StandaloneTopology;
  let pool: StandalonePool;

  beforeAll(async () => {
    topo = await startStandalone();
    pool = await StandalonePool.create(topo.url, { pool: { max: 2 } });
  });
  afterAll(async () => {
    await pool?.close();
    await topo?.stop();
  });

  it('20 handles block at once on a pool of max 2, each named, while the pool keeps answering', async () => {
    const handles = Array.from({ length: 20 }, (_, i) => pool.dedicated({ clientName: `ded-${i}` }));
    const pops = handles.map((h) => h.call<unknown[] | null>('BZPOPMIN', 'ded:z', 30));
    await waitFor(async () => (await clientNames((...a) => topo.server.cli(...a))).filter((n) => n.startsWith('ded-')).length === 20, 'all 20 named connections');
    await waitFor(async () => /blocked_clients:20\b/.test(await topo.server.cli('INFO', 'clients')), '20 blocked clients');
    expect(pool.stats().dedicated).toBe(20);
    expect(pool.stats().exclusive.size).toBeLessThanOrEqual(2);
    // The lane is not held up by them.
    await pool.set('ded:k', 'v');
    expect(await pool.get('ded:k')).toBe('v');
    // Every blocked pop gets one member.
    await pool.call('ZADD', 'ded:z', ...Array.from({ length: 20 }, (_, i) => [i, `m${i}`]).flat());
    const got = await Promise.all(pops);
    expect(new Set(got.map((r) => (r as unknown[])[1])).size).toBe(20);
    await Promise.all(handles.map((h) => h.close()));
    await waitFor(() => pool.stats().dedicated === 0, 'dedicated connections closed');
    expect((await clientNames((...a) => topo.server.cli(...a))).filter((n) => n.startsWith('ded-'))).toEqual([]);
  });

  it('close() ends the handle only: its blocked command rejects, later calls reject, the pool stays', async () => {
    const h = pool.dedicated();
    const blocked = h.call('BLPOP', 'ded:never', 0);
    await waitFor(async () => /blocked_clients:1\b/.test(await topo.server.cli('INFO', 'clients')), 'one blocked client');
    await h.close();
    await expect(blocked).rejects.toBeInstanceOf(PoolClosedError);
    await expect(h.call('PING')).rejects.toBeInstanceOf(PoolClosedError);
    expect(await pool.call('PING')).toBe('PONG');
    await waitFor(() => pool.stats().dedicated === 0, 'the connection closed');
  });

  it('a CLIENT SETNAME sent on it is the name of every later connection too', async () => {
    const h = pool.dedicated();
    await h.call('CLIENT', 'SETNAME', 'renamed-one');
    expect(h.clientName).toBe('renamed-one');
    const id1 = await h.call<number>('CLIENT', 'ID');
    await topo.server.cli('CLIENT', 'KILL', 'ID', String(id1));
    // The next call finds the connection gone (or loses it on the way) and opens another.
    await waitFor(async () => (await h.call<number>('CLIENT', 'ID').catch(() => id1)) !== id1, 'a new connection');
    expect(await h.call('CLIENT', 'GETNAME')).toBe('renamed-one');
    await h.close();
  });

  it('refuses bad options and pub/sub commands with a TypeError', async () => {
    expect(() => pool.dedicated({ clientname: 'x' } as never)).toThrow(/Unknown option dedicated\.clientname/);
    expect(() => pool.dedicated({ clientName: 'a b' })).toThrow(TypeError);
    const h = pool.dedicated();
    await expect(h.call('SUBSCRIBE', 'c')).rejects.toThrow(TypeError);
    await h.close();
  });

  it('after pool.close() a blocked command and every later call reject with PoolClosedError', async () => {
    const p = await StandalonePool.create(topo.url);
    const h = p.dedicated({ clientName: 'closing' });
    const blocked = h.call('BLPOP', 'ded:never2', 0);
    await waitFor(async () => (await clientNames((...a) => topo.server.cli(...a))).includes('closing'), 'named connection');
    await p.close();
    await expect(blocked).rejects.toBeInstanceOf(PoolClosedError);
    await expect(h.call('PING')).rejects.toBeInstanceOf(PoolClosedError);
    await expect(h.connect()).rejects.toBeInstanceOf(PoolClosedError);
    expect(p.stats().dedicated).toBe(0);
    await waitFor(async () => !(await clientNames((...a) => topo.server.cli(...a))).includes('closing'), 'the connection gone from the server');
  });
});

describe('SentinelPool.dedicated()', () => {
  let topo: SentinelTopology;
  let pool: SentinelPool;

  beforeAll(async () => {
    topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
    pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { pool: { max: 1 } });
  }, 90_000);
  afterAll(async () => {
    await pool?.close();
    await topo?.stop();
  });

  it('a blocked command on the old master is rejected at the failover; the next call blocks on the new master, named', async () => {
    await waitSettled(topo, 2);
    const h = pool.dedicated({ clientName: 'sentinel-worker' });
    const from = pool.master();
    const blocked = h.call('BLPOP', 'ded:s', 0);
    const fromHandle = topo.handleFor(from)!;
    await waitFor(async () => (await clientNames((...a) => fromHandle.cli(...a))).includes('sentinel-worker'), 'named on the old master');
    expect(sameAddr(h.address!, from)).toBe(true);
    await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', topo.masterName);
    const err = await blocked.then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    await waitFor(() => !sameAddr(pool.master(), from), 'the pool moved', 30_000);
    const to = pool.master();
    // BullMQ's loop: call again after a failure.
    const again = h.call<[string, string] | null>('BLPOP', 'ded:s', 0);
    const toHandle = topo.handleFor(to)!;
    await waitFor(async () => (await clientNames((...a) => toHandle.cli(...a))).includes('sentinel-worker'), 'named on the new master', 30_000);
    await pool.call('RPUSH', 'ded:s', 'hello');
    expect(await again).toEqual(['ded:s', 'hello']);
    expect(sameAddr(h.address!, to)).toBe(true);
    await h.close();
  });

  it('a replica-role pool refuses dedicated() calls with a TypeError', async () => {
    const replicas = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { role: 'replica' });
    try {
      await expect(replicas.dedicated().call('PING')).rejects.toThrow(/role: "replica"/);
    } finally {
      await replicas.close();
    }
  });
});

describe('ClusterPool.dedicated()', () => {
  let topo: ClusterTopology;
  let pool: ClusterPool;
  let handles: DedicatedConnection[] = [];

  beforeAll(async () => {
    topo = await startCluster({ masters: 3, replicasPerMaster: 0 });
    pool = await ClusterPool.create(topo.seeds, { pool: { max: 1 } });
  }, 120_000);
  afterAll(async () => {
    await Promise.all(handles.map((h) => h.close()));
    await pool?.close();
    await topo?.stop();
  });

  it('goes to the master of its key, and after the slot moved, to the new owner', async () => {
    const key = '{ded}:list';
    const slot = keySlot(key);
    const h = pool.dedicated({ key, clientName: 'cluster-worker' });
    handles.push(h);
    await h.connect();
    const owner = await topo.nodeForSlot(slot);
    expect(h.address!.port).toBe(owner.port);
    expect(await clientNames((...a) => owner.cli(...a))).toContain('cluster-worker');

    const target = (await topo.masters()).find((m) => m.port !== owner.port)!;
    await pool.call('RPUSH', key, 'before');
    await migrateSlot(topo, slot, owner, target);
    // The first pop after the move gets MOVED on the old owner's connection and runs through the pool.
    expect(await h.call('BLPOP', key, 1)).toEqual([key, 'before']);
    await pool.call('RPUSH', key, 'after');
    expect(await h.call('BLPOP', key, 1)).toEqual([key, 'after']);
    expect(h.address!.port).toBe(target.port);
    expect(await clientNames((...a) => target.cli(...a))).toContain('cluster-worker');
  });

  it('without a key, a blocking command opens its connection on the master of its key', async () => {
    const h = pool.dedicated();
    handles.push(h);
    const key = 'ded:other';
    const owner = await topo.nodeForSlot(keySlot(key));
    const blocked = h.call('BLPOP', key, 5);
    await waitFor(() => h.address !== undefined, 'connection open');
    expect(h.address!.port).toBe(owner.port);
    await pool.call('RPUSH', key, 'x');
    expect(await blocked).toEqual([key, 'x']);
  });
});
