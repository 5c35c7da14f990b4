import { formatAddress, type NodeAddress } from '../types.js';
import type { SlotMap } from './slot-map.js';

/** What decides the order in which a refresh asks nodes for the slot map. */
export interface RefreshOrderInput {
  /**
   * Nodes that just told us the map changed: the target of a MOVED serves the slot now, so
   * its view already has the change, where another node may not have heard of it yet.
   */
  prefer: readonly NodeAddress[];
  /** Keys (`host:port`) of nodes that failed lately. */
  down: ReadonlySet<string>;
  seeds: readonly NodeAddress[];
  /** Rotates the masters, so that successive refreshes spread over them. */
  turn: number;
}

/**
 * The nodes a refresh asks, in order (the first fully covered answer wins):
 *
 * 1. `prefer` (unless down).
 * 2. The other members of each down node's shard, replicas first: when a master fails, the
 *    replica that takes over knows it before any other node does.
 * 3. The masters (rotated by `turn`; they are authoritative for their slots), then the
 *    replicas, then the seeds (a cluster that replaced every node is still found through a
 *    stable seed name).
 * 4. Down nodes last: a black-holed node would cost a `refreshTimeout` first.
 *
 * Nodes the map reports as failed are not asked; each node is listed once.
 */
export function refreshOrder(map: SlotMap, o: RefreshOrderInput): NodeAddress[] {
  const nodes = map.nodes().filter((n) => n.health !== 'failed');
  const masters = nodes.filter((n) => n.role === 'master');
  const k = masters.length ? o.turn % masters.length : 0;
  const peers: NodeAddress[] = [];
  if (o.down.size) {
    for (const s of map.shards) {
      const members = [...s.replicas, s.master];
      if (members.some((m) => o.down.has(m.key))) peers.push(...members.filter((m) => m.health !== 'failed'));
    }
  }
  const seen = new Set<string>();
  const ordered: NodeAddress[] = [];
  const suspects: NodeAddress[] = [];
  const all = [...o.prefer, ...peers, ...masters.slice(k), ...masters.slice(0, k), ...nodes.filter((n) => n.role === 'replica'), ...o.seeds];
  for (const n of all) {
    const key = formatAddress(n);
    if (seen.has(key)) continue;
    seen.add(key);
    (o.down.has(key) ? suspects : ordered).push({ host: n.host, port: n.port });
  }
  return [...ordered, ...suspects];
}
