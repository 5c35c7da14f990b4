import type { Connection } from '../connection/connection.js';
import { builtinClassifier, carried } from '../commands/traits.js';
import { sendTraced } from '../diagnostics.js';
import { ConnectionError, RedisError } from '../errors.js';
import type { ResolvedCall } from '../pool/call-options.js';
import { LaneDispatcher, laneWithin } from '../pool/lane-dispatcher.js';
import { noneWritten } from '../retry.js';
import { runBatchOn } from '../pool/batch.js';
import { resolveCall, retryCallOrThrow, type BatchResult, type Dispatcher, type LeaseHandle } from '../pool/call.js';
import type { Arg, Reply } from '../types.js';
import type { Gate } from './gate.js';
import type { SentinelHost } from './sentinel-host.js';

/**
 * Master-mode dispatch: waits at the gate while a switch is under way, sends over the lane,
 * and turns READONLY and lost connections into re-discovery plus a safe retry.
 */
export class MasterDispatcher extends LaneDispatcher {
  private readonly gate: Gate;
  constructor(private readonly pool: SentinelHost) {
    const i = pool;
    super(i.node, i.o.data.commandTimeout, i.o.data.connectTimeout, i.isClosed, !i.o.offlineQueue, i.o.durability, i.o.durabilityCounters);
    this.gate = i.gate;
  }

  override dispatch(args: Arg[], call: ResolvedCall): Promise<Reply> {
    // Hot path, as in Standalone: gate open and a ready lane, no async frame and no clock read;
    // anything else (held, connecting, a failure) goes through the loop below.
    if (this.gate.isOpen) {
      const conn = this.node.laneSync();
      if (conn !== undefined) return sendTraced(conn, args, call, 1).then(undefined, (err: unknown) => this.dispatchAfter(args, call, err, conn));
    }
    return this.dispatchLoop(args, call, Date.now(), false, 0);
  }

  /** The first attempt failed on `conn`: decide as the loop would, then go on in it. */
  private dispatchAfter(args: Arg[], call: ResolvedCall, err: unknown, conn: Connection): Promise<Reply> {
    const started = Date.now();
    if (err instanceof RedisError && err.code === 'READONLY') {
      this.pool.requestRefresh('readonly', true);
      return this.dispatchLoop(args, call, started, true, 1);
    }
    this.onFailure(err, conn);
    this.retryOrThrow(err, args, call, started);
    return this.dispatchLoop(args, call, started, false, 1);
  }

  /** `attempt`: how many times the command was sent already (diagnostics_channel counts on from it). */
  private async dispatchLoop(args: Arg[], call: ResolvedCall, started: number, readonlyRetried: boolean, attempt: number): Promise<Reply> {
    for (;;) {
      if (this.held(args, call)) await this.gate.wait(call, String(args[0]));
      let conn: Connection | undefined;
      try {
        conn = this.node.laneSync() ?? (await this.laneFor(call, args));
        if (this.held(args, call)) continue; // a switch began while we connected
        return await sendTraced(conn, args, call, ++attempt);
      } catch (err) {
        if (err instanceof RedisError && err.code === 'READONLY') {
          // The node was demoted: find the master; READONLY means it did not execute, so retry once.
          this.pool.requestRefresh('readonly', true);
          if (readonlyRetried) throw err;
          readonlyRetried = true;
          continue;
        }
        if (conn) this.onFailure(err, conn);
        this.retryOrThrow(err, args, call, started);
      }
    }
  }

  /**
   * Whether this command must wait. The write fence holds writes only: the old master still
   * answers reads with all the data it has, so a stalled failover does not take reads down too.
   */
  private held(args: readonly Arg[], call: ResolvedCall): boolean {
    if (this.gate.isOpen) return false;
    return !(this.pool.isFenced() && carried(call.traits, args).readOnly);
  }

  private onFailure(err: unknown, conn: Connection): void {
    if (err instanceof ConnectionError && conn.generation === this.node.generation) this.pool.requestRefresh('reconnect', true);
  }

