import { formatAddress, type NodeAddress, type Reply } from '../types.js';
import { SLOT_COUNT } from './slot.js';

/** Health of a node as `CLUSTER SHARDS` reports it; `unknown` when the source has no health (CLUSTER SLOTS, MOVED). */
export type NodeHealth = 'online' | 'loading' | 'failed' | 'unknown';

/** One cluster node. Addresses are final: `natMap` has already been applied. */
export interface ClusterNode {
  /** Node ID (40 hex chars), when reported. */
  readonly id?: string;
  readonly host: string;
  readonly port: number;
  /** `host:port` (`[v6]:port` for IPv6): the identity used for pools and diffs. */
  readonly key: string;
  readonly role: 'master' | 'replica';
  readonly health: NodeHealth;
  /** The announced hostname (`cluster-announce-hostname`), when reported. */
  readonly hostname?: string;
}

/** A master and its replicas. */
export interface Shard {
  readonly master: ClusterNode;
  readonly replicas: readonly ClusterNode[];
}

/** Options of the SlotMap builders. */
export interface SlotMapOptions {
  /** Rewrites every reported address (NAT, Docker port maps). Applied after endpoint resolution. */
  natMap?: (address: NodeAddress) => NodeAddress;
  /** Use `tls-port` from CLUSTER SHARDS when present (for TLS connections). */
  preferTlsPort?: boolean;
}

/** Beyond this many patched slots, `withMovedSlot` flattens the overlay into a fresh array. */
const MAX_OVERLAY = 256;

/**
 * An immutable snapshot of which shard serves which slot.
 *
 * `withMovedSlot` returns a new snapshot that shares the 16384-entry base array and records
 * the moved slot in a small overlay, because a resharding sends MOVED for many slots in quick
 * succession and copying the array for each one would be wasteful. A full refresh replaces
 * the whole snapshot, overlay included.
 */
export class SlotMap {
  /** Every shard, including masters that serve no slot. */
  readonly shards: readonly Shard[];
  readonly #base: readonly (Shard | undefined)[];
  readonly #overlay: ReadonlyMap<number, Shard> | undefined;
  readonly #natMap: ((a: NodeAddress) => NodeAddress) | undefined;
  #slots: readonly (Shard | undefined)[] | undefined;
  #nodes: ClusterNode[] | undefined;
  // Computed on first use: a snapshot never changes, and each of these scans 16384 slots
  // (keyless commands ask for the serving masters on every call).
  #serving: ClusterNode[] | undefined;
  #covered: number | undefined;

  /**
   * Prefer the builders. `slots` must have 16384 entries whose shards are members of `shards`.
   */
  constructor(
    shards: readonly Shard[],
    slots: readonly (Shard | undefined)[],
    options?: { overlay?: ReadonlyMap<number, Shard>; natMap?: (a: NodeAddress) => NodeAddress },
  ) {
    if (slots.length !== SLOT_COUNT) throw new RangeError(`SlotMap needs ${SLOT_COUNT} slots, got ${slots.length}`);
    this.shards = shards;
    this.#base = slots;
    this.#overlay = options?.overlay?.size ? options.overlay : undefined;
    this.#natMap = options?.natMap;
  }

  /** An empty map: no shards, no slot covered. */
  static empty(options?: { natMap?: (a: NodeAddress) => NodeAddress }): SlotMap {
    return new SlotMap([], new Array<Shard | undefined>(SLOT_COUNT).fill(undefined), options);
  }

