import type { NodeAddress } from '../types.js';

/** The master a pool follows and the config epoch of the configuration that named it. */
export interface MasterView {
  address: NodeAddress;
  /**
   * Config epoch of the followed configuration; undefined when the sentinels do not report one.
   * After a switch the pool detected itself (before any sentinel announced it), the old epoch
   * plus one half: newer than the old configuration, older than the one the failover creates.
   */
  epoch: number | undefined;
}

/** What a sentinel's answer means for the pool following `view`. */
export type AnswerVerdict =
  /** It names the master the pool follows. */
  | 'same'
  /** It names another master with a newer configuration (or epochs are unknown): check it with ROLE and follow it. */
  | 'newer'
  /** It names another master from an older configuration: a sentinel that has not caught up. Never followed while the current master still answers ROLE master. */
  | 'stale';

/**
 * Judges one sentinel answer against the followed view. Pure: tested by tables.
 * An old master that still answers ROLE master is no evidence: only the epoch orders views.
 */
export function judgeAnswer(view: MasterView, answer: { address: NodeAddress; epoch: number | undefined }): AnswerVerdict {
  if (view.address.host === answer.address.host && view.address.port === answer.address.port) return 'same';
  if (view.epoch === undefined || answer.epoch === undefined) return 'newer';
  return answer.epoch > view.epoch ? 'newer' : 'stale';
}

/**
 * The epoch to follow after a switch: the announcing configuration's; when the pool switched
 * before any sentinel announced the new configuration (it saw the promotion, or the fence's
 * candidate answered ROLE master first), a provisional one between the old epoch and the next.
 */
export function epochAfterSwitch(previous: number | undefined, announced: number | undefined): number | undefined {
  if (announced !== undefined) return announced;
  return previous === undefined ? undefined : Math.floor(previous) + 0.5;
}

/**
 * Whether writes stopped reaching the old master before the promotion, and for how long the
 * old master could take writes the new one never receives (the blind window, ms).
 * `fencedAt`: when the write fence engaged (a sentinel announced the failover); `promotedAt`:
 * when the promotion was seen on the promoted replica (its connections killed); `stoppedAt`:
 * when the pool stopped sending to the old master (held writes or switched).
 */
export function blindWindow(fencedAt: number | undefined, promotedAt: number | undefined, stoppedAt: number): { fenced: boolean; blindMs: number | undefined } {
  if (fencedAt !== undefined && (promotedAt === undefined || fencedAt <= promotedAt)) return { fenced: true, blindMs: 0 };
  if (promotedAt === undefined) return { fenced: false, blindMs: undefined };
  return { fenced: false, blindMs: Math.max(0, stoppedAt - promotedAt) };
}
