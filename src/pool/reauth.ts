import type { Credentials } from '../connection/credentials.js';
import { AuthenticationError, ConnectionError } from '../errors.js';
import { formatAddress, type NodeAddress } from '../types.js';

/** What re-authentication reads and calls on a connection. */
export interface AuthConnection {
  readonly address: NodeAddress;
  readonly ready: boolean;
  readonly isOpen: boolean;
  readonly pending: number;
  /** RESP2 in subscribed mode: AUTH is refused there. */
  readonly subscribedResp2: boolean;
  /** The last re-authentication round it logged in for (or was opened after). */
  authEpoch: number;
  reauthenticate(creds: Credentials | null, deadline: number): Promise<void>;
  destroy(error?: Error): void;
}

/** What re-authentication needs of its node pool. */
export interface AuthHost<C> {
  /** Whether credentials can change at all (a provider); otherwise re-authentication is a no-op. */
  readonly dynamic: boolean;
  readonly closed: boolean;
  /** Where connections go now. */
  readonly target: NodeAddress;
  /** Asks the credentials provider for this node. */
  resolve(address: NodeAddress, deadline: number): Promise<Credentials | null>;
  /** How long a fetch plus AUTH may take (`connectTimeout`; 0 = no limit). */
  readonly timeoutMs: number;
  /** Every open connection of the pool. */
  connections(): Iterable<C>;
  /** Whether someone holds `conn` now (a lease, or a dedicated connection busy with a command): it logs in when it comes back. */
  held(conn: C): boolean;
}

/**
 * Rotating credentials for one node pool. {@link all} sends AUTH with freshly fetched
 * credentials on every connection nobody holds; a held one is marked stale and logs in again
 * before it is lent again ({@link stale}, {@link refresh}), never in the middle of its holder's
 * commands. Rounds are numbered (epochs): a connection opened with credentials fetched before a
 * round logs in again too.
 */
export class Reauthenticator<C extends AuthConnection> {
  /** Bumped by every round: a connection of an older epoch logs in again before reuse. */
  private epoch = 0;

  constructor(private readonly host: AuthHost<C>) {}

  /** The current round; a connection opened now is of this epoch. */
  get current(): number {
    return this.epoch;
  }

  /** Whether `conn` missed a round (it must log in again before anyone else uses it). */
  stale(conn: C): boolean {
    return conn.authEpoch < this.epoch;
  }

  /**
   * One round: the provider is asked once for the current target, and every live connection
   * nobody holds logs in with it. A swap during the round leaves nothing for it to do: the old
   * target's connections are closed or held by then, and the new one's were opened after the
   * round began, with credentials of their own. Rejects with the first refusal
   * (`AuthenticationError`); connections that closed meanwhile need nothing (their successors
   * fetch credentials themselves).
   */
  async all(): Promise<void> {
    if (this.host.closed || !this.host.dynamic) return;
    const epoch = ++this.epoch;
    const deadline = this.deadline();
    const target = this.host.target;
    const creds = await this.host.resolve(target, deadline);
    const sends: Array<Promise<void>> = [];
    // No await between the check and send(): a connection lent out meanwhile is not touched.
    for (const conn of this.host.connections()) {
      if (this.host.held(conn) || !conn.ready || conn.authEpoch >= epoch) continue;
      if (conn.subscribedResp2) {
        // RESP2 refuses AUTH in subscribed mode: the pub/sub hub resubscribes on a new connection,
        // which logs in with the fresh credentials.
        conn.destroy(new ConnectionError(`The RESP2 subscriber connection to ${formatAddress(conn.address)} was replaced to log in with new credentials.`, { address: conn.address }));
        continue;
      }
      sends.push(this.send(conn, creds, epoch, deadline));
    }
    const results = await Promise.allSettled(sends);
    const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected' && r.reason instanceof AuthenticationError);
    if (refused) throw refused.reason;
  }

  /** Logs `conn` in with credentials fetched now for its own address (a stale one coming back). */
  async refresh(conn: C): Promise<void> {
    const epoch = this.epoch;
    const deadline = this.deadline();
    const creds = await this.host.resolve(conn.address, deadline);
    await this.send(conn, creds, epoch, deadline);
  }

  /** Fetching and sending fresh credentials gets what a connect gets. */
  private deadline(): number {
    return this.host.timeoutMs > 0 ? Date.now() + this.host.timeoutMs : 0;
  }

  private async send(conn: C, creds: Credentials | null, epoch: number, deadline: number): Promise<void> {
    try {
      await conn.reauthenticate(creds, deadline);
      if (conn.authEpoch < epoch) conn.authEpoch = epoch;
    } catch (err) {
      if (!conn.isOpen && !(err instanceof AuthenticationError)) return;
      throw err;
    }
  }
}
