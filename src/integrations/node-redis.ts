/**
 * `redis-ha-pool/node-redis`: a node-redis v5-shaped client over any pool, for libraries that
 * take a node-redis client (connect-redis, rate-limiter-flexible with `useRedisPackage: true`,
 * the Socket.IO Redis and Redis Streams adapters, rate-limit-redis).
 *
 * ```ts
 * import { StandalonePool } from 'redis-ha-pool';
 * import { asNodeRedis } from 'redis-ha-pool/node-redis';
 * const pool = await StandalonePool.create('redis://localhost:6379');
 * const store = new RedisStore({ client: asNodeRedis(pool) });   // connect-redis
 * ```
 *
 * The handle covers what those libraries call, not all of node-redis; it defines only what it
 * supports, because they choose their code path by which methods exist. It never owns the
 * pool: `quit`/`close`/`destroy`/`disconnect` end the handle, and the pool stays open for
 * everything else that uses it.
 * @packageDocumentation
 */
import { EventEmitter } from 'node:events';
import { ClusterPool, PoolClosedError, type Arg, type BasePool, type CommandView, type StandalonePool, type Subscription } from '../index.js';
import { COMMANDS, FACADE, HANDLE_ONLY, rawCommand, readOptions, scanOptions, usage, type Step } from './node-redis/commands.js';
import { isNumsub, numsubEveryMaster } from './node-redis/cluster-numsub.js';
import { NodeRedisMulti } from './node-redis/multi.js';
import { HandleSubscriptions, type PubSubKind, type PubSubListener } from './node-redis/pubsub.js';
import {
  ClientClosedError, closedError, poolClosed, type AnyPool, type NodeRedisEvalOptions, type NodeRedisScanOptions, type NodeRedisSetOptions, type NodeRedisXAddOptions,
  type NodeRedisXReadStream, type Runner,
} from './node-redis/types.js';

export { NodeRedisMulti } from './node-redis/multi.js';
export type { PubSubListener } from './node-redis/pubsub.js';
export {
  ClientClosedError, MultiErrorReply, type AnyPool, type NodeRedisEvalOptions, type NodeRedisScanOptions, type NodeRedisSetOptions, type NodeRedisXAddOptions,
  type NodeRedisXReadStream,
} from './node-redis/types.js';

/**
 * The node-redis v5 client shape over a pool. Made by {@link asNodeRedis}; it starts open
 * (`connect()` resolves at once), and several handles may share one pool.
 */
export class NodeRedisClient extends EventEmitter {
  readonly #pool: AnyPool;
  /** By class name too: an ESM pool handed to the CommonJS build of this file is not `instanceof` its ClusterPool. */
  readonly #cluster: boolean;
  #open = true;
  /** Aborts this handle's blocking reads when it is destroyed. */
  #abort = new AbortController();
  #blockingView: CommandView<string> | undefined;
  readonly #subs: HandleSubscriptions;

