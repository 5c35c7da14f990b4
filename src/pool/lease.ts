/**
 * `use()`: an exclusive connection lent to a function, with the state it leaves behind tracked
 * so that none of it reaches the next borrower.
 */
import type { Connection } from '../connection/connection.js';
import { installHelpers, type CommandSpec, type Commands, type ScanOptions } from '../commands/helpers.js';
import { scanKeys } from '../commands/scan-iterators.js';
import type { ScanIterators } from '../commands/commands.js';
import type { KeyPrefixer } from '../commands/key-prefix.js';
import type { Scripting } from '../commands/script.js';
import { blockingSeconds, builtinClassifier, carried, type CommandTraits } from '../commands/traits.js';
import { sendTraced } from '../diagnostics.js';
import { PoolClosedError } from '../errors.js';
import type { Arg, NodeAddress, Reply } from '../types.js';
import { checkCallOptions, type CallOptions, type ResolvedCall } from './call-options.js';
import { Batch, runBatchOn } from './batch.js';
import { markDurable, noteWrites, resolveCall, type BatchResult, type Dispatcher } from './call.js';
import { installSpecMethods } from './spec-methods.js';

/** What a lease did to its connection that the next borrower must not inherit. */
interface LeaseState {
  released: boolean;
  /** WATCH was sent: UNWATCH goes out before the connection is reused. */
  watched: boolean;
  /** MULTI without EXEC/DISCARD, SELECT, CLIENT …, HELLO, AUTH, RESET: the connection is closed instead of reused. */
  dirty: boolean;
  inMulti: boolean;
  /** A write was queued in the open MULTI: its EXEC needs a WAIT (with durability on). */
  multiWrites: boolean;
}

/** Notes the connection state a command leaves behind (its traits' `state`: the one table, CONNECTION_STATE). */
function track(state: LeaseState, t: CommandTraits): void {
  switch (t.state) {
    case undefined: break;
    case 'watch': state.watched = true; break;
    case 'unwatch': state.watched = false; break;
    case 'multi': state.inMulti = true; break;
    case 'end': state.inMulti = false; state.watched = false; break;
    // RESET, SELECT, HELLO, AUTH, QUIT, READONLY, CLIENT SETNAME …: not fit for the next borrower.
    default: state.dirty = true;
  }
}

/**
 * An exclusive connection lent by `use()`: blocking commands, WATCH, SUBSCRIBE. It goes back
 * to the pool when `use()`'s function settles. State it leaves behind never reaches the next
 * borrower: a WATCH is undone with UNWATCH, and a connection left in MULTI, switched to another
 * database, renamed or subscribed is closed instead of reused.
 */
export class Lease<S extends string | Buffer = string> {
  /** @internal */
  constructor(
    private readonly conn: Connection,
    /** @internal */
    readonly dispatcher: Dispatcher,
    /** @internal */
    readonly callOptions: CallOptions | undefined,
    private readonly state: LeaseState = { released: false, watched: false, dirty: false, inMulti: false, multiWrites: false },
    private readonly keyPrefix: KeyPrefixer | undefined = undefined,
  ) {}

  /** The node this connection talks to. */
  get address(): NodeAddress {
    return this.conn.address;
  }

  /**
   * Aborts when this connection stops being usable: it closed, or the pool moved to another
   * node (a Sentinel failover). A long-lived subscriber awaits it to resubscribe through a new
   * lease; `signal.reason` says why.
   */
  get signal(): AbortSignal {
    return this.conn.signal;
  }

  private check(): void {
    if (this.state.released) throw new PoolClosedError('This lease was returned to the pool; use the connection only inside use().');
  }

  /** Sends any command on this connection (no retry: the connection is pinned). */
  call<T = Reply>(command: string, ...args: Arg[]): Promise<T> {
    return this.runSpec({ args: [command, ...args] }) as Promise<T>;
  }

  /** @internal */
  runSpec(spec: CommandSpec): Promise<unknown> {
    try {
      this.check();
    } catch (e) {
      return Promise.reject(e);
    }
    const t = (this.dispatcher.classifier ?? builtinClassifier()).of(spec.args);
    let block: number | undefined;
    try {
      block = spec.blockSeconds ?? blockingSeconds(t, spec.args);
    } catch (e) {
      return Promise.reject(e);
    }
    const args = this.keyPrefix ? this.keyPrefix.apply(spec.args, t) : spec.args;
    const inMulti = this.state.inMulti;
    track(this.state, t);
    const call = resolveCall(this.dispatcher, this.callOptions, block, t);
    if (spec.deadline) call.deadline = spec.deadline;
    this.dispatcher.cache?.noteWrite(args, t);
    if (call.durability !== undefined) this.markLeaseDurable(call, t, inMulti);
    const p = sendTraced(this.conn, args, call, 1);
    return spec.transform ? p.then(spec.transform) : p;
  }

  /**
   * With durability, a lease's writes get their WAIT like any other: a write sent on its own,
   * or the EXEC of a MULTI that queued writes (inside the transaction a WAIT would be queued too).
   */
  private markLeaseDurable(call: ResolvedCall, t: CommandTraits, inMulti: boolean): void {
    if (t.state === 'multi') this.state.multiWrites = false;
    else if (!inMulti) markDurable(call, t);
    else if (t.name === 'EXEC') {
      if (this.state.multiWrites) call.durable = call.durability;
    } else if (t.durable) this.state.multiWrites = true;
  }

