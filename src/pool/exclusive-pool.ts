import genericPool from 'generic-pool';
import { clause } from '../connection/handshake.js';
import { PoolClosedError, TimeoutError } from '../errors.js';
import { raceTimer } from '../retry.js';
import { formatAddress, type NodeAddress } from '../types.js';

/** What the exclusive pool reads and calls on a connection. */
export interface ExclusiveConnection {
  readonly pending: number;
  /** Set once it holds state a next borrower must not inherit (a subscriber, a dedicated one). */
  dirty: boolean;
  destroy(error?: Error): void;
  once(event: 'close', listener: () => void): unknown;
}

/** What the exclusive pool asks of its node pool. */
export interface ExclusiveHost<C> {
  readonly closed: boolean;
  /** Where connections go now (named in errors). */
  readonly target: NodeAddress;
  /**
   * Opens one connection to the current target. After close() it must resolve (with an already
   * closed placeholder) rather than reject: generic-pool answers a failed create by creating
   * again at once for every waiting borrower.
   */
  open(): Promise<C>;
  /** Whether an idle connection may be lent: open, clean, of the current target and generation. */
  usable(conn: C): boolean;
  /** `testOnBorrow`'s check that it still answers. Must never reject. */
  alive(conn: C): Promise<boolean>;
  /** Whether it missed a re-authentication while lent out, and the login it needs then. */
  stale(conn: C): boolean;
  refresh(conn: C): Promise<void>;
  /** The error of the last connection attempt while attempts keep failing; undefined once one succeeds. */
  readonly lastError: Error | undefined;
}

/** Sizes and waits of the exclusive pool (from `ResolvedPoolOptions`). */
export interface ExclusiveOptions {
  min: number;
  max: number;
  acquireTimeoutMillis: number;
  idleTimeoutMillis: number;
  evictionRunIntervalMillis: number;
  testOnBorrow: boolean;
}

/** Counts of the exclusive pool for `stats()`. */
export interface ExclusiveStats {
  /** Exclusive connections open (idle and borrowed). */
  size: number;
  /** Idle ones, ready to lend. */
  available: number;
  /** Lent out now. */
  borrowed: number;
  /** Callers waiting for one. */
  waiting: number;
  /** `pool.max`. */
  max: number;
  /** `pool.min`. */
  min: number;
}

/**
 * The exclusive connections of one node, for `use()`, transactions and blocking commands:
 * generic-pool with our rules on top. A connection is lent only while usable, goes back only
 * when clean and idle (else it is destroyed), and logs in again first if it missed a
 * re-authentication while lent out. The wait for one is bounded by `acquireTimeoutMillis` and by
 * the call's own deadline, and the error says why none came (connects failing, or all lent out).
 */
export class ExclusivePool<C extends ExclusiveConnection> {
  private readonly pool: genericPool.Pool<C>;
  private readonly lent = new Set<C>();
  /** Taken out by {@link detach}: the caller's own, outside `pool.max`. */
  private readonly detached = new Set<C>();

  constructor(
    private readonly host: ExclusiveHost<C>,
    private readonly o: ExclusiveOptions,
  ) {
    this.pool = genericPool.createPool<C>(
      {
        create: () => host.open(),
        // A detached connection leaves generic-pool through destroy() but lives on with its caller.
        destroy: async (conn) => {
          if (!this.detached.has(conn)) conn.destroy();
        },
        // Must never reject (generic-pool leaves a rejected validation unhandled).
        validate: async (conn) => {
          // After close() anything goes to the waiters: acquire() destroys it and rejects.
          if (host.closed) return true;
          if (!host.usable(conn)) return false;
          return o.testOnBorrow ? host.alive(conn) : true;
        },
      },
      {
        min: o.min,
        max: o.max,
        acquireTimeoutMillis: o.acquireTimeoutMillis,
        idleTimeoutMillis: o.idleTimeoutMillis,
        evictionRunIntervalMillis: o.evictionRunIntervalMillis,
        testOnBorrow: true,
        fifo: false,
      },
    );
    // generic-pool retries failed creates itself; the errors reach callers through acquire timeouts.
    this.pool.on('factoryCreateError', () => {});
    this.pool.on('factoryDestroyError', () => {});
  }

  /** Whether `conn` is lent out now. */
  isLent(conn: C): boolean {
    return this.lent.has(conn);
  }

  /** Whether `conn` was detached (a dedicated connection). */
  isDetached(conn: C): boolean {
    return this.detached.has(conn);
  }

