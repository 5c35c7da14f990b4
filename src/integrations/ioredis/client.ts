/**
 * The ioredis-shaped handle over a pool: lifecycle, commands, scripts, batches and pub/sub.
 */
import { EventEmitter, setMaxListeners } from 'node:events';
import type { Arg, Batch, BatchResult, CallOptions, Listener, Reply, Script, ScriptOptions, Subscription, SubscriptionOptions } from '../../index.js';
import { IoredisPipeline, type BatchOwner } from './batch.js';
import {
  COMMAND_NAMES, describe, flatten, shape, splitCallback, withCallback,
  type IoredisArgument, type IoredisBufferCommands, type IoredisCallback, type IoredisCommands,
} from './commands.js';
import { HandleSubscriptions } from './pubsub.js';
import { blockingSeconds, builtinClassifier } from '../../commands/traits.js';
import { checkDefinition, scriptCall, type IoredisCommandDefinition, type ScriptCall } from './scripts.js';

/** The part of a view (`pool.with(options)`) the handle sends through. */
interface View {
  call(command: string, ...args: Arg[]): Promise<unknown>;
  pipeline(): Batch<BatchResult>;
  multi(): Batch<BatchResult | null>;
  script(source: string, options: ScriptOptions): Script;
}

/**
 * What `asIoredis` needs from a pool: `StandalonePool`, `SentinelPool` and `ClusterPool` all
 * have it.
 */
export interface IoredisPool {
  /** A view with per-call options (the handle's abort signal, `returnBuffers`). */
  with(options: CallOptions): unknown;
  /** Pool pub/sub. */
  subscribe(channels: string[], listener: Listener<Buffer>, options: SubscriptionOptions & { returnBuffers: true }): Promise<Subscription<Buffer>>;
  /** Pool pub/sub, patterns. */
  psubscribe(patterns: string[], listener: Listener<Buffer>, options: SubscriptionOptions & { returnBuffers: true }): Promise<Subscription<Buffer>>;
  /** Read for `closed`. */
  stats(): object;
  /** The pool's informational `error` events are passed on to handles that listen for `error`. */
  on(event: 'error', listener: (error: Error) => void): unknown;
  /** Stops passing on `error` events when the handle ends. */
  off(event: 'error', listener: (error: Error) => void): unknown;
  /** Used to tell whether the pool is closed without a round trip (an empty pipeline sends nothing). */
  pipeline(): { exec(): Promise<unknown> };
}

const SEND = Symbol('send');
const OWN_METHODS = new Set<string>();

/** The error of a call on a handle ended by `quit()`/`disconnect()` (its pool is still open). ioredis says 'Connection is closed.' too. */
function handleClosedError(cause?: unknown): Error {
  return new Error(
    'Connection is closed. (This asIoredis handle was ended by quit() or disconnect(); its pool is still open: make a new handle with asIoredis(pool) or duplicate().)',
    cause === undefined ? undefined : { cause },
  );
}

/**
 * An ioredis-shaped client over a pool, made by {@link asIoredis}. It defines only what it
 * supports, so libraries that test for a method (`typeof client.defineCommand`) take the path
 * that works:
 *
 * - `status` is `'ready'` from the start and `'end'` once this handle (or its pool) is closed;
 *   `connect` and `ready` are emitted on the next tick, `close` and `end` when it ends.
 * - Command methods (`get`, `set(k, v, 'EX', 10, 'NX')`, `del`, `eval`, `evalsha`, …, plus a
 *   `…Buffer` variant of each), `call`/`send_command` for any other command, `defineCommand`.
 * - `pipeline()`/`multi()` whose `exec()` resolves `[err, value]` tuples.
 * - A function as last argument is a node-style callback, called on a later tick.
 * - `subscribe`/`psubscribe`/`unsubscribe`/`punsubscribe` with `message`/`pmessage`/
 *   `messageBuffer`/`pmessageBuffer` events.
 *
 * A handle never owns the pool: `quit()`/`disconnect()` end this handle only. After
 * `pool.close()` every call rejects with `PoolClosedError`.
 */