  /** Slot -> shard, 16384 entries (`undefined` = not covered). Materialised on first use when patched. */
  get slots(): readonly (Shard | undefined)[] {
    if (this.#slots) return this.#slots;
    if (!this.#overlay) return (this.#slots = this.#base);
    const copy = this.#base.slice();
    for (const [slot, shard] of this.#overlay) copy[slot] = shard;
    return (this.#slots = copy);
  }

  /** Number of slots patched by `withMovedSlot` since the last full build. */
  get patchedSlots(): number {
    return this.#overlay?.size ?? 0;
  }

  /** The shard serving `slot`, or `undefined` when no shard covers it (refresh, then fail). */
  shardForSlot(slot: number): Shard | undefined {
    return this.#overlay?.get(slot) ?? this.#base[slot];
  }

  /** Number of slots covered by some shard; 16384 when the cluster is fully covered. */
  get coveredSlots(): number {
    if (this.#covered !== undefined) return this.#covered;
    let n = 0;
    for (const s of this.slots) if (s) n++;
    return (this.#covered = n);
  }

  /** Every node, masters first in shard order, each listed once. */
  nodes(): ClusterNode[] {
    if (this.#nodes) return this.#nodes.slice();
    const seen = new Map<string, ClusterNode>();
    for (const s of this.shards) if (!seen.has(s.master.key)) seen.set(s.master.key, s.master);
    for (const s of this.shards) for (const r of s.replicas) if (!seen.has(r.key)) seen.set(r.key, r);
    this.#nodes = [...seen.values()];
    return this.#nodes.slice();
  }

  /**
   * The masters, in shard order. With `withSlots`, only those serving at least one slot: the
   * `all_shards` fan-out targets, which need not wait for an empty master.
   */
  masters(options?: { withSlots?: boolean }): ClusterNode[] {
    if (!options?.withSlots) return this.shards.map((s) => s.master);
    if (!this.#serving) {
      const serving = new Set<Shard>();
      let last: Shard | undefined;
      for (const s of this.slots) {
        if (s && s !== last) serving.add(s);
        last = s;
      }
      this.#serving = this.shards.filter((s) => serving.has(s)).map((s) => s.master);
    }
    return this.#serving.slice();
  }

  /** Applies the `natMap` this map was built with; use it on MOVED/ASK addresses before `withMovedSlot`. */
  mapAddress(address: NodeAddress): NodeAddress {
    return this.#natMap ? this.#natMap(address) : address;
  }

  /**
   * A new SlotMap where `slot` is served by the shard whose master is `address` (already
   * NAT-mapped, see `mapAddress`). An unknown address becomes a new single-node shard, taking
   * the id and health of a replica with that address if there is one (a promoted replica).
   */
  withMovedSlot(slot: number, address: NodeAddress): SlotMap {
    if (!Number.isInteger(slot) || slot < 0 || slot >= SLOT_COUNT) throw new RangeError(`slot ${slot} is out of range`);
    const key = formatAddress(address);
    let shards = this.shards;
    let target = shards.find((s) => s.master.key === key);
    if (!target) {
      target = this.newShard(address, key);
      shards = [...shards, target];
    }
    if (this.shardForSlot(slot) === target && shards === this.shards) return this;
    const overlay = new Map(this.#overlay ?? []);
    overlay.set(slot, target);
    if (overlay.size > MAX_OVERLAY) {
      const flat = this.#base.slice();
      for (const [s, sh] of overlay) flat[s] = sh;
      return new SlotMap(shards, flat, { natMap: this.#natMap });
    }
    return new SlotMap(shards, this.#base, { overlay, natMap: this.#natMap });
  }

  /**
   * A new SlotMap where each `[slot, address]` of `moves` is served by the shard whose master is
   * `address` (already NAT-mapped), built once however many slots move (a SMIGRATED notification
   * may move thousands). Unknown addresses become new shards as in {@link withMovedSlot}.
   */
  withMovedSlots(moves: ReadonlyArray<readonly [slot: number, address: NodeAddress]>): SlotMap {
    if (moves.length === 0) return this;
    if (moves.length === 1) return this.withMovedSlot(moves[0]![0], moves[0]![1]);
    const shards = [...this.shards];
    const byKey = new Map(shards.map((s) => [s.master.key, s] as const));
    const flat = this.slots.slice();
    let changed = false;
    for (const [slot, address] of moves) {
      if (!Number.isInteger(slot) || slot < 0 || slot >= SLOT_COUNT) throw new RangeError(`slot ${slot} is out of range`);
      const key = formatAddress(address);
      let target = byKey.get(key);
      if (!target) {
        target = this.newShard(address, key);
        shards.push(target);
        byKey.set(key, target);
        changed = true;
      }
      if (flat[slot] !== target) {
        flat[slot] = target;
        changed = true;
      }
    }
    return changed ? new SlotMap(shards, flat, { natMap: this.#natMap }) : this;
  }

  /** A single-node shard for `address`, with the id and health of a replica there if any (a promoted replica). */
  private newShard(address: NodeAddress, key: string): Shard {
    const known = this.nodes().find((n) => n.key === key);
    const master: ClusterNode = {
      ...(known?.id === undefined ? {} : { id: known.id }),
      ...(known?.hostname === undefined ? {} : { hostname: known.hostname }),
      host: address.host,
      port: address.port,
      key,
      role: 'master',
      health: known?.health ?? 'unknown',
    };
    return { master, replicas: [] };
  }

  /**
   * A new SlotMap in which the replica `key` has taken over its shard (a failover): it is the
   * master of every slot the shard served, patched ones included, and the old master is its
   * first replica. Returns this map when no shard lists `key` as a replica.
   */
  withPromotedReplica(key: string): SlotMap {
    const old = this.shards.find((s) => s.replicas.some((r) => r.key === key));
    if (!old) return this;
    const promoted = old.replicas.find((r) => r.key === key)!;
    const shard: Shard = {
      master: { ...promoted, role: 'master' },
      replicas: [{ ...old.master, role: 'replica' }, ...old.replicas.filter((r) => r.key !== key)],
    };
    const swap = (s: Shard | undefined) => (s === old ? shard : s);
    const overlay = this.#overlay ? new Map([...this.#overlay].map(([slot, s]) => [slot, swap(s)!] as const)) : undefined;
    return new SlotMap(this.shards.map((s) => swap(s)!), this.#base.map(swap), { overlay, natMap: this.#natMap });
  }

  /**
   * What changed from this map to `other`: node keys added and removed, and the number of
   * slots whose master differs (covered <-> uncovered counts as moved).
   */
  diff(other: SlotMap): { added: string[]; removed: string[]; movedSlots: number } {
    const mine = new Set(this.nodes().map((n) => n.key));
    const theirs = new Set(other.nodes().map((n) => n.key));
    const added = [...theirs].filter((k) => !mine.has(k));
    const removed = [...mine].filter((k) => !theirs.has(k));
    let movedSlots = 0;
    const a = this.slots;
    const b = other.slots;
    // Slots come in long runs of one shard: compare the masters' keys once per run, not per slot.
    let prevA: Shard | undefined | null = null;
    let prevB: Shard | undefined | null = null;
    let differs = false;
    for (let i = 0; i < SLOT_COUNT; i++) {
      const x = a[i];
      const y = b[i];
      if (x !== prevA || y !== prevB) {
        prevA = x;
        prevB = y;
        differs = x?.master.key !== y?.master.key;
      }
      if (differs) movedSlots++;
    }
    return { added, removed, movedSlots };
  }
}

/**
 * The map after a MOVED of `slot` to `to` (NAT-mapped). When `to` is a replica of the shard
 * that serves the slot in `map`, that replica was promoted, and a promoted replica takes every
 * slot of its master: the whole shard moves at once, so commands for the shard's other slots
 * go to the new master at once instead of each earning a MOVED of its own (hundreds per slot
 * range under load). Any other MOVED (a resharding) patches that one slot.
 */
export function applyMoved(map: SlotMap, slot: number, to: NodeAddress): SlotMap {
  const key = formatAddress(to);
  const shard = map.shardForSlot(slot);
  if (shard && shard.replicas.some((r) => r.key === key)) return map.withPromotedReplica(key);
  return map.withMovedSlot(slot, to);
}

// ---------------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------------

function str(v: Reply | undefined): string | undefined {
  if (typeof v === 'string') return v;
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  return undefined;
}

function num(v: Reply | undefined): number {
  return typeof v === 'number' ? v : Number(str(v));
}

function fields(v: Reply | undefined): Map<string, Reply> {
  const out = new Map<string, Reply>();
  if (v instanceof Map) for (const [k, x] of v) out.set(str(k) ?? '', x);
  else if (Array.isArray(v)) for (let i = 0; i + 1 < v.length; i += 2) out.set(str(v[i]) ?? '', v[i + 1]!);
  return out;
}

function list(v: Reply | undefined): Reply[] {
  return Array.isArray(v) ? v : v instanceof Set ? [...v] : [];
}

function health(v: Reply | undefined): NodeHealth {
  switch (str(v)) {
    case 'online': return 'online';
    case 'loading': return 'loading';
    // Redis 7.0 sends "fail" although its documentation says "failed"; accept both.
    case 'fail': case 'failed': return 'failed';
    default: return 'unknown';
  }
}

/**
 * Resolves a reported endpoint: null or empty means "the node you asked" (a node that has
 * not learnt its own IP yet, or `cluster-preferred-endpoint-type unknown-endpoint`); `?`
 * means unknown (hostname preferred but not set), and such a node is skipped.
 */
function makeNode(
  endpoint: string | undefined,
  port: number,
  from: NodeAddress,
  o: SlotMapOptions | undefined,
  extra: { id?: string; hostname?: string; role: 'master' | 'replica'; health: NodeHealth },
): ClusterNode | undefined {
  if (endpoint === '?') return undefined;
  if (!Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  let address: NodeAddress = { host: endpoint ? endpoint : from.host, port };
  if (o?.natMap) address = o.natMap(address);
  const node: { -readonly [K in keyof ClusterNode]: ClusterNode[K] } = {
    host: address.host,
    port: address.port,
    key: formatAddress(address),
    role: extra.role,
    health: extra.health,
  };
  if (extra.id) node.id = extra.id;
  if (extra.hostname) node.hostname = extra.hostname;
  return node;
}

function fill(slots: (Shard | undefined)[], shard: Shard, start: number, end: number): void {
  const lo = Math.max(0, start);
  const hi = Math.min(SLOT_COUNT - 1, end);
  for (let s = lo; s <= hi; s++) slots[s] = shard;
}

/**
 * Builds a SlotMap from a `CLUSTER SHARDS` reply (Redis >= 7), RESP2 (flat key/value arrays)
 * or RESP3 (maps). `from` is the node that answered. A shard without a usable master (master
 * endpoint `?`) is left out, so its slots stay uncovered and trigger a refresh.
 */
export function slotMapFromShards(reply: Reply, from: NodeAddress, options?: SlotMapOptions): SlotMap {
  const shards: Shard[] = [];
  const slots = new Array<Shard | undefined>(SLOT_COUNT).fill(undefined);
  for (const rawShard of list(reply)) {
    const f = fields(rawShard);
    let master: ClusterNode | undefined;
    const replicas: ClusterNode[] = [];
    for (const rawNode of list(f.get('nodes'))) {
      const n = fields(rawNode);
      const tls = options?.preferTlsPort ? n.get('tls-port') : undefined;
      const port = num(tls ?? n.get('port') ?? n.get('tls-port'));
      const role = str(n.get('role')) === 'master' ? 'master' : 'replica';
      // 'endpoint' is the preferred endpoint; servers without it only have 'ip'.
      const endpoint = n.has('endpoint') ? str(n.get('endpoint')) : str(n.get('ip'));
      const node = makeNode(endpoint, port, from, options, {
        id: str(n.get('id')),
        hostname: str(n.get('hostname')),
        role,
        health: health(n.get('health')),
      });
      if (!node) continue;
      // Two masters in one shard: after a failover Redis 7.2+ and Valkey keep listing the failed
      // old master first, as a master, beside the promoted replica. The healthier one serves;
      // on a tie (a settled cluster never has one) the first.
      if (role === 'master' && (!master || RANK[node.health] < RANK[master.health])) {
        if (master) replicas.push({ ...master, role: 'replica' });
        master = node;
      } else replicas.push(role === 'master' ? { ...node, role: 'replica' } : node);
    }
    if (!master) continue;
    const shard: Shard = { master, replicas };
    shards.push(shard);
    const ranges = list(f.get('slots'));
    for (let i = 0; i + 1 < ranges.length; i += 2) fill(slots, shard, num(ranges[i]), num(ranges[i + 1]));
  }
  return new SlotMap(shards, slots, options?.natMap ? { natMap: options.natMap } : undefined);
}

/** Which of two masters a shard lists serves: lower is better. */
const RANK: Record<NodeHealth, number> = { online: 0, unknown: 1, loading: 2, failed: 3 };

/**
 * The slots (and roles) of `slots`, a map built from CLUSTER SLOTS, with the health `shards` (a
 * map from CLUSTER SHARDS of the same node) reports for the same nodes. For a CLUSTER SHARDS
 * reply that leaves slots uncovered although the cluster serves them: after a failover, Redis
 * 7.2 to 8.0-M01 and Valkey 8.0 list the promoted replica's shard with no slots at all.
 */
export function withHealthOf(slots: SlotMap, shards: SlotMap): SlotMap {
  const health = new Map<string, NodeHealth>();
  for (const n of shards.nodes()) health.set(n.key, n.health);
  const renew = (n: ClusterNode): ClusterNode => {
    const h = health.get(n.key);
    return h === undefined || h === n.health ? n : { ...n, health: h };
  };
  const next = new Map<Shard, Shard>();
  const out: Shard[] = [];
  for (const sh of slots.shards) {
    const copy: Shard = { master: renew(sh.master), replicas: sh.replicas.map(renew) };
    next.set(sh, copy);
    out.push(copy);
  }
  return new SlotMap(out, slots.slots.map((sh) => (sh ? next.get(sh) : undefined)), { natMap: (a) => slots.mapAddress(a) });
}

/**
 * Builds a SlotMap from a `CLUSTER SLOTS` reply: `[start, end, master, ...replicas]` per
 * range, each node `[endpoint, port, id?, metadata?]`. Ranges with the same master share one
 * Shard. CLUSTER SLOTS has no health: nodes get `unknown` (it already omits failed replicas).
 */
export function slotMapFromSlots(reply: Reply, from: NodeAddress, options?: SlotMapOptions): SlotMap {
  const byMaster = new Map<string, { master: ClusterNode; replicas: Map<string, ClusterNode> }>();
  const ranges: Array<{ key: string; start: number; end: number }> = [];
  for (const entry of list(reply)) {
    const e = list(entry);
    if (e.length < 3) continue;
    const parsed = e.slice(2).map((raw, i) => {
      const n = list(raw);
      const meta = fields(n[3]);
      return makeNode(str(n[0]) ?? '', num(n[1]), from, options, {
        id: str(n[2]),
        hostname: str(meta.get('hostname')),
        role: i === 0 ? 'master' : 'replica',
        health: 'unknown',
      });
    });
    const master = parsed[0];
    if (!master) continue;
    let group = byMaster.get(master.key);
    if (!group) byMaster.set(master.key, (group = { master, replicas: new Map() }));
    for (const r of parsed.slice(1)) if (r && !group.replicas.has(r.key)) group.replicas.set(r.key, r);
    ranges.push({ key: master.key, start: num(e[0]), end: num(e[1]) });
  }
  const shardOf = new Map<string, Shard>();
  const shards: Shard[] = [];
  for (const [key, g] of byMaster) {
    const shard: Shard = { master: g.master, replicas: [...g.replicas.values()] };
    shardOf.set(key, shard);
    shards.push(shard);
  }
  const slots = new Array<Shard | undefined>(SLOT_COUNT).fill(undefined);
  for (const r of ranges) fill(slots, shardOf.get(r.key)!, r.start, r.end);
  return new SlotMap(shards, slots, options?.natMap ? { natMap: options.natMap } : undefined);
}
