/**
 * What a pool knows of its nodes' availability zones, and where its reads went. Each new
 * connection asks its node once (`HELLO`, which Valkey 8.1 answers with `availability_zone`
 * when the zone is set, else `INFO server`, whose `availability_zone` field Valkey 8.0 has);
 * {@link ZoneTracker.choose} then applies {@link chooseRead} and counts the read by zone.
 */
import type { Connection } from '../connection/connection.js';
import { ConnectionError, TimeoutError } from '../errors.js';
import { formatAddress, type NodeAddress, type Reply } from '../types.js';
import type { NodePool } from './node-pool.js';
import { chooseRead, worthWaking, type AzReadFrom, type ReadCandidate, type ReadChoice } from './read-from.js';

/** A node that could serve a read, as a pool describes it to {@link ZoneTracker.choose}. */
export interface ZoneCandidate<N> {
  /** What the pool routes to (a node pool, a slot-map node). */
  node: N;
  /** Where it is: its zone is looked up by this address. */
  address: NodeAddress;
  /** The primary (master). */
  primary: boolean;
  /** False while it is failing. */
  healthy: boolean;
}

/** Where reads went, with a zone-aware `readFrom` (`stats().reads`). Counts are since `create()`. */
export interface ZoneReadStats {
  /** The `readFrom` option. */
  readFrom: AzReadFrom;
  /** The `clientAz` option. */
  clientAz: string;
  /** Reads routed to a node in `clientAz`. */
  sameZone: number;
  /** Reads routed to a node in another zone, or to one that reports no zone. */
  otherZone: number;
  /** Reads routed to the primary (master), whatever its zone (also counted in sameZone or otherZone). */
  primary: number;
  /** Reads per zone of the node they were routed to; `''` counts nodes that report no zone. */
  byZone: Record<string, number>;
  /** Each node's zone as learned from its connections (`'host:port'` -> zone; `null`: it reports none). */
  nodes: Record<string, string | null>;
}

/** The zone in a `HELLO` reply (a RESP3 map or a RESP2 list of pairs), if it has one. */
export function zoneFromHello(reply: Reply): string | undefined {
  let value: Reply | undefined;
  if (reply instanceof Map) {
    for (const [k, v] of reply) if (String(k) === 'availability_zone') value = v;
  } else if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) if (String(reply[i]) === 'availability_zone') value = reply[i + 1];
  }
  return value === undefined || value === null ? undefined : nonEmpty(String(value));
}

/** The `availability_zone` field of an `INFO` reply, if it has a non-empty one. */
export function zoneFromInfo(reply: Reply): string | undefined {
  if (typeof reply !== 'string' && !Buffer.isBuffer(reply)) return undefined;
  const m = /^availability_zone:(.*)$/m.exec(String(reply));
  return m ? nonEmpty(m[1]!.trim()) : undefined;
}

function nonEmpty(s: string): string | undefined {
  return s === '' ? undefined : s;
}

/**
 * The zones of a pool's nodes (learned once per connection, see {@link observe}) and the
 * per-zone read counts. One per pool with a zone-aware `readFrom`.
 */
export class ZoneTracker {
  /** Node key -> zone (null: the node answered and reports none). */
  private readonly zones = new Map<string, string | null>();
  private readonly waiters = new Map<string, Array<() => void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private turn = 0;
  private sameZone = 0;
  private otherZone = 0;
  private primary = 0;
  private readonly byZone = new Map<string, number>();
  private closed = false;

  /** `timeout`: how long one connection's zone question, and a wait for a node's zone, may take. */
  constructor(
    readonly readFrom: AzReadFrom,
    readonly clientAz: string,
    private readonly timeout: number,
  ) {}

  /**
   * Asks a new connection's node for its zone (before any other command goes out on it: the
   * pools call this from their `onConnection` hook). A refusal (an old server, an ACL user
   * without `+hello` / `+info`) means "no zone"; a lost connection leaves what was known.
   */
  observe(conn: Connection): void {
    const key = formatAddress(conn.address);
    void this.ask(conn).then((zone) => {
      if (zone !== false) this.zones.set(key, zone ?? null);
      const w = this.waiters.get(key);
      this.waiters.delete(key);
      w?.forEach((f) => f());
    });
  }

