import { inspect, type InspectOptions } from 'node:util';
import { EventEmitter } from 'eventemitter3';
import type { MaintenanceEvent } from '../connection/maintenance.js';
import { blockingSeconds, builtinClassifier, shownName, type CommandTraits } from '../commands/traits.js';
import { installHelpers, type CommandSpec, type Commands, type ScanOptions } from '../commands/helpers.js';
import type { ScanIterators } from '../commands/commands.js';
import type { KeyPrefixer } from '../commands/key-prefix.js';
import { scanKeys } from '../commands/scan-iterators.js';
import type { Script, ScriptOptions, Scripting } from '../commands/script.js';
import { sendTraced } from '../diagnostics.js';
import { PoolClosedError } from '../errors.js';
import type { Arg, NodeAddress, Reply } from '../types.js';
import { checkCallOptions, checkUseOptions, type CallOptions } from './call-options.js';
import { YIELD, type ClientCache } from '../cache/client-cache.js';
import { Batch, batchSendOptions, runBatchOn } from './batch.js';
import { installSpecMethods } from './spec-methods.js';
import { abortable, applyTransform, markDurable, noteWrites, resolveCall, type BatchResult, type Dispatcher } from './call.js';
import { Lease, useLease } from './lease.js';
import { checkDedicatedOptions, DedicatedConnection, type DedicatedOptions } from './dedicated.js';

/** Events every pool emits. `error` is informational: failures always reach callers as rejections. */
export interface PoolEvents {
  /** A connection passed its handshake. */
  connect: [
    info: {
      /** The node connected to. */
      address: NodeAddress;
      /** Unique per process; the same id appears in the connection's `close` event. */
      connectionId: number;
    },
  ];
  /** A connection closed; `error` is undefined when the pool closed it on purpose. */
  close: [
    info: {
      /** The node the connection went to. */
      address: NodeAddress;
      /** The id its `connect` event carried. */
      connectionId: number;
      /** Why it closed; undefined when the pool closed it on purpose. */
      error: Error | undefined;
    },
  ];
  /** Something failed in the background (a reconnect, a refresh). */
  error: [error: Error];
  /**
   * A connection received a maintenance notification of Redis Software / Redis Cloud (MOVING,
   * MIGRATING, MIGRATED, FAILING_OVER, FAILED_OVER, SMIGRATING, SMIGRATED), emitted once the
   * pool acted on it. Each connection of the endpoint gets its own copy, so one maintenance
   * may be reported several times. See docs/managed-redis.md.
   */
  maintenance: [event: MaintenanceEvent];
}

/**
 * A call through the client-side cache: the cached reply, the server's (kept), or undefined
 * when the cache has nothing to do with it. A call told to wait for the next turn (the turn's
 * `hitsPerTurn` are used up) is served right after the wait, ahead of the budget, so one busy
 * reader cannot starve the others.
 */
function viaCache(d: Dispatcher, o: CallOptions | undefined, cache: ClientCache, spec: CommandSpec, args: Arg[], t: CommandTraits, waited: boolean, rerun: () => Promise<unknown>): Promise<unknown> | undefined {
  // The common hit first, without allocating the send function.
  const h = cache.hit(args, waited);
  const r = h !== undefined ? h : cache.run(args, () => d.dispatch(args, resolveCall(d, o, undefined, t)), waited, t);
  if (r === YIELD) return cache.nextTurn().then(() => viaCache(d, o, cache, spec, args, t, true, rerun) ?? rerun());
  if (r instanceof Promise) return spec.transform ? r.then(spec.transform) : r;
  if (r === undefined) return undefined;
  try {
    return Promise.resolve(spec.transform ? spec.transform(r) : r);
  } catch (e) {
    return Promise.reject(e);
  }
}

/**
 * The command surface shared by pools and views: `call`, the typed helpers, `pipeline`,
 * `multi`, `use`. Blocking commands are sent on an exclusive connection automatically so
 * they never stall the multiplexed lane.
 */
abstract class Runner<S extends string | Buffer = string> {
  /** @internal */
  abstract readonly dispatcher: Dispatcher;
  /** @internal */
  abstract readonly callOptions: CallOptions | undefined;
  /** The pool's `keyPrefix`, applied to every command's keys. */
  protected abstract readonly keyPrefix: KeyPrefixer | undefined;
  protected abstract ensureOpen(): void;

  /**
   * Sends any command: `call('SET', 'k', 'v')`. Resolves with the decoded reply; a server
   * error rejects with `RedisError`.
   */
  call<T = Reply>(command: string, ...args: Arg[]): Promise<T> {
    return this.runSpec({ args: [command, ...args] }) as Promise<T>;
  }

