/**
 * The call contract: what a mode's dispatcher offers the command surface (pools, views,
 * batches, leases), and how one call's options are resolved before it is dispatched. Below
 * the surface and the dispatchers alike, so neither imports the other.
 */
import type { Connection } from '../connection/connection.js';
import type { CommandSpec, ScanOptions } from '../commands/helpers.js';
import type { KeyPrefixer } from '../commands/key-prefix.js';
import type { ClientCache } from '../cache/client-cache.js';
import { carried } from '../commands/traits.js';
import { retryOrThrow } from '../retry.js';
import type { NodeAddress } from '../types.js';
import type { CommandClassifier, CommandTraits } from '../commands/traits.js';
import type { Arg, Reply } from '../types.js';
import type { CallOptions, ResolvedCall } from './call-options.js';
import { effectiveDurability, type Durability, type DurabilityCounters } from './durability.js';

/** What a pipeline's or transaction's `exec()` resolves to: per command, its value or its error. */
export type BatchResult = Array<Reply | Error>;

/** A borrowed connection, as the pool lends it. */
export interface LeaseHandle {
  conn: Connection;
  release(): void;
  /**
   * Takes the connection out of the exclusive pool for good instead of releasing it (for
   * `pool.dedicated()`); its holder closes it. Absent where a mode cannot offer it.
   */
  detach?(): void;
}

/** How a mode runs commands. Pools, views and batches are thin layers over this. */
export interface Dispatcher {
  /** Runs one command, with retries as the mode allows. */
  dispatch(args: Arg[], call: ResolvedCall): Promise<Reply>;
  /** Runs a pipeline (`transaction` false) or MULTI/EXEC (true; null when WATCH aborted it). */
  dispatchBatch(commands: Arg[][], call: ResolvedCall, transaction: boolean): Promise<BatchResult | null>;
  /**
   * Borrows an exclusive connection (to the node owning `key`, in a cluster). `args` is the
   * command a blocking call will send, so a cluster can route it by its keys.
   */
  lease(key: Arg | undefined, args?: readonly Arg[], deadline?: number): Promise<LeaseHandle>;
  /** Default deadline of a call in ms (0 = none). */
  readonly commandTimeout: number;
  /** How long a call without a deadline may keep retrying (ms; the pool's `connectTimeout`). */
  readonly retryWindow?: number;
  /**
   * The pool's `durability` (undefined = off, and always for dispatchers that only read, such as
   * Sentinel `role: 'replica'`: a WAIT never goes to a replica).
   */
  readonly durability?: Durability | undefined;
  /** True when this dispatcher talks to replicas only: no call's `durability` applies (WAIT there would fail). */
  readonly replicasOnly?: boolean;
  /** Where a call's own `with({ durability })` is counted (the pool's stats), also while the pool's is off. */
  readonly durabilityCounters?: DurabilityCounters;
  /** The pool's client-side cache, when `cache` is on (`call()` and the helpers go through it). */
  cache?: ClientCache;
  /**
   * Where the traits of this mode's commands come from: a table of its own (a cluster loads
   * the servers' `COMMAND`); without one, the built-in table's.
   */
  readonly classifier?: CommandClassifier;
  /**
   * Runs a blocking command on an exclusive connection with the mode's redirect handling (a
   * cluster follows MOVED/ASK/CLUSTERDOWN). Without it, the command is sent once on a lease.
   */
  runBlocking?(args: Arg[], call: ResolvedCall): Promise<Reply>;
  /**
   * Iterates over the keys of every node that holds a share of them (a cluster: every master),
   * for `scanIterator()` on pools and views; without it, SCAN goes through `dispatch` (one node).
   */
  scanEveryNode?(options: ScanOptions | undefined, call: CallOptions | undefined, keyPrefix: KeyPrefixer | undefined): AsyncIterableIterator<string>;
}

/** Commands sent around the client-side cache drop the entries of the keys they write (`traits`: theirs, in order). */
export function noteWrites(d: Dispatcher, cmds: Arg[][], traits?: readonly CommandTraits[]): Arg[][] {
  const cache = d.cache;
  if (cache !== undefined) for (let i = 0; i < cmds.length; i++) cache.noteWrite(cmds[i]!, traits?.[i]);
  return cmds;
}

/**
 * Builds the resolved options of one call. `traits`: those of the one command the call sends
 * (they travel with it to the dispatcher and the connection); none for a batch, whose
 * commands' traits go in `batch`.
 */
export function resolveCall(d: Dispatcher, o: CallOptions | undefined, blockSecs: number | undefined, traits?: CommandTraits): ResolvedCall {
  let budget = o?.timeout ?? d.commandTimeout;
  const blocking = blockSecs !== undefined;
  if (blocking) budget = blockSecs === 0 || budget === 0 ? 0 : budget + blockSecs * 1000;
  return {
    signal: o?.signal,
    deadline: budget > 0 ? Date.now() + budget : 0,
    returnBuffers: o?.returnBuffers ?? false,
    idempotent: o?.idempotent ?? false,
    blocking,
    budget,
    patience: o?.timeout !== undefined ? budget : 0,
    durability: o?.durability === undefined || d.replicasOnly ? d.durability : effectiveDurability(d.durability, o.durability, d.durabilityCounters),
    durable: undefined,
    traits,
  };
}

/** Marks `call` as the call of a durable write when it asks for durability and its command (`call.traits`) needs a WAIT. */
export function markDurable(call: ResolvedCall, traits: CommandTraits): ResolvedCall {
  if (call.durability !== undefined && traits.durable) call.durable = call.durability;
  return call;
}

export function applyTransform(spec: CommandSpec, value: Reply): unknown {
  return spec.transform ? spec.transform(value) : value;
}

/** Races are retry.ts's (the one timer race and its signal counterpart). */
export { abortable } from '../retry.js';

/**
 * The retry rule (retry.ts) after a failed attempt of `call`: every dispatcher describes the
 * attempt the same way, from the call itself. Throws unless it may go again now.
 */
export function retryCallOrThrow(
  err: unknown,
  args: readonly Arg[],
  call: ResolvedCall,
  at: { started: number; window: number; address: NodeAddress; closed: boolean; role?: string; readOnly?: boolean },
): void {
  retryOrThrow(err, {
    name: String(args[0]),
    deadline: call.deadline,
    signal: call.signal,
    idempotent: call.idempotent,
    readOnly: at.readOnly ?? carried(call.traits, args).readOnly,
    started: at.started,
    window: at.window,
    address: at.address,
    role: at.role,
    closed: at.closed,
  });
}
