import { describe, expect, it } from 'vitest';
import { SlotMap, slotMapFromShards, slotMapFromSlots, withHealthOf, type ClusterNode } from '../../src/cluster/slot-map.js';
import type { NodeAddress, Reply } from '../../src/types.js';
import { loadFixture, revive } from '../fixtures/revive.js';

/**
 * Captured by `node scripts/generate-command-table.mjs --cluster` from a real 7.0.15 cluster:
 * 3 masters + 3 replicas, slot 16000 moved to the shard that owns slot 0 (so that shard has
 * two ranges), one node announcing a hostname, and one replica killed (health "fail").
 */
const fx = loadFixture<{
  source: string;
  from: NodeAddress;
  failedPort: number;
  shards: { resp2: unknown; resp3: unknown };
  slots: { resp2: unknown; resp3: unknown };
}>('cluster-topology.json');
const from = fx.from;
const key = (port: number) => `127.0.0.1:${port}`;

/** A comparable summary: shards as master key -> replica keys, and per-slot master keys. */
function summary(map: SlotMap) {
  return {
    shards: map.shards.map((s) => [s.master.key, s.replicas.map((r) => r.key)]),
    slots: map.slots.map((s) => s?.master.key),
  };
}

describe.each([
  ['CLUSTER SHARDS', 'resp2', () => slotMapFromShards(revive(fx.shards.resp2), from)],
  ['CLUSTER SHARDS', 'resp3', () => slotMapFromShards(revive(fx.shards.resp3), from)],
  ['CLUSTER SLOTS', 'resp2', () => slotMapFromSlots(revive(fx.slots.resp2), from)],
  ['CLUSTER SLOTS', 'resp3', () => slotMapFromSlots(revive(fx.slots.resp3), from)],
])('%s (%s) from a real cluster', (source, _proto, build) => {
  const map = build();

  it('finds 3 shards covering all 16384 slots', () => {
    expect(map.shards).toHaveLength(3);
    expect(map.coveredSlots).toBe(16384);
    expect(map.masters().every((m) => m.role === 'master')).toBe(true);
    expect(map.patchedSlots).toBe(0);
  });

  it('keeps a shard with two slot ranges as one Shard', () => {
    const owner = map.shardForSlot(0)!;
    expect(map.shardForSlot(16000)).toBe(owner);
    expect(map.shardForSlot(15999)).not.toBe(owner);
    expect(map.shardForSlot(16001)).toBe(map.shardForSlot(15999));
    expect(owner.master.key).toBe(key(from.port));
  });

  it('reads ids and the announced hostname', () => {
    for (const n of map.nodes()) expect(n.id).toMatch(/^[0-9a-f]{40}$/);
    expect(map.shardForSlot(0)!.master.hostname).toBe('node-a.example');
    // The preferred endpoint stays the IP: hostname is extra information only.
    expect(map.shardForSlot(0)!.master.host).toBe('127.0.0.1');
  });

  if (source === 'CLUSTER SHARDS') {
    it('reports health, mapping the server\'s "fail" to failed', () => {
      const nodes = map.nodes();
      expect(nodes).toHaveLength(6);
      const failed = nodes.filter((n) => n.health === 'failed');
      expect(failed.map((n) => n.port)).toEqual([fx.failedPort]);
      expect(failed[0]!.role).toBe('replica');
      expect(nodes.filter((n) => n.health === 'online')).toHaveLength(5);
    });
  } else {
    it('has no health, and CLUSTER SLOTS leaves out the failed replica', () => {
      const nodes = map.nodes();
      expect(nodes).toHaveLength(5);
      expect(nodes.map((n) => n.port)).not.toContain(fx.failedPort);
      expect(nodes.every((n) => n.health === 'unknown')).toBe(true);
    });
  }
});

