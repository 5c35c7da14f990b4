/**
 * `redis-ha-pool/keyv`: a Keyv 5 storage adapter over any pool, so Keyv and cache-manager 7
 * (which stores through Keyv) keep the pool's failover and cluster handling.
 *
 * ```ts
 * import Keyv from 'keyv';
 * import { createCache } from 'cache-manager';
 * import { StandalonePool } from 'redis-ha-pool';
 * import { KeyvStore } from 'redis-ha-pool/keyv';
 *
 * const pool = await StandalonePool.create('redis://127.0.0.1:6379');
 * const keyv = new Keyv({ store: new KeyvStore(pool), namespace: 'sessions' });
 * await keyv.set('user:1', { name: 'Ada' }, 60_000);
 * const cache = createCache({ stores: [new Keyv({ store: new KeyvStore(pool) })] });
 * ```
 * @packageDocumentation
 */
import { EventEmitter } from 'eventemitter3';
import { PoolClosedError, type Arg, type BasePool, type BatchResult } from '../index.js';

/** The pools a {@link KeyvStore} works on: `StandalonePool`, `SentinelPool`, `ClusterPool`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type KeyvPool = BasePool<any>;

/** Options of {@link KeyvStore}. */
export interface KeyvStoreOptions {
  /** Keys asked for per SCAN step and fetched per batch by `clear()` and `iterator()`. Default 1000. */
  scanCount?: number;
}

/** What the store's `error` event carries, besides the error itself. */
export interface KeyvStoreEvents {
  /**
   * A `get` failed. Keyv reports a failed `get` as a miss (`undefined`) and says nothing, unless
   * `throwOnErrors` is set; the store emits it here first (Keyv re-emits it as its own `error`).
   * Failures of the other methods reach the caller (or Keyv's own `error` event) anyway.
   */
  error: [error: unknown];
}

const GLOB = /[*?[\]\\]/g;

/** True for a `ClusterPool`: its multi-key work goes as single-key commands in one pipeline (never across slots). */
function isCluster(pool: KeyvPool): boolean {
  const p = pool as unknown as { nodes?: unknown; refresh?: unknown };
  return typeof p.nodes === 'function' && typeof p.refresh === 'function';
}

/** A batch's entry, thrown when it is an error. */
function valueOf(r: BatchResult[number]): unknown {
  if (r instanceof Error) throw r;
  return r;
}

/**
 * A Keyv 5 storage adapter on a redis-ha-pool pool: `new Keyv({ store: new KeyvStore(pool) })`.
 *
 * Keyv stores each value as one Redis string under `namespace:key` (Keyv adds the namespace;
 * its default is `keyv`), with `PX` for a TTL. `clear()` removes this namespace's keys only
 * (found with SCAN on every master, never KEYS); `iterator(namespace)` walks them. On a
 * `ClusterPool`, multi-key work (`getMany`, `setMany`, `deleteMany`, `hasMany`, `clear`) is
 * sent as single-key commands in one pipeline, which the pool groups per node: never a
 * cross-slot command or transaction. Elsewhere `getMany` is one MGET and `deleteMany` one UNLINK.
 *
 * The store never owns the pool: `disconnect()` (called by `keyv.disconnect()` and
 * `cache.disconnect()`) ends this store only; later calls reject with `PoolClosedError`.
 * After `pool.close()` every call rejects with `PoolClosedError`.
 */
export class KeyvStore extends EventEmitter<KeyvStoreEvents> {
  /** Read by Keyv: `dialect: 'redis'` lets Keyv use {@link iterator}. */
  opts: { dialect: 'redis'; url: string; scanCount: number; [option: string]: unknown };
  /** Set by Keyv to its namespace (`keyv` unless configured); the prefix `clear()` removes. */
  namespace: string | undefined = undefined;
  private readonly cluster: boolean;
  private ended = false;

  constructor(
    private readonly pool: KeyvPool,
    options?: KeyvStoreOptions,
  ) {
    super();
    if (typeof pool !== 'object' || pool === null || typeof (pool as { call?: unknown }).call !== 'function' || typeof (pool as { scanIterator?: unknown }).scanIterator !== 'function') {
      throw new TypeError('new KeyvStore(pool) needs a redis-ha-pool pool (StandalonePool, SentinelPool or ClusterPool).');
    }
    if (options !== undefined && (typeof options !== 'object' || options === null || Array.isArray(options))) throw new TypeError('KeyvStore options must be an object.');
    for (const k of Object.keys(options ?? {})) {
      if (k !== 'scanCount') throw new TypeError(`Unknown option KeyvStore.${k}; known options are: scanCount.`);
    }
    const scanCount = options?.scanCount ?? 1000;
    if (typeof scanCount !== 'number' || !Number.isInteger(scanCount) || scanCount < 1) {
      throw new TypeError(`Option KeyvStore.scanCount must be an integer >= 1 (got ${String(scanCount)}).`);
    }
    this.opts = { dialect: 'redis', url: 'redis-ha-pool', scanCount };
    this.cluster = isCluster(pool);
  }

  /** The stored (serialized) value, or undefined. A failure is emitted as `error` and rethrown. */
  async get<Value>(key: string): Promise<Value | undefined> {
    try {
      this.check();
      const v = await this.pool.call<string | null>('GET', key);
      return (v ?? undefined) as Value | undefined;
    } catch (err) {
      this.emit('error', err);
      throw err;
    }
  }

