import type { Connection } from '../connection/connection.js';
import { PoolClosedError, RedisError, TimeoutError } from '../errors.js';
import { backoffDelay, type BackoffOptions } from '../pool/backoff.js';
import type { NodePool } from '../pool/node-pool.js';
import { Coalescer } from '../retry.js';
import { formatAddress, type Reply } from '../types.js';
import { COMMANDS, nameKey, parseNameKey, readFrame, type ResolvedSubscriptionOptions, type SubscriptionKind } from './frames.js';
import { groupBy, planSubscriptions } from './plan.js';
import { Subscription, type Listener } from './subscription.js';
import { infoOf, isUnknownCommand, shardedPubSubUnsupported } from './unsupported.js';

/** Where one name must be subscribed. */
export interface PubSubTarget {
  pool: NodePool;
  /** Names of one kind and group may share one command (a cluster's SSUBSCRIBE: one slot per command). */
  group?: number;
}

/** How a mode places subscriptions; the hub does the rest. */
export interface PubSubPlacement {
  /**
   * The pools `name` must be subscribed on now. `current` are the pools it is confirmed on:
   * keep them when they are still right, so a topology change moves only what must move.
   */
  place(kind: SubscriptionKind, name: string, current: readonly NodePool[]): PubSubTarget[];
  /** A subscribe was answered `-MOVED`: the mode's map is stale (a cluster applies the redirect). */
  moved?(error: RedisError, pool: NodePool): void;
  /**
   * A server dropped a sharded channel on its own (its slot left the node). Resolves once the
   * mode's map is fresh: until then the name is not placed on that node again (a demoted master
   * would accept it and serve it as a replica, and moving it once more later could deliver a
   * message twice).
   */
  shardLost?(name: string, pool: NodePool): Promise<void>;
}

/** Hub settings, from the pool's options. */
export interface PubSubHubOptions {
  /** Backoff between resubscribe attempts that fail (the pool's `pool.reconnect`). */
  reconnect: BackoffOptions;
  /** How long subscribe() waits for the servers' confirmation, in ms (the pool's `commandTimeout`; 0 = no limit). */
  timeout: number;
}

/** Pub/sub counters for `stats().pubsub`. */
export interface PubSubStats {
  /** Open subscriptions. */
  subscriptions: number;
  /** Distinct channels, patterns and sharded channels subscribed. */
  names: number;
  /** Subscriber connections open (one per node that carries a subscription). */
  connections: number;
  /** Messages delivered to subscriptions. */
  messages: number;
  /** Names subscribed again after a fault. */
  resubscribes: number;
}

interface Entry {
  readonly kind: SubscriptionKind;
  readonly name: string;
  readonly key: string;
  readonly subs: Set<Subscription>;
  /** When the subscription stopped being trustworthy, and why; cleared by the resubscribe. */
  lostAt: number | undefined;
  lostReason: string | undefined;
  waiters: Array<{ resolve: () => void; reject: (e: Error) => void }>;
  group: number | undefined;
  /** A pool that just dropped this name: not a target until the map was refreshed. */
  avoid: NodePool | undefined;
}

/** One subscriber connection: to one node pool, for one generation of it (a Sentinel switch starts a new one). */
class Link {
  conn: Connection | undefined;
  readonly generation: number;
  /** Confirmed on this connection. */
  readonly names = new Set<string>();
  /** Sent, not yet confirmed: their messages may already arrive (the confirmation comes first). */
  readonly adding = new Set<string>();
  lost: string | undefined;
  constructor(readonly pool: NodePool) {
    this.generation = pool.generation;
  }
}

/** A reply proving the name was not subscribed for a reason retrying cannot fix (NOPERM, a syntax error). */
function isPermanent(err: unknown): boolean {
  if (!(err instanceof RedisError)) return false;
  return !['MOVED', 'ASK', 'TRYAGAIN', 'CLUSTERDOWN', 'LOADING', 'MASTERDOWN', 'BUSY'].includes(err.code);
}

/**
 * The subscriptions of one pool on shared subscriber connections: one per node that needs one,
 * whatever the number of subscriptions.
 *
 * It works as a reconciler. The placement says where each name belongs now; a round compares
 * that with what is confirmed on each connection and sends the difference. Faults only mark
 * names as lost (with the time, for `gapMs`) and start a round: a dropped connection, a
 * Sentinel switch (the node pool's generation changes and its subscriber is closed at the
 * switch), a topology change, a sharded channel the server dropped. Rounds that fail are
 * retried with the reconnect backoff. A message counts only from the connection a name is
 * confirmed on, so a name that moved is never delivered twice.
 */