describe('CLUSTER SHARDS and CLUSTER SLOTS', () => {
  it('agree on every slot, and RESP2 agrees with RESP3', () => {
    const s2 = summary(slotMapFromShards(revive(fx.shards.resp2), from));
    const s3 = summary(slotMapFromShards(revive(fx.shards.resp3), from));
    const l2 = summary(slotMapFromSlots(revive(fx.slots.resp2), from));
    const l3 = summary(slotMapFromSlots(revive(fx.slots.resp3), from));
    expect(s3).toEqual(s2);
    expect(l3).toEqual(l2);
    expect(l2.slots).toEqual(s2.slots);
  });
});

// Synthetic replies for the endpoint rules, in the exact shapes of the captured ones.
const shardNode = (fields: Record<string, Reply>): Reply[] => Object.entries(fields).flat() as Reply[];
const shard = (slots: number[], nodes: Reply[][]): Reply[] => ['slots', slots, 'nodes', nodes];

describe('endpoint rules', () => {
  const asked: NodeAddress = { host: '10.1.2.3', port: 7000 };

  it('an empty or null endpoint means the node that was asked (SHARDS)', () => {
    const map = slotMapFromShards(
      [
        shard([0, 8191], [
          shardNode({ id: 'a', port: 7000, ip: '', endpoint: '', role: 'master', 'replication-offset': 1, health: 'online' }),
          shardNode({ id: 'b', port: 7003, ip: '10.0.0.9', endpoint: null, role: 'replica', 'replication-offset': 1, health: 'online' }),
        ]),
        shard([8192, 16383], [shardNode({ id: 'c', port: 7001, ip: '10.0.0.2', endpoint: '10.0.0.2', role: 'master', health: 'loading' })]),
      ],
      asked,
    );
    expect(map.shardForSlot(0)!.master.key).toBe('10.1.2.3:7000');
    expect(map.shardForSlot(0)!.replicas[0]!.key).toBe('10.1.2.3:7003');
    expect(map.shardForSlot(9000)!.master).toMatchObject({ key: '10.0.0.2:7001', health: 'loading', id: 'c' });
  });

  it('an empty or null host means the node that was asked (SLOTS)', () => {
    const map = slotMapFromSlots(
      [
        [0, 100, ['', 7000, 'a'], [null, 7003, 'b', []]],
        [101, 16383, ['10.0.0.2', 7001, 'c']],
      ],
      asked,
    );
    expect(map.shardForSlot(0)!.master.key).toBe('10.1.2.3:7000');
    expect(map.shardForSlot(0)!.replicas.map((r) => r.key)).toEqual(['10.1.2.3:7003']);
    expect(map.shardForSlot(16383)!.master.key).toBe('10.0.0.2:7001');
  });

  it("'?' is an unknown endpoint: the node is skipped, and a shard without master leaves its slots uncovered", () => {
    const shards = slotMapFromShards(
      [
        shard([0, 99], [
          shardNode({ id: 'a', port: 7000, endpoint: '?', role: 'master', health: 'online' }),
          shardNode({ id: 'b', port: 7003, endpoint: '10.0.0.3', role: 'replica', health: 'online' }),
        ]),
        shard([100, 16383], [
          shardNode({ id: 'c', port: 7001, endpoint: '10.0.0.2', role: 'master', health: 'online' }),
          shardNode({ id: 'd', port: 7004, endpoint: '?', role: 'replica', health: 'online' }),
        ]),
      ],
      asked,
    );
    expect(shards.shards).toHaveLength(1);
    expect(shards.shardForSlot(0)).toBeUndefined();
    expect(shards.coveredSlots).toBe(16384 - 100);
    expect(shards.shardForSlot(100)!.replicas).toEqual([]);

    const slots = slotMapFromSlots([[0, 99, ['?', 7000]], [100, 16383, ['10.0.0.2', 7001], ['?', 7004]]], asked);
    expect(slots.shardForSlot(0)).toBeUndefined();
    expect(slots.shardForSlot(100)!.replicas).toEqual([]);
  });

  it('uses ip when a pre-7 style node has no endpoint field, and skips invalid ports', () => {
    const map = slotMapFromShards(
      [shard([0, 16383], [
        shardNode({ id: 'a', port: 7000, ip: '10.0.0.1', role: 'master', health: 'online' }),
        shardNode({ id: 'b', port: 0, ip: '10.0.0.4', role: 'replica', health: 'online' }),
      ])],
      asked,
    );
    expect(map.shardForSlot(5)!.master.key).toBe('10.0.0.1:7000');
    expect(map.shardForSlot(5)!.replicas).toEqual([]);
  });

  it('prefers tls-port when asked to', () => {
    const reply = [shard([0, 16383], [shardNode({ id: 'a', port: 7000, 'tls-port': 17000, endpoint: 'h', role: 'master', health: 'online' })])];
    expect(slotMapFromShards(reply, asked).masters()[0]!.port).toBe(7000);
    expect(slotMapFromShards(reply, asked, { preferTlsPort: true }).masters()[0]!.port).toBe(17000);
  });

  it('uses tls-port for a TLS-only node (port 0: Redis 7.0 then reports tls-port and no port)', () => {
    // The node shape a real 7.0.15 cluster with `port 0`, `tls-port`, `tls-cluster yes` sends.
    const reply = [shard([0, 16383], [
      shardNode({ id: 'a', 'tls-port': 17000, ip: '127.0.0.1', endpoint: '127.0.0.1', role: 'master', 'replication-offset': 0, health: 'online' }),
      shardNode({ id: 'b', 'tls-port': 17001, ip: '127.0.0.1', endpoint: '127.0.0.1', role: 'replica', 'replication-offset': 0, health: 'loading' }),
    ])];
    for (const options of [{ preferTlsPort: true }, {}]) {
      const map = slotMapFromShards(reply, asked, options);
      expect(map.shardForSlot(0)!.master.key).toBe('127.0.0.1:17000');
      expect(map.shardForSlot(0)!.replicas.map((r) => r.key)).toEqual(['127.0.0.1:17001']);
    }
  });

  it('maps health strings', () => {
    const health = (h: string) =>
      slotMapFromShards([shard([0, 1], [shardNode({ port: 7000, endpoint: 'h', role: 'master', health: h })])], asked).masters()[0]!.health;
    expect(['online', 'loading', 'fail', 'failed', 'weird'].map(health)).toEqual(['online', 'loading', 'failed', 'failed', 'unknown']);
  });

  it('formats IPv6 keys with brackets', () => {
    const map = slotMapFromSlots([[0, 16383, ['::1', 7000, 'a']]], asked);
    expect(map.masters()[0]).toMatchObject({ host: '::1', port: 7000, key: '[::1]:7000' });
  });

  it('applies natMap to every address, including the asked-node fallback', () => {
    const natMap = (a: NodeAddress) => ({ host: `ext-${a.host}`, port: a.port + 1000 });
    const map = slotMapFromShards(revive(fx.shards.resp3), from, { natMap });
    for (const n of map.nodes()) {
      expect(n.host).toBe('ext-127.0.0.1');
      expect(n.key).toBe(`ext-127.0.0.1:${n.port}`);
      expect(n.port).toBeGreaterThan(1000);
    }
    const slots = slotMapFromSlots([[0, 16383, ['', 7000]]], asked, { natMap });
    expect(slots.masters()[0]!.key).toBe('ext-10.1.2.3:8000');
    expect(slots.mapAddress({ host: '10.0.0.1', port: 1 })).toEqual({ host: 'ext-10.0.0.1', port: 1001 });
    expect(SlotMap.empty().mapAddress({ host: 'h', port: 1 })).toEqual({ host: 'h', port: 1 });
  });

  it('ignores slot ranges outside 0..16383 and malformed entries', () => {
    const map = slotMapFromSlots([[-5, 2, ['h', 1]], [16380, 20000, ['h', 2]], ['junk'], null], asked);
    expect(map.coveredSlots).toBe(3 + 4);
    expect(map.shardForSlot(16383)!.master.port).toBe(2);
  });
});

