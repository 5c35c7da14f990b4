import type { CommandInfo, CommandRegistry } from '../commands/command-table.js';
import { classifierFor, keysOf, type CommandTraits } from '../commands/traits.js';
import { RedisError, type CrossSlotError } from '../errors.js';
import type { Arg, NodeAddress } from '../types.js';
import type { ResolvedClusterOptions } from './options.js';
import { crossSlotError, isSplittable, splitBySlot, type SplitPart } from './plan.js';
import type { ClusterNode, Shard, SlotMap } from './slot-map.js';
import type { ZoneTracker } from '../pool/zones.js';
import { keySlot } from './slot.js';

/** How one command is routed. */
export interface Route {
  /** Lower-case command name. */
  name: string;
  /** The command's traits (undefined for a route made for a whole transaction). */
  traits?: CommandTraits | undefined;
  info: CommandInfo | undefined;
  /** Slot of the keys; undefined for a keyless command. */
  slot: number | undefined;
  readOnly: boolean;
}

/** A {@link Route} with the command's keys. */
export interface KeyedRoute extends Route {
  keys: Arg[];
}

/** How a multi-key command whose keys span slots is handled: sent as is, split into per-slot parts, or refused. */
export type MultiSlotPlan = { action: 'send' } | { action: 'split'; parts: SplitPart[] } | { action: 'refuse'; error: CrossSlotError };

const SEND: MultiSlotPlan = { action: 'send' };

/**
 * Name, command info (of the subcommand when there is one), keys, slot (of the first key) and
 * read-only flag, read from the command's traits (`t`: those the call carries; else worked out
 * from `registry`).
 */
export function routeCommand(registry: CommandRegistry, args: readonly Arg[], t?: CommandTraits): KeyedRoute {
  const traits = t ?? classifierFor(registry).of(args);
  const keys = keysOf(traits, args);
  let slot = keys.length ? keySlot(keys[0]!) : undefined;
  // PUBLISH reaches every node whichever receives it (the cluster bus broadcasts it), but
  // messages sent to different nodes can overtake each other: sent to the master of the
  // channel's slot, one channel's messages keep their order, as SPUBLISH's do.
  if (slot === undefined && traits.lower === 'publish' && args.length >= 2) slot = keySlot(args[1]!);
  return { name: traits.lower, traits, info: traits.info, keys, slot, readOnly: traits.readOnly };
}

/**
 * What to do with a command whose keys span slots. Redis Cluster refuses every such command
 * (CROSSSLOT), so: MGET/MSET/DEL/UNLINK/EXISTS/TOUCH are split per slot when `splitMultiKey`
 * is on (and sent as is when it is off, documented as "the server answers CROSSSLOT"); any
 * other command (MSETNX, RENAME, SMOVE, LMOVE, SINTERSTORE, EVAL, BLPOP, XREAD, …) is refused
 * with CrossSlotError before it is sent, whatever `splitMultiKey` says.
 */
export function planMultiSlot(args: readonly Arg[], r: KeyedRoute, splitMultiKey: boolean): MultiSlotPlan {
  if (r.keys.length < 2) return SEND;
  const first = keySlot(r.keys[0]!);
  let slots: Set<number> | undefined;
  for (let i = 1; i < r.keys.length; i++) {
    const s = keySlot(r.keys[i]!);
    if (s !== first) (slots ??= new Set([first])).add(s);
  }
  if (!slots) return SEND;
  if (isSplittable(r.name)) {
    if (!splitMultiKey) return SEND;
    // Malformed arguments (odd MSET) cannot be split: the server reports the error.
    const parts = splitBySlot(r.name, args.slice(1), keySlot);
    return parts ? { action: 'split', parts } : SEND;
  }
  return { action: 'refuse', error: crossSlotError(r.name, slots) };
}

/**
 * Why a command cannot go to "any master", or undefined when it can. SCAN is the one: its
 * cursor walks one node's keys and says nothing of the others, so the usual
 * `do … while (cursor !== '0')` loop would end having seen a third of a 3-master cluster's
 * keys, without an error. The iterators walk every master instead.
 */
export function keylessRefusal(r: Route): TypeError | undefined {
  if (r.name !== 'scan') return undefined;
  return new TypeError(
    'SCAN on a cluster would walk one node: its cursor covers that node\'s keys only, so a SCAN loop would miss the other masters\' keys. ' +
      'Use pool.scanIterator(), which walks every master, or walk one node on a lease: pool.use((lease) => …lease.scanIterator()…, { key }) scans the node serving key\'s slot. It was not sent.',
  );
}

