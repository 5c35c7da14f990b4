import { ConnectionError, PoolClosedError } from '../errors.js';
import { formatAddress, type NodeAddress } from '../types.js';

/** What the lanes read and set on a connection. */
export interface LaneConnection {
  readonly address: NodeAddress;
  readonly ready: boolean;
  readonly pending: number;
  /** The node pool's generation it was opened in (a swap makes older ones useless). */
  generation: number;
  /** Marked once it serves as a lane. */
  lane: boolean;
  destroy(error?: Error): void;
  close(timeoutMs?: number): Promise<void>;
}

/** What the lanes ask of their node pool. */
export interface LaneHost<C> {
  readonly closed: boolean;
  /** Opens one connection to the current target (with the pool's backoff after failures). */
  open(): Promise<C>;
  /** A lane left service: it takes no new command, drains the replies due, then closes. */
  retire(conn: C, reason?: Error): void;
}

interface Slot<C> {
  conn: C | undefined;
  connecting: Promise<C> | undefined;
}

/** Counts of the lanes for `stats()`. */
export interface LaneStats {
  /** Lanes connected now. */
  connected: number;
  /** Lanes configured (`pool.lanes`). */
  total: number;
  /** Commands written or queued on the lanes and not yet answered. */
  pending: number;
}

/**
 * The few long-lived multiplexed connections behind `call()` and the helpers, to one node.
 *
 * Calls go round robin over the lanes of the current generation. A lane that is missing or
 * broken is (re)connected on demand; every missing lane starts connecting when a call finds
 * none ready (so `lanes: n` opens n connections under load), and the call takes the first
 * to complete. A connection that completes after a swap is not used: the call fails with a
 * not-sent `ConnectionError`, which the dispatcher may send again at the new target.
 */
export class Lanes<C extends LaneConnection> {
  private readonly slots: Array<Slot<C>>;
  private rr = 0;
  /** Commands waiting for a lane to (re)connect (the dispatcher bounds it by `maxPending`). */
  waiters = 0;
  /**
   * The node pool's generation, bumped by it at every swap: lanes of older ones are not handed
   * out. A field, not a call to the host: {@link sync} reads it on every command.
   */
  generation = 1;

  constructor(
    count: number,
    private readonly host: LaneHost<C>,
  ) {
    this.slots = Array.from({ length: count }, () => ({ conn: undefined, connecting: undefined }));
  }

  /** A ready lane of the current generation, or undefined when one must be (re)connected first. */
  sync(): C | undefined {
    const n = this.slots.length;
    const c = this.slots[n === 1 ? 0 : this.rr++ % n]!.conn;
    return c !== undefined && c.ready && c.generation === this.generation ? c : undefined;
  }

  /** A lane of the current generation: a ready one at once, else the first to connect. */
  get(): Promise<C> {
    if (this.host.closed) return Promise.reject(new PoolClosedError());
    const n = this.slots.length;
    const gen = this.generation;
    let ready: C | undefined;
    const pending: Array<Promise<C>> = [];
    for (let i = 0; i < n; i++) {
      const slot = this.slots[(this.rr + i) % n]!;
      const c = slot.conn;
      if (c !== undefined && c.ready && c.generation === gen) {
        ready ??= c;
        continue;
      }
      pending.push(slot.connecting ?? this.connect(slot));
    }
    if (ready !== undefined) {
      this.rr++;
      return Promise.resolve(ready);
    }
    if (pending.length === 1) return pending[0]!;
    // The first lane to connect; when every one fails, the first slot's error (all are about this node).
    return Promise.any(pending).catch((e: AggregateError) => {
      throw e.errors[0];
    });
  }

  private connect(slot: Slot<C>): Promise<C> {
    const p = this.host.open().then(
      (conn) => {
        if (slot.connecting === p) slot.connecting = undefined;
        if (conn.generation !== this.generation || this.host.closed) {
          conn.destroy();
          throw new ConnectionError(`The target changed while connecting to ${formatAddress(conn.address)}; the command was not sent.`, { address: conn.address });
        }
        const old = slot.conn;
        slot.conn = conn;
        conn.lane = true;
        if (old && old !== conn) this.host.retire(old);
        return conn;
      },
      (err: Error) => {
        if (slot.connecting === p) slot.connecting = undefined;
        throw err;
      },
    );
    slot.connecting = p;
    // A lane opened ahead of need may fail with nobody awaiting it: that is not an unhandled rejection.
    p.catch(() => {});
    return p;
  }

  /** Whether `conn` serves as a lane now. */
  has(conn: C): boolean {
    for (const slot of this.slots) if (slot.conn === conn) return true;
    return false;
  }

  /** Every lane leaves service with `reason` (a swap); connects under way are forgotten. */
  retireAll(reason: Error): void {
    for (const slot of this.slots) {
      const old = slot.conn;
      slot.conn = undefined;
      slot.connecting = undefined;
      if (old) this.host.retire(old, reason);
    }
  }

  /**
   * For each lane `leaving` names, connects its successor (the old lane serving meanwhile);
   * a failed connect is tried again while `keepTrying(old)` says so.
   */
  replace(leaving: (conn: C) => boolean, keepTrying: (old: C | undefined) => boolean): Array<Promise<C>> {
    const replaced: Array<Promise<C>> = [];
    for (const slot of this.slots) {
      if (slot.conn === undefined || !leaving(slot.conn)) continue;
      const attempt = (): Promise<C> =>
        (slot.connecting ?? this.connect(slot)).catch((err: unknown) => {
          if (!keepTrying(slot.conn)) throw err;
          return attempt();
        });
      replaced.push(attempt());
    }
    return replaced;
  }

  /** Commands waiting on the lanes. */
  get pending(): number {
    let n = 0;
    for (const s of this.slots) if (s.conn) n += s.conn.pending;
    return n;
  }

  stats(): LaneStats {
    let connected = 0;
    let pending = 0;
    for (const s of this.slots) {
      if (s.conn?.ready) {
        connected++;
        pending += s.conn.pending;
      }
    }
    return { connected, total: this.slots.length, pending };
  }

  /** Waits up to `timeoutMs` for each lane's replies due, then forgets the lanes. */
  async close(timeoutMs: number): Promise<void> {
    const closing = this.slots.map((s) => s.conn?.close(timeoutMs));
    for (const s of this.slots) {
      s.conn = undefined;
      s.connecting = undefined;
    }
    await Promise.all(closing);
  }
}
