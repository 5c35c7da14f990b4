import { setMaxListeners } from 'node:events';
import { inspect } from 'node:util';
import { EventEmitter } from 'eventemitter3';
import genericPool from 'generic-pool';
import { Connection } from '../connection/connection.js';
import type { Credentials } from '../connection/credentials.js';
import type { ResolvedConnectionOptions } from '../connection/options.js';
import { acquireInfo, acquireTraced, noteConnection, publishAcquire, publishClose, publishConnect, publishMaintenance, type PoolMode } from '../diagnostics.js';
import { maintenanceEvent, MaintCounters, type MaintenanceEvent, type MaintenanceReport, type MaintenanceStats, type MaintNotice } from '../connection/maintenance.js';
import { Handoffs, type HandoffHost } from './handoff.js';
import { AuthenticationError, ConnectionError, PoolClosedError, RedisError, TimeoutError } from '../errors.js';
import { clause } from '../connection/handshake.js';
import { formatAddress, type Arg, type NodeAddress } from '../types.js';
import { raceTimer } from '../retry.js';
import { backoffDelay, sleep } from './backoff.js';
import type { ResolvedPoolOptions } from './options.js';

/** Events of a node pool; the facades re-emit them. */
export interface NodePoolEvents {
  connect: [info: { address: NodeAddress; connectionId: number; generation: number }];
  close: [info: { address: NodeAddress; connectionId: number; generation: number; error: Error | undefined }];
  error: [error: Error];
  /** A maintenance notification one of its connections received (after the pool acted on it). */
  maintenance: [event: MaintenanceEvent, notice: MaintNotice];
}

/** Extra behaviour of a node pool. */
export interface NodePoolHooks {
  /** Commands sent after the handshake on every new connection (e.g. READONLY on cluster replicas). */
  handshake?: Arg[][];
  /** Called when a connection of the current generation closes with an error (Sentinel uses it as a re-discovery trigger). */
  onConnectionLost?: (error: Error, conn: Connection) => void;
  /** Called for every new connection, before anyone uses it (the client-side cache listens to its invalidations). */
  onConnection?: (conn: Connection) => void;
  /** The mode diagnostics_channel payloads report for this pool's connections (default 'standalone'). */
  mode?: PoolMode;
  /** Where this pool's maintenance counts also go (a cluster's totals over its node pools). */
  maintenanceTotals?: MaintCounters;
}

interface LaneSlot {
  conn: Connection | undefined;
  connecting: Promise<Connection> | undefined;
}

/** A snapshot of one node pool. */
export interface NodePoolStats {
  /** The node these connections go to (for a Sentinel pool: the current master). */
  address: NodeAddress;
  /** Bumped by every target swap (a Sentinel failover); connections of older generations are discarded. */
  generation: number;
  /** The multiplexed connections behind `call()` and the helpers. */
  lanes: {
    /** Lanes connected now. */
    connected: number;
    /** Lanes configured (`pool.lanes`). */
    total: number;
    /** Commands written or queued on the lanes and not yet answered. */
    pending: number;
  };
  /** The exclusive connections of `use()`, `multi()` and blocking commands. */
  exclusive: {
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
  };
  /** Connections handed out by `pool.dedicated()`, outside `pool.max` (open now). */
  dedicated: number;
  /** Maintenance notifications (Redis Software / Redis Cloud) received and acted on. */
  maintenance: MaintenanceStats;
}

/**
 * The connections to one target node: a few long-lived multiplexed "lanes" for `call()`,
 * and a generic-pool of exclusive connections for `use()` and transactions.
 *
 * The target can be swapped at run time (Sentinel failover). A swap bumps the generation:
 * idle connections of the old generation are destroyed at once, borrowed ones when they are
 * released, lanes stop taking commands and close once their replies are in, and validation
 * on borrow refuses any connection of an older generation.
 */
