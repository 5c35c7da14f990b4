import type { Connection, SendOptions } from '../connection/connection.js';
import { sendTraced } from '../diagnostics.js';
import { AuthenticationError, ConnectionError, overloadError, PoolClosedError, RedisError, TimeoutError } from '../errors.js';
import type { ResolvedCall } from '../pool/call-options.js';
import { laneWithin } from '../pool/lane-dispatcher.js';
import { checkTime, pastDeadline, wasWritten, withinDeadline } from '../retry.js';
import type { NodePool } from '../pool/node-pool.js';
import { sendOptions } from '../pool/surface.js';
import { formatAddress, type Arg, type NodeAddress, type Reply } from '../types.js';
import type { ClusterHost } from './cluster-host.js';
import { deadlineError, giveUpError, retryDelay, takeRedirect, type Flight } from './flight.js';
import { pauseBeforeRetry, Rerouted, unlessRerouted } from './map-waits.js';
import { attemptKind, decideRedirect, type Decision } from './redirect.js';
import { slotNotServed, type Router } from './route.js';

/**
 * Sends ASKING ahead of the next command on `conn` (same write). Its reply is not awaited:
 * should it fail, the command that follows gets the redirect or error that reports it.
 */
export function sendAsking(conn: Connection, opts: SendOptions): void {
  // ASKING writes nothing: it never waits for replicas, even ahead of a durable write; and the
  // traits of the command it goes before are not its own.
  conn.send(['ASKING'], opts.durable === undefined && opts.traits === undefined ? opts : { ...opts, durable: undefined, traits: undefined }).catch(() => {});
}

/**
 * Sends flights and follows the cluster's answers: MOVED (patch the slot, refresh, retry on
 * the named node), ASK (ASKING + the command back-to-back on one connection), TRYAGAIN
 * (growing delay), CLUSTERDOWN (backoff + refresh), connection errors (refresh and retry what
 * provably was not executed). One deadline covers every attempt of a flight;
 * `maxRedirections` bounds their number.
 *
 * {@link run} is the loop of a single command; pipelines and transactions build their own
 * loops from the same steps ({@link onFailure}, {@link pause}, {@link checkTime}, …).
 */
export class FlightRunner {
  /** Flights sleeping before their next attempt. */
  private pausing = 0;
  constructor(
    readonly h: ClusterHost,
    readonly router: Router,
  ) {}

  /**
   * The redirect/retry loop of one command. `exclusive`: each attempt borrows an exclusive
   * connection (a blocking command must not stall a lane) instead of using the node's lane.
   */
  async run(f: Flight, call: ResolvedCall, exclusive = false): Promise<Reply> {
    const started = Date.now();
    try {
      for (;;) {
        this.checkTime(f, call);
        const address = this.nextNode(f);
        if (!address) {
          await this.refreshUncovered(f, call);
          continue;
        }
        const asking = takeRedirect(f);
        try {
          const pool = this.h.topology.pool(address);
          return await (exclusive ? this.sendExclusive(pool, f.args, call, asking, f) : this.sendOn(pool, f.args, call, asking, f));
        } catch (err) {
          if (err instanceof Rerouted) continue;
          // The deadline passed while waiting for a connection: report the attempts that failed before.
          if (err instanceof TimeoutError && !err.sent && f.attempts.length > 0 && pastDeadline(call)) this.checkTime(f, call, address);
          await this.retryAfter(f, err, err, address, call, started, () => this.nextNode(f));
        }
      }
    } finally {
      this.land(f);
    }
  }

  /**
   * Sends on a node's multiplexed lane; with `asking`, ASKING goes right before it in the same
   * write. With a flight, a wait for a lane is abandoned ({@link Rerouted}) when the slot map
   * changes so that the flight routes to another node.
   */
  async sendOn(pool: NodePool, args: Arg[], call: ResolvedCall, asking: boolean, f?: Flight): Promise<Reply> {
    const conn = pool.laneSync() ?? (await this.laneOf(pool, call, args, f ? () => this.routedAway(f, pool.target) : undefined));
    const opts = sendOptions(call);
    if (asking) sendAsking(conn, opts);
    return sendTraced(conn, args, opts, f ? f.attempts.length + 1 : 1);
  }

