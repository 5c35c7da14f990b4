import type { Connection } from '../connection/connection.js';
import { RedisError } from '../errors.js';
import type { CommandTraits } from '../commands/traits.js';
import type { Arg, Reply } from '../types.js';
import { cachePlan, copyReply, entryId, lower, replyBytes } from './cacheable.js';
import type { ResolvedCacheOptions } from './options.js';

/** Why the cache dropped everything (or a part): counted in `stats().cache.flushes`. */
export type FlushReason = 'connection-lost' | 'failover' | 'flushall' | 'slot-moved' | 'closed';

/** Counters of `stats().cache`. */
export interface CacheStats {
  /** Calls answered from the cache. */
  hits: number;
  /** Cacheable calls that went to the server. */
  misses: number;
  /** Entries held now. */
  entries: number;
  /** Estimated bytes held now. */
  bytes: number;
  /** Entries dropped to stay within `maxEntries` / `maxBytes`, or at their `ttl`. */
  evictions: number;
  /** Keys the server said changed (each invalidates that key's entries). */
  invalidations: number;
  /** Whole or partial flushes, by reason. */
  flushes: Partial<Record<FlushReason, number>>;
}

interface Entry {
  readonly id: string;
  readonly key: string;
  readonly value: Reply;
  readonly bytes: number;
  readonly expires: number;
  /** Hit since it was last passed over by eviction (second chance). */
  used: boolean;
}

interface Pending {
  readonly key: string;
  readonly promise: Promise<Reply>;
  /** An invalidation or a flush came while the read was out: its reply must not be kept. */
  poisoned: boolean;
}

const MISS: unique symbol = Symbol('miss');
/** Returned by {@link ClientCache.run} when this turn served `hitsPerTurn` hits already. */
export const YIELD: unique symbol = Symbol('yield');

/**
 * The client-side cache of one pool: decoded replies of cacheable reads, invalidated by the
 * server's tracking pushes (RESP3 `invalidate`), by the pool's own writes, and flushed whenever
 * the pool can no longer be sure to hear of a change: a tracked connection lost, a Sentinel
 * switch, a slot that moved, FLUSHALL.
 *
 * Freshness: a read records itself as pending before it is sent; an invalidation of its key or
 * a flush while it is out marks it poisoned, and a poisoned reply is returned to its callers
 * but never stored. So a reply older than an invalidation never enters the cache.
 */
export class ClientCache {
  private readonly entries = new Map<string, Entry>();
  /** Redis key -> entry ids of that key. */
  private readonly byKey = new Map<string, Set<string>>();
  /** Entry id -> the read in flight for it (identical calls share it). */
  private readonly pending = new Map<string, Pending>();
  private readonly pendingByKey = new Map<string, Set<Pending>>();
  /** With a group function (Cluster: the slot), group -> keys, for a partial flush. */
  private readonly byGroup: Map<number, Set<string>> | undefined;
  private bytes = 0;
  private hitsThisTurn = 0;
  /** Date.now() at the first hit of this turn: expiry is checked against it (one clock read per turn). */
  private turnStart = 0;
  /** Entries of two-part commands (`GET k`, `HGETALL h`), by lower-case command and key: a hit without building the id. */
  private readonly simple = new Map<string, Map<string, Entry>>();
  /** The same maps by the command name as callers spell it (`GET`), so a hit needs no lower-casing. */
  private readonly simpleByRaw = new Map<string, Map<string, Entry>>();
  private readonly counters = { hits: 0, misses: 0, evictions: 0, invalidations: 0 };
  private readonly flushes: Partial<Record<FlushReason, number>> = {};

  constructor(
    private readonly o: ResolvedCacheOptions,
    private readonly group?: (key: string) => number,
  ) {
    this.byGroup = group ? new Map() : undefined;
  }

