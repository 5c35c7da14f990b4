import type { CommandInfo } from '../commands/command-table.js';
import { classifierFor, type CommandClassifier } from '../commands/traits.js';
import type { ResolvedCall } from '../pool/call-options.js';
import type { Durability, DurabilityCounters } from '../pool/durability.js';
import { resolveCall, type BatchResult, type Dispatcher, type LeaseHandle } from '../pool/surface.js';
import type { CallOptions } from '../pool/call-options.js';
import { HELPERS, type ScanOptions } from '../commands/helpers.js';
import type { KeyPrefixer } from '../commands/key-prefix.js';
import { prefixedScan } from '../commands/scan-iterators.js';
import { withinDeadline } from '../retry.js';
import type { Arg, NodeAddress, Reply } from '../types.js';
import type { ClusterHost } from './cluster-host.js';
import { runPipeline } from './cluster-pipeline.js';
import { runTransaction } from './cluster-transaction.js';
import { newFlight } from './flight.js';
import { FlightRunner } from './flight-runner.js';
import { crossSlotError, mergeFanout, mergeSplit, type SplitPart } from './plan.js';
import { fanoutTargets, keylessRefusal, Router, slotNotServed, type Route } from './route.js';
import { keySlot } from './slot.js';
import { settle } from '../pool/settle.js';

export type { ClusterHost } from './cluster-host.js';


/**
 * The cluster's {@link Dispatcher}: routes commands by slot (see {@link Router}) and runs
 * them with {@link FlightRunner}, which follows MOVED/ASK/TRYAGAIN/CLUSTERDOWN and retries
 * after connection errors within one deadline per command.
 *
 * A command waiting to retry (in a backoff, or for a connection to a node that does not
 * answer) wakes up as soon as the slot map changes so that it now routes to another node (its
 * backoff then starts over), or, after a cluster-wide error such as CLUSTERDOWN, on any change
 * of the map. While a command retries after a node-level failure the topology polls the map
 * every `refresh.minInterval`, so a promoted replica is used within about one interval.
 *
 * Keys spanning slots: MGET/MSET/DEL/UNLINK/EXISTS/TOUCH are split per slot (unless
 * `splitMultiKey` is false: then the server answers CROSSSLOT); every other command, blocking
 * ones included, is refused with CrossSlotError before anything is sent. Pipelines may span
 * nodes ({@link runPipeline}); transactions run on one slot's master ({@link runTransaction}).
 */
export class ClusterDispatcher implements Dispatcher {
  readonly commandTimeout: number;
  readonly retryWindow: number;
  /** Writes go to masters only; each node's lane flush gets its own WAIT. */
  readonly durability: Durability | undefined;
  readonly durabilityCounters: DurabilityCounters;
  /** Traits by the cluster's own table (the servers' `COMMAND` once loaded). */
  readonly classifier: CommandClassifier;
  private readonly router: Router;
  private readonly runner: FlightRunner;

  constructor(private readonly h: ClusterHost) {
    this.commandTimeout = h.o.data.commandTimeout;
    this.retryWindow = h.o.data.connectTimeout;
    this.durability = h.o.durability;
    this.durabilityCounters = h.o.durabilityCounters;
    this.classifier = classifierFor(h.registry);
    const zones = h.zones;
    this.router = new Router(h.registry, h.o, () => h.topology.map, zones && {
      zones,
      failing: (n) => h.topology.connectError(n) !== undefined,
      wake: (n) => {
        if (h.isClosed()) return;
        try {
          void h.topology.pool(n).lane().catch(() => {});
        } catch {
          // The topology closed meanwhile: nothing to wake.
        }
      },
    });
    this.runner = new FlightRunner(h, this.router);
  }

  async dispatch(args: Arg[], call: ResolvedCall): Promise<Reply> {
    const r = this.router.route(args, call.traits);
    if (r.slot === undefined) {
      const refusal = keylessRefusal(r);
      if (refusal) throw refusal;
    }
    const policy = r.info?.requestPolicy;
    if (policy === 'all_shards' || policy === 'all_nodes') return this.fanout(args, r.info!, call);
    const plan = this.router.multiSlot(args, r);
    if (plan.action === 'refuse') throw plan.error;
    if (plan.action === 'split') return this.split(args, r, plan.parts, call);
    return this.runner.run(newFlight(args, r), call);
  }

  /** MGET/MSET/DEL/UNLINK/EXISTS/TOUCH across slots: one command per slot, in parallel, merged in key order. */
  private async split(args: Arg[], r: Route, parts: SplitPart[], call: ResolvedCall): Promise<Reply> {
    const results = await Promise.all(
      parts.map((p) => settle(this.runner.run(newFlight([args[0]!, ...p.args], { ...r, slot: p.slot }), call))),
    );
    return mergeSplit(r.name, parts, results);
  }

