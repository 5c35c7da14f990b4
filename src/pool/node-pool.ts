import { setMaxListeners } from 'node:events';
import { inspect } from 'node:util';
import { EventEmitter } from 'eventemitter3';
import { Connection } from '../connection/connection.js';
import type { ResolvedConnectionOptions } from '../connection/options.js';
import { acquireInfo, acquireTraced, noteConnection, publishAcquire, publishClose, publishConnect, publishMaintenance, type PoolMode } from '../diagnostics.js';
import { maintenanceEvent, MaintCounters, type MaintenanceEvent, type MaintenanceReport, type MaintenanceStats, type MaintNotice } from '../connection/maintenance.js';
import { Handoffs, type HandoffHost } from './handoff.js';
import { ConnectionError, PoolClosedError, RedisError } from '../errors.js';
import { formatAddress, type Arg, type NodeAddress } from '../types.js';
import { raceTimer } from '../retry.js';
import { backoffDelay, sleep } from './backoff.js';
import type { ResolvedPoolOptions } from './options.js';
import { ExclusivePool, type ExclusiveStats } from './exclusive-pool.js';
import { Lanes, type LaneStats } from './lanes.js';
import { Reauthenticator } from './reauth.js';

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

/** A snapshot of one node pool. */
export interface NodePoolStats {
  /** The node these connections go to (for a Sentinel pool: the current master). */
  address: NodeAddress;
  /** Bumped by every target swap (a Sentinel failover); connections of older generations are discarded. */
  generation: number;
  /** The multiplexed connections behind `call()` and the helpers. */
  lanes: LaneStats;
  /** The exclusive connections of `use()`, `multi()` and blocking commands. */
  exclusive: ExclusiveStats;
  /** Connections handed out by `pool.dedicated()`, outside `pool.max` (open now). */
  dedicated: number;
  /** Maintenance notifications (Redis Software / Redis Cloud) received and acted on. */
  maintenance: MaintenanceStats;
}


/** Opens a connection to `target`: `Connection.connect` (unit tests pass their own). */
export type Connector = (target: NodeAddress, opts: ResolvedConnectionOptions, handshake: Arg[][] | undefined, signal: AbortSignal) => Promise<Connection>;

const connectReal: Connector = (target, opts, handshake, signal) => Connection.connect(target, opts, handshake, true, signal);

/**
 * The connections to one target node: a few long-lived multiplexed lanes for `call()`
 * ({@link Lanes}), exclusive connections for `use()` and transactions ({@link ExclusivePool}),
 * rotating credentials ({@link Reauthenticator}) and MOVING hand-overs ({@link Handoffs}). This
 * class opens the connections and owns the target.
 *
 * The target can be swapped at run time (Sentinel failover). A swap bumps the generation:
 * idle connections and lanes of the old generation are closed at once (a reply the demoted node
 * sent after the switch must not acknowledge a write: commands in flight end as
 * `UncertainWriteError`), idle leases take no new command, and validation on borrow refuses
 * any connection of an older generation.
 */
export class NodePool extends EventEmitter<NodePoolEvents> {
  private gen = 1;
  private current: NodeAddress;
  private readonly lanes: Lanes<Connection>;
  private readonly exclusive: ExclusivePool<Connection>;
  private readonly auth: Reauthenticator<Connection>;
  private readonly all = new Set<Connection>();
  private failures = 0;
  private lastCreateError: Error | undefined;
  private closed = false;
  private readonly closing = new AbortController();
  /** Maintenance notification counts. */
  private readonly maint: MaintCounters;
  /** MOVING hand-overs: the connections leaving for a new endpoint (see handoff.ts). */
  private readonly handoffs: Handoffs;