  /**
   * Runs a command through the cache. A hit returns the cached reply itself (no promise, no
   * I/O); YIELD means this turn served `hitsPerTurn` hits already (wait for {@link nextTurn} and
   * run again); a cacheable miss returns the promise of `send()`, whose reply is kept unless
   * something invalidated it meanwhile (identical reads in flight share one request). A write
   * drops its keys' entries before it is sent and returns undefined, as does any command the
   * cache has nothing to do with: the caller sends those itself. `waited`: this call already
   * waited a turn, and is served now whatever the budget. `traits`: the command's, when the
   * caller has them (else they are looked up).
   */
  run(args: readonly Arg[], send: () => Promise<Reply>, waited = false, traits?: CommandTraits): Reply | typeof YIELD | Promise<Reply> | undefined {
    // The hit of a two-part read is {@link hit}'s; callers try it first, so this path plans.
    const plan = cachePlan(args, this.o.prefixes, traits);
    let e: Entry | undefined;
    switch (plan.kind) {
      case 'none':
        return undefined;
      case 'write':
        for (const k of plan.keys) this.invalidateKey(String(k));
        return undefined;
      case 'mget': {
        const hit = this.lookupMget(plan.keys);
        return hit === MISS ? this.fetchMget(plan.keys, send) : hit;
      }
      case 'read':
        e = this.entries.get(plan.entry);
        if (e === undefined) return this.fetch(plan.entry, plan.key, send);
    }
    if (!waited && this.overTurn()) return YIELD;
    if (this.o.ttl > 0 && e.expires <= this.turnStart) {
      this.drop(e);
      this.counters.evictions++;
      return this.fetch(e.id, e.key, send);
    }
    // Recency is a flag, not a move: re-inserting into a large Map on every hit costs more
    // than the hit itself. Eviction gives flagged entries a second chance (CLOCK, close to LRU).
    e.used = true;
    this.counters.hits++;
    return copyReply(e.value);
  }

  /**
   * A command that does not go through {@link run} (a pipeline, a transaction, a lease, a call
   * with `cache: false`): if it writes, its keys' entries go now, so the caller reads its own
   * write afterwards even before the server's invalidation arrives.
   */
  noteWrite(args: readonly Arg[], traits?: CommandTraits): void {
    const plan = cachePlan(args, this.o.prefixes, traits);
    if (plan.kind === 'write') for (const k of plan.keys) this.invalidateKey(String(k));
  }

  /**
   * The hit path alone: the cached reply of a two-part read (`GET k`), YIELD, or undefined when
   * {@link run} must decide (a miss, another command). No allocation on a hit.
   */
  hit(args: readonly Arg[], waited: boolean): Reply | typeof YIELD | undefined {
    if (args.length !== 2) return undefined;
    const raw = args[0];
    const key = args[1];
    if (typeof raw !== 'string' || typeof key !== 'string') return undefined;
    const e = this.simpleMap(raw)?.get(key);
    if (e === undefined) return undefined;
    if (!waited && this.overTurn()) return YIELD;
    if (this.o.ttl > 0 && e.expires <= this.turnStart) return undefined;
    e.used = true;
    this.counters.hits++;
    return copyReply(e.value);
  }

  private simpleMap(raw: string): Map<string, Entry> | undefined {
    let m = this.simpleByRaw.get(raw);
    if (m === undefined) {
      m = this.simple.get(lower(raw));
      if (m !== undefined && this.simpleByRaw.size < 256) this.simpleByRaw.set(raw, m);
    }
    return m;
  }

  private lookupMget(keys: readonly string[]): Reply | typeof MISS | typeof YIELD {
    const out: Reply[] = [];
    const now = this.o.ttl > 0 ? Date.now() : 0;
    for (const k of keys) {
      const e = this.entries.get(entryId('get', ['get', k]));
      if (e === undefined || (now > 0 && e.expires <= now)) return MISS;
      e.used = true;
      out.push(copyReply(e.value));
    }
    if (this.overTurn()) return YIELD;
    this.counters.hits++;
    return out;
  }