  /**
   * Sends on an exclusive connection of a node (BLPOP, XREAD BLOCK …), borrowed within the
   * call's deadline and given back once the reply is in; ASKING goes right before it with `asking`.
   */
  async sendExclusive(pool: NodePool, args: Arg[], call: ResolvedCall, asking: boolean, f: Flight): Promise<Reply> {
    const conn = await pool.acquire(call.deadline);
    try {
      if (call.signal?.aborted) throw call.signal.reason;
      const opts = sendOptions(call);
      if (asking) sendAsking(conn, opts);
      return await sendTraced(conn, args, opts, f.attempts.length + 1);
    } finally {
      pool.release(conn);
    }
  }

  /**
   * Waits for a node's lane within the call's deadline (abandoned with {@link Rerouted} when
   * `rerouted()` says so after a map change). Errors name the node and say nothing was sent.
   */
  async laneOf(pool: NodePool, call: ResolvedCall, args: readonly Arg[], rerouted?: () => boolean): Promise<Connection> {
    const target = pool.target;
    try {
      const lane = laneWithin(pool, call, args, !this.h.o.offlineQueue);
      return await (rerouted ? unlessRerouted(this.h, lane, rerouted) : lane);
    } catch (err) {
      // A pool closed by a refresh (node removed) while the command was routed to it: not sent.
      if (err instanceof PoolClosedError && !this.h.isClosed()) throw new ConnectionError(`${formatAddress(target)} left the cluster; the command was not sent.`, { cause: err, address: target });
      if (err instanceof TimeoutError && !err.address) {
        // The deadline passed while the pool was (re)connecting: name the node and why it could not connect.
        const cause = this.h.topology.connectError(target);
        throw new TimeoutError(err.message + (cause ? ` The last connection attempt failed: ${cause.message}` : ''), { cause, address: target, sent: false });
      }
      throw err;
    }
  }

  /** Where the flight goes next: its MOVED/ASK target, else what the map says. */
  nextNode(f: Flight): NodeAddress | undefined {
    return f.target ?? this.router.pick(f.route, f.avoid);
  }

  /** No node serves the flight's slot: wait for one map refresh (within the deadline); the second time, fail with CLUSTERDOWN. */
  async refreshUncovered(f: Flight, call: ResolvedCall): Promise<void> {
    if (f.uncoveredRefreshed) throw slotNotServed(f.route.slot ?? 0);
    f.uncoveredRefreshed = true;
    await withinDeadline(this.h.topology.refreshed(), call, () => `${String(f.args[0])}: the slot map refresh did not complete within the deadline.`);
  }

  /**
   * After a failed attempt: throws what the caller should report (`reported`, or
   * MaxRedirectionsError) when the flight gives up, else waits before the next attempt, waking
   * early when a map change sends the flight to `next()` instead of the node that failed it.
   */
  async retryAfter(f: Flight, err: unknown, reported: unknown, address: NodeAddress, call: ResolvedCall, started: number, next: () => NodeAddress | undefined): Promise<void> {
    const d = this.onFailure(f, err, address, call, started);
    if (d.action === 'fail') throw giveUpError(f, d, reported, this.h.o.maxRedirections);
    const delay = retryDelay(d, f, this.h.o);
    if (delay <= 0) return;
    // Commands waiting to retry are a queue too (a cluster that is down holds every caller).
    if (this.pausing >= this.h.o.data.maxPending) {
      // A command that may have run keeps its own error: "refused" would claim it did not.
      if (wasWritten(err)) throw reported;
      throw overloadError(`${String(f.args[0])} was not retried: ${this.pausing} commands already wait to retry (maxPending ${this.h.o.data.maxPending}); last error: ${(err as Error)?.message ?? String(err)}`);
    }
    this.pausing++;
    try {
      await this.pause(delay, call, () => this.shouldWake(f, next()), f.failedAtVersion);
    } finally {
      this.pausing--;
    }
  }

  /** See {@link pauseBeforeRetry}. */
  pause(ms: number, call: ResolvedCall, wake: () => boolean, since?: number): Promise<void> {
    return pauseBeforeRetry(this.h, ms, call, wake, since);
  }