  /** The stored values of `keys`, in order (undefined where none). */
  async getMany<Value>(keys: string[]): Promise<Array<Value | undefined>> {
    this.check();
    if (keys.length === 0) return [];
    if (!this.cluster) {
      const values = await this.pool.call<Array<string | null>>('MGET', ...keys);
      return values.map((v) => (v ?? undefined) as Value | undefined);
    }
    const p = this.pool.pipeline();
    for (const k of keys) p.call('GET', k);
    const results = await p.exec();
    return results.map((r) => (valueOf(r) ?? undefined) as Value | undefined);
  }

  /** Stores `value` (already serialized by Keyv), expiring after `ttl` ms when given. */
  async set(key: string, value: unknown, ttl?: number): Promise<boolean> {
    this.check();
    await this.pool.call('SET', key, toArg(value), ...pxArgs(ttl));
    return true;
  }

  /**
   * Stores several entries in one pipeline. Resolves to one `true` per entry, which Keyv's
   * `setMany()` passes on (typed `void` as Keyv's `KeyvStoreAdapter` declares it); rejects
   * with the first failure.
   */
  async setMany(entries: Array<{ key: string; value: unknown; ttl?: number }>): Promise<void> {
    this.check();
    const p = this.pool.pipeline();
    for (const e of entries) p.call('SET', e.key, toArg(e.value), ...pxArgs(e.ttl));
    const results = entries.length === 0 ? [] : await p.exec();
    const failed = results.find((r): r is Error => r instanceof Error);
    if (failed) throw failed;
    return results.map(() => true) as unknown as void;
  }

  /** Removes a key; true when it existed. */
  async delete(key: string): Promise<boolean> {
    this.check();
    return (await this.pool.call<number>('UNLINK', key)) > 0;
  }

  /** Removes keys; true when at least one existed. */
  async deleteMany(keys: string[]): Promise<boolean> {
    this.check();
    return (await this.unlink(keys)) > 0;
  }

  /** Whether the key exists. */
  async has(key: string): Promise<boolean> {
    this.check();
    return (await this.pool.call<number>('EXISTS', key)) === 1;
  }

  /** Whether each key exists, in one pipeline. */
  async hasMany(keys: string[]): Promise<boolean[]> {
    this.check();
    if (keys.length === 0) return [];
    const p = this.pool.pipeline();
    for (const k of keys) p.call('EXISTS', k);
    return (await p.exec()).map((r) => valueOf(r) === 1);
  }

  /**
   * Removes every key of this store's namespace (`namespace:*`), found with SCAN (on every
   * master of a cluster) and removed with UNLINK in batches of `scanCount`. Without a
   * namespace it refuses: it could not tell this store's keys from the rest of the database.
   */
  async clear(): Promise<void> {
    this.check();
    const ns = this.namespace;
    if (ns === undefined || ns === '') {
      throw new TypeError('KeyvStore.clear() needs a namespace (Keyv sets it; its default is "keyv"): without one it would empty the whole database.');
    }
    let batch: string[] = [];
    for await (const key of this.pool.scanIterator({ match: `${ns.replace(GLOB, '\\$&')}:*`, count: this.opts.scanCount })) {
      batch.push(key);
      if (batch.length >= this.opts.scanCount) {
        await this.unlink(batch);
        batch = [];
      }
    }
    if (batch.length > 0) await this.unlink(batch);
  }

  /**
   * Yields `[key, storedValue]` for every key of `namespace` (every key without one), keys with
   * their `namespace:` prefix as Keyv expects. Keys removed or expired during the walk are skipped.
   */
  async *iterator<Value>(namespace?: string): AsyncGenerator<[string, Value], void> {
    this.check();
    const match = namespace ? `${namespace.replace(GLOB, '\\$&')}:*` : '*';
    let batch: string[] = [];
    const flush = async function* (self: KeyvStore, keys: string[]): AsyncGenerator<[string, Value], void> {
      const values = await self.getMany<Value>(keys);
      for (let i = 0; i < keys.length; i++) if (values[i] !== undefined) yield [keys[i]!, values[i]!];
    };
    for await (const key of this.pool.scanIterator({ match, count: this.opts.scanCount })) {
      batch.push(key);
      if (batch.length >= this.opts.scanCount) {
        yield* flush(this, batch);
        batch = [];
      }
    }
    if (batch.length > 0) yield* flush(this, batch);
  }

  /** Ends this store (Keyv's and cache-manager's `disconnect()`); the pool stays open. */
  async disconnect(): Promise<void> {
    this.ended = true;
  }

  private check(): void {
    if (this.ended) throw new PoolClosedError('This KeyvStore was disconnected; the pool stays open: create a new store on it.');
  }

  private async unlink(keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    if (!this.cluster) return this.pool.call<number>('UNLINK', ...keys);
    const p = this.pool.pipeline();
    for (const k of keys) p.call('UNLINK', k);
    let n = 0;
    for (const r of await p.exec()) n += valueOf(r) as number;
    return n;
  }
}

/** Keyv hands the store strings (its serializer's output); anything else is sent as its JSON. */
function toArg(value: unknown): Arg {
  if (typeof value === 'string' || Buffer.isBuffer(value) || typeof value === 'number' || typeof value === 'bigint') return value;
  return JSON.stringify(value) ?? '';
}

/** `PX ttl` for a positive TTL in ms; nothing for none. */
function pxArgs(ttl: number | undefined): Arg[] {
  if (ttl === undefined || ttl === null) return [];
  if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl < 0) throw new TypeError(`KeyvStore: a ttl must be a number of milliseconds >= 0 (got ${String(ttl)}).`);
  return ttl > 0 ? ['PX', Math.max(1, Math.round(ttl))] : [];
}