  /** Counts a hit against this turn's budget; true when the budget is spent. */
  private overTurn(): boolean {
    if (this.hitsThisTurn === 0) {
      this.turnStart = Date.now();
      setImmediate(() => { this.hitsThisTurn = 0; });
    }
    return ++this.hitsThisTurn > this.o.hitsPerTurn;
  }

  /** Resolves on the next event-loop turn (after socket data was read). */
  nextTurn(): Promise<void> {
    return new Promise((r) => setImmediate(r));
  }

  private fetch(id: string, key: string, send: () => Promise<Reply>): Promise<Reply> {
    const shared = this.pending.get(id);
    // Identical reads in flight share one request, but each caller gets its own copy.
    if (shared) return shared.promise.then(copyReply);
    this.counters.misses++;
    const p: Pending = { key, promise: undefined as unknown as Promise<Reply>, poisoned: false };
    const promise = send().then(
      (value) => {
        this.settle(id, p);
        if (!p.poisoned && !(value instanceof RedisError)) this.store(id, key, value);
        return value;
      },
      (err: unknown) => {
        this.settle(id, p);
        throw err;
      },
    );
    (p as { promise: Promise<Reply> }).promise = promise;
    this.addPending(id, p);
    return promise;
  }

  private fetchMget(keys: readonly string[], send: () => Promise<Reply>): Promise<Reply> {
    this.counters.misses++;
    const ps = keys.map((k): Pending => ({ key: k, promise: undefined as unknown as Promise<Reply>, poisoned: false }));
    ps.forEach((p) => this.addKeyPending(p));
    return send().then(
      (value) => {
        ps.forEach((p) => this.removeKeyPending(p));
        if (Array.isArray(value) && value.length === keys.length) {
          keys.forEach((k, i) => { if (!ps[i]!.poisoned) this.store(entryId('get', ['get', k]), k, value[i]!); });
        }
        return value;
      },
      (err: unknown) => {
        ps.forEach((p) => this.removeKeyPending(p));
        throw err;
      },
    );
  }

  private addPending(id: string, p: Pending): void {
    this.pending.set(id, p);
    this.addKeyPending(p);
  }

  private addKeyPending(p: Pending): void {
    let set = this.pendingByKey.get(p.key);
    if (set === undefined) this.pendingByKey.set(p.key, (set = new Set()));
    set.add(p);
  }

  private removeKeyPending(p: Pending): void {
    const set = this.pendingByKey.get(p.key);
    if (set === undefined) return;
    set.delete(p);
    if (set.size === 0) this.pendingByKey.delete(p.key);
  }

  private settle(id: string, p: Pending): void {
    if (this.pending.get(id) === p) this.pending.delete(id);
    this.removeKeyPending(p);
  }

  private store(id: string, key: string, value: Reply): void {
    const bytes = replyBytes(value) + (id.length + key.length) * 2 + 160;
    if (bytes > this.o.maxBytes) return;
    const old = this.entries.get(id);
    if (old) this.drop(old);
    const e: Entry = { id, key, value: copyReply(value), bytes, expires: this.o.ttl > 0 ? Date.now() + this.o.ttl : 0, used: false };
    this.entries.set(id, e);
    const space = id.indexOf(' ');
    if (id.length === space + 1 + key.length) {
      // A two-part command: its id is `name key`.
      const name = id.slice(0, space);
      let m = this.simple.get(name);
      if (m === undefined) this.simple.set(name, (m = new Map()));
      m.set(key, e);
    }
    let ids = this.byKey.get(key);
    if (ids === undefined) {
      this.byKey.set(key, (ids = new Set()));
      if (this.byGroup) {
        const g = this.group!(key);
        let keys = this.byGroup.get(g);
        if (keys === undefined) this.byGroup.set(g, (keys = new Set()));
        keys.add(key);
      }
    }
    ids.add(id);
    this.bytes += bytes;
    while (this.entries.size > this.o.maxEntries || this.bytes > this.o.maxBytes) {
      const oldest = this.entries.values().next().value as Entry;
      if (oldest.used && oldest !== e) {
        oldest.used = false;
        this.entries.delete(oldest.id);
        this.entries.set(oldest.id, oldest);
        continue;
      }
      this.drop(oldest);
      this.counters.evictions++;
    }
  }

