import { createHash } from 'node:crypto';
import type { NodeAddress } from '../types.js';
import type { SlotMap } from './slot-map.js';

/**
 * One slot-map fetch at a time for every pool of this process that talks to the same cluster
 * the same way, and its answer shared: a process with ten ClusterPools on one cluster sends
 * one CLUSTER SHARDS per event, not ten.
 *
 * Only the map is shared, never a connection: each pool keeps its own node pools, and pools
 * share a group only when their {@link refreshShareKey} is equal (same seeds, same user and
 * secret, same TLS options, same natMap), so a map is never fetched for a pool over
 * credentials or TLS settings it did not give.
 */
export class RefreshGroup {
  private inflight: { startedAt: number; promise: Promise<SlotMap | undefined> } | undefined;
  private last: { startedAt: number; map: SlotMap } | undefined;
  /** Pools in the group. */
  members = 0;
  /** Fetches run, and answers taken from another member's fetch (for tests and stats). */
  fetches = 0;
  joined = 0;

  /**
   * A map fetched after `since` (`performance.now()` of the oldest trigger the caller serves):
   * a fetch in flight that started after it, else the last map fetched after it, else a new
   * fetch by `run`, started once any fetch in flight is over (one at a time). `fetched` says
   * whether `run` ran (its errors are then the caller's to report).
   */
  async fetch(since: number, run: () => Promise<SlotMap | undefined>): Promise<{ map: SlotMap | undefined; fetched: boolean }> {
    for (;;) {
      const f = this.inflight;
      if (f && f.startedAt > since) {
        this.joined++;
        return { map: await f.promise, fetched: false };
      }
      if (this.last && this.last.startedAt > since) {
        this.joined++;
        return { map: this.last.map, fetched: false };
      }
      if (f) {
        await f.promise.catch(() => undefined);
        continue;
      }
      const startedAt = performance.now();
      const promise = run();
      this.inflight = { startedAt, promise };
      this.fetches++;
      try {
        const map = await promise;
        if (map && (!this.last || startedAt > this.last.startedAt)) this.last = { startedAt, map };
        return { map, fetched: true };
      } finally {
        if (this.inflight?.promise === promise) this.inflight = undefined;
      }
    }
  }
}

const groups = new Map<string, RefreshGroup>();

/** The group of `key`, made on first use; `leave()` (idempotent) drops it with its last member. */
export function joinRefreshGroup(key: string): { group: RefreshGroup; leave: () => void } {
  let group = groups.get(key);
  if (!group) groups.set(key, (group = new RefreshGroup()));
  group.members++;
  let left = false;
  const g = group;
  return {
    group: g,
    leave: () => {
      if (left) return;
      left = true;
      if (--g.members === 0 && groups.get(key) === g) groups.delete(key);
    },
  };
}

/** Groups alive now (tests check that closed pools leave nothing behind). */
export function refreshGroupCount(): number {
  return groups.size;
}

const ids = new WeakMap<object, number>();
let nextId = 1;
/** A number per object or function, by identity: options that hold functions share only with the same function. */
function identity(v: object): number {
  let id = ids.get(v);
  if (id === undefined) ids.set(v, (id = nextId++));
  return id;
}

/** JSON where functions (and symbols) count by identity, Buffers by content. */
function stable(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => {
    if (typeof x === 'function') return `#fn${identity(x)}`;
    if (typeof x === 'bigint') return String(x);
    return x;
  }) ?? '';
}

/** What two pools must have in common to share slot-map fetches. */
export interface ShareKeyInput {
  seeds: readonly NodeAddress[];
  username?: string | undefined;
  password?: string | undefined;
  credentials?: unknown;
  tls?: unknown;
  natMap?: unknown;
  protocol?: unknown;
  /** The seed URLs' own credentials and TLS, when the seeds were URLs. */
  fromUrl?: unknown;
}

/**
 * The key of a pool's refresh group: a SHA-256 of the seeds (in any order), user, password,
 * the credentials provider, TLS options and natMap as given (functions by identity), and the
 * seed URL's credentials. Hashed, so no secret is kept in the key.
 */
export function refreshShareKey(o: ShareKeyInput): string {
  const seeds = o.seeds.map((s) => `${s.host}:${s.port}`).sort();
  const all = stable([seeds, o.username ?? null, o.password ?? null, o.credentials ?? null, o.tls ?? null, o.natMap ?? null, o.protocol ?? null, o.fromUrl ?? null]);
  return createHash('sha256').update(all).digest('hex');
}