describe('SlotMap', () => {
  const base = slotMapFromShards(revive(fx.shards.resp2), from);
  const masterKeys = base.masters().map((m) => m.key);

  it('lists every node once, masters first', () => {
    const nodes = base.nodes();
    expect(nodes.slice(0, 3).map((n) => n.role)).toEqual(['master', 'master', 'master']);
    expect(new Set(nodes.map((n) => n.key)).size).toBe(nodes.length);
    nodes.pop();
    expect(base.nodes()).toHaveLength(6); // a copy each time
  });

  it('withMovedSlot moves a slot to a known master without touching the original', () => {
    const target = base.shardForSlot(10923)!;
    const moved = base.withMovedSlot(5, target.master);
    expect(moved.shardForSlot(5)).toBe(target);
    expect(moved.slots[5]).toBe(target);
    expect(moved.patchedSlots).toBe(1);
    expect(base.shardForSlot(5)!.master.key).toBe(key(from.port));
    expect(base.slots[5]!.master.key).toBe(key(from.port));
    expect(moved.shards).toBe(base.shards);
    expect(moved.diff(base)).toEqual({ added: [], removed: [], movedSlots: 1 });
  });

  it('withMovedSlot to the current owner returns the same map', () => {
    expect(base.withMovedSlot(0, { host: '127.0.0.1', port: from.port })).toBe(base);
  });

  it('withMovedSlot to an unknown address creates a single-node shard', () => {
    const moved = base.withMovedSlot(42, { host: '10.9.9.9', port: 7777 });
    expect(moved.shards).toHaveLength(4);
    const s = moved.shardForSlot(42)!;
    expect(s.master).toEqual({ host: '10.9.9.9', port: 7777, key: '10.9.9.9:7777', role: 'master', health: 'unknown' });
    expect(s.replicas).toEqual([]);
    expect(base.diff(moved)).toEqual({ added: ['10.9.9.9:7777'], removed: [], movedSlots: 1 });
    // Further moves reuse that shard.
    const again = moved.withMovedSlot(43, { host: '10.9.9.9', port: 7777 });
    expect(again.shards).toHaveLength(4);
    expect(again.shardForSlot(43)).toBe(s);
    expect(again.patchedSlots).toBe(2);
  });

  it('withMovedSlot to a replica (promoted by a failover) keeps its id and health', () => {
    const replica = base.shardForSlot(0)!.replicas[0]!;
    const moved = base.withMovedSlot(1, replica);
    const m = moved.shardForSlot(1)!.master;
    expect(m).toMatchObject({ id: replica.id, key: replica.key, role: 'master', health: replica.health });
    expect(moved.nodes().filter((n: ClusterNode) => n.key === replica.key)).toHaveLength(1);
  });

  it('patches thousands of slots cheaply and flattens a large overlay', () => {
    const target = base.shardForSlot(16383)!.master;
    let map = base;
    const t0 = performance.now();
    for (let slot = 0; slot < 5000; slot++) map = map.withMovedSlot(slot, target);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(map.patchedSlots).toBeLessThanOrEqual(256);
    for (let slot = 0; slot < 5000; slot++) expect(map.shardForSlot(slot)!.master.key).toBe(target.key);
    expect(map.shardForSlot(5001)).toBe(base.shardForSlot(5001));
    expect(base.diff(map).movedSlots).toBe(5000);
  });

  it('rejects slots out of range', () => {
    expect(() => base.withMovedSlot(16384, { host: 'h', port: 1 })).toThrow(RangeError);
    expect(() => base.withMovedSlot(-1, { host: 'h', port: 1 })).toThrow(RangeError);
    expect(() => base.withMovedSlot(1.5, { host: 'h', port: 1 })).toThrow(RangeError);
  });

  it('diff reports added and removed nodes and moved slots', () => {
    const other = slotMapFromSlots(revive(fx.slots.resp2), from); // lacks the failed replica
    expect(base.diff(other)).toEqual({ added: [], removed: [key(fx.failedPort)], movedSlots: 0 });
    expect(other.diff(base)).toEqual({ added: [key(fx.failedPort)], removed: [], movedSlots: 0 });
    const empty = SlotMap.empty();
    expect(empty.diff(base).movedSlots).toBe(16384);
    expect(empty.diff(base).added).toHaveLength(6);
    expect(base.diff(empty).removed).toHaveLength(6);
  });

  it('masters({ withSlots }) leaves out masters that serve no slot', () => {
    const map = slotMapFromShards(
      [
        shard([0, 16383], [shardNode({ port: 7000, endpoint: 'a', role: 'master', health: 'online' })]),
        shard([], [shardNode({ port: 7001, endpoint: 'b', role: 'master', health: 'online' })]),
      ],
      from,
    );
    expect(map.masters().map((m) => m.key)).toEqual(['a:7000', 'b:7001']);
    expect(map.masters({ withSlots: true }).map((m) => m.key)).toEqual(['a:7000']);
    expect(masterKeys).toHaveLength(3);
  });

  it('requires 16384 slots', () => {
    expect(() => new SlotMap([], [])).toThrow(RangeError);
    expect(SlotMap.empty().coveredSlots).toBe(0);
  });
});

