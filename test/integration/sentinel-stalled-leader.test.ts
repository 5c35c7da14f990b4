/**
 * A failover whose leader stalls mid-way: the write fence must not hold writes for the whole
 * fenceTimeout. When the other sentinels report the leader down, the pool releases the held
 * writes to the master the sentinels still name.
 *
 * The stall is made certain rather than raced: the replicas refuse REPLICAOF (an ACL rule on
 * their default user), so the leader's promotion can never complete, and failover-timeout is
 * longer than the test, so the leader cannot give up on its own either. The only way out of the
 * fence within the test's deadlines is the leader-down rule.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SentinelPool } from '../../src/index.js';
import { sendCommand } from '../support/mini-client.js';
import { startSentinel, waitFor, type SentinelTopology } from '../support/topology.js';

let topo: SentinelTopology;
let pool: SentinelPool;

beforeAll(async () => {
  topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 180_000 });
  // A fenceTimeout far beyond the test's deadlines: only the leader-down rule can release writes.
  pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { fenceTimeout: 120_000, queueTimeout: 60_000, commandTimeout: 60_000 });
});

afterAll(async () => {
  for (const s of topo?.sentinels ?? []) if (s.isPaused()) s.resume();
  await pool?.close();
  await topo?.stop();
});

describe('stalled failover leader', () => {
  it('writes held by the fence go through once the other sentinels report the leader down', async () => {
    const leader = topo.sentinels[0]!;
    const from = pool.master();
    // The leader's MULTI; REPLICAOF NO ONE; … EXEC is refused on every replica: no promotion.
    for (const r of topo.replicas) await r.cli('ACL', 'SETUSER', 'default', '-replicaof', '-slaveof');

    const order: string[] = [];
    const starts: string[] = [];
    pool.on('failover-start', (e) => starts.push(e.event));
    pool.on('failover-abort', (e) => order.push(`abort: ${e.reason}`));
    pool.on('failover', (e) => order.push(`failover by ${e.detectedBy}`));

    // Pause the leader once the pool has seen it announce the failover (the fence is up).
    const paused = new Promise<void>((resolve) => {
      pool.once('failover-start', () => {
        leader.pause();
        resolve();
      });
    });
    expect(await leader.cli('SENTINEL', 'FAILOVER', topo.masterName)).toBe('OK');
    await paused;
    expect(starts.length).toBeGreaterThan(0);
    expect(pool.stats().fenced).toBe(true);

    // A write issued now waits at the fence, then completes on the master the sentinels name.
    const write = pool.set('stalled:k', 'v').then((r) => {
      order.push('write done');
      return r;
    });
    write.catch(() => undefined); // awaited below; a failed test must not also report it unhandled
    await waitFor(() => order.length > 0, 'the fence released by the leader-down rule', 30_000);
    expect(await write).toBe('OK');
    // Released by the rule (nothing else could), and the write was held until then.
    expect(order).toEqual([`abort: the failover leader ${leader.host}:${leader.port} is down`, 'write done']);
    expect(pool.stats().fenced).toBe(false);
    expect(pool.master()).toEqual(from);
    expect(await topo.currentMaster()).toEqual(from);
    expect(await sendCommand(from, ['GET', 'stalled:k'])).toBe('v');
    expect(await pool.get('stalled:k')).toBe('v');
  });
});
