/**
 * `redis-ha-pool/bullmq`: BullMQ's `IRedisClient` (BullMQ >= 6.7 accepts client adapters) over
 * any pool, so queues, workers and flows keep the pool's Sentinel failover and cluster handling.
 *
 * ```ts
 * import { Queue, Worker, QueueEvents } from 'bullmq';
 * import { StandalonePool } from 'redis-ha-pool';
 * import { asBullMQ } from 'redis-ha-pool/bullmq';
 *
 * const pool = await StandalonePool.create('redis://127.0.0.1:6379');
 * const connection = asBullMQ(pool);
 * const queue = new Queue('mail', { connection });
 * const worker = new Worker('mail', async (job) => send(job.data), { connection });
 * await queue.add('welcome', { to: 'ada@example.com' });
 * ```
 * @packageDocumentation
 */
import { BullMQClient, rootHandle, type BullMQPool } from './bullmq/client.js';

export { BullMQClient, type BullMQPool, type ScriptEntry, type ScriptRegistry } from './bullmq/client.js';
export { BullMQTransaction, type ExecEntry } from './bullmq/transaction.js';

/** Options of {@link asBullMQ}. */
export interface AsBullMQOptions {
  /**
   * Names the handle (`CLIENT SETNAME`) as `duplicate({ connectionName })` does: it then holds a
   * connection of its own, under that name. BullMQ names the connections it needs itself.
   */
  connectionName?: string;
}

/**
 * BullMQ's `IRedisClient` on `pool` (a `StandalonePool`, `SentinelPool` or `ClusterPool`):
 * `new Queue(name, { connection: asBullMQ(pool) })`, and the same for `Worker`, `QueueEvents`
 * and `FlowProducer` (one handle can serve them all; `duplicate()` gives more on the same pool).
 *
 * Commands and Lua scripts go through the pool, with its retries, Sentinel failover and
 * cluster routing. A handle that blocks (a Worker's BZPOPMIN, QueueEvents' XREAD BLOCK) or
 * is named (`CLIENT SETNAME`, `duplicate({ connectionName })`: BullMQ names its workers)
 * gets one connection of its own from `pool.dedicated()`, outside `pool.max`: any number of
 * Workers run on one pool, `queue.getWorkers()` lists them, and the pool's other callers are
 * never stuck behind a blocked command. In a cluster, give BullMQ a `{hash-tag}` prefix
 * (`prefix: '{myapp}'`) so that each queue's keys share one slot.
 *
 * A handle never owns the pool: `quit()`/`disconnect()` (BullMQ calls them when a Worker
 * closes) end that handle and its own connection only; after `pool.close()` every call rejects
 * with `PoolClosedError`.
 */
export function asBullMQ(pool: BullMQPool, options?: AsBullMQOptions): BullMQClient {
  const p = pool as unknown as Record<string, unknown> | null;
  if (typeof p !== 'object' || p === null || typeof p.call !== 'function' || typeof p.dedicated !== 'function' || typeof p.script !== 'function') {
    throw new TypeError('asBullMQ(pool) needs a redis-ha-pool pool (StandalonePool, SentinelPool or ClusterPool).');
  }
  if (options !== undefined && (typeof options !== 'object' || options === null || Array.isArray(options))) throw new TypeError('asBullMQ options must be an object.');
  for (const k of Object.keys(options ?? {})) {
    if (k !== 'connectionName') throw new TypeError(`Unknown option asBullMQ.${k}; known options are: connectionName.`);
  }
  if (options?.connectionName !== undefined && (typeof options.connectionName !== 'string' || options.connectionName === '')) {
    throw new TypeError('Option asBullMQ.connectionName must be a non-empty string.');
  }
  const cluster = typeof p.nodes === 'function' && typeof p.refresh === 'function';
  return rootHandle(pool, cluster, options?.connectionName);
}
