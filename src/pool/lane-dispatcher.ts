import { builtinClassifier } from '../commands/traits.js';
import { sendTraced } from '../diagnostics.js';
import { NodeUnreachableError, overloadError, QueueFullError } from '../errors.js';
import { noneWritten, withinDeadline } from '../retry.js';
import { formatAddress, type Arg, type Reply } from '../types.js';
import type { Connection } from '../connection/connection.js';
import type { ResolvedCall } from './call-options.js';
import type { NodePool } from './node-pool.js';
import type { Durability, DurabilityCounters } from './durability.js';
import { runBatchOn } from './batch.js';
import { retryCallOrThrow, type BatchResult, type Dispatcher, type LeaseHandle } from './call.js';

/**
 * A ready lane of `node` within the call's deadline: the one way every mode waits for a
 * connection. With `failFast` (offlineQueue: false), a node whose last connection attempt
 * failed refuses at once with `NodeUnreachableError`, while reconnecting goes on behind.
 * Errors name the node, say nothing was sent and keep the last connection error as cause.
 */
export function laneWithin(node: NodePool, call: ResolvedCall, args: readonly Arg[], failFast: boolean, role = ''): Promise<Connection> {
  const target = node.target;
  const last = node.lastError;
  if (failFast && last !== undefined) {
    node.lane().catch(() => {}); // keep trying to reconnect
    return Promise.reject(new NodeUnreachableError(
      `${String(args[0])} was not sent: ${role}${formatAddress(target)} is unreachable (last attempt: ${last.message}) and offlineQueue is false.`,
      { cause: last, address: { ...target } },
    ));
  }
  // Commands waiting for a connection are a queue too: bounded like a connection's own.
  if (node.laneWaiters >= node.maxPending) {
    return Promise.reject(overloadError(`${String(args[0])} was not sent: ${node.laneWaiters} commands already wait for a connection to ${role}${formatAddress(target)} (maxPending ${node.maxPending}).`));
  }
  node.laneWaiters++;
  const done = () => void node.laneWaiters--;
  const p = withinDeadline(
    node.lane(),
    call,
    () => `${String(args[0])} could not reach ${role}${formatAddress(target)} within its deadline` + (node.lastError ? ` (last attempt: ${node.lastError.message})` : '') + '; it was not sent.',
    () => ({ cause: node.lastError, address: { ...target } }),
  );
  p.then(done, done);
  return p;
}

/**
 * Runs commands on one node pool: `call()` over the multiplexed lane, retrying on a fresh
 * connection what provably was not sent (and written read-only or idempotent commands)
 * until the call's deadline. Without a deadline, retries stop after `connectTimeout`.
 */
export class LaneDispatcher implements Dispatcher {
  /** The built-in command table's traits (a standalone server or a Sentinel master loads no table of its own). */
  readonly classifier = builtinClassifier();

  constructor(
    protected readonly node: NodePool,
    readonly commandTimeout: number,
    readonly retryWindow: number,
    private readonly isClosed: () => boolean,
    protected readonly failFast = false,
    readonly durability: Durability | undefined = undefined,
    readonly durabilityCounters: DurabilityCounters | undefined = undefined,
  ) {}

  dispatch(args: Arg[], call: ResolvedCall): Promise<Reply> {
    // Hot path: a ready lane, no async frame; failures go to the retry loop.
    const conn = this.node.laneSync();
    if (conn === undefined) return this.dispatchSlow(args, call, false, undefined);
    return sendTraced(conn, args, call, 1).then(undefined, (err: unknown) => {
      // A full connection is never retried: refuse without the retry loop's frame (a burst
      // against a stopped node refuses thousands, and each should cost next to nothing).
      if (err instanceof QueueFullError) throw err;
      return this.dispatchSlow(args, call, true, err);
    });
  }

  private async dispatchSlow(args: Arg[], call: ResolvedCall, failed: boolean, firstError: unknown): Promise<Reply> {
    const started = Date.now();
    if (failed) this.retryOrThrow(firstError, args, call, started);
    let attempt = failed ? 1 : 0;
    for (;;) {
      try {
        const conn = this.node.laneSync() ?? (await this.laneFor(call, args));
        return await sendTraced(conn, args, call, ++attempt);
      } catch (err) {
        this.retryOrThrow(err, args, call, started);
      }
    }
  }

  /** Throws unless the failed attempt may be retried within the call's budget (the rule of retry.ts). */
  protected retryOrThrow(err: unknown, args: readonly Arg[], call: ResolvedCall, started: number): void {
    retryCallOrThrow(err, args, call, { started, window: this.retryWindow, address: this.node.target, closed: this.isClosed() });
  }

  /** A lane for this attempt, or undefined when connecting failed in a way that may be retried (else it throws). */
  protected async tryLane(call: ResolvedCall, args: readonly Arg[], started: number): Promise<Connection | undefined> {
    try {
      return this.node.laneSync() ?? (await this.laneFor(call, args));
    } catch (err) {
      this.retryOrThrow(err, args, call, started);
      return undefined;
    }
  }

  protected laneFor(call: ResolvedCall, args: readonly Arg[]): Promise<Connection> {
    return laneWithin(this.node, call, args, this.failFast);
  }

  async dispatchBatch(cmds: Arg[][], call: ResolvedCall, transaction: boolean): Promise<BatchResult | null> {
    if (transaction) {
      const h = await this.lease(undefined, undefined, call.deadline);
      try {
        return await runBatchOn(h.conn, cmds, call, true);
      } finally {
        h.release();
      }
    }
    const started = Date.now();
    let attempt = 0;
    for (;;) {
      const conn = await this.tryLane(call, ['PIPELINE'], started);
      if (conn === undefined) continue;
      const results = (await runBatchOn(conn, cmds, call, false, ++attempt))!;
      if (noneWritten(results)) {
        this.retryOrThrow(results[0], ['PIPELINE'], call, started);
        continue;
      }
      return results;
    }
  }

  async lease(_key?: Arg, _args?: readonly Arg[], deadline = 0): Promise<LeaseHandle> {
    const conn = await this.node.acquire(deadline);
    return { conn, release: () => this.node.release(conn), detach: () => this.node.detach(conn) };
  }
}