export class IoredisClient extends EventEmitter {
  readonly #pool: IoredisPool;
  readonly #abort = new AbortController();
  readonly #view: View;
  readonly #buffers: View;
  // Blocking commands go through views with this handle's abort signal, so that disconnect()
  // ends them; other commands do not carry it (a signal costs a listener per call in flight).
  readonly #blockingView: View;
  readonly #blockingBuffers: View;
  readonly #subs: HandleSubscriptions;
  readonly #scripts = new Map<string, ScriptCall>();
  #ended = false;
  #poolClosed = false;

  /** @internal Use {@link asIoredis}. */
  constructor(pool: IoredisPool) {
    super();
    this.#pool = pool;
    this.#view = pool.with({}) as View;
    this.#buffers = pool.with({ returnBuffers: true }) as View;
    setMaxListeners(0, this.#abort.signal);
    this.#blockingView = pool.with({ signal: this.#abort.signal }) as View;
    this.#blockingBuffers = pool.with({ signal: this.#abort.signal, returnBuffers: true }) as View;
    this.#subs = new HandleSubscriptions(pool, {
      emit: (event, ...args) => this.emit(event, ...args),
      listenerCount: (event) => this.listenerCount(event),
      listenerFailed: (e) => this.#report(e, true),
    });
    // The pool's `error` events are passed on only while this handle has `error` listeners, so a
    // handle nobody listens to (most are) adds nothing to the pool and needs no quit() to be freed.
    this.on('newListener', (event: string | symbol) => {
      if (event === 'error' && this.listenerCount('error') === 0 && !this.#ended) pool.on('error', this.#onPoolError);
    });
    this.on('removeListener', (event: string | symbol) => {
      if (event === 'error' && this.listenerCount('error') === 0) pool.off('error', this.#onPoolError);
    });
    setImmediate(() => {
      if (this.status !== 'ready') return;
      this.emit('connect');
      this.emit('ready');
    });
  }

  /** `'ready'` while this handle and its pool are open, `'end'` after `quit()`/`disconnect()` or `pool.close()`. */
  get status(): 'ready' | 'end' {
    if (this.#ended) return 'end';
    if (!this.#poolClosed && (this.#pool.stats() as { closed?: boolean }).closed === true) this.#poolClosed = true;
    return this.#poolClosed ? 'end' : 'ready';
  }

  /** PING: resolves 'PONG' (or echoes `message`). */
  ping(...args: Array<IoredisArgument | IoredisCallback<string>>): Promise<string> {
    return this[SEND]('ping', args, false) as Promise<string>;
  }

  /** Sends any command: `call('HINCRBY', key, field, 1)`; arrays are flattened; a function last is a callback. */
  call(command: string, ...args: Array<IoredisArgument | IoredisCallback>): Promise<unknown> {
    return this.#callAny(command, args, false);
  }

  /** Same as {@link call}, with bulk strings as Buffers. */
  callBuffer(command: string, ...args: Array<IoredisArgument | IoredisCallback>): Promise<unknown> {
    return this.#callAny(command, args, true);
  }

  /** Same as {@link call} (ioredis's older name). */
  send_command(command: string, ...args: Array<IoredisArgument | IoredisCallback>): Promise<unknown> {
    return this.#callAny(command, args, false);
  }

  #callAny(command: unknown, args: unknown[], buffers: boolean): Promise<unknown> {
    if (typeof command !== 'string' || command === '') {
      return Promise.reject(new TypeError(`asIoredis: call(command, ...args) needs the command name as a string (got ${describe(command)}).`));
    }
    return this[SEND](command.toLowerCase(), args, buffers, command);
  }

  /** @internal The one path every command takes. */
  [SEND](name: string, args: unknown[], buffers: boolean, command: string = name): Promise<unknown> {
    const cb = splitCallback(args);
    let p: Promise<unknown>;
    const refused = this.#refusal();
    if (refused !== undefined) p = refused;
    else {
      try {
        const flat = flatten(name, args);
        const view = isBlocking(name, flat) ? (buffers ? this.#blockingBuffers : this.#blockingView) : buffers ? this.#buffers : this.#view;
        p = view.call(command, ...flat).then((r) => shape(name, r as Reply), (e: unknown) => this.#failed(e));
      } catch (e) {
        p = Promise.reject(e);
      }
    }
    return withCallback(p, cb);
  }

  /**
   * Defines a Lua command as a method, as ioredis does: `client[name](...keysAndArgs)` or
   * `client[name]([keysAndArgs])`, plus `client[name + 'Buffer']`. It sends EVALSHA, and EVAL
   * when the server lost the script (NOSCRIPT: a failover, a restart), so it never runs twice.
   * Pipelines and transactions made afterwards get the method too (sent as EVAL there).
   * Defining a name again replaces it; the facade's own method names are refused.
   */
  defineCommand(name: string, definition: IoredisCommandDefinition): void {
    const checked = checkDefinition(name, definition, OWN_METHODS);
    const plain = scriptCall(this.#view, name, checked);
    const buffers = scriptCall(this.#buffers, name, checked);
    this.#scripts.set(name, plain);
    const run = (which: ScriptCall) => (...a: unknown[]): Promise<unknown> => {
      const cb = splitCallback(a);
      let p: Promise<unknown>;
      const refused = this.#refusal();
      if (refused !== undefined) p = refused;
      else {
        try {
          const { script, args } = which(flatten(name, a));
          p = script(...args).then(normalizeScript, (e: unknown) => this.#failed(e));
        } catch (e) {
          p = Promise.reject(e);
        }
      }
      return withCallback(p, cb);
    };
    Object.defineProperty(this, name, { value: run(plain), configurable: true, writable: true });
    Object.defineProperty(this, `${name}Buffer`, { value: run(buffers), configurable: true, writable: true });
  }

  /** A pipeline: queued commands go out in one write; `exec()` resolves `[err, value]` per command. Takes `[[command, ...args], …]` to queue at once. */
  pipeline(commands?: Array<[string, ...unknown[]]>): IoredisPipeline {
    return new IoredisPipeline(this.#view.pipeline(), this.#batchOwner, commands);
  }

  /**
   * A MULTI/EXEC transaction (on one exclusive connection, in one write): `exec()` resolves
   * `[err, value]` per command. `{ pipeline: false }` (ioredis sending MULTI at once) is not
   * supported.
   */
  multi(commands?: Array<[string, ...unknown[]]> | { pipeline?: boolean }, options?: { pipeline?: boolean }): IoredisPipeline {
    let list: unknown = commands;
    let opts: unknown = options;
    if (commands !== undefined && !Array.isArray(commands)) {
      opts = commands;
      list = undefined;
    }
    if (opts !== undefined) {
      if (typeof opts !== 'object' || opts === null) throw new TypeError(`asIoredis: multi() options must be an object (got ${describe(opts)}).`);
      for (const [k, v] of Object.entries(opts)) {
        if (k !== 'pipeline') throw new TypeError(`asIoredis: multi() option ${k} is not supported by the ioredis facade.`);
        if (v !== true && v !== undefined) throw new TypeError('asIoredis: multi({ pipeline: false }) (MULTI sent before the commands) is not supported by the ioredis facade; use multi() and exec().');
      }
    }
    return new IoredisPipeline(this.#view.multi(), this.#batchOwner, list);
  }

  readonly #batchOwner: BatchOwner = {
    refusal: () => this.#refusal(),
    scripts: this.#scripts,
  };

  /**
   * Subscribes to channels: `subscribe('a', 'b')`, `subscribe(['a', 'b'])`, with an optional
   * callback `(err, count)`. Messages arrive as `message` (channel, text) and `messageBuffer`
   * (channel, payload as Buffers) events. Resolves with the number of channels and patterns
   * this handle holds. The handle keeps sending other commands while subscribed.
   */
  subscribe(...args: Array<string | Buffer | readonly string[] | IoredisCallback<number>>): Promise<number> {
    return this.#subscribe('subscribe', 'channel', args);
  }

  /** Subscribes to patterns; messages arrive as `pmessage` (pattern, channel, text) and `pmessageBuffer` events. */
  psubscribe(...args: Array<string | Buffer | readonly string[] | IoredisCallback<number>>): Promise<number> {
    return this.#subscribe('psubscribe', 'pattern', args);
  }

  /** Unsubscribes channels (all of this handle's without names); names not subscribed are ignored. */
  unsubscribe(...args: Array<string | Buffer | readonly string[] | IoredisCallback<number>>): Promise<number> {
    const cb = splitCallback(args) as IoredisCallback<number> | undefined;
    return withCallback(this.#pubsub('unsubscribe', args, (names) => this.#subs.remove('channel', names), true), cb);
  }

  /** Unsubscribes patterns (all of this handle's without names). */
  punsubscribe(...args: Array<string | Buffer | readonly string[] | IoredisCallback<number>>): Promise<number> {
    const cb = splitCallback(args) as IoredisCallback<number> | undefined;
    return withCallback(this.#pubsub('punsubscribe', args, (names) => this.#subs.remove('pattern', names), true), cb);
  }

  #subscribe(method: string, kind: 'channel' | 'pattern', args: unknown[]): Promise<number> {
    const cb = splitCallback(args) as IoredisCallback<number> | undefined;
    const added = this.#pubsub(method, args, (names) => this.#subs.add(kind, names));
    // The callback first, then the held-back messages of the new names, on the same later tick.
    const p = added.then(({ count, release }) => {
      setImmediate(() => {
        try {
          if (cb !== undefined) cb(null, count);
        } finally {
          release();
        }
      });
      return count;
    });
    if (cb !== undefined) p.catch((e: unknown) => void setImmediate(cb, e instanceof Error ? e : new Error(String(e))));
    return p;
  }

  #pubsub<T>(method: string, args: unknown[], run: (names: string[]) => Promise<T>, emptyOk = false): Promise<T> {
    // Unsubscribing may have nothing to send: a closed pool must still say so.
    const refused = this.#refusal() ?? (this.status === 'end' ? this.#probe() : undefined);
    if (refused !== undefined) return refused;
    try {
      const names = flatten(method, args).map((n) => (typeof n === 'string' ? n : Buffer.isBuffer(n) ? n.toString() : String(n)));
      if (names.length === 0 && !emptyOk) throw new TypeError(`asIoredis: ${method}() needs at least one name.`);
      return run(names).catch((e: unknown) => this.#failed(e));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Ends this handle (never the pool): its subscriptions are closed, later calls reject, and
   * `close` then `end` are emitted. Commands already sent still complete. Resolves 'OK'; after
   * `pool.close()` it rejects with PoolClosedError (the handle is ended either way).
   */
  quit(callback?: IoredisCallback<'OK'>): Promise<'OK'> {
    if (callback !== undefined && typeof callback !== 'function') return Promise.reject(new TypeError(`asIoredis: quit() takes an optional callback (got ${describe(callback)}).`));
    const wasEnded = this.#ended;
    this.#end();
    const p = this.#subs.closeAll()
      .then(() => this.#pool.pipeline().exec())
      .then(() => (wasEnded ? Promise.reject(handleClosedError()) : 'OK' as const), (e: unknown) => this.#failed(e));
    return withCallback(p, callback);
  }

  /**
   * Ends this handle at once (never the pool): its blocking calls in flight (BLPOP, XREAD
   * BLOCK, …) reject and free their connections, other calls in flight complete, later calls
   * reject, its subscriptions are closed. `disconnect(true)` (reconnect) is not supported.
   */
  disconnect(reconnect?: boolean): void {
    if (reconnect !== undefined && reconnect !== false) throw new TypeError('asIoredis: disconnect(reconnect) is not supported by the ioredis facade (a handle does not reconnect; make a new one with duplicate()).');
    this.#abort.abort(handleClosedError());
    this.#end();
    this.#subs.closeAll().catch(() => undefined);
  }

  /**
   * A new handle on the same pool (ioredis opens a new connection; here both share the pool).
   * Commands from `defineCommand` are not copied, as with ioredis. Option overrides are not
   * supported.
   */
  duplicate(override?: object): IoredisClient {
    if (override !== undefined && (typeof override !== 'object' || override === null || Object.keys(override).length > 0)) {
      const names = typeof override === 'object' && override !== null ? Object.keys(override).join(', ') : describe(override);
      throw new TypeError(`asIoredis: duplicate(options) does not take options (got ${names}); a duplicate is another handle on the same pool.`);
    }
    return new IoredisClient(this.#pool);
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#pool.off('error', this.#onPoolError);
    setImmediate(() => {
      this.emit('close');
      this.emit('end');
    });
  }

  /** Why this handle cannot send now, as a rejection; undefined when it can. */
  #refusal(): Promise<never> | undefined {
    if (!this.#ended) return undefined;
    return this.#probe();
  }

  /** Rejects with the pool's PoolClosedError when it is closed (an empty pipeline sends nothing), else with the handle's own error. */
  #probe(): Promise<never> {
    return this.#pool.pipeline().exec().then(() => Promise.reject(handleClosedError()), (e: unknown) => this.#failed(e));
  }

  #failed(e: unknown): Promise<never> {
    if (e !== null && typeof e === 'object' && (e as Error).name === 'PoolClosedError') this.#poolClosed = true;
    return Promise.reject(e);
  }

  readonly #onPoolError = (e: Error): void => this.#report(e, false);

  /** Passes an error to this handle's `error` listeners; one from a message listener with none is rethrown (as an EventEmitter would). */
  #report(e: Error, fromListener: boolean): void {
    if (this.listenerCount('error') > 0) this.emit('error', e);
    else if (fromListener) setImmediate(() => { throw e; });
  }
}

/**
 * Whether a command may block the connection it runs on: then it gets the handle's abort signal,
 * so that disconnect() ends the wait. Which commands block (and XREAD only with BLOCK) is the
 * command traits' rule, the one the pool uses to send them on an exclusive connection.
 */
function isBlocking(name: string, args: readonly Arg[]): boolean {
  // By name first (one map lookup): no blocking command has subcommands, and most calls end here.
  const t = builtinClassifier().ofName(name);
  if (t.block === undefined) return false;
  try {
    return blockingSeconds(t, [name, ...args]) !== undefined;
  } catch {
    return true; // a malformed timeout: the pool refuses it, with or without the signal
  }
}

/** Script replies under RESP3 (tables as maps) in RESP2's shape. */
function normalizeScript(r: Reply): unknown {
  return shape('eval', r);
}

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface IoredisClient extends IoredisCommands, IoredisBufferCommands {}

for (const name of COMMAND_NAMES) {
  if (name === 'ping') continue;
  for (const [method, buffers] of [[name, false], [`${name}Buffer`, true]] as const) {
    Object.defineProperty(IoredisClient.prototype, method, {
      value(this: IoredisClient, ...args: unknown[]) {
        return this[SEND](name, args, buffers);
      },
      configurable: true,
      writable: true,
    });
  }
}
Object.defineProperty(IoredisClient.prototype, 'pingBuffer', {
  value(this: IoredisClient, ...args: unknown[]) {
    return this[SEND]('ping', args, true);
  },
  configurable: true,
  writable: true,
});
for (const name of Object.getOwnPropertyNames(IoredisClient.prototype)) OWN_METHODS.add(name);
for (const name of Object.getOwnPropertyNames(EventEmitter.prototype)) OWN_METHODS.add(name);