  /** @internal Use {@link asNodeRedis}. */
  constructor(pool: AnyPool) {
    super();
    this.#pool = pool;
    this.#cluster = pool instanceof ClusterPool || pool.constructor?.name === 'ClusterPool';
    this.#subs = new HandleSubscriptions(
      (kind, name, deliver) => this.#openSubscription(kind, name, deliver),
      (err) => {
        if (this.listenerCount('error') > 0) this.emit('error', err);
      },
    );
  }

  /** True while this handle is open and its pool is not closed. */
  get isOpen(): boolean {
    return this.#open && !poolClosed(this.#pool);
  }

  /** Same as {@link isOpen}: the pool connects and reconnects by itself, so an open handle is ready. */
  get isReady(): boolean {
    return this.isOpen;
  }

  /** True while this handle has subscriptions (node-redis's `isPubSubActive`). */
  get isPubSubActive(): boolean {
    return this.#subs.active;
  }

  /** Resolves with the handle: at once when open, after reopening it when it was closed. Rejects with PoolClosedError after `pool.close()`. */
  async connect(): Promise<this> {
    if (poolClosed(this.#pool)) throw new PoolClosedError();
    if (!this.#open) {
      this.#open = true;
      this.#abort = new AbortController();
      this.#blockingView = undefined;
      this.emit('connect');
      this.emit('ready');
    }
    return this;
  }

  /** Ends this handle (its subscriptions too); the pool stays open. Resolves 'OK', as QUIT did. */
  async quit(): Promise<'OK'> {
    await this.close();
    return 'OK';
  }

  /** Ends this handle: new calls reject, its subscriptions end; calls in flight finish. The pool stays open. */
  async close(): Promise<void> {
    if (!this.#open) return;
    this.#open = false;
    await this.#subs.clear();
    this.emit('end');
  }

  /** Ends this handle at once: new calls reject, blocking reads in flight are aborted, subscriptions end. The pool stays open. */
  destroy(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#abort.abort(new ClientClosedError());
    void this.#subs.clear();
    this.emit('end');
  }

  /** Same as {@link destroy} (node-redis v4's name). */
  async disconnect(): Promise<void> {
    this.destroy();
  }

  /** A new, open handle on the same pool (the Socket.IO streams adapter reads each stream through one). */
  duplicate(overrides?: Record<string, never>): NodeRedisClient {
    readOptions('duplicate', overrides, []);
    if (poolClosed(this.#pool)) throw new PoolClosedError();
    return new NodeRedisClient(this.#pool);
  }

  /**
   * Sends any command: `sendCommand(['SET', key, value])`. `{ abortSignal }` aborts it. On a
   * ClusterPool, `PUBSUB NUMSUB` and `PUBSUB SHARDNUMSUB` are summed over every master, as
   * node-redis's cluster client does (each node counts only its own subscribers).
   */
  sendCommand<T = unknown>(args: readonly Arg[], options?: { abortSignal?: AbortSignal }): Promise<T> {
    let cmd: [string, ...Arg[]];
    let o: Record<string, unknown>;
    try {
      if (!this.#open) throw closedError(this.#pool);
      cmd = rawCommand('sendCommand', args);
      o = readOptions('sendCommand', options, ['abortSignal']);
    } catch (e) {
      return Promise.reject(e);
    }
    if (this.#cluster && isNumsub(cmd)) return numsubEveryMaster(this.#pool as ClusterPool, cmd) as Promise<T>;
    if (o.abortSignal !== undefined) return this.#pool.with({ signal: o.abortSignal as AbortSignal }).call<T>(...cmd);
    return this.#pool.call<T>(...cmd);
  }

  #run(make: (...a: never[]) => Step, a: unknown[]): Promise<never> {
    let step: Step;
    try {
      if (!this.#open) throw closedError(this.#pool);
      step = (make as (...x: unknown[]) => Step)(...a);
    } catch (e) {
      return Promise.reject(e);
    }
    const target = (step.blocking ? (this.#blockingView ??= this.#pool.with({ signal: this.#abort.signal })) : this.#pool) as unknown as Runner;
    const p = target[step.helper]!(...step.args) as Promise<never>;
    return step.post ? (p.then(step.post) as Promise<never>) : p;
  }

  /** GET: the value, or null. */
  get(key: Arg): Promise<string | null> {
    return this.#run(COMMANDS.get, [key]);
  }

  /**
   * SET with node-redis options: `{ expiration: { type: 'EX' | 'PX' | 'EXAT' | 'PXAT', value } }`,
   * `expiration: 'KEEPTTL'`, `condition: 'NX' | 'XX'`, `GET`, and the older `EX`, `PX`, `EXAT`,
   * `PXAT`, `KEEPTTL`, `NX`, `XX`. Resolves 'OK', null (a condition stopped it) or, with GET, the old value.
   */
  set(key: Arg, value: Arg, options?: NodeRedisSetOptions): Promise<string | null> {
    return this.#run(COMMANDS.set, [key, value, options]);
  }

  /** MGET: values in key order, null for missing keys (split per slot on a ClusterPool). */
  mGet(keys: Arg | Arg[]): Promise<Array<string | null>> {
    return this.#run(COMMANDS.mGet, [keys]);
  }

  /** DEL: how many keys were removed (split per slot on a ClusterPool). */
  del(keys: Arg | Arg[]): Promise<number> {
    return this.#run(COMMANDS.del, [keys]);
  }

  /** UNLINK: how many keys were removed. */
  unlink(keys: Arg | Arg[]): Promise<number> {
    return this.#run(COMMANDS.unlink, [keys]);
  }

  /** EXISTS: how many of the keys exist. */
  exists(keys: Arg | Arg[]): Promise<number> {
    return this.#run(COMMANDS.exists, [keys]);
  }

  /** EXPIRE: 1 if the timeout was set, 0 otherwise. */
  expire(key: Arg, seconds: number, mode?: 'NX' | 'XX' | 'GT' | 'LT'): Promise<number> {
    return this.#run(COMMANDS.expire, [key, seconds, mode]);
  }

  /** PEXPIRE: 1 if the timeout was set, 0 otherwise. */
  pExpire(key: Arg, milliseconds: number, mode?: 'NX' | 'XX' | 'GT' | 'LT'): Promise<number> {
    return this.#run(COMMANDS.pExpire, [key, milliseconds, mode]);
  }

  /** TTL in seconds; -1 without expiry, -2 without key. */
  ttl(key: Arg): Promise<number> {
    return this.#run(COMMANDS.ttl, [key]);
  }

  /** PTTL in milliseconds; -1 without expiry, -2 without key. */
  pTTL(key: Arg): Promise<number> {
    return this.#run(COMMANDS.pTTL, [key]);
  }

  /** INCRBY: the new value. */
  incrBy(key: Arg, increment: number): Promise<number> {
    return this.#run(COMMANDS.incrBy, [key, increment]);
  }

  /** FLUSHDB (every master of a ClusterPool). */
  flushDb(mode?: 'ASYNC' | 'SYNC'): Promise<string> {
    return this.#run(COMMANDS.flushDb, [mode]);
  }

  /** XADD with `{ TRIM: { strategy: 'MAXLEN' | 'MINID', strategyModifier?: '=' | '~', threshold, limit? } }`: the entry's ID. */
  xAdd(key: Arg, id: Arg, message: Record<string, Arg>, options?: NodeRedisXAddOptions): Promise<string> {
    return this.#run(COMMANDS.xAdd, [key, id, message, options]);
  }

  /** XRANGE: entries as `{ id, message }`. */
  xRange(key: Arg, start: Arg, end: Arg, options?: { COUNT?: number }): Promise<Array<{ id: string; message: Record<string, string> }>> {
    return this.#run(COMMANDS.xRange, [key, start, end, options]);
  }

  /**
   * XREAD `[{ key, id }]` with `{ COUNT, BLOCK }`: `[{ name, messages: [{ id, message }] }]`, or null.
   * With BLOCK it waits on an exclusive connection of the pool (other callers are not held
   * up), and `destroy()`/`disconnect()` abort the wait.
   */
  xRead(streams: NodeRedisXReadStream | NodeRedisXReadStream[], options?: { COUNT?: number; BLOCK?: number }): Promise<Array<{ name: string; messages: Array<{ id: string; message: Record<string, string> }> }> | null> {
    return this.#run(HANDLE_ONLY.xRead, [streams, options]);
  }

  /** EVAL with `{ keys, arguments }`. */
  eval(script: string, options?: NodeRedisEvalOptions): Promise<unknown> {
    return this.#run(COMMANDS.eval, [script, options]);
  }

  /** EVALSHA with `{ keys, arguments }`. */
  evalSha(sha1: string, options?: NodeRedisEvalOptions): Promise<unknown> {
    return this.#run(COMMANDS.evalSha, [sha1, options]);
  }

  /**
   * One SCAN step with `{ MATCH, COUNT, TYPE }`: `{ cursor, keys }`. A ClusterPool refuses it
   * (its keys are spread over the masters): use {@link scanIterator}, which walks them all.
   */
  scan(cursor: Arg, options?: NodeRedisScanOptions): Promise<{ cursor: string; keys: string[] }> {
    return this.#run(HANDLE_ONLY.scan, [cursor, options]);
  }

  /**
   * Every key matching `{ MATCH, COUNT, TYPE }`, yielded as arrays of up to COUNT keys (default
   * 10), as node-redis v5 does; on a ClusterPool every master is walked.
   */
  scanIterator(options?: NodeRedisScanOptions): AsyncIterableIterator<string[]> {
    const o = scanOptions('scanIterator', options);
    const self = this;
    return (async function* () {
      if (!self.#open) throw closedError(self.#pool);
      const size = o.count ?? 10;
      let batch: string[] = [];
      for await (const key of self.#pool.scanIterator(o)) {
        batch.push(key);
        if (batch.length >= size) {
          yield batch;
          batch = [];
        }
      }
      if (batch.length > 0) yield batch;
    })();
  }

  /** PUBLISH: how many subscribers received it. */
  publish(channel: Arg, message: Arg): Promise<number> {
    return this.#run(COMMANDS.publish, [channel, message]);
  }

  /** SPUBLISH (sharded pub/sub, Redis 7; every mode). */
  sPublish(channel: Arg, message: Arg): Promise<number> {
    return this.#run(COMMANDS.sPublish, [channel, message]);
  }

  /** A MULTI/EXEC transaction (or, with `exec(true)`, a pipeline) with the same camelCase commands. */
  multi(): NodeRedisMulti {
    return new NodeRedisMulti(this.#pool, () => this.#open);
  }

  /**
   * SUBSCRIBE: `listener(message, channel)` for every message, both strings, or both Buffers
   * with `bufferMode` true. Resolves once the server confirmed every channel. The pool
   * resubscribes after a dropped connection or a failover.
   */
  subscribe(channels: string | string[], listener: PubSubListener, bufferMode = false): Promise<void> {
    return this.#subscribe('subscribe', 'channel', channels, listener, bufferMode);
  }

  /** PSUBSCRIBE: as {@link subscribe}, for glob-style patterns (the listener gets the matching channel). */
  pSubscribe(patterns: string | string[], listener: PubSubListener, bufferMode = false): Promise<void> {
    return this.#subscribe('pSubscribe', 'pattern', patterns, listener, bufferMode);
  }

  /** SSUBSCRIBE (sharded pub/sub, Redis 7): as {@link subscribe}; on every mode. */
  sSubscribe(channels: string | string[], listener: PubSubListener, bufferMode = false): Promise<void> {
    return this.#subscribe('sSubscribe', 'shard', channels, listener, bufferMode);
  }

  /** Removes `listener` (every listener without it) from `channels` (every channel without them); a channel left without listeners is unsubscribed. */
  unsubscribe(channels?: string | string[], listener?: PubSubListener, bufferMode = false): Promise<void> {
    return this.#unsubscribe('unsubscribe', 'channel', channels, listener, bufferMode);
  }

  /** As {@link unsubscribe}, for patterns. */
  pUnsubscribe(patterns?: string | string[], listener?: PubSubListener, bufferMode = false): Promise<void> {
    return this.#unsubscribe('pUnsubscribe', 'pattern', patterns, listener, bufferMode);
  }

  /** As {@link unsubscribe}, for sharded channels. */
  sUnsubscribe(channels?: string | string[], listener?: PubSubListener, bufferMode = false): Promise<void> {
    return this.#unsubscribe('sUnsubscribe', 'shard', channels, listener, bufferMode);
  }

  #subscribe(method: string, kind: PubSubKind, names: unknown, listener: unknown, bufferMode: unknown): Promise<void> {
    let list: string[];
    try {
      if (!this.#open || poolClosed(this.#pool)) throw closedError(this.#pool);
      list = Array.isArray(names) ? names : [names as string];
      if (list.length === 0 || list.some((n) => typeof n !== 'string' || n === '')) throw usage(method, 'takes a name or an array of names (non-empty strings).');
      if (typeof listener !== 'function') throw usage(method, `needs a listener function; got ${typeof listener}.`);
      if (typeof bufferMode !== 'boolean') throw usage(method, `takes bufferMode as a boolean; got ${typeof bufferMode}.`);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#subs.add(kind, list, listener as PubSubListener, bufferMode);
  }

  #unsubscribe(method: string, kind: PubSubKind, names: unknown, listener: unknown, bufferMode: unknown): Promise<void> {
    let list: string[] | undefined;
    try {
      list = names === undefined ? undefined : Array.isArray(names) ? names : [names as string];
      if (list?.some((n) => typeof n !== 'string')) throw usage(method, 'takes a name or an array of names.');
      if (listener !== undefined && typeof listener !== 'function') throw usage(method, `takes a listener function; got ${typeof listener}.`);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#subs.remove(kind, list, listener as PubSubListener | undefined, bufferMode === true);
  }

  #openSubscription(kind: PubSubKind, name: string, deliver: (message: Buffer, channel: string) => void): Promise<Subscription<Buffer>> {
    const pool = this.#pool as AnyPool & { ssubscribe: StandalonePool['ssubscribe'] };
    const options = { returnBuffers: true } as const;
    const listener = (m: Buffer, channel: string): void => deliver(m, channel);
    const p = kind === 'channel' ? pool.subscribe(name, listener, options) : kind === 'pattern' ? pool.psubscribe(name, listener, options) : pool.ssubscribe(name, listener, options);
    return p.then((sub) => {
      // Resubscribing that keeps failing is retried by the pool; a handle with an error listener hears of it.
      sub.on('error', (err) => {
        if (this.listenerCount('error') > 0) this.emit('error', err);
      });
      return sub;
    });
  }
}

/**
 * A node-redis v5-shaped handle on `pool`, for libraries that take a node-redis client. Each
 * call gives a new handle; handles never own the pool (close the pool yourself when the
 * application stops). After `pool.close()` every call on every handle rejects with
 * PoolClosedError.
 */
export function asNodeRedis(pool: AnyPool | BasePool): NodeRedisClient {
  if (pool === null || typeof pool !== 'object' || typeof (pool as AnyPool).call !== 'function' || typeof (pool as AnyPool).subscribe !== 'function') {
    throw new TypeError(`${FACADE}(pool) takes a StandalonePool, SentinelPool or ClusterPool of redis-ha-pool; got ${pool === null ? 'null' : typeof pool}.`);
  }
  return new NodeRedisClient(pool as AnyPool);
}