export class NodePool extends EventEmitter<NodePoolEvents> {
  private gen = 1;
  private current: NodeAddress;
  private readonly pool: genericPool.Pool<Connection>;
  private readonly lanes: LaneSlot[];
  private rr = 0;
  private readonly all = new Set<Connection>();
  private readonly borrowed = new Set<Connection>();
  /** Taken out of the exclusive pool by {@link detach}: the caller's own, outside `pool.max`. */
  private readonly detached = new Set<Connection>();
  private failures = 0;
  private lastCreateError: Error | undefined;
  private closed = false;
  private readonly closing = new AbortController();
  /** Bumped by every reauthenticate(): a connection of an older epoch logs in again before reuse. */
  private authEpoch = 0;
  /** Commands waiting for a lane to (re)connect (bounded by {@link maxPending}). */
  laneWaiters = 0;
  /** Maintenance notification counts. */
  private readonly maint: MaintCounters;
  /** MOVING hand-overs: the connections leaving for a new endpoint (see handoff.ts). */
  private readonly handoffs: Handoffs;

  constructor(
    target: NodeAddress,
    private readonly connOpts: ResolvedConnectionOptions,
    private readonly poolOpts: ResolvedPoolOptions,
    private readonly hooks: NodePoolHooks = {},
  ) {
    super();
    this.maint = new MaintCounters(hooks.maintenanceTotals);
    this.handoffs = new Handoffs(this.handoffHost(), this.maint);
    this.current = { host: target.host, port: target.port };
    // Every connect in flight listens for close(): a busy pool has many at once.
    setMaxListeners(0, this.closing.signal);
    this.lanes = Array.from({ length: poolOpts.lanes }, () => ({ conn: undefined, connecting: undefined }));
    this.pool = genericPool.createPool<Connection>(
      {
        create: () => this.create(),
        // A detached connection leaves generic-pool through destroy() but lives on with its caller.
        destroy: async (conn) => {
          if (!this.detached.has(conn)) conn.destroy();
        },
        // Must never reject (generic-pool leaves a rejected validation unhandled).
        validate: async (conn) => {
          // After close() anything goes to the waiters: acquire() destroys it and rejects.
          if (this.closed) return true;
          if (!conn.ready || conn.dirty || conn.generation !== this.gen || this.handoffs.has(conn)) return false;
          if (!this.poolOpts.testOnBorrow) return true;
          try {
            await conn.send(['PING'], { timeout: this.connOpts.connectTimeout || 1000 });
            return true;
          } catch (err) {
            // An error reply (an ACL user without +ping) still proves the connection alive;
            // treating it as dead would replace connections in a tight loop.
            return err instanceof RedisError;
          }
        },
      },
      {
        min: poolOpts.min,
        max: poolOpts.max,
        acquireTimeoutMillis: poolOpts.acquireTimeoutMillis,
        idleTimeoutMillis: poolOpts.idleTimeoutMillis,
        evictionRunIntervalMillis: poolOpts.evictionRunIntervalMillis,
        testOnBorrow: true,
        fifo: false,
      },
    );
    // generic-pool retries failed creates itself; the errors reach callers through acquire timeouts.
    this.pool.on('factoryCreateError', () => {});
    this.pool.on('factoryDestroyError', () => {});
  }

  /** The most commands one connection holds, and the most that may wait for a lane. */
  get maxPending(): number {
    return this.connOpts.maxPending;
  }

  /** The node connections are made to now. */
  get target(): NodeAddress {
    return this.current;
  }

  /** Bumped by every swap. */
  get generation(): number {
    return this.gen;
  }

