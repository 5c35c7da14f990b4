import type { Connection } from '../connection/connection.js';
import type { CommandInfo, CommandRegistry } from '../commands/command-table.js';
import { commandKeys } from '../commands/command-table.js';
import { AuthenticationError, ConnectionError, CrossSlotError, MaxRedirectionsError, PoolClosedError, RedisError, TimeoutError, UncertainWriteError, type RedirectAttempt } from '../errors.js';
import { backoffDelay, sleep } from '../pool/backoff.js';
import { remaining, type ResolvedCall } from '../pool/call-options.js';
import { withinDeadline } from '../pool/lane-dispatcher.js';
import type { NodePool } from '../pool/node-pool.js';
import { runBatchOn, sendOptions, type BatchResult, type Dispatcher, type LeaseHandle } from '../pool/surface.js';
import { formatAddress, type Arg, type NodeAddress, type Reply } from '../types.js';
import type { ResolvedClusterOptions } from './options.js';
import { crossSlotError, isSplittable, mergeFanout, mergeSplit, splitBySlot, type SplitPart } from './plan.js';
import { attemptKind, decideRedirect, type Decision } from './redirect.js';
import type { ClusterNode } from './slot-map.js';
import { keySlot } from './slot.js';
import type { Topology } from './topology.js';

/** What the dispatcher needs from the facade. */
export interface ClusterHost {
  readonly topology: Topology;
  readonly o: ResolvedClusterOptions;
  readonly registry: CommandRegistry;
  isClosed(): boolean;
  onMoved(slot: number, from: NodeAddress, to: NodeAddress): void;
  onAsk(slot: number, from: NodeAddress, to: NodeAddress): void;
  onRetry(kind: 'tryagain' | 'clusterdown' | 'connection'): void;
}

/** How one command is routed. */
interface Route {
  name: string;
  info: CommandInfo | undefined;
  /** Slot of the keys; undefined for a keyless command. */
  slot: number | undefined;
  readOnly: boolean;
}

/** The retry state of one command (or one pipeline entry). */
interface Flight {
  args: Arg[];
  route: Route;
  /** Explicit next target (after MOVED or ASK); else the map decides. */
  target: NodeAddress | undefined;
  asking: boolean;
  redirections: number;
  attempts: RedirectAttempt[];
  /** Nodes that failed this command (skipped for replica reads and keyless commands). */
  avoid: Set<string>;
  uncoveredRefreshed: boolean;
  /** Key of the node of the last attempt: a map change that routes the command elsewhere wakes its retry wait. */
  lastNode: string | undefined;
  /** The last failure was cluster-wide (CLUSTERDOWN, READONLY, …): any map change wakes the retry wait. */
  wakeOnAnyChange: boolean;
  /** `redirections` when the backoff last started over (a map change restarts it). */
  backoffBase: number;
  /** Set while the command retries after a node-level failure: the topology polls until it is called. */
  troubled: (() => void) | undefined;
}

/**
 * Not an error: a wait for a connection was abandoned because the slot map changed and the
 * command now routes elsewhere. Nothing was sent; the loop retries at once without counting it.
 */
class Rerouted extends Error {}

/** How a multi-key command whose keys span slots is handled: sent as is, split into per-slot parts, or refused. */
type MultiSlotPlan = { action: 'send' } | { action: 'split'; parts: SplitPart[] } | { action: 'refuse'; error: CrossSlotError };

const SEND: MultiSlotPlan = { action: 'send' };

const noop = () => {};
const settle = (p: Promise<Reply>): Promise<Reply | Error> => p.then((v) => v, (e: Error) => e);

/** Sleeps `ms`, or less when either signal fires. */
function sleepUnlessAborted(ms: number, a: AbortSignal | undefined, b: AbortSignal): Promise<void> {
  if (a?.aborted || b.aborted) return Promise.resolve();
  if (!a) return sleep(ms, b);
  const both = new AbortController();
  const abort = () => both.abort();
  a.addEventListener('abort', abort, { once: true });
  b.addEventListener('abort', abort, { once: true });
  return sleep(ms, both.signal).finally(() => {
    a.removeEventListener('abort', abort);
    b.removeEventListener('abort', abort);
  });
}

