import type { NodePool } from '../pool/node-pool.js';
import type { NodeAddress } from '../types.js';
import type { Gate } from './gate.js';
import type { ResolvedSentinelOptions } from './options.js';

/**
 * How a master switch was noticed: a sentinel message, the periodic poll, a READONLY reply, a
 * reconnect, or `'promotion'`: the pool saw the replica promoted itself (Sentinel killed the
 * pool's watch connection to it and ROLE then said master), whoever led the failover.
 */
export type DetectedBy = 'pubsub' | 'poll' | 'readonly' | 'reconnect' | 'promotion';

/** Emitted once per master switch, after the pool points at the new master and no command can reach the old one. */
export interface FailoverEvent {
  /** The monitored master's name, as given to `create()`. */
  masterName: string;
  /** The old master. */
  from: NodeAddress;
  /** The new master, verified with ROLE; commands go here from now on. */
  to: NodeAddress;
  /** What noticed the switch: a sentinel message, the periodic poll, a READONLY reply, a reconnect, or the promotion itself. */
  detectedBy: DetectedBy;
  /** Epoch ms of the switch. */
  at: number;
  /**
   * True when writes to the old master stopped before the promotion (the write fence, engaged
   * by the failover leader's messages): no acknowledged write can be lost to this failover.
   * False when the switch was detected after the promotion; see `blindMs`.
   */
  fenced: boolean;
  /**
   * How long (ms) the old master could still take writes after the promotion, before the pool
   * stopped sending to it: writes acknowledged in that window (and those in flight) are lost
   * when the old master resyncs. 0 when fenced; undefined when the pool cannot tell (it did
   * not see the promotion itself, e.g. `watchReplicas: false`).
   */
  blindMs: number | undefined;
  /**
   * Config epoch of the configuration followed from now on. With `failoverCommit: 'promotion'`,
   * a switch made on the promotion itself, before any sentinel named the new master, carries the
   * old epoch plus one half (newer than the old configuration, older than the one the failover
   * creates); 0 when the sentinels report no epoch (a user not allowed `SENTINEL MASTER`).
   */
  epoch: number;
  /** How many sentinels named the new master when the pool switched (0: a switch on the promotion itself). */
  confirmedBy: number;
  /** How long (ms) writes were held before the switch (0 when they were not). */
  heldMs: number;
}

/**
 * What Sentinel's dispatchers need from the pool: the master's node pool, the gate that holds
 * commands during a switch, the options, and the hooks that start a re-check or pick a replica.
 * The pool hands its dispatchers this, not itself, so neither module imports the other.
 */
export interface SentinelHost {
  /** The master's node pool (its target moves with failovers). */
  readonly node: NodePool;
  readonly gate: Gate;
  readonly o: ResolvedSentinelOptions;
  isClosed(): boolean;
  /** True while the write fence holds writes (reads may still go to the old master). */
  isFenced(): boolean;
  /** Asks for the master again; with `hold`, new commands wait until it is confirmed. */
  requestRefresh(reason: DetectedBy, hold: boolean): void;
  /** Healthy replicas known now. */
  replicaCount(): number;
  /** The replica pool for the next read (or the master's, per `replicaFallback`); throws a not-sent ConnectionError when none may serve. */
  pickReplica(): NodePool;
}