  constructor(
    target: NodeAddress,
    private readonly connOpts: ResolvedConnectionOptions,
    private readonly poolOpts: ResolvedPoolOptions,
    private readonly hooks: NodePoolHooks = {},
    private readonly connect: Connector = connectReal,
  ) {
    super();
    this.maint = new MaintCounters(hooks.maintenanceTotals);
    this.handoffs = new Handoffs(this.handoffHost(), this.maint);
    this.current = { host: target.host, port: target.port };
    // Every connect in flight listens for close(): a busy pool has many at once.
    setMaxListeners(0, this.closing.signal);
    const pool = this;
    this.lanes = new Lanes<Connection>(poolOpts.lanes, {
      get closed() {
        return pool.closed;
      },
      open: () => this.create(),
      retire: (conn, reason) => this.retire(conn, reason),
    });
    this.auth = new Reauthenticator<Connection>({
      dynamic: connOpts.auth.dynamic,
      get closed() {
        return pool.closed;
      },
      get target() {
        return pool.current;
      },
      timeoutMs: connOpts.connectTimeout,
      resolve: (address, deadline) => connOpts.auth.resolve({ address, role: connOpts.role }, deadline),
      connections: () => this.all,
      // A dedicated connection busy with a blocking command would hold AUTH until it returns.
      held: (conn) => this.exclusive.isLent(conn) || (this.exclusive.isDetached(conn) && conn.pending > 0),
    });
    this.exclusive = new ExclusivePool<Connection>(
      {
        get closed() {
          return pool.closed;
        },
        get target() {
          return pool.current;
        },
        get lastError() {
          return pool.lastError;
        },
        open: () => this.create(),
        usable: (conn) => conn.ready && !conn.dirty && conn.generation === this.gen && !this.handoffs.has(conn),
        alive: async (conn) => {
          try {
            await conn.send(['PING'], { timeout: this.connOpts.connectTimeout || 1000 });
            return true;
          } catch (err) {
            // An error reply (an ACL user without +ping) still proves the connection alive;
            // treating it as dead would replace connections in a tight loop.
            return err instanceof RedisError;
          }
        },
        stale: (conn) => this.auth.stale(conn),
        refresh: (conn) => this.auth.refresh(conn),
      },
      poolOpts,
    );
  }

  /** The most commands one connection holds, and the most that may wait for a lane. */
  get maxPending(): number {
    return this.connOpts.maxPending;
  }

  /** Commands waiting for a lane to (re)connect (bounded by {@link maxPending}). */
  get laneWaiters(): number {
    return this.lanes.waiters;
  }

  set laneWaiters(n: number) {
    this.lanes.waiters = n;
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
      const epoch = this.auth.current;
      const moves = this.handoffs.moves;
      let conn: Connection | undefined;
      try {
        conn = await this.connect(target, this.connOpts, this.hooks.handshake, this.closing.signal);
        if (this.closed || gen !== this.gen || moves !== this.handoffs.moves) {
          conn.destroy();
          if (this.closed) return Connection.closedPlaceholder(this.current, this.connOpts);
          continue; // the target moved while we connected: connect to the new one
        }
        conn.generation = gen;
        conn.authEpoch = epoch;
        // Its credentials were fetched before a reauthenticate() that ran meanwhile: it logs in
        // again before anyone gets it (a command must not run on credentials being rotated out).
        while (this.auth.stale(conn)) {
          await this.auth.refresh(conn);
          if (this.closed || gen !== this.gen) {
            conn.destroy();
            if (this.closed) return Connection.closedPlaceholder(this.current, this.connOpts);
            continue;
          }
        }
      } catch (err) {
        conn?.destroy(err as Error);
        if (this.closed) return Connection.closedPlaceholder(this.current, this.connOpts);
        if (gen === this.gen) this.failures++;
        this.lastCreateError = err as Error;
        this.emit('error', err as Error);
        throw err;
      }
      this.failures = 0;
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
    return this.lanes.sync();
  }

  /**
   * A lane of the current generation. Every lane slot that is not connected starts
   * connecting (so `lanes: n` opens n connections under load); the call gets a ready lane
   * at once if there is one, else the first connection to complete.
   */
  lane(): Promise<Connection> {
    return this.lanes.get();
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
    if (!acquireTraced()) return this.exclusive.acquire(deadline);
    const target = this.current;
    const queued = this.exclusive.waiting;
    const started = Date.now();
    try {
      const conn = await this.exclusive.acquire(deadline);
      publishAcquire(acquireInfo(target, this.hooks.mode ?? 'standalone', started, Date.now(), queued));
      return conn;
    } catch (err) {
      publishAcquire(acquireInfo(target, this.hooks.mode ?? 'standalone', started, Date.now(), queued, err));
      throw err;
    }
  }

  /**
   * Takes a borrowed connection out of the exclusive pool for good (`pool.dedicated()`): it
   * stops counting against `pool.max` and is never lent again; the caller closes it. A swap
   * (failover) or close() of this pool still closes it, as it does borrowed ones.
   */
  detach(conn: Connection): void {
    this.exclusive.detach(conn);
  }

  /**
   * Returns a borrowed connection; a broken, dirty or old-generation one is destroyed instead.
   * One lent out during a reauthenticate() logs in again first: never in the middle of the
   * user's commands (perhaps a MULTI), always before the next borrower's.
   */
  release(conn: Connection): void {
    this.exclusive.release(conn);
  }

