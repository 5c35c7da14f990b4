/**
 * `redis-ha-pool/ioredis`: an ioredis-shaped client over any pool, for libraries that take an
 * ioredis client: graphql-redis-subscriptions, @fastify/redis, redlock 4 and 5,
 * rate-limiter-flexible (its default ioredis mode).
 *
 * ```ts
 * import { StandalonePool } from 'redis-ha-pool';
 * import { asIoredis } from 'redis-ha-pool/ioredis';
 * const pool = await StandalonePool.create('redis://127.0.0.1:6379');
 * const redlock = new Redlock([asIoredis(pool)]);
 * ```
 * @packageDocumentation
 */
import { IoredisClient, type IoredisPool } from './ioredis/client.js';

export { IoredisClient, type IoredisPool } from './ioredis/client.js';
export type { IoredisCommandDefinition } from './ioredis/scripts.js';
export { IoredisPipeline, type IoredisExecEntry, type IoredisBatchCommand, type IoredisBatchCommands } from './ioredis/batch.js';
export type {
  IoredisArg, IoredisArgument, IoredisCallback, IoredisCommand, IoredisCommands, IoredisBufferCommands, IoredisCommandName, BufferReply,
} from './ioredis/commands.js';

/**
 * An ioredis-shaped handle on `pool` (a `StandalonePool`, `SentinelPool` or `ClusterPool`).
 * Handles are cheap: make one per library, or several; each sends through the pool, which
 * keeps its failover and redirect handling. Ending a handle (`quit()`, `disconnect()`, a
 * library closing "its" client) never closes the pool; closing the pool makes every handle's
 * calls reject with `PoolClosedError`.
 */
export function asIoredis(pool: IoredisPool): IoredisClient {
  if (typeof pool !== 'object' || pool === null || typeof (pool as { with?: unknown }).with !== 'function' || typeof (pool as { subscribe?: unknown }).subscribe !== 'function') {
    throw new TypeError('asIoredis(pool) needs a redis-ha-pool pool (StandalonePool, SentinelPool or ClusterPool).');
  }
  return new IoredisClient(pool);
}
