/**
 * The BullMQ flows the integration tests run in every mode, through `asBullMQ(pool)` on real
 * servers: Queue + Worker + QueueEvents, retries with backoff, delayed jobs, 20 Workers on one
 * pool with default options (all run at once, `getWorkers()` lists them, `queue.add` is not
 * held up), and FlowProducer parent/children. Registered inside the caller's describe.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FlowProducer, Queue, QueueEvents, Worker, type Job } from 'bullmq';
import type { BasePool } from '../../src/index.js';
import { asBullMQ } from '../../src/integrations/bullmq.js';
import { waitFor } from './wait.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyPool = BasePool<any>;

/** Closes BullMQ objects, newest first, even when a test failed. */
export class Closer {
  private readonly items: Array<{ close(): Promise<unknown> }> = [];
  add<T extends { close(): Promise<unknown> }>(x: T): T {
    this.items.push(x);
    return x;
  }
  async closeAll(): Promise<void> {
    for (const x of this.items.splice(0).reverse()) await x.close().catch(() => {});
  }
}

/** Registers the flows on `pool()`; `prefix` is BullMQ's key prefix (a `{hash-tag}` in a cluster). */
export function bullmqFlows(pool: () => AnyPool, prefix: string): void {
  const qname = (what: string) => `${what}-${randomUUID().slice(0, 8)}`;

  describe('BullMQ flows', () => {
    it('Queue + Worker (concurrency 2) + QueueEvents: every job completes, results and events arrive', async () => {
      const closer = new Closer();
      try {
        const connection = asBullMQ(pool());
        const name = qname('basic');
        const queue = closer.add(new Queue(name, { connection, prefix }));
        queue.setMaxListeners(100); // one listener per job awaited with waitUntilFinished
        const events = closer.add(new QueueEvents(name, { connection, prefix }));
        events.setMaxListeners(100);
        await events.waitUntilReady();
        const completedEvents: string[] = [];
        events.on('completed', ({ jobId }) => completedEvents.push(jobId));
        const worker = closer.add(new Worker(name, async (job: Job) => ({ doubled: job.data.n * 2 }), { connection, prefix, concurrency: 2 }));
        await worker.waitUntilReady();
        const jobs = await Promise.all(Array.from({ length: 30 }, (_, n) => queue.add('double', { n })));
        const results = await Promise.all(jobs.map((j) => j.waitUntilFinished(events, 30_000)));
        expect(results).toEqual(jobs.map((_, n) => ({ doubled: n * 2 })));
        await waitFor(() => completedEvents.length === 30, 'a completed event per job');
        expect(new Set(completedEvents)).toEqual(new Set(jobs.map((j) => j.id)));
        expect(await queue.getJobCounts('completed', 'failed', 'wait', 'active', 'delayed')).toEqual({ completed: 30, failed: 0, wait: 0, active: 0, delayed: 0 });
      } finally {
        await closer.closeAll();
      }
    });

    it('a failing job is retried with backoff and completes on its third attempt; one that always fails ends failed', async () => {
      const closer = new Closer();
      try {
        const connection = asBullMQ(pool());
        const name = qname('retry');
        const queue = closer.add(new Queue(name, { connection, prefix }));
        queue.setMaxListeners(100); // one listener per job awaited with waitUntilFinished
        const events = closer.add(new QueueEvents(name, { connection, prefix }));
        events.setMaxListeners(100);
        await events.waitUntilReady();
        const attempts = new Map<string, number>();
        closer.add(new Worker(name, async (job: Job) => {
          attempts.set(job.id!, (attempts.get(job.id!) ?? 0) + 1);
          if (job.data.always || job.attemptsMade < 2) throw new Error(`attempt ${job.attemptsMade + 1} fails`);
          return 'ok';
        }, { connection, prefix }));
        const flaky = await queue.add('flaky', {}, { attempts: 3, backoff: { type: 'fixed', delay: 50 } });
        const doomed = await queue.add('doomed', { always: true }, { attempts: 2, backoff: { type: 'fixed', delay: 50 } });
        expect(await flaky.waitUntilFinished(events, 30_000)).toBe('ok');
        await expect(doomed.waitUntilFinished(events, 30_000)).rejects.toThrow(/attempt 2 fails/);
        expect(attempts.get(flaky.id!)).toBe(3);
        expect(attempts.get(doomed.id!)).toBe(2);
        const done = (await queue.getJob(flaky.id!))!;
        expect(done.attemptsMade).toBe(3);
        expect((await queue.getJob(doomed.id!))!.failedReason).toBe('attempt 2 fails');
      } finally {
        await closer.closeAll();
      }
    });

    it('a delayed job waits in the delayed set and runs once its delay has passed', async () => {
      const closer = new Closer();
      try {
        const connection = asBullMQ(pool());
        const name = qname('delayed');
        const queue = closer.add(new Queue(name, { connection, prefix }));
        queue.setMaxListeners(100); // one listener per job awaited with waitUntilFinished
        const events = closer.add(new QueueEvents(name, { connection, prefix }));
        events.setMaxListeners(100);
        await events.waitUntilReady();
        closer.add(new Worker(name, async () => Date.now(), { connection, prefix }));
        const job = await queue.add('later', {}, { delay: 800 });
        expect(await job.getState()).toBe('delayed');
        const ranAt = (await job.waitUntilFinished(events, 30_000)) as number;
        expect(ranAt).toBeGreaterThanOrEqual(job.timestamp + 800);
        expect(await job.getState()).toBe('completed');
      } finally {
        await closer.closeAll();
      }
    });

    it('20 Workers on one pool with default options all run at once, getWorkers() lists 20, queue.add is not held up', async () => {
      const closer = new Closer();
      try {
        const p = pool();
        const connection = asBullMQ(p);
        const name = qname('twenty');
        const queue = closer.add(new Queue(name, { connection, prefix }));
        queue.setMaxListeners(100); // one listener per job awaited with waitUntilFinished
        const events = closer.add(new QueueEvents(name, { connection, prefix }));
        events.setMaxListeners(100);
        await events.waitUntilReady();
        let active = 0;
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        const workers = Array.from({ length: 20 }, (_, i) =>
          closer.add(new Worker(name, async () => {
            active++;
            await gate;
            return i;
          }, { connection, prefix, name: `w${i}` })),
        );
        await Promise.all(workers.map((w) => w.waitUntilReady()));
        await waitFor(async () => (await queue.getWorkers()).length === 20, 'getWorkers() to list 20 workers');
        const listed = await queue.getWorkers();
        expect(new Set(listed.map((w) => w.rawname))).toEqual(new Set(workers.map((_, i) => `${prefix}:${Buffer.from(name).toString('base64')}:w:w${i}`)));
        // Every worker blocks on a connection of its own: none of them holds the pool's exclusive connections.
        await waitFor(() => (statsOf(p).dedicated ?? 0) >= 20, 'the workers\' own connections');
        expect(statsOf(p).borrowed).toBe(0);
        const t0 = performance.now();
        const jobs = await Promise.all(Array.from({ length: 20 }, (_, n) => queue.add('hold', { n })));
        const addMs = performance.now() - t0;
        // All 20 jobs are active at the same time: one per worker (concurrency 1 each).
        await waitFor(() => active === 20, '20 jobs active at once', 30_000);
        release();
        const results = await Promise.all(jobs.map((j) => j.waitUntilFinished(events, 30_000)));
        expect(new Set(results).size).toBe(20);
        console.log(`20 workers on one pool (max ${statsOf(p).max}): 20 queue.add calls took ${addMs.toFixed(1)} ms while every worker was blocked; own connections ${statsOf(p).dedicated}`);
      } finally {
        await closer.closeAll();
      }
      // The workers' own connections closed with them; the pool is still usable.
      await waitFor(() => statsOf(pool()).dedicated === 0, 'the workers\' connections closed');
      expect(await pool().call('PING')).toBe('PONG');
    });

    it('FlowProducer: children run first, the parent then reads their results', async () => {
      const closer = new Closer();
      try {
        const connection = asBullMQ(pool());
        const name = qname('flow');
        const flows = closer.add(new FlowProducer({ connection, prefix }));
        const events = closer.add(new QueueEvents(name, { connection, prefix }));
        events.setMaxListeners(100);
        await events.waitUntilReady();
        const order: string[] = [];
        closer.add(new Worker(name, async (job: Job) => {
          order.push(job.name);
          if (job.name === 'parent') {
            const values = await job.getChildrenValues();
            return Object.values(values).reduce((a: number, b) => a + (b as number), 0);
          }
          return job.data.n as number;
        }, { connection, prefix }));
        const tree = await flows.add({
          name: 'parent', queueName: name, data: {},
          children: [1, 2, 3].map((n) => ({ name: `child${n}`, queueName: name, data: { n } })),
        });
        expect(await tree.job.waitUntilFinished(events, 30_000)).toBe(6);
        expect(order.indexOf('parent')).toBe(3);
        expect(await tree.job.getState()).toBe('completed');
      } finally {
        await closer.closeAll();
      }
    });
  });
}

/** Sums dedicated and borrowed exclusive connections over a pool's node pools (one in Standalone/Sentinel, one per node in a cluster). */
export function statsOf(p: AnyPool): { dedicated: number; borrowed: number; max: number } {
  const s = p.stats() as { dedicated?: number; exclusive?: { borrowed: number; max: number }; pools?: Array<{ dedicated: number; exclusive: { borrowed: number; max: number } }> };
  const pools = s.pools ?? [{ dedicated: s.dedicated ?? 0, exclusive: s.exclusive ?? { borrowed: 0, max: 0 } }];
  return {
    dedicated: pools.reduce((a, x) => a + x.dedicated, 0),
    borrowed: pools.reduce((a, x) => a + x.exclusive.borrowed, 0),
    max: pools[0]?.exclusive.max ?? 0,
  };
}