  /** The error of the last connection attempt while attempts keep failing; undefined once one succeeds. */
  get lastError(): Error | undefined {
    return this.failures > 0 ? this.lastCreateError : undefined;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Opens one connection to the current target, after a backoff if the last attempts failed.
   *
   * After close() it hands out an already-closed placeholder instead of failing: generic-pool
   * answers a failed create by creating again at once for every waiting borrower, which would
   * spin forever; the placeholder lets each waiter leave the queue (acquire() then rejects).
   */
  private async create(): Promise<Connection> {
    for (;;) {
      if (this.closed) return Connection.closedPlaceholder(this.current, this.connOpts);
      const gen = this.gen;
      if (this.failures > 0) {
        await sleep(backoffDelay(this.failures - 1, this.poolOpts.reconnect), this.closing.signal);
        if (this.closed) return Connection.closedPlaceholder(this.current, this.connOpts);
        if (gen !== this.gen) continue;
      }
      const target = this.current;
      const epoch = this.authEpoch;
      const moves = this.handoffs.moves;
      let conn: Connection;
      try {
        conn = await Connection.connect(target, this.connOpts, this.hooks.handshake, true, this.closing.signal);
      } catch (err) {
        if (this.closed) return Connection.closedPlaceholder(this.current, this.connOpts);
        if (gen === this.gen) this.failures++;
        this.lastCreateError = err as Error;
        this.emit('error', err as Error);
        throw err;
      }
      if (this.closed || gen !== this.gen || moves !== this.handoffs.moves) {
        conn.destroy();
        if (this.closed) return Connection.closedPlaceholder(this.current, this.connOpts);
        continue; // the target moved while we connected: connect to the new one
      }
      this.failures = 0;
      conn.generation = gen;
      conn.authEpoch = epoch;
      // Its credentials were fetched before a reauthenticate() that ran meanwhile: AUTH goes out
      // now, ahead of any command, since nobody holds the connection yet.
      if (epoch < this.authEpoch) void this.refreshAuth(conn).catch((e: Error) => conn.destroy(e));
      this.all.add(conn);
      this.hooks.onConnection?.(conn);
      const mode = this.hooks.mode ?? 'standalone';
      noteConnection(conn, mode);
      conn.on('maintenance', (report) => this.onMaintenance(conn, report));
      conn.once('close', (error) => {
        this.all.delete(conn);
        this.handoffs.forget(conn);
        publishClose(conn, mode, error);
        this.emit('close', { address: conn.address, connectionId: conn.id, generation: conn.generation, error });
        if (error && !this.closed && conn.generation === this.gen) this.hooks.onConnectionLost?.(error, conn);
      });
      publishConnect(conn, mode);
      this.emit('connect', { address: target, connectionId: conn.id, generation: gen });
      return conn;
    }
  }

  /** A ready lane of the current generation, or undefined when one must be (re)connected first. */
  laneSync(): Connection | undefined {
    const n = this.lanes.length;
    const slot = this.lanes[n === 1 ? 0 : this.rr++ % n]!;
    const c = slot.conn;
    return c !== undefined && c.ready && c.generation === this.gen ? c : undefined;
  }

  /**
   * A lane of the current generation. Every lane slot that is not connected starts
   * connecting (so `lanes: n` opens n connections under load); the call gets a ready lane
   * at once if there is one, else the first connection to complete.
   */
  lane(): Promise<Connection> {
    if (this.closed) return Promise.reject(new PoolClosedError());
    const n = this.lanes.length;
    let ready: Connection | undefined;
    let pending: Promise<Connection> | undefined;
    for (let i = 0; i < n; i++) {
      const slot = this.lanes[(this.rr + i) % n]!;
      const c = slot.conn;
      if (c !== undefined && c.ready && c.generation === this.gen) {
        ready ??= c;
        continue;
      }
      const p = slot.connecting ?? this.connectLane(slot);
      pending ??= p;
    }
    if (ready !== undefined) {
      this.rr++;
      return Promise.resolve(ready);
    }
    return pending!;
  }

  private connectLane(slot: LaneSlot): Promise<Connection> {
    const p = this.create().then(
      (conn) => {
        if (slot.connecting === p) slot.connecting = undefined;
        if (conn.generation !== this.gen || this.closed) {
          conn.destroy();
          throw new ConnectionError(`The target changed while connecting to ${formatAddress(conn.address)}; the command was not sent.`, { address: conn.address });
        }
        const old = slot.conn;
        slot.conn = conn;
        conn.lane = true;
        if (old && old !== conn) this.retire(old);
        return conn;
      },
      (err: Error) => {
        if (slot.connecting === p) slot.connecting = undefined;
        throw err;
      },
    );
    slot.connecting = p;
    // A lane opened ahead of need may fail with nobody awaiting it: that is not an unhandled rejection.
    p.catch(() => {});
    return p;
  }

  /**
   * A connection for pub/sub, outside the lanes and the exclusive pool (subscriptions share
   * it, so it does not count against `pool.max`). It closes with the pool, and at a swap.
   */
  async subscriber(): Promise<Connection> {
    if (this.closed) throw new PoolClosedError();
    const conn = await this.create();
    if (this.closed) {
      conn.destroy();
      throw new PoolClosedError();
    }
    conn.dirty = true;
    return conn;
  }

  /**
   * Borrows an exclusive connection (for `use()` and MULTI). Pair with {@link release}. Waits
   * at most `acquireTimeoutMillis`, and never past `deadline` (epoch ms, 0 = none): the call's
   * one deadline covers this wait too.
   */
  async acquire(deadline = 0): Promise<Connection> {
    if (!acquireTraced()) return this.acquireConnection(deadline);
    const target = this.current;
    const queued = this.pool.pending;
    const started = Date.now();
    try {
      const conn = await this.acquireConnection(deadline);
      publishAcquire(acquireInfo(target, this.hooks.mode ?? 'standalone', started, Date.now(), queued));
      return conn;
    } catch (err) {
      publishAcquire(acquireInfo(target, this.hooks.mode ?? 'standalone', started, Date.now(), queued, err));
      throw err;
    }
  }

  private async acquireConnection(deadline: number): Promise<Connection> {
    if (this.closed) throw new PoolClosedError();
    let conn: Connection;
    try {
      const acquiring = this.pool.acquire();
      const left = deadline > 0 ? deadline - Date.now() : Infinity;
      conn = left < this.poolOpts.acquireTimeoutMillis ? await this.acquireBy(acquiring, left) : await acquiring;
    } catch (err) {
      if (this.closed) throw new PoolClosedError(undefined, { cause: err });
      // generic-pool's own TimeoutError (acquireTimeoutMillis); ours (the call's deadline, from
      // acquireBy) already names its limit.
      if ((err as Error).name === 'TimeoutError' && !(err instanceof TimeoutError)) {
        throw this.noConnection(`acquireTimeoutMillis (${this.poolOpts.acquireTimeoutMillis} ms)`, err);
      }
      throw err;
    }
    if (this.closed) {
      void this.pool.destroy(conn).catch(() => {});
      throw new PoolClosedError();
    }
    this.borrowed.add(conn);
    return conn;
  }

  /** No exclusive connection within `within`: says why (connects failing, or all lent out). */
  private noConnection(within: string, waitError: unknown): TimeoutError {
    const failing = this.lastCreateError !== undefined && this.failures > 0;
    // Not every connection lent out: the wait was for one being opened (a node slow to answer).
    const opening = this.borrowed.size < this.poolOpts.max;
    const why = failing
      ? `; the last connection attempt failed: ${clause(this.lastCreateError!.message)}`
      : opening ? `; a connection was still being opened (${this.borrowed.size} of pool.max ${this.poolOpts.max} lent out): the node is slow to answer or unreachable` : '; raise pool.max or release leases sooner';
    return new TimeoutError(
      `No connection to ${formatAddress(this.current)} became free within ${within}${why}.`,
      { cause: failing ? this.lastCreateError : waitError, address: this.current },
    );
  }

  /** `acquiring` within `left` ms; a connection that arrives after the caller gave up goes straight back. */
  private acquireBy(acquiring: Promise<Connection>, left: number): Promise<Connection> {
    return raceTimer(acquiring, left, () => {
      throw this.noConnection("the call's deadline", undefined);
    }, (c) => void this.pool.release(c).catch(() => {}));
  }

  /**
   * Takes a borrowed connection out of the exclusive pool for good (`pool.dedicated()`): it
   * stops counting against `pool.max` and is never lent again; the caller closes it. A swap
   * (failover) or close() of this pool still closes it, as it does borrowed ones.
   */
  detach(conn: Connection): void {
    if (!this.borrowed.delete(conn)) throw new Error('detach() needs a connection borrowed from this pool.');
    this.detached.add(conn);
    conn.dirty = true;
    conn.once('close', () => this.detached.delete(conn));
    void this.pool.destroy(conn).catch(() => {});
  }

  /**
   * Returns a borrowed connection; a broken, dirty or old-generation one is destroyed instead.
   * One lent out during a reauthenticate() logs in again first: never in the middle of the
   * user's commands (perhaps a MULTI), always before the next borrower's.
   */
  release(conn: Connection): void {
    if (!this.borrowed.delete(conn)) return;
    if (!conn.ready || conn.dirty || conn.pending > 0 || conn.generation !== this.gen || this.closed || this.handoffs.has(conn)) {
      conn.destroy();
      void this.pool.destroy(conn).catch(() => {});
    } else if (conn.authEpoch < this.authEpoch) {
      this.refreshAuth(conn).then(
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
   * Sends AUTH with freshly fetched credentials on every live connection that nobody holds
   * (lanes and idle exclusive ones); borrowed ones follow when they come back, connections
   * being opened right now as soon as they are. The provider is asked once for this node.
   * Rejects with the first refusal (`AuthenticationError`); connections that closed meanwhile
   * need nothing (their successors fetch credentials themselves).
   */
  async reauthenticate(): Promise<void> {
    if (this.closed || !this.connOpts.auth.dynamic) return;
    const epoch = ++this.authEpoch;
    const deadline = this.authDeadline();
    const creds = await this.connOpts.auth.resolve({ address: this.current, role: this.connOpts.role }, deadline);
    const sends: Promise<void>[] = [];
    // No await between the check and send(): a connection lent out meanwhile is not touched.
    for (const conn of this.all) {
      if (this.borrowed.has(conn) || !conn.ready || conn.authEpoch >= epoch) continue;
      // A dedicated connection busy with a blocking command would hold AUTH until it returns.
      if (this.detached.has(conn) && conn.pending > 0) continue;
      if (conn.subscribedResp2) {
        // RESP2 refuses AUTH in subscribed mode: the pub/sub hub resubscribes on a new connection,
        // which logs in with the fresh credentials.
        conn.destroy(new ConnectionError(`The RESP2 subscriber connection to ${formatAddress(conn.address)} was replaced to log in with new credentials.`, { address: conn.address }));
        continue;
      }
      sends.push(this.sendAuth(conn, creds, epoch, deadline));
    }
    const results = await Promise.allSettled(sends);
    const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected' && r.reason instanceof AuthenticationError);
    if (refused) throw refused.reason;
  }

  private async refreshAuth(conn: Connection): Promise<void> {
    const epoch = this.authEpoch;
    const deadline = this.authDeadline();
    const creds = await this.connOpts.auth.resolve({ address: conn.address, role: this.connOpts.role }, deadline);
    await this.sendAuth(conn, creds, epoch, deadline);
  }

  /** Fetching and sending fresh credentials gets what a connect gets: connectTimeout. */
  private authDeadline(): number {
    return this.connOpts.connectTimeout > 0 ? Date.now() + this.connOpts.connectTimeout : 0;
  }

  private async sendAuth(conn: Connection, creds: Credentials | null, epoch: number, deadline: number): Promise<void> {
    try {
      await conn.reauthenticate(creds, deadline);
      if (conn.authEpoch < epoch) conn.authEpoch = epoch;
    } catch (err) {
      if (!conn.isOpen && !(err instanceof AuthenticationError)) return;
      throw err;
    }
  }

  /**
   * Points the pool at another node. Returns false when it already points there.
   * After it returns no new command is written to the old node.
   */
  swap(target: NodeAddress): boolean {
    if (this.closed || (target.host === this.current.host && target.port === this.current.port)) return false;
    const from = this.current;
    this.gen++;
    this.current = { host: target.host, port: target.port };
    this.failures = 0;
    const why = new ConnectionError(
      `The pool moved from ${formatAddress(from)} to ${formatAddress(target)}; this connection points at the old node. End the lease and borrow again.`,
      { address: from },
    );
    for (const slot of this.lanes) {
      const old = slot.conn;
      slot.conn = undefined;
      slot.connecting = undefined;
      if (old) this.retire(old, why);
    }
    for (const conn of this.all) {
      if (this.isLane(conn)) continue;
      if (!this.borrowed.has(conn) && !this.detached.has(conn)) conn.destroy();
      // A lease with commands in flight is cut: a reply the old node sends after the switch (a
      // paused master resuming) would acknowledge a write the demoted node is about to lose, so
      // those commands end as UncertainWriteError instead. A subscriber there would listen to the
      // old node forever: it is closed too, and so is a dedicated connection (dirty: its owner
      // opens the next one at the new target). An idle lease takes no new command (not sent).
      else if (conn.dirty || conn.pending > 0) conn.destroy(why);
      else conn.retire(why);
    }
    void this.pool.clear().catch(() => {});
    return true;
  }

  /** Forces every lane of the current generation to reconnect (used after the node restarts). */
  reconnectLanes(): void {
    for (const slot of this.lanes) {
      if (slot.conn && !slot.conn.ready) slot.conn = undefined;
    }
  }

  private isLane(conn: Connection): boolean {
    for (const slot of this.lanes) if (slot.conn === conn) return true;
    return false;
  }

  /**
   * A lane that left service: from now on it takes no command (commands queued but not yet
   * written leave at once, unsent, so nothing reaches the old node after a switch) and it
   * closes once the replies already due are in.
   */
  private retire(conn: Connection, reason?: Error): void {
    conn.retire(reason ?? new ConnectionError(`The lane to ${formatAddress(conn.address)} was replaced; the command was not sent.`, { address: conn.address }));
    // A lane handed over by a MOVING drains until the hand-over's deadline.
    const until = this.handoffs.deadline(conn);
    if (conn.pending === 0) conn.destroy();
    else void conn.close(until !== undefined ? Math.max(0, until - Date.now()) : this.connOpts.commandTimeout || this.connOpts.socketTimeout || 5000);
  }

  // ---- maintenance notifications ----------------------------------------------------------

  /**
   * A connection's maintenance notification: counted, a MOVING starts a hand-over, then it is
   * reported (event and diagnostics channel). The connection already relaxed its own timeouts;
   * SMIGRATED's slot map update is the cluster's (it listens to the event).
   */
  private onMaintenance(conn: Connection, report: MaintenanceReport): void {
    if (this.closed) return;
    if (report.ignored !== undefined) {
      this.maint.add('ignored');
      return;
    }
    const notice = report.notice;
    this.maint.add('notifications');
    if (notice.kind === 'MOVING') this.handoffs.onMoving(conn, notice);
    const event = maintenanceEvent(notice, conn.address);
    publishMaintenance(event, this.hooks.mode ?? 'standalone', conn.id);
    this.emit('maintenance', event, notice);
  }

  /** What a hand-over may do to this pool. */
  private handoffHost(): HandoffHost {
    const pool = this;
    return {
      get target() {
        return pool.current;
      },
      get closed() {
        return pool.closed;
      },
      connections: () => this.all,
      retarget: (target) => {
        this.current = { host: target.host, port: target.port };
        this.failures = 0;
      },
      replaceLanes: (leaving, closeAt) => {
        const replaced: Array<Promise<Connection>> = [];
        for (const slot of this.lanes) if (slot.conn !== undefined && leaving(slot.conn)) replaced.push(this.replaceLane(slot, closeAt));
        return replaced;
      },
      roleOf: (conn) => {
        if (this.isLane(conn)) return 'lane';
        if (this.borrowed.has(conn)) return 'borrowed';
        if (this.detached.has(conn)) return 'dedicated';
        return conn.dirty ? 'subscriber' : 'idle';
      },
      forgetIdle: () => void this.pool.clear().catch(() => {}),
    };
  }

  /** Connects a lane's successor at the current target, retrying until `closeAt`; the old lane serves meanwhile. */
  private replaceLane(slot: LaneSlot, closeAt: number): Promise<Connection> {
    const attempt = (): Promise<Connection> =>
      (slot.connecting ?? this.connectLane(slot)).catch((err: unknown) => {
        const old = slot.conn;
        if (this.closed || Date.now() >= closeAt || old === undefined || !this.handoffs.has(old)) throw err;
        return attempt();
      });
    return attempt();
  }

  /** Connections whose timeouts are relaxed now. */
  private relaxedNow(): number {
    let n = 0;
    for (const conn of this.all) if (conn.relaxed) n++;
    return n;
  }

  /** A summary for util.inspect and the console: no options, no connection internals. */
  [inspect.custom](): string {
    return `NodePool { target: '${formatAddress(this.current)}', generation: ${this.gen}, connections: ${this.all.size}, borrowed: ${this.borrowed.size}${this.closed ? ', closed' : ''} }`;
  }

  /** Counts for `stats()`. */
  stats(): NodePoolStats {
    let connected = 0;
    let pending = 0;
    for (const s of this.lanes) {
      if (s.conn?.ready) {
        connected++;
        pending += s.conn.pending;
      }
    }
    return {
      address: { ...this.current },
      generation: this.gen,
      lanes: { connected, total: this.lanes.length, pending },
      exclusive: { size: this.pool.size, available: this.pool.available, borrowed: this.pool.borrowed, waiting: this.pool.pending, max: this.pool.max, min: this.pool.min },
      dedicated: this.detached.size,
      maintenance: this.maint.snapshot(this.relaxedNow()),
    };
  }

  /** Commands waiting on this pool's lanes. */
  get pendingCommands(): number {
    let n = 0;
    for (const s of this.lanes) if (s.conn) n += s.conn.pending;
    return n;
  }

  /**
   * Stops new work, waits up to `timeoutMs` for replies still due and leases still out,
   * then destroys every connection and timer.
   */
  async close(timeoutMs: number): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closing.abort();
    this.handoffs.close();
    // A blocking command may wait for minutes: it is cut off now rather than after closeTimeout.
    const why = new PoolClosedError();
    for (const conn of this.borrowed) if (conn.isBlocked) conn.destroy(why);
    for (const conn of this.detached) if (conn.isBlocked) conn.destroy(why);
    const waitLanes = Promise.all(this.lanes.map((s) => (s.conn ? s.conn.close(timeoutMs) : undefined)));
    const drain = this.pool.drain().catch(() => {});
    await raceTimer(Promise.all([waitLanes, drain]), timeoutMs, () => undefined);
    // An idle connection is closed on purpose (its close event has no error); one still lent out
    // or with commands in flight past closeTimeout gets the reason its callers will see.
    for (const conn of [...this.all]) conn.destroy(conn.pending > 0 || this.borrowed.has(conn) ? why : undefined);
    for (const s of this.lanes) s.conn = undefined;
    await this.pool.clear().catch(() => {});
  }
}

