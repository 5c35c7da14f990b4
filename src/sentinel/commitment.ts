import type { NodeAddress } from '../types.js';
import type { MasterView } from './master-view.js';

/** One sentinel's answer: the master it names and the config epoch of its configuration. */
export interface SentinelVote {
  address: NodeAddress;
  /** Undefined when the sentinel could not report it (a user not allowed `SENTINEL MASTER`). */
  epoch: number | undefined;
}

/** What a majority of the sentinels the pool knows has committed to. */
export type Commitment =
  /** A majority names the master the pool follows. `epoch`: the newest of their epochs. */
  | { kind: 'current'; epoch: number | undefined; confirmedBy: number }
  /** A majority names another master, from a configuration newer than the followed one: the failover is committed. */
  | { kind: 'moved'; address: NodeAddress; epoch: number | undefined; confirmedBy: number }
  /**
   * A majority names another master, but not from a newer configuration: only sentinels whose
   * epochs restarted (reset, rebuilt) say that. Followed only once the current master itself
   * says it is a replica.
   */
  | { kind: 'older'; address: NodeAddress; epoch: number | undefined; confirmedBy: number }
  /** No address has a majority (sentinels unreachable, split or still disagreeing). `confirmedBy`: the largest group. */
  | { kind: 'none'; confirmedBy: number };

/** Sentinels that make a majority of `known` (the configured and discovered set, not only those answering). */
export function majorityOf(known: number): number {
  return Math.floor(Math.max(known, 1) / 2) + 1;
}

const same = (a: NodeAddress, b: NodeAddress) => a.host === b.host && a.port === b.port;

/**
 * Whether `epoch` comes from a configuration newer than the followed one. Without epochs on
 * either side (a sentinel user without `SENTINEL MASTER`) only the count of votes can decide.
 */
function newer(epoch: number | undefined, followed: number | undefined): boolean {
  return epoch === undefined || followed === undefined || epoch > followed;
}

/**
 * What the answers of the sentinels commit the pool to. Pure: tested by tables.
 *
 * Sentinel keeps a failover only when the other sentinels adopt the leader's new
 * configuration; a promotion the leader made and never broadcast (it was paused, killed or cut
 * off in between) is turned back, or replaced by another. Counting votes against every known
 * sentinel (a silent one counts as not naming the new master) is what tells the two apart:
 * one sentinel, whatever it says, is one voice.
 */
export function judgeCommitment(view: MasterView, votes: readonly SentinelVote[], known: number): Commitment {
  const need = majorityOf(known);
  const groups: Array<{ address: NodeAddress; all: number; newer: number; epoch: number | undefined; newest: number | undefined }> = [];
  for (const v of votes) {
    let g = groups.find((x) => same(x.address, v.address));
    if (!g) groups.push(g = { address: v.address, all: 0, newer: 0, epoch: undefined, newest: undefined });
    g.all++;
    if (v.epoch !== undefined && (g.epoch === undefined || v.epoch > g.epoch)) g.epoch = v.epoch;
    if (newer(v.epoch, view.epoch)) {
      g.newer++;
      if (v.epoch !== undefined && (g.newest === undefined || v.epoch > g.newest)) g.newest = v.epoch;
    }
  }
  let largest = 0;
  for (const g of groups) {
    largest = Math.max(largest, g.all);
    if (same(g.address, view.address)) {
      if (g.all >= need) return { kind: 'current', epoch: g.epoch, confirmedBy: g.all };
      continue;
    }
    if (g.newer >= need) return { kind: 'moved', address: { ...g.address }, epoch: g.newest, confirmedBy: g.newer };
    if (g.all >= need) return { kind: 'older', address: { ...g.address }, epoch: g.epoch, confirmedBy: g.all };
  }
  return { kind: 'none', confirmedBy: largest };
}

/**
 * Whether the answers gathered so far already decide: one address is named by a majority of
 * the known sentinels, so no other can be. Lets a poll stop waiting for silent sentinels.
 */
export function decided(votes: readonly SentinelVote[], known: number): boolean {
  const need = majorityOf(known);
  const counts = new Map<string, number>();
  for (const v of votes) {
    const k = `${v.address.host}:${v.address.port}`;
    const n = (counts.get(k) ?? 0) + 1;
    if (n >= need) return true;
    counts.set(k, n);
  }
  return false;
}

/**
 * The master a majority of the known sentinels names (with the newest epoch among its voters),
 * or undefined when none has a majority: what a pool starts on with `failoverCommit: 'majority'`.
 */
export function majorityMaster(votes: readonly SentinelVote[], known: number): { address: NodeAddress; epoch: number | undefined; confirmedBy: number } | undefined {
  const need = majorityOf(known);
  for (const v of votes) {
    const voters = votes.filter((w) => same(w.address, v.address));
    if (voters.length < need) continue;
    let epoch: number | undefined;
    for (const w of voters) if (w.epoch !== undefined && (epoch === undefined || w.epoch > epoch)) epoch = w.epoch;
    return { address: { ...v.address }, epoch, confirmedBy: voters.length };
  }
  return undefined;
}
