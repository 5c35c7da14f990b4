import type { Connection } from '../connection/connection.js';
import type { CommandInfo, CommandRegistry } from '../commands/command-table.js';
import { commandKeys } from '../commands/command-table.js';
import { AuthenticationError, ConnectionError, MaxRedirectionsError, PoolClosedError, RedisError, TimeoutError, UncertainWriteError, type RedirectAttempt } from '../errors.js';
import { backoffDelay, sleep } from '../pool/backoff.js';
import { remaining, type ResolvedCall } from '../pool/call-options.js';
import { withinDeadline } from '../pool/lane-dispatcher.js';
import type { NodePool } from '../pool/node-pool.js';
import { runBatchOn, sendOptions, type BatchResult, type Dispatcher, type LeaseHandle } from '../pool/surface.js';
import { formatAddress, type Arg, type NodeAddress, type Reply } from '../types.js';
import type { ResolvedClusterOptions } from './options.js';
import { crossSlotError, isSplittable, isUnsplittableMultiSlot, mergeFanout, mergeSplit, splitBySlot } from './plan.js';
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
}

const noop = () => {};
const settle = (p: Promise<Reply>): Promise<Reply | Error> => p.then((v) => v, (e: Error) => e);

function slotNotServed(slot: number): RedisError {
  return new RedisError(`CLUSTERDOWN Hash slot ${slot} is not served by any node, even after a topology refresh.`);
}

/**
 * Routes commands by slot and follows the cluster's answers: MOVED (patch the slot, refresh,
 * retry on the named node), ASK (ASKING + the command back-to-back on one connection),
 * TRYAGAIN (short delay), CLUSTERDOWN (backoff + refresh), connection errors (refresh and
 * retry what provably was not executed). One deadline covers every attempt of a command;
 * `maxRedirections` bounds their number.
 */
export class ClusterDispatcher implements Dispatcher {
  readonly commandTimeout: number;
  private rr = 0;

  constructor(private readonly h: ClusterHost) {
    this.commandTimeout = h.o.data.commandTimeout;
  }

  // ---- routing ------------------------------------------------------------------------

  /** Name, command info, slot (of the first key) and read-only flag. Throws CrossSlotError for unsplittable cross-slot commands. */
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

  async dispatch(args: Arg[], call: ResolvedCall): Promise<Reply> {
    const r = this.route(args);
    const policy = r.info?.requestPolicy;
    if (policy === 'all_shards' || policy === 'all_nodes') return this.fanout(args, r.info!, call);
    if (r.keys.length > 1) {
      const slots = new Set(r.keys.map(keySlot));
      if (slots.size > 1) {
        if (isUnsplittableMultiSlot(r.name)) throw crossSlotError(r.name, slots);
        if (this.h.o.splitMultiKey && isSplittable(r.name)) return this.split(args, r, call);
      }
    }
    return this.run(this.flight(args, r), call);
  }

  private flight(args: Arg[], route: Route): Flight {
    return { args, route, target: undefined, asking: false, redirections: 0, attempts: [], avoid: new Set(), uncoveredRefreshed: false };
  }

  /** MGET/MSET/DEL/UNLINK/EXISTS/TOUCH across slots: one command per slot, in parallel, merged in key order. */
  private async split(args: Arg[], r: Route, call: ResolvedCall): Promise<Reply> {
    const parts = splitBySlot(r.name, args.slice(1), keySlot)!;
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

  /** Sends on a node's multiplexed lane; with `asking`, ASKING goes right before it in the same write. */
  private async sendOn(pool: NodePool, args: Arg[], call: ResolvedCall, asking: boolean): Promise<Reply> {
    const conn = pool.laneSync() ?? (await this.laneOf(pool, call, args));
    const opts = sendOptions(call);
    if (asking) conn.send(['ASKING'], opts).catch(noop);
    return conn.send(args, opts);
  }

  private async laneOf(pool: NodePool, call: ResolvedCall, args: readonly Arg[]): Promise<Connection> {
    try {
      return await withinDeadline(pool.lane(), call, () => `${String(args[0])} could not reach ${formatAddress(pool.target)} within its deadline.`);
    } catch (err) {
      // A pool closed by a refresh (node removed) while the command was routed to it: not sent.
      if (err instanceof PoolClosedError && !this.h.isClosed()) throw new ConnectionError(`${formatAddress(pool.target)} left the cluster; the command was not sent.`, { cause: err, address: pool.target });
      throw err;
    }
  }

  /** Sends a command to one given node (SCAN per master), without redirects. */
  sendTo(node: NodeAddress, args: Arg[], call: ResolvedCall): Promise<Reply> {
    return this.sendOn(this.h.topology.pool(node), args, call, false);
  }

  /** The redirect/retry loop of one command. */
  private async run(f: Flight, call: ResolvedCall): Promise<Reply> {
    const started = Date.now();
    for (;;) {
      this.checkTime(f, call, started);
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
        return await this.sendOn(this.h.topology.pool(address), f.args, call, asking);
      } catch (err) {
        const d = this.onFailure(f, err, address, call, started);
        if (d.action === 'fail') throw d.exhausted ? new MaxRedirectionsError(String(f.args[0]).toUpperCase(), f.attempts, this.h.o.maxRedirections) : err;
        const delay = this.delayFor(d, f.redirections, f);
        if (delay > 0) await sleep(Math.min(delay, remaining(call)), call.signal);
      }
    }
  }