function slotNotServed(slot: number): RedisError {
  return new RedisError(`CLUSTERDOWN Hash slot ${slot} is not served by any node, even after a topology refresh.`);
}

/**
 * Routes commands by slot and follows the cluster's answers: MOVED (patch the slot, refresh,
 * retry on the named node), ASK (ASKING + the command back-to-back on one connection),
 * TRYAGAIN (short delay), CLUSTERDOWN (backoff + refresh), connection errors (refresh and
 * retry what provably was not executed). One deadline covers every attempt of a command;
 * `maxRedirections` bounds their number.
 *
 * A command waiting to retry (in a backoff, or for a connection to a node that does not
 * answer) wakes up as soon as the slot map changes so that it now routes to another node (its
 * backoff then starts over), or, after a cluster-wide error such as CLUSTERDOWN, on any change
 * of the map. While a command retries after a node-level failure the topology polls the map
 * every `refresh.minInterval`, so a promoted replica is used within about one interval.
 *
 * Keys spanning slots: MGET/MSET/DEL/UNLINK/EXISTS/TOUCH are split per slot (unless
 * `splitMultiKey` is false: then the server answers CROSSSLOT); every other command, blocking
 * ones included, is refused with CrossSlotError before anything is sent.
 */
export class ClusterDispatcher implements Dispatcher {
  readonly commandTimeout: number;
  private rr = 0;

  constructor(private readonly h: ClusterHost) {
    this.commandTimeout = h.o.data.commandTimeout;
  }

  // ---- routing ------------------------------------------------------------------------

  /** Name, command info, keys, slot (of the first key) and read-only flag. See {@link multiSlot} for keys that span slots. */
  route(args: readonly Arg[]): Route & { keys: Arg[] } {
    const name = String(args[0]).toLowerCase();
    const info = this.h.registry.get(name);
    const keys = commandKeys(info, args);
    const sub = info?.subcommands && args.length > 1 ? this.h.registry.get(name, args[1]) : info;
    return { name, info: sub, keys, slot: keys.length ? keySlot(keys[0]!) : undefined, readOnly: sub?.flags.has('readonly') ?? false };
  }

  /** The node for a route: the slot's master, a replica for reads when configured, any master when keyless. */
  pick(route: Route, avoid: Set<string>): NodeAddress | undefined {
    const map = this.h.topology.map;
    if (route.slot === undefined) return this.anyMaster(avoid);
    const shard = map.shardForSlot(route.slot);
    if (!shard) return undefined;
    if (route.readOnly && this.h.o.readFrom !== 'master' && shard.replicas.length > 0) {
      const ok = shard.replicas.filter((r) => r.health !== 'failed' && r.health !== 'loading');
      const usable = ok.filter((r) => !avoid.has(r.key));
      if (usable.length) return usable[this.rr++ % usable.length]!;
      // 'replica' stays on replicas while any is healthy; 'prefer-replica' falls back to the master.
      if (this.h.o.readFrom === 'replica' && ok.length) return ok[this.rr++ % ok.length]!;
    }
    return shard.master;
  }

  private anyMaster(avoid?: Set<string>): NodeAddress | undefined {
    const masters = this.h.topology.map.masters({ withSlots: true }).filter((m) => m.health !== 'failed');
    const usable = avoid ? masters.filter((m) => !avoid.has(m.key)) : masters;
    const list = usable.length ? usable : masters.length ? masters : this.h.topology.map.masters();
    return list.length ? list[this.rr++ % list.length] : undefined;
  }

  // ---- single commands ----------------------------------------------------------------