  /** @internal */
  runSpec(spec: CommandSpec): Promise<unknown> {
    try {
      this.ensureOpen();
    } catch (e) {
      return Promise.reject(e);
    }
    // The command's traits, worked out once here and carried with the call from now on.
    const t = (this.dispatcher.classifier ?? builtinClassifier()).of(spec.args);
    const args = this.keyPrefix ? this.keyPrefix.apply(spec.args, t) : spec.args;
    const cache = this.dispatcher.cache;
    if (cache !== undefined) {
      const o = this.callOptions;
      if (o !== undefined && (o.cache === false || o.returnBuffers === true)) cache.noteWrite(args, t);
      else {
        const r = viaCache(this.dispatcher, o, cache, spec, args, t, false, () => this.runSpec(spec));
        if (r !== undefined) return r;
      }
    }
    const kind = t.kind;
    if (kind === 'subscribe') {
      return Promise.reject(new TypeError(`${String(args[0])} changes the connection's mode; use pool.subscribe(...), or run it on a leased connection: pool.use(lease => lease.subscribe(...)).`));
    }
    if (kind === 'connection-state') {
      return Promise.reject(new TypeError(`${shownName(args)} changes the state of the connection it runs on, and call() shares its connection with other callers; it was not sent. Run it on a leased connection (pool.use(lease => …)), or use pool.multi() for a transaction.`));
    }
    let block: number | undefined;
    try {
      block = spec.blockSeconds ?? (kind === 'blocking' ? blockingSeconds(t, args) : undefined);
    } catch (e) {
      return Promise.reject(e);
    }
    const call = markDurable(resolveCall(this.dispatcher, this.callOptions, block, t), t);
    if (spec.deadline) call.deadline = spec.deadline;
    if (block !== undefined) {
      if (this.dispatcher.runBlocking) return this.dispatcher.runBlocking(args, call).then((v) => applyTransform(spec, v));
      return abortable(this.dispatcher.lease(undefined, args, call.deadline), call.signal, (h) => h.release()).then(async (h) => {
        try {
          return applyTransform(spec, await sendTraced(h.conn, args, call, 1));
        } finally {
          h.release();
        }
      });
    }
    const p = this.dispatcher.dispatch(args, call);
    return spec.transform ? p.then(spec.transform) : p;
  }

  /** Queues commands and sends them in one write; `exec()` gives each command's value or error, in order. */
  pipeline(): Batch<BatchResult> {
    return new Batch<BatchResult>((cmds, call) => this.dispatcher.dispatchBatch(noteWrites(this.dispatcher, cmds, call.batch), call, false) as Promise<BatchResult>, this.dispatcher, this.callOptions, false, () => this.ensureOpen(), this.keyPrefix, true);
  }

  /** MULTI/EXEC on one exclusive connection; `exec()` resolves to the results, or null if a WATCH aborted it. */
  multi(): Batch<BatchResult | null> {
    return new Batch<BatchResult | null>((cmds, call) => this.dispatcher.dispatchBatch(noteWrites(this.dispatcher, cmds, call.batch), call, true), this.dispatcher, this.callOptions, true, () => this.ensureOpen(), this.keyPrefix, true);
  }

  /**
   * Iterates over every key (matching `match` / `type`) with SCAN, fetching `count` keys per
   * step. In a cluster it walks every master. With a `keyPrefix`, only keys under the prefix
   * are scanned (`match` applies after it) and they are yielded without it.
   */
  scanIterator(options?: ScanOptions): AsyncIterableIterator<S> {
    const every = this.dispatcher.scanEveryNode;
    if (every) {
      // A closed pool rejects on the first step, as the one-node walk does.
      const walk = async function* (self: Runner<S>): AsyncIterableIterator<S> {
        self.ensureOpen();
        yield* every.call(self.dispatcher, options, self.callOptions, self.keyPrefix) as AsyncIterableIterator<S>;
      };
      return walk(this);
    }
    return scanKeys((spec) => this.runSpec(spec), options, this.keyPrefix) as AsyncIterableIterator<S>;
  }
}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
interface Runner<S extends string | Buffer = string> extends Commands<S>, ScanIterators<S>, Scripting {}
installHelpers(Runner.prototype, 'runSpec');
installSpecMethods(Runner.prototype);

/**
 * What `with(options)` returns: a view whose bulk strings are Buffers with `returnBuffers:
 * true`, strings with `false`, and as before (`S`) when the option is not given. (`V` is kept
 * for compatibility: a lease's `with()` is typed by `LeaseWith` in lease.ts.)
 */