  /**
   * Sends AUTH with freshly fetched credentials on every live connection that nobody holds
   * (lanes and idle exclusive ones); borrowed ones follow when they come back, connections
   * being opened right now as soon as they are. The provider is asked once for this node.
   * Rejects with the first refusal (`AuthenticationError`).
   */
  reauthenticate(): Promise<void> {
    return this.auth.all();
  }

  /**
   * Points the pool at another node. Returns false when it already points there.
   * After it returns no new command is written to the old node.
   */
  /**
   * Whoever owns the pool learned that the node serves again (a cluster map names it a master
   * that was not one): the next connection attempt goes at once instead of after the backoff
   * that attempts made while it was down built up; it backs off anew if that one fails.
   */
  clearBackoff(): void {
    this.failures = 0;
  }

  swap(target: NodeAddress): boolean {
    if (this.closed || (target.host === this.current.host && target.port === this.current.port)) return false;
    const from = this.current;
    this.gen++;
    this.lanes.generation = this.gen;
    this.current = { host: target.host, port: target.port };
    this.failures = 0;
    const why = new ConnectionError(
      `The pool moved from ${formatAddress(from)} to ${formatAddress(target)}; this connection points at the old node. End the lease and borrow again.`,
      { address: from },
    );
    this.lanes.retireAll(why);
    for (const conn of this.all) {
      // An old lane with replies due is cut too, for the same reason as a lease below.
      if (conn.lane) conn.destroy(conn.pending > 0 ? why : undefined);
      else if (!this.exclusive.isLent(conn) && !this.exclusive.isDetached(conn)) conn.destroy();
      // A lease with commands in flight is cut: a reply the old node sends after the switch (a
      // paused master resuming) would acknowledge a write the demoted node is about to lose, so
      // those commands end as UncertainWriteError instead. A subscriber there would listen to the
      // old node forever: it is closed too, and so is a dedicated connection (dirty: its owner
      // opens the next one at the new target). An idle lease takes no new command (not sent).
      else if (conn.dirty || conn.pending > 0) conn.destroy(why);
      else conn.retire(why);
    }
    void this.exclusive.clear();
    return true;
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
      // The old lane serves until its successor is connected, retried until the hand-over's deadline.
      replaceLanes: (leaving, closeAt) =>
        this.lanes.replace(leaving, (old) => !this.closed && Date.now() < closeAt && old !== undefined && this.handoffs.has(old)),
      roleOf: (conn) => {
        if (this.lanes.has(conn)) return 'lane';
        if (this.exclusive.isLent(conn)) return 'borrowed';
        if (this.exclusive.isDetached(conn)) return 'dedicated';
        return conn.dirty ? 'subscriber' : 'idle';
      },
      forgetIdle: () => void this.exclusive.clear(),
    };
  }

  /** Connections whose timeouts are relaxed now. */
  private relaxedNow(): number {
    let n = 0;
    for (const conn of this.all) if (conn.relaxed) n++;
    return n;
  }

  /** A summary for util.inspect and the console: no options, no connection internals. */
  [inspect.custom](): string {
    return `NodePool { target: '${formatAddress(this.current)}', generation: ${this.gen}, connections: ${this.all.size}, borrowed: ${this.exclusive.borrowed().size}${this.closed ? ', closed' : ''} }`;
  }

  /** Counts for `stats()`. */
  stats(): NodePoolStats {
    return {
      address: { ...this.current },
      generation: this.gen,
      lanes: this.lanes.stats(),
      exclusive: this.exclusive.stats(),
      dedicated: this.exclusive.dedicated().size,
      maintenance: this.maint.snapshot(this.relaxedNow()),
    };
  }

  /** Commands waiting on this pool's lanes. */
  get pendingCommands(): number {
    return this.lanes.pending;
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
    for (const conn of this.exclusive.borrowed()) if (conn.isBlocked) conn.destroy(why);
    for (const conn of this.exclusive.dedicated()) if (conn.isBlocked) conn.destroy(why);
    await raceTimer(Promise.all([this.lanes.close(timeoutMs), this.exclusive.drain()]), timeoutMs, () => undefined);
    // An idle connection is closed on purpose (its close event has no error); one still lent out
    // or with commands in flight past closeTimeout gets the reason its callers will see.
    for (const conn of [...this.all]) conn.destroy(conn.pending > 0 || this.exclusive.isLent(conn) ? why : undefined);
    await this.exclusive.clear();
  }
}
