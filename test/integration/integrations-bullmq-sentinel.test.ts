/**
 * `redis-ha-pool/bullmq` on a SentinelPool (1 master, 2 replicas, 3 sentinels, real processes):
 * the same flows as standalone (test/support/bullmq-flows.ts), then a stream of BullMQ jobs
 * through `SENTINEL FAILOVER`: every job added completes (none lost, none stuck in wait/active),
 * with the jobs processed twice, the workers' errors and the pause in completions reported.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, QueueEvents, Worker, type Job } from 'bullmq';
import { SentinelPool } from '../../src/index.js';
import { asBullMQ } from '../../src/integrations/bullmq.js';
import { bullmqFlows, Closer, statsOf } from '../support/bullmq-flows.js';
import { sameAddr, waitSettled } from '../support/sentinel-helpers.js';
import { startSentinel, waitFor, type SentinelTopology } from '../support/topology.js';

let topo: SentinelTopology;
let pool: SentinelPool;

beforeAll(async () => {
  topo = await startSentinel({ downAfterMs: 1000, failoverTimeoutMs: 5000 });
  pool = await SentinelPool.create(topo.masterName, topo.sentinelAddresses, { commandTimeout: 15_000, queueTimeout: 15_000 });
}, 90_000);
afterAll(async () => {
  await pool?.close();
  await topo?.stop();
});

describe('asBullMQ on a SentinelPool', () => {
  bullmqFlows(() => pool, 'bull');

  it('a stream of jobs runs through SENTINEL FAILOVER: every job completes, none lost or stuck', async () => {
    await waitSettled(topo, 2);
    const closer = new Closer();
    try {
      const connection = asBullMQ(pool);
      const name = 'failover-stream';
      const queue = closer.add(new Queue(name, { connection, prefix: 'bull' }));
      const events = closer.add(new QueueEvents(name, { connection, prefix: 'bull' }));
      const eventErrors: string[] = [];
      events.on('error', (e) => eventErrors.push(`${e.name}: ${e.message}`));
      let lastEventAt = 0;
      events.on('completed', () => (lastEventAt = Date.now()));
      await events.waitUntilReady();
      const runs = new Map<string, number>();
      const completedAt: number[] = [];
      const workerErrors: string[] = [];
      let stalled = 0;
      for (let w = 0; w < 4; w++) {
        const worker = closer.add(new Worker(name, async (job: Job) => {
          runs.set(job.id!, (runs.get(job.id!) ?? 0) + 1);
          return job.data.n;
        }, { connection, prefix: 'bull', concurrency: 4, lockDuration: 10_000, stalledInterval: 5_000, name: `fw${w}` }));
        worker.on('completed', () => completedAt.push(Date.now()));
        worker.on('error', (e) => workerErrors.push(`${e.name}: ${e.message}`));
        worker.on('stalled', () => stalled++);
        await worker.waitUntilReady();
      }

      const added: string[] = [];
      const addErrors: string[] = [];
      let producing = true;
      const producer = (async () => {
        for (let n = 0; producing; n++) {
          try {
            added.push((await queue.add('job', { n })).id!);
          } catch (err) {
            addErrors.push(String(err));
          }
          if (n % 10 === 9) await new Promise((r) => setImmediate(r));
        }
      })();

      await waitFor(() => completedAt.length >= 300, '300 jobs completed before the failover', 30_000);
      const from = pool.master();
      const t0 = Date.now();
      expect(await topo.sentinels[0]!.cli('SENTINEL', 'FAILOVER', topo.masterName)).toBe('OK');
      await waitFor(() => !sameAddr(pool.master(), from), 'the pool to follow the failover', 30_000);
      const switchedAt = Date.now();
      const addedAtSwitch = added.length;
      await waitFor(() => added.length >= addedAtSwitch + 300, '300 more jobs added after the failover', 30_000);
      producing = false;
      await producer;

      // Every job added completes: nothing lost, nothing left waiting or active.
      const want = new Set(added);
      await waitFor(async () => {
        const c = await queue.getJobCounts('completed', 'wait', 'active', 'delayed', 'failed', 'prioritized');
        return c.completed === want.size && c.wait + c.active + c.delayed + c.prioritized === 0 ? c : undefined;
      }, 'every job to complete', 90_000, 200);
      const counts = await queue.getJobCounts('completed', 'failed', 'wait', 'active', 'delayed');
      const neverRun = added.filter((id) => !runs.has(id));
      const twice = [...runs].filter(([, n]) => n > 1).map(([id]) => id);

      // The longest stretch without a completion from the failover on: how long jobs paused.
      const after = completedAt.filter((t) => t >= t0).sort((a, b) => a - b);
      let pause = after.length ? after[0]! - t0 : NaN;
      for (let i = 1; i < after.length; i++) pause = Math.max(pause, after[i]! - after[i - 1]!);
      console.log(
        `BullMQ through SENTINEL FAILOVER: ${added.length} jobs added (${addErrors.length} add failures), ${counts.completed} completed, ` +
          `${counts.failed} failed, lost ${neverRun.length}, processed twice ${twice.length}, stalled ${stalled}; ` +
          `pool switched ${switchedAt - t0} ms after the command, longest pause in completions ${pause} ms; ` +
          `worker error events: ${workerErrors.length}${workerErrors.length ? ` (first: ${workerErrors[0]})` : ''}, QueueEvents error events: ${eventErrors.length}; own connections ${statsOf(pool).dedicated}`,
      );
      // QueueEvents' XREAD BLOCK is read-only: resent on the new master without an error, and events keep coming.
      expect(eventErrors).toEqual([]);
      expect(lastEventAt).toBeGreaterThan(switchedAt);
      expect(addErrors).toEqual([]);
      expect(neverRun).toEqual([]);
      expect(counts).toEqual({ completed: added.length, failed: 0, wait: 0, active: 0, delayed: 0 });
      // The workers moved with the pool: they are listed on the new master.
      await waitFor(async () => (await queue.getWorkers()).length === 4, 'the 4 workers listed on the new master', 30_000);
    } finally {
      await closer.closeAll();
    }
  });
});
