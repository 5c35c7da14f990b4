import { formatAddress, type NodeAddress } from '../types.js';
import type { DetectedBy } from './sentinel-host.js';

/**
 * Why writes are held for a failover, apart from a re-check under way: the **write fence** (a
 * sentinel announced a failover of our master and it has not completed; bounded by
 * `fenceTimeout`, ended early by an abort or by its leader going down) and **uncommitted
 * promotions** (a node answered ROLE master that a majority of the sentinels does not name yet;
 * held until the sentinels commit it or turn it back).
 *
 * State only: the tracker decides what each trigger means and when the gate opens.
 */
export class FailoverHold {
  private fence: { from: NodeAddress; timer: NodeJS.Timeout; leader: NodeAddress | undefined; at: number } | undefined;
  /** When a fence first engaged during the hold under way (kept after the fence ends while writes stay held). */
  private fencedSince: number | undefined;
  private readonly uncommitted = new Map<string, NodeAddress>();
  private seen: DetectedBy | undefined;

  /** `onExpired(from)`: the fence reached `timeoutMs` without a switch. */
  constructor(private readonly timeoutMs: number, private readonly onExpired: (from: NodeAddress) => void) {}

  /** Writes must wait: a fence is up or a promotion is uncommitted. */
  get active(): boolean {
    return this.fence !== undefined || this.uncommitted.size > 0;
  }

  /** A failover is announced and has not completed. */
  get announced(): boolean {
    return this.fence !== undefined;
  }

  /** The master whose failover is announced. */
  get from(): NodeAddress | undefined {
    return this.fence?.from;
  }

  /** When the fence of the hold under way engaged (undefined: writes were not fenced before the promotion). */
  get fencedAt(): number | undefined {
    return this.fence?.at ?? this.fencedSince;
  }

  /** Promotions seen and not committed yet. */
  get pending(): number {
    return this.uncommitted.size;
  }

  /** What first saw the uncommitted promotion(s). */
  get seenBy(): DetectedBy | undefined {
    return this.seen;
  }

  /** Engages the fence for a failover of `from` announced by `leader` (undefined when polled). False when one is up already. */
  engage(from: NodeAddress, leader: NodeAddress | undefined): boolean {
    if (this.fence) return false;
    const timer = setTimeout(() => {
      if (this.fence?.timer !== timer) return;
      this.fence = undefined;
      this.onExpired(from);
    }, this.timeoutMs);
    timer.unref();
    this.fence = { from, timer, leader, at: Date.now() };
    this.fencedSince ??= this.fence.at;
    return true;
  }

  /** Ends the fence (aborted, or its leader is down); returns the master it held writes for. */
  lift(): NodeAddress | undefined {
    if (!this.fence) return undefined;
    clearTimeout(this.fence.timer);
    const from = this.fence.from;
    this.fence = undefined;
    return from;
  }

  /** True when `sentinel` leads the announced failover. */
  ledBy(sentinel: NodeAddress): boolean {
    const l = this.fence?.leader;
    return l !== undefined && l.host === sentinel.host && l.port === sentinel.port;
  }

  /** `address` answered ROLE master before the sentinels committed to it. */
  promoted(address: NodeAddress, by: DetectedBy): void {
    this.uncommitted.set(formatAddress(address), { ...address });
    this.seen ??= by;
  }

  isUncommitted(address: NodeAddress): boolean {
    return this.uncommitted.has(formatAddress(address));
  }

  /**
   * Drops every uncommitted promotion that is undone: `verify` rejects (the node answers as a
   * replica again, or not at all). Stops at the first that still answers master and returns
   * false; true when none is left. `onUndone` hears each one dropped.
   */
  async settle(verify: (a: NodeAddress) => Promise<void>, onUndone: (address: string) => void): Promise<boolean> {
    for (const [k, address] of this.uncommitted) {
      try {
        await verify(address);
        return false;
      } catch {
        if (!this.uncommitted.delete(k)) continue;
        if (this.uncommitted.size === 0) this.seen = undefined;
        onUndone(k);
      }
    }
    return this.uncommitted.size === 0;
  }

  /** The pool switched: the fence and every uncommitted promotion end with it. */
  switched(): void {
    this.lift();
    this.uncommitted.clear();
    this.seen = undefined;
  }

  /** Writes flow again: the next hold starts afresh. */
  released(): void {
    this.fencedSince = undefined;
  }

  close(): void {
    this.lift();
  }
}