  /**
   * What to do with a command whose keys span slots. Redis Cluster refuses every such command
   * (CROSSSLOT), so: MGET/MSET/DEL/UNLINK/EXISTS/TOUCH are split per slot when `splitMultiKey`
   * is on (and sent as is when it is off, documented as "the server answers CROSSSLOT"); any
   * other command (MSETNX, RENAME, SMOVE, LMOVE, SINTERSTORE, EVAL, BLPOP, XREAD, …) is refused
   * with CrossSlotError before it is sent, whatever `splitMultiKey` says.
   */
  multiSlot(args: readonly Arg[], r: Route & { keys: Arg[] }): MultiSlotPlan {
    if (r.keys.length < 2) return SEND;
    const first = keySlot(r.keys[0]!);
    let slots: Set<number> | undefined;
    for (let i = 1; i < r.keys.length; i++) {
      const s = keySlot(r.keys[i]!);
      if (s !== first) (slots ??= new Set([first])).add(s);
    }
    if (!slots) return SEND;
    if (isSplittable(r.name)) {
      if (!this.h.o.splitMultiKey) return SEND;
      // Malformed arguments (odd MSET) cannot be split: the server reports the error.
      const parts = splitBySlot(r.name, args.slice(1), keySlot);
      return parts ? { action: 'split', parts } : SEND;
    }
    return { action: 'refuse', error: crossSlotError(r.name, slots) };
  }

  async dispatch(args: Arg[], call: ResolvedCall): Promise<Reply> {
    const r = this.route(args);
    const policy = r.info?.requestPolicy;
    if (policy === 'all_shards' || policy === 'all_nodes') return this.fanout(args, r.info!, call);
    const plan = this.multiSlot(args, r);
    if (plan.action === 'refuse') throw plan.error;
    if (plan.action === 'split') return this.split(args, r, plan.parts, call);
    return this.run(this.flight(args, r), call);
  }

  private flight(args: Arg[], route: Route): Flight {
    return {
      args, route, target: undefined, asking: false, redirections: 0, attempts: [], avoid: new Set(), uncoveredRefreshed: false,
      lastNode: undefined, wakeOnAnyChange: false, backoffBase: 0, troubled: undefined,
    };
  }

  /** MGET/MSET/DEL/UNLINK/EXISTS/TOUCH across slots: one command per slot, in parallel, merged in key order. */
  private async split(args: Arg[], r: Route, parts: SplitPart[], call: ResolvedCall): Promise<Reply> {
    const results = await Promise.all(
      parts.map((p) => settle(this.run(this.flight([args[0]!, ...p.args], { ...r, slot: p.slot }), call))),
    );
    return mergeSplit(r.name, parts, results);
  }

  /** `all_shards` / `all_nodes` commands: sent to every master (and healthy replica for all_nodes), merged per `response_policy`. */
  private async fanout(args: Arg[], info: CommandInfo, call: ResolvedCall): Promise<Reply> {
    const map = this.h.topology.map;
    let targets: ClusterNode[] = map.masters({ withSlots: true });
    if (info.requestPolicy === 'all_nodes') {
      targets = [...targets, ...map.shards.flatMap((s) => s.replicas).filter((n) => n.health !== 'failed' && n.health !== 'loading')];
    }
    if (targets.length === 0) throw slotNotServed(0);
    const replies = await Promise.all(targets.map((t) => settle(this.sendOn(this.h.topology.pool(t), args, call, false))));
    return mergeFanout(info.responsePolicy, replies);
  }

  /**
   * Sends on a node's multiplexed lane; with `asking`, ASKING goes right before it in the same
   * write. With a flight, a wait for a lane is abandoned (Rerouted) when the slot map changes
   * so that the flight routes to another node.
   */
  private async sendOn(pool: NodePool, args: Arg[], call: ResolvedCall, asking: boolean, f?: Flight): Promise<Reply> {
    const conn = pool.laneSync() ?? (await this.laneOf(pool, call, args, f ? () => this.routedAway(f, pool.target) : undefined));
    const opts = sendOptions(call);
    if (asking) conn.send(['ASKING'], opts).catch(noop);
    return conn.send(args, opts);
  }

