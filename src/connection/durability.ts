/**
 * Durable acknowledgements at the connection level: the decisions behind "one WAIT per flush".
 *
 * `WAIT numreplicas timeout` blocks its connection until every write that connection sent
 * before it has reached `numreplicas` replicas (or `timeout` ms passed) and answers how many
 * replicas have them. So one WAIT written after the last durable write of a flush confirms all
 * of them: one replication round trip per batch, not per command. The connection holds the
 * replies of those writes until the WAIT answers; everything here is the pure part of that.
 */
import { transactionRole } from '../commands/traits.js';
import type { Reply } from '../types.js';

/** What a durable write asks for: `replicas` replicas must confirm it within `timeout` ms. */
export interface Durability {
  readonly replicas: number;
  readonly timeout: number;
  /** Where the outcome is counted (the pool's stats); optional so a connection can run without one. */
  readonly stats?: DurabilityCounters;
}

/** What `stats().durability` reports. */
export interface DurabilityStats {
  /** WAIT commands sent (one per flush of writes, per distinct `replicas`/`timeout`). */
  waits: number;
  /** Writes resolved after their WAIT confirmed them. */
  confirmed: number;
  /** Writes rejected with `DurabilityError` (too few replicas confirmed, or WAIT failed). */
  durabilityErrors: number;
  /** Writes whose connection closed before their WAIT answered (`UncertainWriteError`). */
  uncertain: number;
  /** From queueing a WAIT to its reply, in ms: the replication round trip a durable write pays. */
  waitTime: {
    /** The latest WAIT's. */
    last: number;
    /** Mean over every WAIT answered. */
    mean: number;
    /** The longest so far. */
    max: number;
  };
}

/** Counters of one pool; connections add to them as WAITs answer. */
export class DurabilityCounters {
  private waits = 0;
  private answered = 0;
  private confirmed = 0;
  private failed = 0;
  private uncertain = 0;
  private totalMs = 0;
  private lastMs = 0;
  private maxMs = 0;

  /** @internal A WAIT was written. */
  sent(): void {
    this.waits++;
  }

  /** @internal A WAIT answered after `ms`, confirming `confirmed` writes and failing `failed`. */
  answer(ms: number, confirmed: number, failed: number): void {
    this.answered++;
    this.totalMs += ms;
    this.lastMs = ms;
    if (ms > this.maxMs) this.maxMs = ms;
    this.confirmed += confirmed;
    this.failed += failed;
  }

  /** @internal `n` writes lost their WAIT to a closed connection (or WAIT failed without a reply). */
  lost(n: number, failed: boolean): void {
    if (failed) this.failed += n;
    else this.uncertain += n;
  }

  /** A snapshot for `stats()`. */
  snapshot(): DurabilityStats {
    return {
      waits: this.waits,
      confirmed: this.confirmed,
      durabilityErrors: this.failed,
      uncertain: this.uncertain,
      waitTime: { last: this.lastMs, mean: this.answered ? Math.round((this.totalMs / this.answered) * 100) / 100 : 0, max: this.maxMs },
    };
  }
}

/**
 * The `timeout` argument of a WAIT: the durability timeout, but never past the earliest deadline
 * of the writes it confirms (the WAIT counts within each call's one deadline). `earliest` is the
 * earliest deadline in epoch ms (0 = none). Never 0: `WAIT n 0` would block forever.
 */
export function waitTimeout(timeout: number, earliest: number, now: number): number {
  if (earliest === 0) return timeout;
  return Math.max(1, Math.min(timeout, earliest - now));
}

/**
 * Whether a write's reply must wait for its WAIT. An error reply (applied nothing, or the caller
 * must see it anyway) is delivered at once, and so is EXEC's null (WATCH aborted the
 * transaction: nothing was written).
 */
export function needsConfirmation(name: string, reply: Reply): boolean {
  if (reply === null && transactionRole(name) === 'end') return false;
  return true;
}

/** How a WAIT's answer settles the writes it covers. */
export type WaitOutcome =
  | { kind: 'confirmed'; replicas: number }
  | { kind: 'short'; replicas: number }
  | { kind: 'failed'; error: Error };

/**
 * Reads a WAIT reply against `required`: at least that many replicas -> confirmed; fewer ->
 * short (the writes ran on the master only); an error reply (WAIT denied by ACL, or sent to a
 * replica) or anything that is not a count -> failed.
 */
export function waitOutcome(reply: Reply | Error, required: number): WaitOutcome {
  if (reply instanceof Error) return { kind: 'failed', error: reply };
  const n = typeof reply === 'number' ? reply : typeof reply === 'bigint' ? Number(reply) : NaN;
  if (!Number.isInteger(n) || n < 0) return { kind: 'failed', error: new Error(`WAIT answered ${String(reply)}, not a replica count`) };
  return n >= required ? { kind: 'confirmed', replicas: n } : { kind: 'short', replicas: n };
}

/** What a DurabilityError says for a short WAIT: what happened, where, and what to do. */
export function shortMessage(command: string, label: string, replicas: number, required: number, timeout: number): string {
  const advice = replicas === 0
    ? "Check that this master has linked replicas (INFO replication: connected_slaves) that keep up: a replica that is linked but stalled confirms nothing either. Without them durability.replicas cannot be met"
    : "Check the replicas' links and lag (INFO replication), or lower durability.replicas / raise durability.timeout";
  return `${command} ran on ${label}, but only ${replicas} of ${required} replicas confirmed it within ${timeout} ms (WAIT); it is on the master only, ` +
    `would be lost if that master failed now, and was not re-sent. ${advice}.`;
}