describe('CLUSTER SHARDS after a failover on Redis 7.2+ / Valkey 8.0 (reply recorded from Redis 7.4.1)', () => {
  const node = (id: string, port: number, role: string, health: string) => ['id', id, 'port', port, 'ip', '127.0.0.1', 'endpoint', '127.0.0.1', 'role', role, 'replication-offset', 1, 'health', health];
  const from = { host: '127.0.0.1', port: 37895 };
  // The killed master still listed first, as a master, beside the promoted replica; the shard has no slots.
  const shards: Reply = [
    ['slots', [5461, 10922], 'nodes', [node('b'.repeat(40), 37895, 'master', 'online'), node('c'.repeat(40), 45779, 'replica', 'online')]],
    ['slots', [], 'nodes', [node('f'.repeat(40), 33023, 'master', 'fail'), node('9'.repeat(40), 41027, 'master', 'online')]],
    ['slots', [10923, 16383], 'nodes', [node('e'.repeat(40), 45861, 'master', 'online'), node('3'.repeat(40), 41239, 'replica', 'loading')]],
  ];
  const slots: Reply = [
    [0, 5460, ['127.0.0.1', 41027, '9'.repeat(40)]],
    [5461, 10922, ['127.0.0.1', 37895, 'b'.repeat(40)], ['127.0.0.1', 45779, 'c'.repeat(40)]],
    [10923, 16383, ['127.0.0.1', 45861, 'e'.repeat(40)], ['127.0.0.1', 41239, '3'.repeat(40)]],
  ];

  it('of two masters in one shard, the online one serves; the failed one is kept as a failed replica', () => {
    const map = slotMapFromShards(shards, from);
    const shard = map.shards.find((s) => s.replicas.some((r) => r.port === 33023))!;
    expect(shard.master.port).toBe(41027);
    expect(shard.replicas.find((r) => r.port === 33023)).toMatchObject({ role: 'replica', health: 'failed' });
    // The slots the server left out stay uncovered: the refresh then asks CLUSTER SLOTS.
    expect(map.coveredSlots).toBe(16384 - 5461);
  });

  it('withHealthOf: the slots of CLUSTER SLOTS, the health of CLUSTER SHARDS', () => {
    const merged = withHealthOf(slotMapFromSlots(slots, from), slotMapFromShards(shards, from));
    expect(merged.coveredSlots).toBe(16384);
    expect(merged.shardForSlot(0)!.master).toMatchObject({ port: 41027, health: 'online' });
    expect(merged.shardForSlot(16383)!.replicas[0]).toMatchObject({ port: 41239, health: 'loading' });
    expect(merged.nodes().map((n) => n.port).sort()).toEqual([37895, 41027, 41239, 45779, 45861]);
  });
});