  private async laneOf(pool: NodePool, call: ResolvedCall, args: readonly Arg[], rerouted?: () => boolean): Promise<Connection> {
    const target = pool.target;
    try {
      const lane = withinDeadline(pool.lane(), call, () => `${String(args[0])} could not reach ${formatAddress(target)} within its deadline.`);
      return await (rerouted ? this.unlessRerouted(lane, rerouted) : lane);
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

  /**
   * `p`, unless the slot map changes so that `rerouted()` says true first (or the pool
   * closes): then rejects with {@link Rerouted} and lets `p` settle unobserved.
   */
  private async unlessRerouted<T>(p: Promise<T>, rerouted: () => boolean): Promise<T> {
    const top = this.h.topology;
    for (;;) {
      const signal = top.changed;
      if (this.h.isClosed()) break;
      let onChange!: () => void;
      const changed = new Promise<typeof signal>((resolve) => {
        onChange = () => resolve(signal);
        signal.addEventListener('abort', onChange, { once: true });
      });
      let r: T | AbortSignal;
      try {
        r = await Promise.race([p, changed]);
      } finally {
        signal.removeEventListener('abort', onChange);
      }
      if (r !== signal) return r as T;
      if (this.h.isClosed() || rerouted()) break;
    }
    p.catch(noop);
    throw new Rerouted();
  }

  /**
   * Waits `ms` (at most until the deadline) before a retry. Returns early when the call is
   * aborted, the pool closes, or the slot map changes so that `wake()` says true.
   */
  private async pause(ms: number, call: ResolvedCall, wake: () => boolean): Promise<void> {
    const until = Date.now() + Math.min(ms, remaining(call));
    for (;;) {
      const left = until - Date.now();
      if (left <= 0 || call.signal?.aborted || this.h.isClosed()) return;
      const changed = this.h.topology.changed;
      await sleepUnlessAborted(left, call.signal, changed);
      if (!changed.aborted || call.signal?.aborted || this.h.isClosed() || wake()) return;
    }
  }

  /**
   * After a map change: should this flight retry now? Yes when the map routes it to another
   * node than its last attempt (its backoff then starts over: that node has not failed it), or
   * after a cluster-wide error (CLUSTERDOWN, READONLY), which any change may have fixed.
   */
  private shouldWake(f: Flight, next: NodeAddress | undefined = f.target ?? this.pick(f.route, f.avoid)): boolean {
    const moved = next !== undefined && formatAddress(next) !== f.lastNode;
    if (moved) f.backoffBase = f.redirections;
    return moved || f.wakeOnAnyChange;
  }

  /** Whether the map now routes this flight away from `node` (a connection wait there can be abandoned). */
  private routedAway(f: Flight, node: NodeAddress): boolean {
    const next = f.target ?? this.pick(f.route, f.avoid);
    return next !== undefined && formatAddress(next) !== formatAddress(node);
  }

  /** Ends a flight: the topology stops polling on its behalf. */
  private land(f: Flight): void {
    f.troubled?.();
    f.troubled = undefined;
  }

  /** Sends a command to one given node (SCAN per master), without redirects. */
  sendTo(node: NodeAddress, args: Arg[], call: ResolvedCall): Promise<Reply> {
    return this.sendOn(this.h.topology.pool(node), args, call, false);
  }

  /** The redirect/retry loop of one command. */
  private async run(f: Flight, call: ResolvedCall): Promise<Reply> {
    const started = Date.now();
    try {
      for (;;) {
        this.checkTime(f, call);
        const address = f.target ?? this.pick(f.route, f.avoid);
        if (!address) {
          if (f.uncoveredRefreshed) throw slotNotServed(f.route.slot ?? 0);
          f.uncoveredRefreshed = true;
          await withinDeadline(this.h.topology.refreshed(), call, () => `${String(f.args[0])}: the slot map refresh did not complete within the deadline.`);
          continue;
        }
        const asking = f.asking;
        f.target = undefined;
        f.asking = false;
        try {
          return await this.sendOn(this.h.topology.pool(address), f.args, call, asking, f);
        } catch (err) {
          if (err instanceof Rerouted) continue;
          // The deadline passed while waiting for a connection: report the attempts that failed before.
          if (err instanceof TimeoutError && !err.sent && f.attempts.length > 0 && this.pastDeadline(call)) this.checkTime(f, call, address);
          const d = this.onFailure(f, err, address, call, started);
          if (d.action === 'fail') throw d.exhausted ? new MaxRedirectionsError(String(f.args[0]).toUpperCase(), f.attempts, this.h.o.maxRedirections) : err;
          const delay = this.delayFor(d, f.redirections - f.backoffBase, f);
          if (delay > 0) await this.pause(delay, call, () => this.shouldWake(f));
        }
      }
    } finally {
      this.land(f);
    }
  }

  private pastDeadline(call: ResolvedCall): boolean {
    return call.deadline !== 0 && Date.now() >= call.deadline;
  }

  /**
   * Throws when the pool closed, the call was aborted, or its deadline passed. The deadline's
   * TimeoutError lists every attempt, has the last attempt's error as `cause` and the node
   * the command was going to (`at`, else that of the last attempt) as `address`.
   */
  private checkTime(f: Flight, call: ResolvedCall, at?: NodeAddress): void {
    if (this.h.isClosed()) throw new PoolClosedError();
    if (call.signal?.aborted) throw call.signal.reason;
    if (!this.pastDeadline(call)) return;
    const last = f.attempts[f.attempts.length - 1];
    if (last && f.attempts.length === 1 && last.error instanceof TimeoutError && !at) throw last.error;
    const list = f.attempts.map((a) => `${formatAddress(a.node)} ${a.kind} after ${a.elapsed} ms: ${a.error.message}`).join('; ');
    const address = at ?? last?.node;
    throw new TimeoutError(
      `${String(f.args[0]).toUpperCase()} did not complete within its deadline (${call.budget} ms)` + (list ? ` after ${f.attempts.length} attempts: ${list}` : '') + '.',
      {
        cause: last?.error,
        ...(address ? { address: { host: address.host, port: address.port } } : {}),
        sent: last?.error instanceof UncertainWriteError || (last?.error instanceof TimeoutError && last.error.sent),
      },
    );
  }

  /** Records the attempt, applies the decision's side effects (patch, events, refresh) and returns it. */
  private onFailure(f: Flight, err: unknown, address: NodeAddress, call: ResolvedCall, started: number): Decision {
    const e = err instanceof Error ? err : new Error(String(err));
    f.attempts.push({ node: { host: address.host, port: address.port }, kind: attemptKind(err), slot: f.route.slot, error: e, elapsed: Date.now() - started });
    f.lastNode = formatAddress(address);
    f.wakeOnAnyChange = false;
    if (this.h.isClosed()) return { action: 'fail', error: err instanceof PoolClosedError ? err : new PoolClosedError(undefined, { cause: err }), exhausted: false };
    if (err instanceof AuthenticationError) return { action: 'fail', error: err, exhausted: false };
    const sent = err instanceof UncertainWriteError || (err instanceof TimeoutError && err.sent);
    const d = decideRedirect(err, {
      sent,
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
        const before = top.moved(d.slot, to);
        this.h.onMoved(d.slot, before ? { host: before.host, port: before.port } : address, to);
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
          top.requestRefresh();
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

  /**
   * Delay before the next attempt. TRYAGAIN (a multi-key command in a slot being migrated)
   * lasts as long as the migration, so its delay doubles from `retryDelayOnTryAgain` up to
   * `retryBackoff.maxDelay`, letting the budget cover a migration of several seconds.
   */
  private delayFor(d: Decision, n: number, f?: Flight): number {
    if (d.action === 'retry' && d.delay === 'tryagain') {
      const tries = f ? f.attempts.filter((a) => a.kind === 'tryagain').length : 1;
      return Math.min(this.h.o.retryDelayOnTryAgain * 2 ** Math.max(0, tries - 1), this.h.o.retryBackoff.maxDelay);
    }
    if (d.action === 'retry') return backoffDelay(Math.max(0, n - 1), this.h.o.retryBackoff);
    if (d.action === 'retry-elsewhere') return backoffDelay(Math.max(0, n - 1), { initialDelay: Math.min(50, this.h.o.retryBackoff.initialDelay), maxDelay: this.h.o.retryBackoff.maxDelay });
    return 0;
  }

  // ---- pipelines and transactions -----------------------------------------------------

  dispatchBatch(cmds: Arg[][], call: ResolvedCall, transaction: boolean): Promise<BatchResult | null> {
    return transaction ? this.transaction(cmds, call) : this.pipeline(cmds, call);
  }

  /**
   * A pipeline across nodes: entries are grouped by node and each group goes out in one
   * write, all groups in parallel. Entries answered MOVED/ASK/TRYAGAIN (or not sent because a
   * connection failed) are re-routed and sent again; the others keep their reply. Results come
   * back in the caller's order. Order of execution is guaranteed per node only.
   *
   * An MGET/MSET/DEL/UNLINK/EXISTS/TOUCH entry whose keys span slots is split per slot like
   * `pool.mget` (unless `splitMultiKey` is false): its parts travel with the other entries for
   * their node, and the entry gets the merged reply, or the first error of a part. Any other
   * entry whose keys span slots gets a CrossSlotError and is not sent.
   */
  private async pipeline(cmds: Arg[][], call: ResolvedCall): Promise<BatchResult> {
    const started = Date.now();
    // Flights are what is sent: one per entry, or one per part of a split entry, in entry order.
    const flights: Flight[] = [];
    const entries: Array<{ one: number } | { name: string; parts: SplitPart[]; first: number } | { error: Error }> = [];
    for (const args of cmds) {
      const r = this.route(args);
      const plan = this.multiSlot(args, r);
      if (plan.action === 'refuse') {
        entries.push({ error: plan.error });
      } else if (plan.action === 'split') {
        entries.push({ name: r.name, parts: plan.parts, first: flights.length });
        for (const part of plan.parts) flights.push(this.flight([args[0]!, ...part.args], { ...r, slot: part.slot }));
      } else {
        entries.push({ one: flights.length });
        flights.push(this.flight(args, r));
      }
    }
    let sent: Array<Reply | Error>;
    try {
      sent = await this.runFlights(flights, call, started);
    } finally {
      for (const f of flights) this.land(f);
    }
    return entries.map((e): Reply | Error => {
      if ('error' in e) return e.error;
      if ('one' in e) return sent[e.one]!;
      try {
        return mergeSplit(e.name, e.parts, sent.slice(e.first, e.first + e.parts.length));
      } catch (err) {
        return err as Error;
      }
    });
  }

  /** The retry loop of a pipeline: every flight's reply or error, in order. */
  private async runFlights(flights: Flight[], call: ResolvedCall, started: number): Promise<Array<Reply | Error>> {
    const results: Array<Reply | Error> = new Array(flights.length);
    let todo = flights.map((_, i) => i);
    while (todo.length) {
      if (this.h.isClosed() || this.pastDeadline(call) || call.signal?.aborted) {
        for (const i of todo) {
          try {
            this.checkTime(flights[i]!, call);
            results[i] = new TimeoutError('pipeline: no time left');
          } catch (e) {
            results[i] = e as Error;
          }
        }
        break;
      }
      const groups = new Map<string, { address: NodeAddress; idx: number[] }>();
      let uncovered = false;
      for (const i of todo) {
        const f = flights[i]!;
        const address = f.target ?? this.pick(f.route, f.avoid);
        if (!address) {
          if (f.uncoveredRefreshed) results[i] = slotNotServed(f.route.slot ?? 0);
          else uncovered = true;
          continue;
        }
        const key = formatAddress(address);
        let g = groups.get(key);
        if (!g) groups.set(key, (g = { address, idx: [] }));
        g.idx.push(i);
      }
      if (uncovered) {
        await withinDeadline(this.h.topology.refreshed(), call, () => 'pipeline: the slot map refresh did not complete within the deadline.').catch(noop);
        for (const i of todo) flights[i]!.uncoveredRefreshed = true;
        todo = todo.filter((i) => results[i] === undefined);
        continue;
      }
      const next: number[] = [];
      let delay = 0;
      await Promise.all(
        [...groups.values()].map(async (g) => {
          const group = g.idx.map((i) => flights[i]!);
          const replies = await this.sendGroup(g.address, group, call);
          g.idx.forEach((i, j) => {
            const reply = replies[j]!;
            const f = flights[i]!;
            const asking = f.asking;
            f.target = undefined;
            f.asking = false;
            if (!(reply instanceof Error)) {
              results[i] = reply;
              return;
            }
            if (reply instanceof Rerouted) {
              // Not sent: the map moved it while we waited for a connection. Keep an ASK target.
              if (asking) {
                f.target = g.address;
                f.asking = true;
              }
              next.push(i);
              return;
            }
            if (reply instanceof TimeoutError && !reply.sent && f.attempts.length > 0 && this.pastDeadline(call)) {
              try {
                this.checkTime(f, call, g.address);
              } catch (e) {
                results[i] = e as Error;
                return;
              }
            }
            const d = this.onFailure(f, reply, g.address, call, started);
            if (d.action === 'fail') {
              results[i] = d.exhausted ? new MaxRedirectionsError(String(f.args[0]).toUpperCase(), f.attempts, this.h.o.maxRedirections) : reply;
              return;
            }
            delay = Math.max(delay, this.delayFor(d, f.redirections - f.backoffBase, f));
            next.push(i);
          });
        }),
      );
      todo = next.sort((a, b) => a - b);
      if (delay > 0 && todo.length) {
        const waiting = todo.map((i) => flights[i]!);
        // Wake when the change helps any waiting entry; all of them then start their backoff over.
        await this.pause(delay, call, () => waiting.map((f) => this.shouldWake(f)).some(Boolean));
      }
    }
    return results;
  }

  /**
   * One write of a group of pipeline entries to one node (ASKING before the entries that need
   * it). When the wait for a connection is abandoned because the map moved some entry
   * elsewhere, every entry of the group gets {@link Rerouted} (none was sent).
   */
  private async sendGroup(address: NodeAddress, group: Flight[], call: ResolvedCall): Promise<Array<Reply | Error>> {
    const pool = this.h.topology.pool(address);
    let conn: Connection;
    try {
      conn = pool.laneSync() ?? (await this.laneOf(pool, call, ['PIPELINE'], () => group.some((f) => this.routedAway(f, address))));
    } catch (err) {
      return group.map(() => err as Error);
    }
    const opts = sendOptions(call);
    return Promise.all(
      group.map((f) => {
        if (f.asking) conn.send(['ASKING'], opts).catch(noop);
        return settle(conn.send(f.args, opts));
      }),
    );
  }

  /**
   * MULTI/EXEC: every key must hash to one slot (CrossSlotError before anything is sent). Runs
   * on an exclusive connection to that slot's master; a MOVED/ASK/TRYAGAIN on MULTI, a queued
   * command or EXEC (the server then discards the transaction) retries the whole transaction.
   */
  private async transaction(cmds: Arg[][], call: ResolvedCall): Promise<BatchResult | null> {
    const slots = new Set<number>();
    let readOnly = true;
    for (const c of cmds) {
      const r = this.route(c);
      for (const k of r.keys) slots.add(keySlot(k));
      readOnly &&= r.readOnly;
    }
    if (slots.size > 1) throw crossSlotError('MULTI', slots);
    const slot = slots.size ? [...slots][0]! : undefined;
    const f = this.flight(['MULTI'], { name: 'multi', info: undefined, slot, readOnly });
    const started = Date.now();
    const masterOf = () => (slot === undefined ? this.anyMaster(f.avoid) : this.h.topology.map.shardForSlot(slot)?.master);
    try {
      for (;;) {
        this.checkTime(f, call);
        const address = f.target ?? masterOf();
        if (!address) {
          if (f.uncoveredRefreshed) throw slotNotServed(slot ?? 0);
          f.uncoveredRefreshed = true;
          await withinDeadline(this.h.topology.refreshed(), call, () => 'MULTI: the slot map refresh did not complete within the deadline.');
          continue;
        }
        const asking = f.asking;
        f.target = undefined;
        f.asking = false;
        const pool = this.h.topology.pool(address);
        let conn: Connection | undefined;
        try {
          const acquiring = pool.acquire();
          try {
            conn = await this.unlessRerouted(acquiring, () => {
              const next = masterOf();
              return next !== undefined && formatAddress(next) !== formatAddress(address);
            });
          } catch (err) {
            // Abandoned: a connection acquired later goes straight back.
            if (err instanceof Rerouted) acquiring.then((c) => pool.release(c), noop);
            throw err;
          }
          if (asking) conn.send(['ASKING'], sendOptions(call)).catch(noop);
          return await runBatchOn(conn, cmds, call, true);
        } catch (err) {
          if (err instanceof Rerouted) continue;
          // EXECABORT caused by a redirect of a queued command: decide on the redirect.
          const cause = err instanceof RedisError && err.code === 'EXECABORT' && err.cause instanceof RedisError ? err.cause : err;
          const d = this.onFailure(f, cause, address, call, started);
          if (d.action === 'fail') throw d.exhausted ? new MaxRedirectionsError('MULTI', f.attempts, this.h.o.maxRedirections) : err;
          const delay = this.delayFor(d, f.redirections - f.backoffBase, f);
          if (delay > 0) {
            await this.pause(delay, call, () => this.shouldWake(f, f.target ?? masterOf()));
          }
        } finally {
          if (conn) pool.release(conn);
        }
      }
    } finally {
      this.land(f);
    }
  }

  /**
   * An exclusive connection to the master of `key`'s slot (of the command's keys for blocking
   * commands: they must share one slot, else CrossSlotError before anything is sent), or to
   * any master.
   */
  async lease(key: Arg | undefined, args?: readonly Arg[]): Promise<LeaseHandle> {
    let slot: number | undefined;
    if (key !== undefined) slot = keySlot(key);
    else if (args && args.length) {
      const r = this.route(args);
      const plan = this.multiSlot(args, r);
      // Blocking commands are never split (a BLPOP over several nodes would pop twice).
      if (plan.action === 'refuse') throw plan.error;
      if (plan.action === 'split') throw crossSlotError(r.name, plan.parts.map((p) => p.slot));
      if (r.keys.length) slot = keySlot(r.keys[0]!);
    }
    let address = slot === undefined ? this.anyMaster() : this.h.topology.map.shardForSlot(slot)?.master;
    if (!address) {
      await this.h.topology.refreshed();
      address = slot === undefined ? this.anyMaster() : this.h.topology.map.shardForSlot(slot)?.master;
      if (!address) throw slotNotServed(slot ?? 0);
    }
    const pool = this.h.topology.pool(address);
    const conn = await pool.acquire();
    return { conn, release: () => pool.release(conn) };
  }
}