  private checkTime(f: Flight, call: ResolvedCall, started: number): void {
    if (this.h.isClosed()) throw new PoolClosedError();
    if (call.signal?.aborted) throw call.signal.reason;
    if (call.deadline === 0 || Date.now() < call.deadline) return;
    const last = f.attempts[f.attempts.length - 1];
    if (last && f.attempts.length === 1 && last.error instanceof TimeoutError) throw last.error;
    const list = f.attempts.map((a) => `${formatAddress(a.node)} ${a.kind} after ${a.elapsed} ms: ${a.error.message}`).join('; ');
    throw new TimeoutError(
      `${String(f.args[0]).toUpperCase()} did not complete within its deadline (${call.budget} ms)` + (list ? ` after ${f.attempts.length} attempts: ${list}` : '') + '.',
      { cause: last?.error, sent: last?.error instanceof UncertainWriteError || (last?.error instanceof TimeoutError && last.error.sent) },
    );
    void started;
  }

  /** Records the attempt, applies the decision's side effects (patch, events, refresh) and returns it. */
  private onFailure(f: Flight, err: unknown, address: NodeAddress, call: ResolvedCall, started: number): Decision {
    const e = err instanceof Error ? err : new Error(String(err));
    f.attempts.push({ node: { host: address.host, port: address.port }, kind: attemptKind(err), slot: f.route.slot, error: e, elapsed: Date.now() - started });
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
        if (d.refresh) top.requestRefresh();
        break;
      case 'retry-elsewhere':
        f.redirections++;
        this.h.onRetry('connection');
        f.avoid.add(formatAddress(address));
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
   */
  private async pipeline(cmds: Arg[][], call: ResolvedCall): Promise<BatchResult> {
    const started = Date.now();
    const results: Array<Reply | Error> = new Array(cmds.length);
    const flights = cmds.map((args) => {
      const r = this.route(args);
      return this.flight(args, r);
    });
    let todo = flights.map((_, i) => i);
    while (todo.length) {
      if (this.h.isClosed() || (call.deadline !== 0 && Date.now() >= call.deadline) || call.signal?.aborted) {
        for (const i of todo) {
          try {
            this.checkTime(flights[i]!, call, started);
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
          const replies = await this.sendGroup(g.address, g.idx.map((i) => flights[i]!), call);
          g.idx.forEach((i, j) => {
            const reply = replies[j]!;
            const f = flights[i]!;
            f.target = undefined;
            f.asking = false;
            if (!(reply instanceof Error)) {
              results[i] = reply;
              return;
            }
            const d = this.onFailure(f, reply, g.address, call, started);
            if (d.action === 'fail') {
              results[i] = d.exhausted ? new MaxRedirectionsError(String(f.args[0]).toUpperCase(), f.attempts, this.h.o.maxRedirections) : reply;
              return;
            }
            delay = Math.max(delay, this.delayFor(d, f.redirections, f));
            next.push(i);
          });
        }),
      );
      if (delay > 0 && next.length) await sleep(Math.min(delay, remaining(call)), call.signal);
      todo = next.sort((a, b) => a - b);
    }
    return results;
  }

  /** One write of a group of pipeline entries to one node (ASKING before the entries that need it). */
  private async sendGroup(address: NodeAddress, group: Flight[], call: ResolvedCall): Promise<Array<Reply | Error>> {
    const pool = this.h.topology.pool(address);
    let conn: Connection;
    try {
      conn = pool.laneSync() ?? (await this.laneOf(pool, call, ['PIPELINE']));
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
    for (;;) {
      this.checkTime(f, call, started);
      const address = f.target ?? (slot === undefined ? this.anyMaster(f.avoid) : this.h.topology.map.shardForSlot(slot)?.master);
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
        conn = await pool.acquire();
        if (asking) conn.send(['ASKING'], sendOptions(call)).catch(noop);
        return await runBatchOn(conn, cmds, call, true);
      } catch (err) {
        // EXECABORT caused by a redirect of a queued command: decide on the redirect.
        const cause = err instanceof RedisError && err.code === 'EXECABORT' && err.cause instanceof RedisError ? err.cause : err;
        const d = this.onFailure(f, cause, address, call, started);
        if (d.action === 'fail') throw d.exhausted ? new MaxRedirectionsError('MULTI', f.attempts, this.h.o.maxRedirections) : err;
        const delay = this.delayFor(d, f.redirections, f);
        if (delay > 0) await sleep(Math.min(delay, remaining(call)), call.signal);
      } finally {
        if (conn) pool.release(conn);
      }
    }
  }

  /** An exclusive connection to the master of `key`'s slot (of the command's first key for blocking commands), or to any master. */
  async lease(key: Arg | undefined, args?: readonly Arg[]): Promise<LeaseHandle> {
    let slot: number | undefined;
    if (key !== undefined) slot = keySlot(key);
    else if (args && args.length) {
      const keys = this.route(args).keys;
      if (keys.length) slot = keySlot(keys[0]!);
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
