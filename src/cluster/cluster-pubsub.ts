import type { RedisError } from '../errors.js';
import { backoffDelay, sleep, type BackoffOptions } from '../pool/backoff.js';
import type { NodePool } from '../pool/node-pool.js';
import { isKeyspaceName, type SubscriptionKind } from '../pubsub/frames.js';
import type { PubSubPlacement, PubSubTarget } from '../pubsub/hub.js';
import { parseRedirect } from './redirect.js';
import { keySlot } from './slot.js';
import type { Topology } from './topology.js';

/**
 * Where subscriptions live in a cluster:
 * - a sharded channel on the master that owns its slot (one SSUBSCRIBE per slot: the server
 *   refuses one that spans slots), following the slot through failovers and migrations when
 *   the node it is on drops it;
 * - keyspace notifications on every master serving slots (each node announces only its own keys);
 * - any other channel or pattern on one node, since PUBLISH reaches every node of the cluster:
 *   it stays on the node it is on while that node is in the map, and starts on the master of
 *   its name's slot, which spreads many channels over the nodes.
 */
export function clusterPlacement(topology: Topology, reconnect: BackoffOptions): PubSubPlacement {
  const poolOf = (n: { host: string; port: number }): NodePool => topology.pool(n);
  return {
    place(kind: SubscriptionKind, name: string, current: readonly NodePool[]): PubSubTarget[] {
      const map = topology.map;
      if (kind !== 'shard' && isKeyspaceName(name)) return map.masters({ withSlots: true }).map((m) => ({ pool: poolOf(m) }));
      const slot = keySlot(name);
      // What is confirmed stays while its node is in the map: a sharded channel leaves when its
      // node drops it (the server pushes sunsubscribe when the slot moves) or the connection
      // breaks, never on a map change alone, which could deliver a message twice (once from a
      // node that took it before the move, once from the new one).
      if (current.length === 1) {
        const here = current[0]!;
        const t = here.target;
        if (!here.isClosed && map.nodes().some((n) => n.host === t.host && n.port === t.port && n.health !== 'failed')) return [{ pool: here }];
      }
      const master = map.shardForSlot(slot)?.master;
      // A slot no shard serves (the cluster is failing over): nothing to do until the map changes.
      if (master === undefined) return [];
      return [{ pool: poolOf(master), group: kind === 'shard' ? slot : undefined }];
    },
    moved(error: RedisError, pool: NodePool): void {
      const r = parseRedirect(error, pool.target);
      if (r?.kind === 'moved') topology.moved(r.slot, topology.map.mapAddress(r.address));
    },
    async shardLost(name: string, pool: NodePool): Promise<void> {
      // The node dropped it because the slot left: wait for a map that says where it went
      // (refreshes are rate limited by refresh.minInterval; the node may still be named
      // master for a moment by nodes that have not heard of the failover yet).
      const slot = keySlot(name);
      for (let attempt = 0; !pool.isClosed; attempt++) {
        await topology.refreshed();
        const m = topology.map.shardForSlot(slot)?.master;
        if (m === undefined || m.host !== pool.target.host || m.port !== pool.target.port) return;
        await sleep(backoffDelay(attempt, reconnect), undefined, { unref: true });
      }
    },
  };
}
