/**
 * The slot-map decisions behind a quick failover: a MOVED to a replica moves its whole shard
 * (applyMoved / withPromotedReplica), and the order in which a refresh asks nodes
 * (refreshOrder): every healthy node outside a failed node's shard, rotated so that a fleet's
 * refreshes spread, then the node that told us of a change and the failed node's shard-mates,
 * seeds, and nodes that failed last.
 */
import { describe, expect, it } from 'vitest';
import { refreshOrder } from '../../src/cluster/refresh-order.js';
import { applyMoved, slotMapFromShards, type SlotMap } from '../../src/cluster/slot-map.js';
import { formatAddress, type NodeAddress, type Reply } from '../../src/types.js';

const node = (port: number, role: string, health = 'online'): Reply[] =>
  ['id', String(port).repeat(8).slice(0, 40), 'port', port, 'endpoint', '10.0.0.1', 'role', role, 'health', health];
const shard = (slots: number[], nodes: Reply[][]): Reply[] => ['slots', slots, 'nodes', nodes];
const from: NodeAddress = { host: '10.0.0.1', port: 7000 };
const a = (port: number): NodeAddress => ({ host: '10.0.0.1', port });

/** Three shards: 7000 (+7003, 7006) 0-5460, 7001 (+7004) 5461-10922, 7002 (+7005, failed) 10923-16383. */
const map: SlotMap = slotMapFromShards(
  [
    shard([0, 5460], [node(7000, 'master'), node(7003, 'replica'), node(7006, 'replica')]),
    shard([5461, 10922], [node(7001, 'master'), node(7004, 'replica')]),
    shard([10923, 16383], [node(7002, 'master'), node(7005, 'replica', 'fail')]),
  ],
  from,
);
const ports = (list: readonly NodeAddress[]) => list.map((n) => n.port);
const ownerPort = (m: SlotMap, slot: number) => m.shardForSlot(slot)?.master.port;

describe('applyMoved', () => {
  it.each([
    // [case, slot, MOVED target, owner of slot 0 / 100 / 5460 / 5461 after, shards after]
    ['to a replica of the shard: the whole shard moves to it', 100, 7003, [7003, 7003, 7003, 7001], 3],
    ['to the other replica of the shard', 5460, 7006, [7006, 7006, 7006, 7001], 3],
    ['to a master of another shard (resharding): one slot', 100, 7001, [7000, 7001, 7000, 7001], 3],
    ['to a replica of another shard: one slot (not a promotion of this shard)', 100, 7004, [7000, 7004, 7000, 7001], 4],
    ['to an unknown node: one slot, a new shard', 100, 7999, [7000, 7999, 7000, 7001], 4],
  ])('%s', (_case, slot, to, owners, shards) => {
    const next = applyMoved(map, slot, a(to));
    expect([0, 100, 5460, 5461].map((s) => ownerPort(next, s))).toEqual(owners);
    expect(next.shards).toHaveLength(shards);
    // The original snapshot is never touched.
    expect([0, 100, 5460, 5461].map((s) => ownerPort(map, s))).toEqual([7000, 7000, 7000, 7001]);
  });

  it('a promotion lists the old master as a replica, keeps the other replicas, ids and health', () => {
    const next = applyMoved(map, 0, a(7003));
    const s = next.shardForSlot(0)!;
    expect(s.master).toMatchObject({ port: 7003, role: 'master', health: 'online', id: map.shardForSlot(0)!.replicas[0]!.id });
    expect(s.replicas.map((r) => [r.port, r.role])).toEqual([[7000, 'replica'], [7006, 'replica']]);
    expect(next.nodes()).toHaveLength(map.nodes().length);
    expect(map.diff(next)).toEqual({ added: [], removed: [], movedSlots: 5461 });
  });

  it('a promotion carries slots patched onto the shard and leaves other patches alone', () => {
    const patched = map.withMovedSlot(6000, a(7000)).withMovedSlot(12000, a(7001));
    const next = applyMoved(patched, 1, a(7003));
    expect(ownerPort(next, 6000)).toBe(7003);
    expect(ownerPort(next, 12000)).toBe(7001);
    expect(next.slots[6000]!.master.port).toBe(7003);
    expect(next.coveredSlots).toBe(16384);
  });

  it('a second MOVED to the promoted node changes nothing', () => {
    const next = applyMoved(map, 0, a(7003));
    expect(applyMoved(next, 4000, a(7003))).toBe(next);
  });
});

describe('refreshOrder', () => {
  const seeds = [a(7000), a(9000)];
  it.each([
    // [case, prefer, down, turn, expected order]
    ['no trouble: every healthy node (rotated by turn), seeds; failed nodes left out', [], [], 0, [7000, 7001, 7002, 7003, 7006, 7004, 9000]],
    ['the turn rotates over masters and replicas', [], [], 1, [7001, 7002, 7003, 7006, 7004, 7000, 9000]],
    ['a negative turn still rotates', [], [], -1, [7004, 7000, 7001, 7002, 7003, 7006, 9000]],
    ['a MOVED target is not asked first (the MOVED is already in the map)', [7003], [], 0, [7000, 7001, 7002, 7003, 7006, 7004, 9000]],
    ['an unknown MOVED target after the spread nodes', [7999], [], 2, [7002, 7003, 7006, 7004, 7000, 7001, 7999, 9000]],
    ['a master down: the other shards first, then its replicas, itself last', [], [7000], 0, [7001, 7002, 7004, 7003, 7006, 9000, 7000]],
    ['a replica down: the other shards (rotated), then its shard, itself last', [], [7003], 1, [7002, 7004, 7001, 7006, 7000, 9000, 7003]],
    ['a preferred node that is down still goes last', [7001], [7001], 0, [7000, 7002, 7003, 7006, 7004, 9000, 7001]],
  ])('%s', (_case, prefer, down, turn, expected) => {
    const order = refreshOrder(map, { prefer: prefer.map(a), down: new Set(down.map((p) => formatAddress(a(p)))), seeds, turn });
    expect(ports(order)).toEqual(expected);
  });

  it('successive turns start at each spread node once: a fleet with random offsets spreads evenly', () => {
    const down = new Set([formatAddress(a(7000))]);
    const firsts = [0, 1, 2].map((turn) => refreshOrder(map, { prefer: [a(7003)], down, seeds, turn })[0]!.port);
    expect(firsts.sort()).toEqual([7001, 7002, 7004]);
  });
});
