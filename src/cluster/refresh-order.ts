import { formatAddress, type NodeAddress } from '../types.js';
import type { SlotMap } from './slot-map.js';

/** What decides the order in which a refresh asks nodes for the slot map. */
export interface RefreshOrderInput {
  /**
   * Nodes that just told us the map changed (the target of a MOVED). The MOVED is already in
   * the map (see `applyMoved`), so they are asked after the spread nodes, not first: a fleet
   * whose every process gets the same MOVED would otherwise send every refresh to one node.
   */
  prefer: readonly NodeAddress[];
  /** Keys (`host:port`) of nodes that failed lately. */
  down: ReadonlySet<string>;
  seeds: readonly NodeAddress[];
  /**
   * Where this refresh starts in the spread list: a per-process random offset plus the count
   * of refreshes, so successive refreshes of one process walk the nodes and the processes of a
   * fleet start at different nodes.
   */
  turn: number;
}

/**
 * The nodes a refresh asks, in order (the first fully covered answer wins):
 *
 * 1. The spread nodes: every healthy node (masters and replicas: each answers with the whole
 *    cluster's view) outside the shards of down nodes, rotated by `turn`. A fleet's refreshes
 *    land on all of them evenly instead of on one.
 * 2. `prefer`, then the members of each down node's shard (replicas first): the replica that
 *    takes over is the node the whole fleet would otherwise ask at the moment it becomes a
 *    master, and gossip tells every other node of its promotion within milliseconds.
 * 3. The seeds (a cluster that replaced every node is still found through a stable seed name).
 * 4. Down nodes last: a black-holed node would cost a `refreshTimeout` first.
 *
 * Nodes the map reports as failed are not asked; each node is listed once.
 */
export function refreshOrder(map: SlotMap, o: RefreshOrderInput): NodeAddress[] {
  const nodes = map.nodes().filter((n) => n.health !== 'failed');
  const troubled = new Set<string>();
  const peers: NodeAddress[] = [];
  if (o.down.size) {
    for (const s of map.shards) {
      const members = [...s.replicas, s.master];
      if (!members.some((m) => o.down.has(m.key))) continue;
      for (const m of members) troubled.add(m.key);
      peers.push(...members.filter((m) => m.health !== 'failed'));
    }
  }
  const spread = nodes.filter((n) => !troubled.has(n.key) && !o.down.has(n.key));
  const k = spread.length ? ((o.turn % spread.length) + spread.length) % spread.length : 0;
  const seen = new Set<string>();
  const ordered: NodeAddress[] = [];
  const suspects: NodeAddress[] = [];
  const all = [...spread.slice(k), ...spread.slice(0, k), ...o.prefer, ...peers, ...o.seeds];
  for (const n of all) {
    const key = formatAddress(n);
    if (seen.has(key)) continue;
    seen.add(key);
    (o.down.has(key) ? suspects : ordered).push({ host: n.host, port: n.port });
  }
  return [...ordered, ...suspects];
}