  /** This lease with per-call options. */
  with(options: CallOptions): Lease<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
    checkCallOptions(options);
    return new Lease(this.conn, this.dispatcher, { ...this.callOptions, ...options }, this.state, this.keyPrefix);
  }

  /** A pipeline on this connection. */
  pipeline(): Batch<BatchResult> {
    return new Batch<BatchResult>((cmds, call) => this.runBatch(cmds, call, false) as Promise<BatchResult>, this.dispatcher, this.callOptions, false, () => this.check(), this.keyPrefix);
  }

  /** MULTI/EXEC on this connection (after WATCH, if you sent one); null when a WATCHed key changed. */
  multi(): Batch<BatchResult | null> {
    return new Batch<BatchResult | null>((cmds, call) => this.runBatch(cmds, call, true), this.dispatcher, this.callOptions, true, () => this.check(), this.keyPrefix);
  }


  private runBatch(cmds: Arg[][], call: ResolvedCall, transaction: boolean): Promise<BatchResult | null> {
    for (let i = 0; i < cmds.length; i++) track(this.state, carried(call.batch?.[i], cmds[i]!));
    if (transaction) {
      // EXEC (or its failure) ends the transaction and every WATCH.
      this.state.watched = false;
    }
    return runBatchOn(this.conn, noteWrites(this.dispatcher, cmds, call.batch), call, transaction);
  }

  /**
   * Subscribes to channels (or patterns with `{ pattern: true }`) and calls `listener` for each
   * message on those channels (or matching those patterns). Messages arrive until `use()`'s
   * function returns: keep it pending (e.g. await a promise you resolve later) for as long as
   * you want messages. The connection is closed rather than reused when the lease ends.
   */
  async subscribe(channels: string | string[], listener: (message: string, channel: string, pattern?: string) => void, options?: { pattern?: boolean }): Promise<void> {
    this.check();
    const list = Array.isArray(channels) ? channels : [channels];
    if (list.length === 0) throw new TypeError('subscribe needs at least one channel.');
    if (typeof listener !== 'function') throw new TypeError('subscribe needs a listener function.');
    const mine = new Set(list);
    const pattern = options?.pattern === true;
    this.state.dirty = true;
    this.conn.on('push', (v) => {
      const kind = String(v[0]);
      if (!pattern && kind === 'message' && mine.has(String(v[1]))) listener(String(v[2]), String(v[1]));
      else if (pattern && kind === 'pmessage' && mine.has(String(v[1]))) listener(String(v[3]), String(v[2]), String(v[1]));
    });
    await this.conn.send([pattern ? 'PSUBSCRIBE' : 'SUBSCRIBE', ...list], { timeout: this.dispatcher.commandTimeout });
  }

  /** Iterates over the keys of the leased connection's node with SCAN (one master of a cluster). */
  scanIterator(options?: ScanOptions): AsyncIterableIterator<S> {
    return scanKeys((spec) => this.runSpec(spec), options, this.keyPrefix) as AsyncIterableIterator<S>;
  }

  /**
   * @internal Ends the lease: undoes a WATCH, or marks the connection unfit for reuse. The
   * UNWATCH is awaited before the connection goes back: with its reply still due, the pool
   * would count the connection busy and close it instead of reusing it.
   */
  end(): Promise<void> | undefined {
    const st = this.state;
    st.released = true;
    if (st.dirty || st.inMulti) this.conn.dirty = true;
    else if (st.watched && this.conn.ready) {
      return this.conn.send(['UNWATCH']).then(() => undefined, () => { this.conn.dirty = true; });
    }
    return undefined;
  }
}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface Lease<S extends string | Buffer = string> extends Commands<S>, LeaseWith<S>, ScanIterators<S>, Scripting {}
installHelpers(Lease.prototype, 'runSpec');
// On a lease the iterators walk the leased connection's node (one master of a cluster).
installSpecMethods(Lease.prototype);

/** What `lease.with(options)` returns: typed by `returnBuffers`, as `pool.with()` is. */
export interface LeaseWith<S extends string | Buffer> {
  /** This lease with these options merged in; bulk strings come back (and are typed) as Buffers. */
  with(options: CallOptions & { returnBuffers: true }): Lease<Buffer>;
  /** …as strings. */
  with(options: CallOptions & { returnBuffers: false }): Lease<string>;
  /** …keeping this lease's type. */
  with(options: CallOptions & { returnBuffers?: undefined }): Lease<S>;
  /** …`returnBuffers` known only at run time. */
  with(options: CallOptions): Lease<string | Buffer>;
}

/** Borrows, runs `fn`, and always gives the connection back (destroyed if it broke). */
export async function useLease<T>(d: Dispatcher, fn: (lease: Lease) => Promise<T>, key: Arg | undefined, callOptions: CallOptions | undefined, open: () => void, keyPrefix?: KeyPrefixer): Promise<T> {
  open();
  if (typeof fn !== 'function') throw new TypeError('use(fn) needs a function that receives the lease.');
  // pool.with({ timeout }).use(…): that deadline bounds the wait for a connection too.
  const deadline = callOptions?.timeout ? Date.now() + callOptions.timeout : 0;
  // In a cluster the key picks the node: the prefixed key is the one the commands will use.
  const h = await d.lease(key !== undefined && keyPrefix ? keyPrefix.key(key) : key, undefined, deadline);
  const lease = new Lease(h.conn, d, callOptions, undefined, keyPrefix);
  try {
    return await fn(lease);
  } finally {
    const undo = lease.end();
    if (undo) await undo;
    h.release();
  }
}