  /**
   * After a map change: should this flight retry now? Yes when the map routes it (`next`) to
   * another node than its last attempt (its backoff then starts over: that node has not failed
   * it), or after a cluster-wide error (CLUSTERDOWN, READONLY), which any change may have fixed.
   */
  shouldWake(f: Flight, next: NodeAddress | undefined): boolean {
    const moved = next !== undefined && formatAddress(next) !== f.lastNode;
    if (moved) f.backoffBase = f.redirections;
    return moved || f.wakeOnAnyChange;
  }

  /** Whether the map now routes this flight away from `node` (a connection wait there can be abandoned). */
  routedAway(f: Flight, node: NodeAddress): boolean {
    const next = this.nextNode(f);
    return next !== undefined && formatAddress(next) !== formatAddress(node);
  }

  /** Ends a flight: the topology stops polling on its behalf. */
  land(f: Flight): void {
    f.troubled?.();
    f.troubled = undefined;
  }

  /** Throws when the pool closed, the call was aborted, or its deadline passed (see {@link deadlineError}). */
  checkTime(f: Flight, call: ResolvedCall, at?: NodeAddress): void {
    checkTime(call, this.h.isClosed(), () => deadlineError(f, call, at));
  }

  /** Records the attempt, applies the decision's side effects (patch, events, refresh) and returns it. */
  onFailure(f: Flight, err: unknown, address: NodeAddress, call: ResolvedCall, started: number): Decision {
    const e = err instanceof Error ? err : new Error(String(err));
    f.attempts.push({ node: { host: address.host, port: address.port }, kind: attemptKind(err), slot: f.route.slot, error: e, elapsed: Date.now() - started });
    f.lastNode = formatAddress(address);
    f.wakeOnAnyChange = false;
    f.failedAtVersion = this.h.topology.version;
    if (this.h.isClosed()) return { action: 'fail', error: err instanceof PoolClosedError ? err : new PoolClosedError(undefined, { cause: err }), exhausted: false };
    // Sent and no reply within the deadline: the node may be black-holed (no RST, so no
    // connection error ever comes). Watch the map as for an unreachable node, so the fleet finds
    // its replica's promotion within `refresh.watchInterval` (a slow node costs a few refreshes).
    if (err instanceof TimeoutError && err.sent) this.h.topology.nodeDown(address);
    if (err instanceof AuthenticationError) return { action: 'fail', error: err, exhausted: false };
    const d = decideRedirect(err, {
      sent: wasWritten(err),
      readOnly: f.route.readOnly,
      idempotent: call.idempotent,
      redirections: f.redirections,
      maxRedirections: this.h.o.maxRedirections,
      from: address,
    });
    const top = this.h.topology;
    switch (d.action) {
      case 'moved': {
        f.redirections++;
        const to = top.map.mapAddress(d.address);
        top.moved(d.slot, to);
        // The node that answered MOVED: the map's previous owner may already be `to` (another
        // command's MOVED moved the whole shard first), and "from X to X" tells nobody anything.
        this.h.onMoved(d.slot, address, to);
        f.target = to;
        break;
      }
      case 'ask': {
        f.redirections++;
        const to = top.map.mapAddress(d.address);
        this.h.onAsk(d.slot, address, to);
        f.target = to;
        f.asking = true;
        break;
      }
      case 'retry':
        f.redirections++;
        this.h.onRetry(d.delay);
        if (d.refresh) {
          // CLUSTERDOWN, READONLY, an unusable redirect: the map is stale or the cluster is
          // failing over; whatever changes in the map may fix it.
          f.wakeOnAnyChange = true;
          f.troubled ??= top.failing();
          // A node that answers READONLY was demoted: it knows the master it now follows.
          top.requestRefresh(err instanceof RedisError && err.code === 'READONLY' ? [address] : []);
        }
        break;
      case 'retry-elsewhere':
        f.redirections++;
        this.h.onRetry('connection');
        f.avoid.add(formatAddress(address));
        if (err instanceof ConnectionError) top.nodeDown(address);
        f.troubled ??= top.failing();
        top.requestRefresh();
        break;
      default:
        break;
    }
    return d;
  }
}