  private drop(e: Entry): void {
    if (!this.entries.delete(e.id)) return;
    this.bytes -= e.bytes;
    const space = e.id.indexOf(' ');
    if (e.id.length === space + 1 + e.key.length) {
      const m = this.simple.get(e.id.slice(0, space));
      if (m?.get(e.key) === e) m.delete(e.key);
    }
    const ids = this.byKey.get(e.key);
    if (ids === undefined) return;
    ids.delete(e.id);
    if (ids.size > 0) return;
    this.byKey.delete(e.key);
    if (this.byGroup) {
      const g = this.group!(e.key);
      const keys = this.byGroup.get(g);
      keys?.delete(e.key);
      if (keys?.size === 0) this.byGroup.delete(g);
    }
  }

  /** One key changed: its entries go, and reads of it in flight will not be kept. */
  private invalidateKey(key: string): void {
    const pend = this.pendingByKey.get(key);
    if (pend) for (const p of pend) p.poisoned = true;
    const ids = this.byKey.get(key);
    if (ids === undefined) return;
    for (const id of [...ids]) {
      const e = this.entries.get(id);
      if (e) this.drop(e);
    }
  }

  /** Drops everything, and every read in flight will not be kept. */
  flush(reason: FlushReason): void {
    this.flushes[reason] = (this.flushes[reason] ?? 0) + 1;
    for (const set of this.pendingByKey.values()) for (const p of set) p.poisoned = true;
    this.entries.clear();
    // Emptied, not dropped: simpleByRaw points at the same maps.
    for (const m of this.simple.values()) m.clear();
    this.byKey.clear();
    this.byGroup?.clear();
    this.bytes = 0;
  }

  /** Drops the entries of keys in `groups` (Cluster: slots that moved); reads in flight of those keys will not be kept. */
  flushGroups(groups: ReadonlySet<number>, reason: FlushReason): void {
    if (!this.byGroup || groups.size === 0) return;
    this.flushes[reason] = (this.flushes[reason] ?? 0) + 1;
    for (const [key, set] of this.pendingByKey) if (groups.has(this.group!(key))) for (const p of set) p.poisoned = true;
    for (const g of groups) {
      const keys = this.byGroup.get(g);
      if (keys === undefined) continue;
      for (const key of [...keys]) this.invalidateKey(key);
    }
  }

  /**
   * Listens to a tracked connection: its invalidation pushes, and its loss (from then on the
   * server no longer tells us about the keys read through it). Only a lane's loss flushes: a
   * lease's connection serves no cached read.
   */
  attach(conn: Connection): void {
    conn.on('push', (v: Reply[]) => {
      if (v[0] !== 'invalidate') return;
      const keys = v[1];
      if (keys === null) {
        this.flush('flushall');
        return;
      }
      if (!Array.isArray(keys)) return;
      for (const k of keys) {
        this.counters.invalidations++;
        this.invalidateKey(Buffer.isBuffer(k) ? k.toString() : String(k));
      }
    });
    conn.once('close', (error: Error | undefined) => {
      // With an error it was lost (dropped, killed, retired); without, the pool closed it.
      if (conn.lane) this.flush(error ? 'connection-lost' : 'closed');
    });
  }

  /** Counters for `stats().cache`. */
  stats(): CacheStats {
    return { ...this.counters, entries: this.entries.size, bytes: this.bytes, flushes: { ...this.flushes } };
  }

  /** Whether any entry is held (a cluster skips diffing slot maps otherwise). */
  get size(): number {
    return this.entries.size;
  }
}
