/**
 * What it means when no seed gives a slot map. The first-hour case is a seed that is no
 * cluster node at all (a plain server, a sentinel): say that, and which pool fits, instead of
 * the server's bare refusal.
 */
import { RedisError } from '../errors.js';
import { formatAddress, type NodeAddress } from '../types.js';

/** Why one seed is not a cluster node, or undefined when its error says something else. */
function notClusterReason(err: Error): string | undefined {
  if (!(err instanceof RedisError)) return undefined;
  if (/cluster support disabled/i.test(err.message)) return 'a Redis server with cluster support disabled (cluster-enabled no)';
  if (/unknown command .?cluster/i.test(err.message)) return 'a server that knows no CLUSTER command (a sentinel?)';
  return undefined;
}

/** The message of `ClusterPool.create()` when every seed failed. */
export function seedFailureMessage(seeds: readonly NodeAddress[], errors: readonly Error[]): string {
  const list = seeds.map(formatAddress).join(', ');
  const reasons = errors.map((e) => notClusterReason(e));
  if (errors.length > 0 && reasons.every((r) => r !== undefined)) {
    const each = errors.map((e, i) => `${e instanceof RedisError && e.address ? formatAddress(e.address) : formatAddress(seeds[i] ?? seeds[0]!)} is ${reasons[i]}`).join('; ');
    return (
      `No seed is a cluster node (${each}; the server said: ${errors[0]!.message}). ` +
      'ClusterPool.create() takes the addresses of Redis Cluster nodes. For one server use StandalonePool; for a master behind Sentinel use SentinelPool with the sentinels\' addresses.'
    );
  }
  return `Could not load the cluster slot map from any seed (${list}): ${errors.map((e) => e.message).join('; ')}`;
}