  /** Connections lent out now. */
  borrowed(): ReadonlySet<C> {
    return this.lent;
  }

  /** Dedicated connections open now. */
  dedicated(): ReadonlySet<C> {
    return this.detached;
  }

  /**
   * Borrows a connection; pair with {@link release}. Waits at most `acquireTimeoutMillis`, and
   * never past `deadline` (epoch ms, 0 = none): the call's one deadline covers this wait too.
   */
  async acquire(deadline = 0): Promise<C> {
    if (this.host.closed) throw new PoolClosedError();
    let conn: C;
    try {
      const acquiring = this.pool.acquire();
      const left = deadline > 0 ? deadline - Date.now() : Infinity;
      conn = left < this.o.acquireTimeoutMillis ? await this.acquireBy(acquiring, left) : await acquiring;
    } catch (err) {
      if (this.host.closed) throw new PoolClosedError(undefined, { cause: err });
      // generic-pool's own TimeoutError (acquireTimeoutMillis); ours (the call's deadline, from
      // acquireBy) already names its limit.
      if ((err as Error).name === 'TimeoutError' && !(err instanceof TimeoutError)) {
        throw this.noConnection(`acquireTimeoutMillis (${this.o.acquireTimeoutMillis} ms)`, err);
      }
      throw err;
    }
    if (this.host.closed) {
      void this.pool.destroy(conn).catch(() => {});
      throw new PoolClosedError();
    }
    this.lent.add(conn);
    return conn;
  }

  /** `acquiring` within `left` ms; a connection that arrives after the caller gave up goes straight back. */
  private acquireBy(acquiring: Promise<C>, left: number): Promise<C> {
    return raceTimer(acquiring, left, () => {
      throw this.noConnection("the call's deadline", undefined);
    }, (c) => void this.pool.release(c).catch(() => {}));
  }

  /** No connection within `within`: says why (connects failing, or all lent out). */
  private noConnection(within: string, waitError: unknown): TimeoutError {
    const last = this.host.lastError;
    // Not every connection lent out: the wait was for one being opened (a node slow to answer).
    const opening = this.lent.size < this.o.max;
    const why = last !== undefined
      ? `; the last connection attempt failed: ${clause(last.message)}`
      : opening ? `; a connection was still being opened (${this.lent.size} of pool.max ${this.o.max} lent out): the node is slow to answer or unreachable` : '; raise pool.max or release leases sooner';
    return new TimeoutError(
      `No connection to ${formatAddress(this.host.target)} became free within ${within}${why}.`,
      { cause: last ?? waitError, address: this.host.target },
    );
  }

  /**
   * Returns a borrowed connection; a broken, dirty, busy or old one is destroyed instead. One
   * that missed a re-authentication logs in again first: never in the middle of the user's
   * commands (perhaps a MULTI), always before the next borrower's.
   */
  release(conn: C): void {
    if (!this.lent.delete(conn)) return;
    if (this.host.closed || !this.host.usable(conn) || conn.pending > 0) {
      conn.destroy();
      void this.pool.destroy(conn).catch(() => {});
    } else if (this.host.stale(conn)) {
      this.host.refresh(conn).then(
        () => void this.pool.release(conn).catch(() => {}),
        (e: Error) => {
          conn.destroy(e);
          void this.pool.destroy(conn).catch(() => {});
        },
      );
    } else {
      void this.pool.release(conn).catch(() => {});
    }
  }

  /**
   * Takes a borrowed connection out for good (`pool.dedicated()`): it stops counting against
   * `pool.max` and is never lent again; the caller closes it.
   */
  detach(conn: C): void {
    if (!this.lent.delete(conn)) throw new Error('detach() needs a connection borrowed from this pool.');
    this.detached.add(conn);
    conn.dirty = true;
    conn.once('close', () => this.detached.delete(conn));
    void this.pool.destroy(conn).catch(() => {});
  }

  /** Forgets idle connections (they were destroyed, or are about to be): the next borrow opens new ones. */
  clear(): Promise<void> {
    return this.pool.clear().catch(() => {});
  }

  /** Waits for lent connections to come back (callers of acquire() waiting meanwhile are refused). */
  drain(): Promise<void> {
    return this.pool.drain().catch(() => {});
  }

  stats(): ExclusiveStats {
    const p = this.pool;
    return { size: p.size, available: p.available, borrowed: p.borrowed, waiting: p.pending, max: p.max, min: p.min };
  }

  /** Callers waiting for a connection now. */
  get waiting(): number {
    return this.pool.pending;
  }
}