export class PubSubHub {
  private readonly entries = new Map<string, Entry>();
  private readonly links = new Map<NodePool, Link>();
  private readonly subs = new Set<Subscription>();
  /** Rounds run one at a time; a kick during one asks for one more (retry.ts). */
  private readonly rounds = new Coalescer(() => this.round());
  private retryTimer: NodeJS.Timeout | undefined;
  private attempt = 0;
  private closed = false;
  private buffersWanted = 0;
  private move: { reason: string; since: number } | undefined;
  private messages = 0;
  private resubscribes = 0;

  constructor(
    private readonly placement: PubSubPlacement,
    private readonly o: PubSubHubOptions,
  ) {}

  /** Subscribes `names` of `kind` for a new subscription; resolves once every name is confirmed. */
  async add(kind: SubscriptionKind, names: readonly string[], listener: Listener | undefined, options: ResolvedSubscriptionOptions): Promise<Subscription> {
    if (this.closed) throw new PoolClosedError();
    const sub = new Subscription(this, kind, names, listener, options);
    this.subs.add(sub);
    if (options.returnBuffers && this.buffersWanted++ === 0) for (const l of this.links.values()) if (l.conn) l.conn.pushBuffers = true;
    const waits: Promise<void>[] = [];
    for (const name of names) {
      const key = nameKey(kind, name);
      let e = this.entries.get(key);
      if (e === undefined) {
        e = { kind, name, key, subs: new Set(), lostAt: undefined, lostReason: undefined, waiters: [], group: undefined, avoid: undefined };
        this.entries.set(key, e);
      }
      e.subs.add(sub);
      if (!this.confirmed(e)) {
        const entry = e;
        waits.push(new Promise<void>((resolve, reject) => entry.waiters.push({ resolve, reject })));
      }
    }
    if (waits.length === 0) return sub;
    void this.kick();
    let timer: NodeJS.Timeout | undefined;
    try {
      await (this.o.timeout > 0
        ? Promise.race([
          Promise.all(waits),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new TimeoutError(`${COMMANDS[kind].subscribe} ${names.join(' ')} was not confirmed within ${this.o.timeout} ms (commandTimeout): ${this.why()}`, { sent: true })), this.o.timeout);
          }),
        ])
        : Promise.all(waits));
    } catch (err) {
      sub.end();
      await this.remove(sub, names);
      throw err;
    } finally {
      clearTimeout(timer);
    }
    return sub;
  }

  /** What keeps subscriptions from being confirmed, for a timeout's message. */
  private why(): string {
    for (const l of this.links.values()) if (l.lost) return `the subscriber connection to ${formatAddress(l.pool.target)} was lost (${l.lost})`;
    const err = [...this.links.keys()].map((p) => p.lastError).find((e) => e !== undefined);
    return err ? `the node is unreachable (${err.message})` : 'no server confirmed it';
  }

  /** @internal Called by Subscription.unsubscribe()/close(). */
  remove(sub: Subscription, names: readonly string[]): Promise<void> {
    for (const name of names) {
      const key = nameKey(sub.kind, name);
      const e = this.entries.get(key);
      if (e === undefined) continue;
      e.subs.delete(sub);
      if (e.subs.size === 0) this.entries.delete(key);
    }
    if (sub.closed && this.subs.delete(sub) && sub.options.returnBuffers) this.buffersWanted--;
    return this.kick();
  }

  /**
   * Something moved (a failover, a topology change): every name is placed again, and names that
   * leave their node count as lost since `since`.
   */
  replace(reason: string, since = Date.now()): void {
    if (this.closed || this.entries.size === 0) return;
    if (this.move === undefined || since < this.move.since) this.move = { reason, since };
    void this.kick();
  }

  /** What `stats().pubsub` shows before anything subscribed. */
  static emptyStats(): PubSubStats {
    return { subscriptions: 0, names: 0, connections: 0, messages: 0, resubscribes: 0 };
  }

  /** Counts for `stats()`. */
  stats(): PubSubStats {
    let connections = 0;
    for (const l of this.links.values()) if (l.conn?.isOpen) connections++;
    return { subscriptions: this.subs.size, names: this.entries.size, connections, messages: this.messages, resubscribes: this.resubscribes };
  }

  /** Ends every subscription and closes the subscriber connections. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.retryTimer);
    for (const sub of this.subs) sub.end();
    this.subs.clear();
    for (const e of this.entries.values()) for (const w of e.waiters) w.reject(new PoolClosedError());
    this.entries.clear();
    for (const l of this.links.values()) l.conn?.destroy();
    this.links.clear();
    this.rounds.close();
  }

  private confirmed(e: Entry): boolean {
    for (const l of this.links.values()) if (l.names.has(e.key)) return true;
    return false;
  }

  /** Starts a round (or asks the running one to go again); resolves when the rounds settle. */
  private kick(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.rounds.request();
  }

  private markLost(e: Entry, reason: string, at: number): void {
    if (e.lostAt === undefined) {
      e.lostAt = at;
      e.lostReason = reason;
    }
  }

  /** Every name on `link` (confirmed or on its way) stopped being trustworthy at `at`. */
  private markLinkLost(link: Link, reason: string, at: number): void {
    for (const key of [...link.names, ...link.adding]) {
      const e = this.entries.get(key);
      if (e) this.markLost(e, reason, at);
    }
  }

  private dropLink(link: Link, reason: string, at: number): void {
    this.links.delete(link.pool);
    this.markLinkLost(link, reason, at);
    link.names.clear();
    link.adding.clear();
    const conn = link.conn;
    // Detached first, so its close handler knows this was on purpose.
    link.conn = undefined;
    conn?.destroy();
  }

  private async round(): Promise<void> {
    const move = this.move;
    this.move = undefined;
    const now = Date.now();
    for (const link of [...this.links.values()]) {
      if (link.pool.isClosed) this.dropLink(link, 'node-removed', now);
      else if (link.generation !== link.pool.generation) this.dropLink(link, 'failover', move?.since ?? now);
      else if (link.lost !== undefined) this.dropLink(link, link.lost, now);
    }
    const wanted = new Map<string, NodePool[]>();
    const actual = new Map<NodePool, Set<string>>();
    for (const [pool, link] of this.links) actual.set(pool, link.names);
    for (const e of this.entries.values()) {
      const current: NodePool[] = [];
      for (const [pool, link] of this.links) if (link.names.has(e.key)) current.push(pool);
      const targets = this.placement.place(e.kind, e.name, current).filter((t) => !t.pool.isClosed && t.pool !== e.avoid);
      e.group = targets[0]?.group;
      wanted.set(e.key, targets.map((t) => t.pool));
    }
    const plan = planSubscriptions(wanted, actual);
    const work: Promise<boolean>[] = [];
    for (const pool of plan.idle) {
      const link = this.links.get(pool);
      // Names still wanted there moved elsewhere; the others are gone and need nothing.
      if (link) this.dropLink(link, move?.reason ?? 'moved', move?.since ?? now);
    }
    for (const [pool, keys] of plan.remove) {
      const link = this.links.get(pool);
      if (link === undefined || !this.links.has(pool)) continue;
      for (const key of keys) {
        link.names.delete(key);
        const e = this.entries.get(key);
        // Still wanted, elsewhere: it moved.
        if (e) this.markLost(e, move?.reason ?? 'moved', move?.since ?? now);
      }
      work.push(this.unsubscribe(link, keys));
    }
    for (const [pool, keys] of plan.add) work.push(this.subscribe(pool, keys));
    const ok = (await Promise.all(work)).every(Boolean);
    this.settleWaiters();
    if (this.closed) return;
    if (ok) {
      this.attempt = 0;
    } else if (this.retryTimer === undefined) {
      const delay = backoffDelay(this.attempt++, this.o.reconnect);
      this.retryTimer = setTimeout(() => {
        this.retryTimer = undefined;
        void this.kick();
      }, delay);
      this.retryTimer.unref();
    }
  }

  private settleWaiters(): void {
    for (const e of this.entries.values()) {
      if (e.waiters.length === 0 || !this.confirmed(e)) continue;
      const w = e.waiters;
      e.waiters = [];
      for (const x of w) x.resolve();
    }
  }

  private async link(pool: NodePool): Promise<Link> {
    let link = this.links.get(pool);
    if (link?.conn) return link;
    link ??= new Link(pool);
    this.links.set(pool, link);
    const l = link;
    const conn = await pool.subscriber();
    if (this.closed || this.links.get(pool) !== l || conn.generation !== l.generation) {
      conn.destroy();
      throw new PoolClosedError('The subscriber connection was replaced while it connected.');
    }
    l.conn = conn;
    conn.pushBuffers = this.buffersWanted > 0;
    conn.on('push', (v: Reply[]) => this.onPush(l, v));
    conn.once('close', () => {
      if (l.conn !== conn || this.closed) return;
      const at = Date.now();
      const reason = conn.generation !== pool.generation ? 'failover' : 'connection-lost';
      l.lost = reason;
      this.markLinkLost(l, reason, at);
      void this.kick();
    });
    return l;
  }

  private async subscribe(pool: NodePool, keys: string[]): Promise<boolean> {
    let link: Link;
    try {
      link = await this.link(pool);
    } catch (err) {
      this.links.delete(pool);
      this.report(keys, err as Error, false);
      return false;
    }
    const conn = link.conn!;
    const groups = groupBy(keys, (k) => {
      const e = this.entries.get(k)!;
      return `${e.kind}:${e.group ?? ''}`;
    });
    const sends = [...groups.values()].map(async (group) => {
      const first = this.entries.get(group[0]!)!;
      const names = group.map((k) => this.entries.get(k)!.name);
      for (const k of group) link.adding.add(k);
      try {
        await conn.send([COMMANDS[first.kind].subscribe, ...names], { timeout: this.o.timeout });
      } catch (err) {
        for (const k of group) link.adding.delete(k);
        if (err instanceof RedisError && err.code === 'MOVED') {
          this.placement.moved?.(err, pool);
          void this.rounds.request();
          return true;
        }
        if (first.kind === 'shard' && isUnknownCommand(err)) {
          this.report(group, await shardedPubSubUnsupported('SSUBSCRIBE', err, infoOf(pool, this.o.timeout), pool.target), true);
          return false;
        }
        this.report(group, err as Error, isPermanent(err));
        return false;
      }
      const at = Date.now();
      const regained = new Map<Subscription, { channels: string[]; reason: string; gapMs: number }>();
      for (const k of group) {
        link.adding.delete(k);
        const e = this.entries.get(k);
        if (e === undefined || !this.links.has(pool) || link.conn !== conn || !conn.isOpen) continue;
        link.names.add(k);
        if (e.lostAt === undefined) continue;
        const gapMs = at - e.lostAt;
        const reason = e.lostReason ?? 'reconnect';
        e.lostAt = undefined;
        e.lostReason = undefined;
        this.resubscribes++;
        for (const s of e.subs) {
          const r = regained.get(s);
          if (r) {
            r.channels.push(e.name);
            r.gapMs = Math.max(r.gapMs, gapMs);
          } else regained.set(s, { channels: [e.name], reason, gapMs });
        }
      }
      // Names that went away while the command was out are dropped again by the next round.
      if (group.some((k) => !this.entries.has(k))) void this.rounds.request();
      for (const [s, info] of regained) s.emit('resubscribed', info);
      return true;
    });
    return (await Promise.all(sends)).every(Boolean);
  }

  private async unsubscribe(link: Link, keys: string[]): Promise<boolean> {
    const conn = link.conn;
    if (conn === undefined || !conn.isOpen) return true;
    const byKind = groupBy(keys, (k) => parseNameKey(k).kind);
    const sends = [...byKind].map(async ([kind, group]) => {
      try {
        await conn.send([COMMANDS[kind].unsubscribe, ...group.map((k) => parseNameKey(k).name)], { timeout: this.o.timeout });
      } catch {
        // The name no longer counts on this connection whatever the reply; a connection that
        // cannot even unsubscribe is of no further use.
        conn.destroy();
      }
    });
    await Promise.all(sends);
    return true;
  }

  /** A name could not be subscribed: initial subscribers learn it at once when retrying cannot help, the others through `error`. */
  private report(keys: readonly string[], err: Error, permanent: boolean): void {
    const told = new Set<Subscription>();
    for (const k of keys) {
      const e = this.entries.get(k);
      if (e === undefined) continue;
      if (permanent && e.waiters.length > 0) {
        const w = e.waiters;
        e.waiters = [];
        for (const x of w) x.reject(err);
      }
      for (const s of e.subs) {
        if (told.has(s) || e.lostAt === undefined) continue;
        told.add(s);
        s.emit('error', err);
      }
    }
  }

  private onPush(link: Link, value: Reply[]): void {
    const f = readFrame(value);
    if (f.type === 'message') {
      if (!link.names.has(f.key) && !link.adding.has(f.key)) return;
      const e = this.entries.get(f.key);
      if (e === undefined) return;
      this.messages++;
      for (const s of e.subs) s.deliver(f.channel, f.pattern, f.payload);
    } else if (f.type === 'dropped' && link.names.delete(f.key)) {
      const e = this.entries.get(f.key);
      if (e === undefined) return;
      this.markLost(e, f.kind === 'shard' ? 'slot-moved' : 'server-unsubscribed', Date.now());
      const refreshed = f.kind === 'shard' ? this.placement.shardLost?.(f.name, link.pool) : undefined;
      if (refreshed === undefined) {
        void this.kick();
        return;
      }
      e.avoid = link.pool;
      void refreshed.then(() => {
        if (e.avoid === link.pool) e.avoid = undefined;
        void this.kick();
      });
    }
  }
}