  protected override laneFor(call: ResolvedCall, args: readonly Arg[]): Promise<Connection> {
    return laneWithin(this.node, call, args, this.failFast, 'the master ').catch((err) => {
      if (err instanceof ConnectionError) this.pool.requestRefresh('reconnect', true);
      throw err;
    });
  }

  override async dispatchBatch(cmds: Arg[][], call: ResolvedCall, transaction: boolean): Promise<BatchResult | null> {
    const started = Date.now();
    let attempt = 0;
    for (;;) {
      if (!this.gate.isOpen) await this.gate.wait(call, transaction ? 'MULTI' : 'pipeline');
      if (transaction) {
        const h = await this.lease(undefined, undefined, call.deadline);
        try {
          return await runBatchOn(h.conn, cmds, call, true);
        } catch (err) {
          if (err instanceof RedisError && err.code === 'READONLY') this.pool.requestRefresh('readonly', true);
          throw err;
        } finally {
          h.release();
        }
      }
      const conn = await this.tryLane(call, ['PIPELINE'], started);
      if (conn === undefined || !this.gate.isOpen) continue;
      const results = (await runBatchOn(conn, cmds, call, false, ++attempt))!;
      if (noneWritten(results)) {
        this.onFailure(results[0], conn);
        this.retryOrThrow(results[0], ['PIPELINE'], call, started);
        continue;
      }
      if (results.some((r) => r instanceof RedisError && r.code === 'READONLY')) this.pool.requestRefresh('readonly', true);
      return results;
    }
  }

  override async lease(key?: Arg, args?: readonly Arg[], deadline = 0): Promise<LeaseHandle> {
    // One deadline for the wait for a switch and the wait for a connection together.
    const budget = Date.now() + this.pool.o.pool.acquireTimeoutMillis;
    const until = deadline > 0 ? Math.min(deadline, budget) : budget;
    if (!this.gate.isOpen) await this.gate.wait(resolveCall(this, { timeout: Math.max(1, until - Date.now()) }, undefined), 'use()');
    return super.lease(key, args, until);
  }
}

/**
 * Replica-mode dispatch: reads go round robin over healthy replicas, retried on another one when
 * a replica fails. It has no `durability`: a WAIT is never sent to a replica.
 */
export class ReplicaDispatcher implements Dispatcher {
  readonly commandTimeout: number;
  readonly retryWindow: number;
  readonly replicasOnly = true;
  readonly classifier = builtinClassifier();
  constructor(private readonly pool: SentinelHost) {
    this.commandTimeout = pool.o.data.commandTimeout;
    this.retryWindow = pool.o.data.connectTimeout;
  }

  /**
   * Each attempt goes to the next replica (round robin over the healthy ones); whether a failed
   * one may go again, and the error once the call's time is up, are the rule every mode
   * follows (retry.ts), so a replica's fault reads as the master's would.
   */
  async dispatch(args: Arg[], call: ResolvedCall): Promise<Reply> {
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      const node = this.pool.pickReplica();
      try {
        const conn = node.laneSync() ?? (await laneWithin(node, call, args, !this.pool.o.offlineQueue, 'replica '));
        return await sendTraced(conn, args, call, attempt);
      } catch (err) {
        retryCallOrThrow(err, args, call, { started, window: this.retryWindow, address: node.target, role: 'replica ', closed: this.pool.isClosed() });
      }
    }
  }

  async dispatchBatch(cmds: Arg[][], call: ResolvedCall, transaction: boolean): Promise<BatchResult | null> {
    const node = this.pool.pickReplica();
    if (transaction) {
      const conn = await node.acquire(call.deadline);
      try {
        return await runBatchOn(conn, cmds, call, true);
      } finally {
        node.release(conn);
      }
    }
    const conn = node.laneSync() ?? (await laneWithin(node, call, ['PIPELINE'], !this.pool.o.offlineQueue, 'replica '));
    return runBatchOn(conn, cmds, call, false);
  }

  async lease(_key?: Arg, _args?: readonly Arg[], deadline = 0): Promise<LeaseHandle> {
    const node = this.pool.pickReplica();
    const conn = await node.acquire(deadline);
    return { conn, release: () => node.release(conn) };
  }
}