export interface WithOverloads<S extends string | Buffer, V extends 'view' | 'lease' = 'view'> {
  /** The same commands with these options merged in; bulk strings come back (and are typed) as Buffers. */
  with(options: CallOptions & { returnBuffers: true }): V extends 'view' ? CommandView<Buffer> : Lease<Buffer>;
  /** The same commands with these options merged in; bulk strings come back as strings. */
  with(options: CallOptions & { returnBuffers: false }): V extends 'view' ? CommandView<string> : Lease<string>;
  /** The same commands with these options merged in; replies keep this view's type. */
  with(options: CallOptions & { returnBuffers?: undefined }): V extends 'view' ? CommandView<S> : Lease<S>;
  /** The same commands with these options merged in (`returnBuffers` not known until run time). */
  with(options: CallOptions): V extends 'view' ? CommandView<string | Buffer> : Lease<string | Buffer>;
}

/** `pool.with(options)`: the same commands, with per-call options applied. */
export class CommandView<S extends string | Buffer = string> extends Runner<S> {
  /** @internal */
  constructor(
    /** @internal */
    readonly dispatcher: Dispatcher,
    /** @internal */
    readonly callOptions: CallOptions | undefined,
    private readonly open: () => void,
    protected readonly keyPrefix: KeyPrefixer | undefined,
  ) {
    super();
  }
  protected ensureOpen(): void {
    this.open();
  }
  /** Another view with these options merged in. */
  with(options: CallOptions): CommandView<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
    checkCallOptions(options);
    return new CommandView(this.dispatcher, { ...this.callOptions, ...options }, this.open, this.keyPrefix);
  }
  /** Exclusive borrow, with this view's options applied to the lease's commands. */
  use<T>(fn: (lease: Lease<S>) => Promise<T>, options?: { key?: Arg }): Promise<T> {
    try {
      checkUseOptions(options);
    } catch (e) {
      return Promise.reject(e);
    }
    return useLease(this.dispatcher, fn as (lease: Lease) => Promise<T>, options?.key, this.callOptions, this.open, this.keyPrefix);
  }
}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface CommandView<S extends string | Buffer = string> extends WithOverloads<S, 'view'> {}


/**
 * The public pool: commands, views, batches, leases and events. Each mode supplies its
 * dispatcher (how commands reach nodes) and its close/stats.
 */
export abstract class BasePool<Events extends PoolEvents = PoolEvents> extends EventEmitter<Events> {
  protected closed = false;
  protected abstract readonly dispatcher: Dispatcher;
  private held: CommandView | undefined;

  /**
   * The pool's own command surface: a view without per-call options. Made on first use, once
   * the mode's constructor has set the dispatcher and the key prefix.
   */
  private get surface(): CommandView {
    return (this.held ??= new CommandView(this.dispatcher, undefined, () => this.ensureOpen(), this.keyPrefix));
  }
  /** The `keyPrefix` option, set by each mode's constructor. */
  protected keyPrefix: KeyPrefixer | undefined = undefined;

  protected ensureOpen(): void {
    if (this.closed) throw new PoolClosedError();
  }

  /**
   * Sends any command over the multiplexed lane (blocking commands take an exclusive connection).
   * Bound to its pool, so it works detached: `const send = pool.call; await send('PING')`, or
   * `sendCommand: pool.call` for libraries that take a send function (rate-limit-redis).
   */
  call = <T = Reply>(command: string, ...args: Arg[]): Promise<T> => this.runSpec({ args: [command, ...args] }) as Promise<T>;

  /** @internal */
  runSpec(spec: CommandSpec): Promise<unknown> {
    return this.surface.runSpec(spec);
  }

  /**
   * The same commands with per-call options: `pool.with({ signal, timeout, returnBuffers, idempotent }).get(k)`.
   * With `returnBuffers: true` the view's helpers are typed (and answer) with Buffers.
   */
  with(options: CallOptions & { returnBuffers: true }): CommandView<Buffer>;
  with(options: CallOptions & { returnBuffers?: false }): CommandView<string>;
  with(options: CallOptions): CommandView<string | Buffer>;
  with(options: CallOptions): CommandView<string | Buffer> {
    checkCallOptions(options);
    return new CommandView(this.dispatcher, options, () => this.ensureOpen(), this.keyPrefix);
  }

  /** A pipeline: queued commands go out in one write; `exec()` gives each command's value or error. */
  pipeline(): Batch<BatchResult> {
    return this.surface.pipeline();
  }

  /** A MULTI/EXEC transaction on one exclusive connection; `exec()` resolves to null when a WATCHed key changed. */
  multi(): Batch<BatchResult | null> {
    return this.surface.multi();
  }