  /** `all_shards` / `all_nodes` commands: sent to every master (and healthy replica for all_nodes), merged per `response_policy`. */
  private async fanout(args: Arg[], info: CommandInfo, call: ResolvedCall): Promise<Reply> {
    const targets = fanoutTargets(this.h.topology.map, info.requestPolicy);
    if (targets.length === 0) throw slotNotServed(0);
    const replies = await Promise.all(targets.map((t) => settle(this.sendTo(t, args, call))));
    // RANDOMKEY is `response_policy:special` from Redis 7.2 on (7.0: none): its special handling
    // is "one key of any node", what the default merge (first non-null reply) gives.
    return mergeFanout(info.name === 'randomkey' ? undefined : info.responsePolicy, replies);
  }

  /** SCAN on every master serving slots, one after the other (the keys of a cluster are spread over them). */
  async *scanEveryNode(options: ScanOptions | undefined, callOptions: CallOptions | undefined, keyPrefix: KeyPrefixer | undefined): AsyncIterableIterator<string> {
    const o = prefixedScan(options, keyPrefix);
    for (const m of this.h.topology.map.masters({ withSlots: true })) {
      let cursor = '0';
      do {
        const spec = HELPERS.scan(cursor, o);
        const reply = await this.sendTo(m, spec.args, resolveCall(this, callOptions, undefined));
        const [next, keys] = spec.transform!(reply) as [string, string[]];
        cursor = next;
        for (const k of keys) yield keyPrefix ? keyPrefix.strip(k) : k;
      } while (cursor !== '0');
    }
  }

  /** Sends a command to one given node (SCAN per master), without redirects. */
  sendTo(node: NodeAddress, args: Arg[], call: ResolvedCall): Promise<Reply> {
    return this.runner.sendOn(this.h.topology.pool(node), args, call, false);
  }

  /**
   * A blocking command on an exclusive connection, following MOVED/ASK/TRYAGAIN/CLUSTERDOWN as
   * any command does: those replies prove it did not run. Its keys must share one slot.
   */
  runBlocking(args: Arg[], call: ResolvedCall): Promise<Reply> {
    const r = this.router.route(args, call.traits);
    const plan = this.router.multiSlot(args, r);
    // Never split: a BLPOP over several nodes would pop twice.
    if (plan.action === 'refuse') return Promise.reject(plan.error);
    if (plan.action === 'split') return Promise.reject(crossSlotError(r.name, plan.parts.map((p) => p.slot)));
    return this.runner.run(newFlight(args, r), call, true);
  }

  dispatchBatch(cmds: Arg[][], call: ResolvedCall, transaction: boolean): Promise<BatchResult | null> {
    return transaction ? runTransaction(this.runner, cmds, call) : runPipeline(this.runner, cmds, call);
  }

  /**
   * An exclusive connection to the master of `key`'s slot (of the command's keys for blocking
   * commands: they must share one slot, else CrossSlotError before anything is sent), or to
   * any master.
   */
  async lease(key: Arg | undefined, args?: readonly Arg[], deadline = 0): Promise<LeaseHandle> {
    let slot: number | undefined;
    if (key !== undefined) slot = keySlot(key);
    else if (args && args.length) {
      const r = this.router.route(args);
      const plan = this.router.multiSlot(args, r);
      // Blocking commands are never split (a BLPOP over several nodes would pop twice).
      if (plan.action === 'refuse') throw plan.error;
      if (plan.action === 'split') throw crossSlotError(r.name, plan.parts.map((p) => p.slot));
      if (r.keys.length) slot = keySlot(r.keys[0]!);
    }
    // One deadline covers the wait for a refresh and the wait for a connection.
    const budget = Date.now() + this.h.o.pool.acquireTimeoutMillis;
    const until = deadline > 0 ? Math.min(deadline, budget) : budget;
    let address = this.router.masterOf(slot);
    if (!address) {
      await withinDeadline(this.h.topology.refreshed(), { deadline: until }, () => `No node serves slot ${slot ?? 0} and the slot map refresh did not finish within the deadline; nothing was sent.`);
      address = this.router.masterOf(slot);
      if (!address) throw slotNotServed(slot ?? 0);
    }
    const pool = this.h.topology.pool(address);
    const conn = await pool.acquire(until);
    return { conn, release: () => pool.release(conn), detach: () => pool.detach(conn) };
  }
}