/** The nodes an `all_shards` / `all_nodes` command goes to: every master serving slots, plus every healthy replica for `all_nodes`. */
export function fanoutTargets(map: SlotMap, requestPolicy: CommandInfo['requestPolicy']): ClusterNode[] {
  const masters = map.masters({ withSlots: true });
  if (requestPolicy !== 'all_nodes') return masters;
  return [...masters, ...map.shards.flatMap((s) => s.replicas).filter((n) => n.health !== 'failed' && n.health !== 'loading')];
}

/** The error of a command whose slot no node serves (after the one refresh it is worth). */
export function slotNotServed(slot: number): RedisError {
  return new RedisError(`CLUSTERDOWN Hash slot ${slot} is not served by any node, even after a topology refresh.`);
}

/** What zone-aware reads need besides the map: the zones, and which nodes fail to connect. */
export interface ReadAffinity {
  zones: ZoneTracker;
  /** True while connections to the node fail (it is passed over for reads). */
  failing(node: ClusterNode): boolean;
  /** Reconnect a failing node in our zone in the background, so reads return to it when it answers. */
  wake(node: ClusterNode): void;
}

/**
 * Routing against the live slot map: a command's route and multi-slot plan, and the node for
 * a route. Replicas and keyless commands share one round-robin counter.
 */
export class Router {
  private rr = 0;

  constructor(
    private readonly registry: CommandRegistry,
    private readonly o: Pick<ResolvedClusterOptions, 'readFrom' | 'splitMultiKey'>,
    private readonly map: () => SlotMap,
    /** Set with a zone-aware `readFrom`. */
    private readonly affinity?: ReadAffinity,
  ) {}

  /** See {@link routeCommand} (`t`: the traits the call carries); see {@link multiSlot} for keys that span slots. */
  route(args: readonly Arg[], t?: CommandTraits): KeyedRoute {
    return routeCommand(this.registry, args, t);
  }

  /** See {@link planMultiSlot}. */
  multiSlot(args: readonly Arg[], r: KeyedRoute): MultiSlotPlan {
    return planMultiSlot(args, r, this.o.splitMultiKey);
  }

  /** The node for a route: the slot's master, a replica for reads when configured, any master when keyless. */
  pick(route: Route, avoid: Set<string>): NodeAddress | undefined {
    if (route.slot === undefined) return this.anyMaster(avoid);
    const shard = this.map().shardForSlot(route.slot);
    if (!shard) return undefined;
    if (route.readOnly && this.affinity) return this.byZone(shard, avoid, this.affinity);
    if (route.readOnly && this.o.readFrom !== 'master' && shard.replicas.length > 0) {
      const ok = shard.replicas.filter((r) => r.health !== 'failed' && r.health !== 'loading');
      const usable = ok.filter((r) => !avoid.has(r.key));
      if (usable.length) return usable[this.rr++ % usable.length]!;
      // 'replica' stays on replicas while any is healthy; 'prefer-replica' falls back to the master.
      if (this.o.readFrom === 'replica' && ok.length) return ok[this.rr++ % ok.length]!;
    }
    return shard.master;
  }

  /**
   * A read by zone (see `chooseRead`): replicas the map reports failed or loading, that failed
   * this command already (`avoid`) or whose connections fail are passed over; the master is the
   * last resort. Counted in `stats().reads`.
   */
  private byZone(shard: Shard, avoid: Set<string>, a: ReadAffinity): NodeAddress {
    const usable = (n: ClusterNode) => n.health !== 'failed' && n.health !== 'loading' && !avoid.has(n.key) && !a.failing(n);
    const candidates = [shard.master, ...shard.replicas].map((n, i) => ({ node: n, address: n, primary: i === 0, healthy: usable(n) }));
    const choice = a.zones.choose(candidates, (n) => {
      // A node the map reports failed comes back through a refresh; one that only refused us is retried now.
      if (n.health !== 'failed' && !avoid.has(n.key)) a.wake(n);
    });
    if (!choice) return shard.master;
    a.zones.count(choice);
    return choice.node;
  }

  /** The master of `slot`, or any master for a keyless command (transactions and leases never go to replicas). */
  masterOf(slot: number | undefined, avoid?: Set<string>): NodeAddress | undefined {
    return slot === undefined ? this.anyMaster(avoid) : this.map().shardForSlot(slot)?.master;
  }

  /** A master serving slots, round robin, preferring healthy ones not in `avoid`; any master when none serves slots. */
  private anyMaster(avoid?: Set<string>): NodeAddress | undefined {
    const masters = this.map().masters({ withSlots: true }).filter((m) => m.health !== 'failed');
    const usable = avoid ? masters.filter((m) => !avoid.has(m.key)) : masters;
    const list = usable.length ? usable : masters.length ? masters : this.map().masters();
    return list.length ? list[this.rr++ % list.length] : undefined;
  }
}
