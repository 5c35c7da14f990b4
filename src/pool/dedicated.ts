/**
 * `pool.dedicated()`: a connection of the caller's own, outside `pool.max`, for clients that
 * keep a named or blocking connection for a long time (BullMQ workers block in BZPOPMIN for
 * seconds, over and over, and are found by the name they set with CLIENT SETNAME).
 */
import type { Connection } from '../connection/connection.js';
import { blockingSeconds, builtinClassifier } from '../commands/traits.js';
import type { KeyPrefixer } from '../commands/key-prefix.js';
import { sendTraced } from '../diagnostics.js';
import { ConnectionError, PoolClosedError, RedisError } from '../errors.js';
import { checkKnown, checkObject } from '../options.js';
import { formatAddress, type Arg, type NodeAddress, type Reply } from '../types.js';
import { resolveCall, retryCallOrThrow, type Dispatcher } from './call.js';

/** Options of {@link BasePool.dedicated}. */
export interface DedicatedOptions {
  /**
   * Sent as `CLIENT SETNAME` on every connection the handle opens (so the name shows in
   * `CLIENT LIST` again after a failover). A `CLIENT SETNAME` sent through `call()` replaces it.
   */
  clientName?: string;
  /**
   * In a cluster: the key whose slot's master the connection goes to. Without it, the first
   * command's keys choose the node (any master for a keyless command). Ignored by the other modes.
   */
  key?: Arg;
}

/** Redirect replies that prove the command did not run on the node it reached. */
const REDIRECTS = new Set(['MOVED', 'ASK', 'TRYAGAIN', 'CLUSTERDOWN']);

/** Validates the options of `dedicated(options)`. */
export function checkDedicatedOptions(o: DedicatedOptions | undefined): void {
  if (o === undefined) return;
  checkObject('dedicated(options)', o);
  checkKnown('dedicated', o, ['clientName', 'key']);
  if (o.clientName !== undefined && (typeof o.clientName !== 'string' || o.clientName === '' || /\s/.test(o.clientName))) {
    throw new TypeError('Option dedicated.clientName must be a non-empty string without spaces (Redis refuses spaces in CLIENT SETNAME).');
  }
  if (o.key !== undefined && typeof o.key !== 'string' && !Buffer.isBuffer(o.key) && typeof o.key !== 'number') {
    throw new TypeError('Option dedicated.key must be a string, Buffer or number.');
  }
}

/**
 * A connection of its own, outside `pool.max`, to the node the pool would send a command to:
 * the server, the current Sentinel master, or in a cluster the master of `key`'s slot (or of
 * the first command's keys). It is opened on the first `call()` (or by `connect()`) with the
 * pool's options (credentials, TLS, `db`, `protocol`), and closed by `close()` or the pool's
 * `close()`. Nothing else ever runs on it, so a blocking command or a `CLIENT SETNAME` on it
 * affects nobody else.
 *
 * Failures follow the pool's rules, without the pool's retries: a command written when the
 * connection broke (or when the pool moved to a new master, which closes the connection)
 * rejects with `UncertainWriteError`, one that was not written with `ConnectionError`; the
 * next `call()` opens a new connection where the pool points now (after a Sentinel failover,
 * the new master). Commands that provably did not run (not written, or read-only) are sent
 * again on a new connection within their deadline. In a cluster a command answered with
 * MOVED, ASK, TRYAGAIN or CLUSTERDOWN runs once through the pool instead (which follows the
 * redirect on a connection of its exclusive pool), and after MOVED the next call opens its
 * connection at the slot's new owner.
 *
 * The connection's other state (a `SELECT`, a `CLIENT TRACKING`) is not restored on a new
 * connection: only the name is. Counted in `stats()` under `dedicated`.
 */
export class DedicatedConnection {
  private conn: Connection | undefined;
  private opening: Promise<Connection> | undefined;
  private name: string | undefined;
  private readonly key: Arg | undefined;
  private ended = false;
  private inMulti = false;

  /** @internal */
  constructor(
    private readonly dispatcher: Dispatcher,
    private readonly open: () => void,
    private readonly keyPrefix: KeyPrefixer | undefined,
    options: DedicatedOptions | undefined,
  ) {
    this.name = options?.clientName;
    const key = options?.key;
    this.key = key !== undefined && keyPrefix ? keyPrefix.key(key) : key;
  }

  /** The node the connection goes to now; undefined while none is open. */
  get address(): NodeAddress | undefined {
    const c = this.conn;
    return c?.ready ? { ...c.address } : undefined;
  }

  /** The name sent with `CLIENT SETNAME` on every new connection (undefined: none). */
  get clientName(): string | undefined {
    return this.name;
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.ended;
  }

  /**
   * Opens the connection now (it is otherwise opened by the first call), e.g. so that its name
   * shows in `CLIENT LIST` at once. Resolves at once when one is open.
   */
  async connect(): Promise<void> {
    this.check();
    const call = resolveCall(this.dispatcher, undefined, undefined);
    await this.connection(undefined, call.deadline);
  }

  /**
   * Sends any command on this connection (blocking ones included; pub/sub excepted, see
   * `pool.subscribe`). Resolves with its reply; see the class for failures.
   */
  call<T = Reply>(command: string, ...args: Arg[]): Promise<T> {
    try {
      this.check();
    } catch (e) {
      return Promise.reject(e);
    }
    return this.run([command, ...args]) as Promise<T>;
  }