  /**
   * Borrows an exclusive connection for `fn` (blocking commands, WATCH, SUBSCRIBE). It goes
   * back even when `fn` throws, and is destroyed instead if it broke or subscribed.
   * In a cluster, `{ key }` picks the node that owns the key.
   */
  use<T>(fn: (lease: Lease) => Promise<T>, options?: { key?: Arg }): Promise<T> {
    try {
      checkUseOptions(options);
    } catch (e) {
      return Promise.reject(e);
    }
    return useLease(this.dispatcher, fn, options?.key, undefined, () => this.ensureOpen(), this.keyPrefix);
  }

  /**
   * Iterates over keys with SCAN (every master in a cluster). With a `keyPrefix`, only keys
   * under the prefix are scanned (`match` applies after it) and they are yielded without it.
   */
  scanIterator(options?: ScanOptions): AsyncIterableIterator<string> {
    return this.surface.scanIterator(options);
  }

  /** Every [field, value] of a hash, with HSCAN (`match` filters fields). */
  hscanIterator(key: Arg, options?: Omit<ScanOptions, 'type'>): AsyncIterableIterator<[field: string, value: string]> {
    return this.surface.hscanIterator(key, options);
  }

  /** Every member of a set, with SSCAN. */
  sscanIterator(key: Arg, options?: Omit<ScanOptions, 'type'>): AsyncIterableIterator<string> {
    return this.surface.sscanIterator(key, options);
  }

  /** Every [member, score] of a sorted set, with ZSCAN. */
  zscanIterator(key: Arg, options?: Omit<ScanOptions, 'type'>): AsyncIterableIterator<[member: string, score: number]> {
    return this.surface.zscanIterator(key, options);
  }

  /** See {@link Scripting.script}. */
  script(source: string, options: ScriptOptions): Script {
    return this.surface.script(source, options);
  }

  /**
   * A connection of your own, outside `pool.max`, for a client that holds a named connection
   * or blocks for long (a queue worker): `const d = pool.dedicated({ clientName: 'worker-1' });
   * await d.call('BZPOPMIN', 'jobs', 5); await d.close()`. It goes where the pool sends
   * commands (the current master; in a cluster the master of `key`'s slot), sets `clientName`
   * on every connection it opens, follows failovers by opening a new connection on the next
   * call, and closes with the pool. See {@link DedicatedConnection}. Not available with
   * Sentinel `role: 'replica'`.
   */
  dedicated(options?: DedicatedOptions): DedicatedConnection {
    checkDedicatedOptions(options);
    return new DedicatedConnection(this.dispatcher, () => this.ensureOpen(), this.keyPrefix, options);
  }


  /** Stops new work, lets in-flight commands finish (bounded by `closeTimeout`), then closes every connection and timer. */
  abstract close(): Promise<void>;

  /** A snapshot of connections, queues and counters; never holds credentials. */
  abstract stats(): object;

  /**
   * Asks the `credentials` provider again and sends `AUTH` with what it returns on every live
   * connection (lanes, idle exclusive connections, sentinel connections), without dropping
   * them or interrupting a command: call it when a rotated password or a renewed token must
   * take effect before the old one expires. A connection lent out through `use()` (perhaps in
   * the middle of a MULTI) logs in again when it comes back; connections opened from now on
   * fetch fresh credentials themselves. Rejects with `AuthenticationError` when a server
   * refuses the new credentials (those connections keep their former login). With static
   * `password`/`username` there is nothing new to send: it resolves at once.
   */
  abstract reauthenticate(): Promise<void>;

  /** What printing a pool (util.inspect, the console) shows: the mode and `stats()`, never options or credentials. */
  [inspect.custom](_depth: number, options: InspectOptions): string {
    return `${this.constructor.name} ${inspect(this.stats(), { ...options, depth: 2 })}`;
  }

  /**
   * What `JSON.stringify(pool)` gives (a logger that serializes what it is handed): the pool's
   * class and `stats()`, never options or credentials. Without it the pool's internals are
   * circular, and the logger throws.
   */
  toJSON(): {
    /** The pool's class: `StandalonePool`, `SentinelPool` or `ClusterPool`. */
    pool: string;
    /** The same snapshot as {@link BasePool.stats}. */
    stats: object;
  } {
    return { pool: this.constructor.name, stats: this.stats() };
  }

  /** Same as {@link close}, for `await using pool = …`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface BasePool<Events extends PoolEvents = PoolEvents> extends Commands {}
installHelpers(BasePool.prototype, 'runSpec');

export { Batch, batchSendOptions, runBatchOn, Lease, useLease };
export { applyTransform, markDurable, noteWrites, resolveCall, type BatchResult, type Dispatcher, type LeaseHandle } from './call.js';
/** @deprecated A resolved call is already the connection's send options; pass it as it is. */
export const sendOptions = <T>(call: T): T => call;
