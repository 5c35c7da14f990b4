/**
 * The hand-over of a node pool to a new endpoint when a connection reports MOVING (Redis
 * Software / Redis Cloud maintenance notifications; the decision itself is `planMoving` in
 * src/connection/maintenance.ts). Make before break: the old lanes serve until their
 * successors are connected, then drain and close; nothing written is sent again.
 */
import type { Connection } from '../connection/connection.js';
import { planMoving, type MaintCounters, type MaintNotice } from '../connection/maintenance.js';
import { ConnectionError } from '../errors.js';
import { formatAddress, type NodeAddress } from '../types.js';

/** What a hand-over needs from its node pool. */
export interface HandoffHost {
  /** Where new connections go now. */
  readonly target: NodeAddress;
  /** Every connection of the pool that is open. */
  connections(): Iterable<Connection>;
  /** Points new connections at `target`. */
  retarget(target: NodeAddress): void;
  /**
   * For each lane whose connection `leaving` names: connects its successor at the target (the
   * old lane serving meanwhile, retried until `closeAt`), then retires the old one.
   */
  replaceLanes(leaving: (conn: Connection) => boolean, closeAt: number): Array<Promise<Connection>>;
  /** How a connection serves the pool now. */
  roleOf(conn: Connection): 'lane' | 'borrowed' | 'dedicated' | 'subscriber' | 'idle';
  /** Idle exclusive connections were closed: the exclusive pool forgets them. */
  forgetIdle(): void;
  /** The pool is closed. */
  readonly closed: boolean;
}

/**
 * The hand-overs of one node pool: which connections are leaving (and by when they must be
 * closed), the pending reconnect of a MOVING without an address, and their timers.
 */
export class Handoffs {
  /** Connections to an endpoint a MOVING announced, with when they must be closed. */
  private readonly leaving = new Map<Connection, number>();
  /** A hand-over to the same address (MOVING with a null endpoint), waiting for half the notice. */
  private sameAddress: NodeJS.Timeout | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Bumped by every hand-over: a connection opened to the old endpoint meanwhile is not kept. */
  moves = 0;

  constructor(
    private readonly host: HandoffHost,
    private readonly counters: MaintCounters,
  ) {}

  /** Whether `conn` is being handed over: it takes no new lane work or lease. */
  has(conn: Connection): boolean {
    return this.leaving.has(conn);
  }

  /** When a leaving connection must be closed (epoch ms); undefined for the others. */
  deadline(conn: Connection): number | undefined {
    return this.leaving.get(conn);
  }

  /** `conn` closed. */
  forget(conn: Connection): void {
    this.leaving.delete(conn);
  }

  /** A MOVING read by `conn`: hands over now, after half the notice (null address), or not at all (a copy). */
  onMoving(conn: Connection, notice: Extract<MaintNotice, { kind: 'MOVING' }>): void {
    const plan = planMoving(notice, { leaving: this.leaving.has(conn), sameAddressPending: this.sameAddress !== undefined });
    if (plan.action !== 'handoff') return;
    const closeAt = Date.now() + plan.closeInMs;
    if (plan.target !== null) {
      if (this.sameAddress !== undefined) this.clearTimer(this.sameAddress);
      this.start(plan.target, closeAt);
    } else {
      this.sameAddress = this.timer(plan.startInMs, () => {
        this.sameAddress = undefined;
        this.start(this.host.target, closeAt);
      });
    }
  }

  /**
   * New connections go to `target` from now on; each lane is replaced (make before break);
   * idle exclusive connections close now, subscriber and idle dedicated ones once a new lane
   * proves the target reachable (their owners reconnect there); whatever is still open to the
   * old endpoint at `closeAt` (a lease held all along, a blocking command) is closed then.
   */
  private start(target: NodeAddress, closeAt: number): void {
    const h = this.host;
    if (h.closed) return;
    this.moves++;
    this.counters.add('handoffs');
    for (const conn of h.connections()) if (!this.leaving.has(conn)) this.leaving.set(conn, closeAt);
    h.retarget(target);
    const replaced = h.replaceLanes((c) => this.leaving.has(c), closeAt);
    // A lane replaced earlier may still be draining: it has replies due, and is not idle.
    for (const conn of this.leaving.keys()) if (h.roleOf(conn) === 'idle' && conn.pending === 0) conn.destroy();
    h.forgetIdle();
    const rest = (): void => {
      for (const conn of [...this.leaving.keys()]) {
        const role = h.roleOf(conn);
        if (role === 'subscriber' || (role === 'dedicated' && conn.pending === 0)) conn.destroy();
      }
    };
    if (replaced.length === 0) rest();
    else Promise.any(replaced).then(rest, () => {});
    this.timer(Math.max(0, closeAt - Date.now()), () => {
      const why = new ConnectionError(`${formatAddress(target)} took over from this endpoint (MOVING); the connection to the old endpoint was closed at the end of the notice.`, { address: target });
      for (const [conn, until] of [...this.leaving]) if (until <= closeAt) conn.destroy(conn.pending > 0 ? why : undefined);
    });
  }

  private timer(ms: number, fn: () => void): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    t.unref();
    this.timers.add(t);
    return t;
  }

  private clearTimer(t: NodeJS.Timeout): void {
    clearTimeout(t);
    this.timers.delete(t);
    if (this.sameAddress === t) this.sameAddress = undefined;
  }

  /** The pool closes: no timer survives it. */
  close(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.sameAddress = undefined;
  }
}