  /** The zone, undefined when none or not answered; false when the connection failed first. */
  private async ask(conn: Connection): Promise<string | undefined | false> {
    const opts = { timeout: this.timeout };
    try {
      const zone = zoneFromHello(await conn.send(['HELLO'], opts));
      if (zone !== undefined) return zone;
    } catch (err) {
      if (lost(err)) return false;
    }
    try {
      return zoneFromInfo(await conn.send(['INFO', 'server'], opts));
    } catch (err) {
      return lost(err) ? false : undefined;
    }
  }

  /** The node's zone; undefined when it reports none or it is not known yet. */
  zoneOf(address: NodeAddress): string | undefined {
    return this.zones.get(formatAddress(address)) ?? undefined;
  }

  /** Whether some connection to the node has answered the zone question. */
  knows(address: NodeAddress): boolean {
    return this.zones.has(formatAddress(address));
  }

  /**
   * Opens a connection to each pool whose node's zone is not known and waits (each at most the
   * tracker's timeout after its connection is up) until its zone is, so the first reads already
   * go to the right zone. Never rejects: a node that cannot be reached counts as another zone.
   */
  async learn(pools: readonly NodePool[]): Promise<void> {
    await Promise.all(pools.filter((p) => !this.knows(p.target)).map((p) => p.lane().then(() => this.whenKnown(p.target), () => undefined)));
  }

  private whenKnown(address: NodeAddress): Promise<void> {
    const key = formatAddress(address);
    if (this.closed || this.zones.has(key)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, this.timeout);
      timer.unref();
      this.timers.add(timer);
      const list = this.waiters.get(key) ?? [];
      list.push(done);
      this.waiters.set(key, list);
      const self = this;
      function done(): void {
        clearTimeout(timer);
        self.timers.delete(timer);
        resolve();
      }
    });
  }

  /**
   * The node for one read (see {@link chooseRead}); count it with {@link count} once it is used.
   * Candidates name their node's `address` (the zone is looked up by it). `wake` is called for
   * the unhealthy nodes in `clientAz` that would rank first (see {@link worthWaking}): the
   * caller reconnects them, so reads come back as soon as they answer.
   */
  choose<N>(candidates: ReadonlyArray<ZoneCandidate<N>>, wake?: (node: N) => void): ReadChoice<N> | undefined {
    const withZones: ReadCandidate<N>[] = candidates.map((c) => ({ node: c.node, primary: c.primary, healthy: c.healthy, zone: this.zoneOf(c.address) }));
    const choice = chooseRead(this.readFrom, this.clientAz, withZones, this.turn++);
    if (wake) for (const n of worthWaking(this.readFrom, this.clientAz, withZones)) wake(n);
    return choice;
  }

  /** Counts one read routed as `choice` said. */
  count(choice: ReadChoice<unknown>): void {
    if (choice.zone === this.clientAz) this.sameZone++;
    else this.otherZone++;
    if (choice.tier === 'primary' || choice.tier === 'same-zone-primary') this.primary++;
    const z = choice.zone ?? '';
    this.byZone.set(z, (this.byZone.get(z) ?? 0) + 1);
  }

  /** For `stats().reads`. */
  stats(): ZoneReadStats {
    return {
      readFrom: this.readFrom,
      clientAz: this.clientAz,
      sameZone: this.sameZone,
      otherZone: this.otherZone,
      primary: this.primary,
      byZone: Object.fromEntries(this.byZone),
      nodes: Object.fromEntries(this.zones),
    };
  }

  /** Releases every wait (the pool is closing): no timer outlives the pool. */
  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const list of this.waiters.values()) list.forEach((f) => f());
    this.waiters.clear();
  }
}

/** The connection failed before answering (as opposed to a refusal, which is an answer). */
function lost(err: unknown): boolean {
  return err instanceof ConnectionError || err instanceof TimeoutError;
}