  /** Ends this handle: its connection closes now (a blocked command rejects). The pool stays open. */
  close(): Promise<void> {
    this.ended = true;
    const c = this.conn;
    this.conn = undefined;
    c?.destroy();
    // One still being opened is closed as it arrives (see openNew).
    return Promise.resolve();
  }

  private check(): void {
    this.open();
    if (this.ended) throw new PoolClosedError('This dedicated connection was closed; the pool is still open: ask it for another one.');
  }

  private async run(raw: Arg[]): Promise<Reply> {
    const t = (this.dispatcher.classifier ?? builtinClassifier()).of(raw);
    const args = this.keyPrefix ? this.keyPrefix.apply(raw, t) : raw;
    if (t.kind === 'subscribe') throw new TypeError(`${String(args[0])} is not sent on a dedicated connection; use pool.subscribe(...).`);
    const block = blockingSeconds(t, args);
    const call = resolveCall(this.dispatcher, undefined, block, t);
    const setName = t.name === 'CLIENT SETNAME' && args.length === 3;
    // Its reply depends on the connection's transaction state (MULTI, EXEC, DISCARD, WATCH, UNWATCH): never re-routed.
    const transactional = t.state !== undefined && t.state !== 'reset' && t.state !== 'other';
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      let conn: Connection | undefined;
      try {
        conn = await this.connection(this.key === undefined ? args : undefined, call.deadline);
        const reply = await sendTraced(conn, args, call, attempt);
        if (setName) this.name = String(args[2]);
        if (t.state === 'multi') this.inMulti = true;
        else if (t.state === 'end') this.inMulti = false;
        return reply;
      } catch (err) {
        if (conn && !conn.ready) this.drop(conn);
        if (err instanceof RedisError && REDIRECTS.has(err.code) && this.dispatcher.runBlocking && !this.inMulti && !transactional) {
          // A cluster redirect: the pool follows it (and patches its slot map); after MOVED the
          // next call opens a connection at the slot's new owner.
          if (err.code === 'MOVED' && conn) this.drop(conn, true);
          return block !== undefined ? this.dispatcher.runBlocking(args, call) : this.dispatcher.dispatch(args, call);
        }
        if (this.ended) throw err instanceof PoolClosedError ? err : new PoolClosedError('This dedicated connection was closed while the command ran.', { cause: err });
        try {
          this.open();
        } catch {
          // The pool closed under the command (close() cuts blocked commands at once).
          throw err instanceof PoolClosedError ? err : new PoolClosedError(undefined, { cause: err });
        }
        // The pool closed a node pool the connection belonged to (a node left the cluster) while
        // the pool itself stays open: a connection failure like any other.
        if (err instanceof PoolClosedError) {
          throw new ConnectionError(`The node ${conn ? formatAddress(conn.address) + ' ' : ''}left the pool; ${String(args[0])} was not sent.`, { cause: err, ...(conn ? { address: conn.address } : {}) });
        }
        // Inside a MULTI nothing goes again; otherwise the rule every mode uses: what provably did
        // not run (or a read) goes again while the call's deadline (or, without one, the retry
        // window) lasts, and a call out of time says so with a TimeoutError naming the node.
        const address = conn?.address ?? (err as { address?: NodeAddress }).address;
        if (this.inMulti || address === undefined) throw err;
        retryCallOrThrow(err, args, call, { started, window: this.dispatcher.retryWindow ?? 0, address, closed: false, readOnly: t.readOnly });
      }
    }
  }

  /** Forgets `conn` (closing it when `close` is set) so that the next call opens a new one. */
  private drop(conn: Connection, close = false): void {
    if (this.conn === conn) this.conn = undefined;
    if (close) conn.destroy();
    this.inMulti = false;
  }

  /** The open connection, or a new one routed by `args` (cluster) within `deadline`. */
  private connection(args: readonly Arg[] | undefined, deadline: number): Promise<Connection> {
    const c = this.conn;
    if (c !== undefined && c.ready) return Promise.resolve(c);
    this.conn = undefined;
    this.inMulti = false;
    if (!this.opening) {
      const p = this.openNew(args, deadline).finally(() => {
        if (this.opening === p) this.opening = undefined;
      });
      this.opening = p;
    }
    return this.opening;
  }

  /**
   * Borrows a connection the way `use()` does (waiting out a Sentinel switch, routed by slot
   * in a cluster) and takes it out of the exclusive pool for good.
   */
  private async openNew(args: readonly Arg[] | undefined, deadline: number): Promise<Connection> {
    const h = await this.dispatcher.lease(this.key, args, deadline);
    if (!h.detach) {
      h.release();
      throw new TypeError('dedicated() is not available on this pool (a Sentinel pool with role: "replica" only reads from replicas; use pool.use() there).');
    }
    h.detach();
    const conn = h.conn;
    try {
      if (this.name !== undefined) await conn.send(['CLIENT', 'SETNAME', this.name], { deadline });
    } catch (err) {
      conn.destroy();
      throw err;
    }
    if (this.ended) {
      conn.destroy();
      throw new PoolClosedError('This dedicated connection was closed while it connected.');
    }
    conn.once('close', () => {
      if (this.conn === conn) this.conn = undefined;
    });
    this.conn = conn;
    return conn;
  }
}
