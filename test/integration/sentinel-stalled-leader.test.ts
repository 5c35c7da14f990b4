/**
 * A failover whose leader stalls right after announcing it: the write fence must not hold
 * writes for the whole fenceTimeout. When the other sentinels report the leader down, the
 * pool releases the held writes to the master the sentinels still name (or follows the
 * promotion if the leader got that far).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SentinelPool } from '../../src/index.js';
import { startSentinel, waitFor, type SentinelTopology } from '../support/topology.js';

let topo: SentinelTopology;
let pool: SentinelPool;

beforeAll(async () => {
  topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
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
    const starts: string[] = [];
    const outcomes: string[] = [];
    pool.on('failover-start', (e) => starts.push(e.event));
    pool.on('failover-abort', (e) => outcomes.push(`abort: ${e.reason}`));
    pool.on('failover', (e) => outcomes.push(`failover by ${e.detectedBy}`));

    // Pause the leader as soon as the pool has seen it announce the failover.
    const paused = new Promise<void>((resolve) => {
      pool.once('failover-start', () => {
        leader.pause();
        resolve();
      });
    });
    await leader.cli('SENTINEL', 'FAILOVER', topo.masterName);
    await paused;
    expect(starts.length).toBeGreaterThan(0);

    // A write issued now waits at the fence, then completes: on the old master after the
    // abort, or on the promoted replica if the leader had promoted it before stalling.
    const write = pool.with({ idempotent: true }).set('stalled:k', 'v');
    await waitFor(() => outcomes.length > 0, 'the fence released by leader-down (or a completed switch)', 30_000);
    console.log(`stalled leader: ${outcomes.join('; ')}`);
    expect(await write).toBe('OK');
    expect(await pool.get('stalled:k')).toBe('v');
    expect(pool.stats().fenced).toBe(false);
  });
});
