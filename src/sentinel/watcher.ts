import { Connection } from '../connection/connection.js';
import type { ResolvedConnectionOptions } from '../connection/options.js';
import { backoffDelay, sleep, type BackoffOptions } from '../pool/backoff.js';
import type { NodeAddress, Reply } from '../types.js';
import { SENTINEL_CHANNELS } from './messages.js';
import { failoverState, isPermissionError, parseMasterAddr } from './sentinel-client.js';

/** True when `err` (or a cause in its chain) is a refused TCP connection. */
export function isRefused(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && typeof e === 'object' && depth < 8; e = e.cause as typeof e, depth++) {
    if (e.code === 'ECONNREFUSED') return true;
  }
  return false;
}

/** What a watcher reports to its pool. */
export interface WatcherHooks {
  onMessage(channel: string, payload: string, sentinel: NodeAddress): void;
  /** Subscribed (again). `reconnected` is true after a loss: messages may have been missed. */
  onUp(sentinel: NodeAddress, reconnected: boolean): void;
  onDown(sentinel: NodeAddress, error: Error): void;
  /** The sentinel refused SUBSCRIBE (ACL): the watcher polls it instead. Called once. */
  onPolling(sentinel: NodeAddress, error: Error): void;
  /** Polling saw this master address, and whether a failover of it is under way (with the replica being promoted, once chosen). */
  onPolledMaster(sentinel: NodeAddress, master: NodeAddress | null, failover: { candidate: NodeAddress | undefined } | undefined): void;
  /** Each reconnect delay chosen, for observability and tests. */
  onBackoff?(sentinel: NodeAddress, delayMs: number, attempt: number): void;
}

/**
 * One subscriber loop for one sentinel: connect, SUBSCRIBE to the failover channels, read
 * until the connection drops, back off (exponential with jitter; a refused connection is
 * retried at the first delay), repeat. A sentinel that
 * refuses SUBSCRIBE is polled with `get-master-addr-by-name` instead.
 */
export class SentinelWatcher {
  private stopped = false;
  private readonly stopSignal = new AbortController();
  private conn: Connection | undefined;
  private loop: Promise<void> | undefined;
  /** Reconnect attempts since the last successful subscribe. */
  attempts = 0;
  polling = false;
  connected = false;
  private wasUp = false;
  private reportedDown = false;

  constructor(
    readonly address: NodeAddress,
    private readonly masterName: string,
    private readonly conn0: ResolvedConnectionOptions,
    private readonly backoff: BackoffOptions,
    private readonly pollEvery: number,
    private readonly hooks: WatcherHooks,
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  private async run(): Promise<void> {
    let everUp = false;
    while (!this.stopped) {
      let lost: Error | undefined;
      try {
        if (this.polling) {
          await this.poll();
        } else {
          let conn = await this.subscriber();
          if (this.stopped) {
            conn.destroy();
            break;
          }
          this.conn = conn;
          this.connected = true;
          this.wasUp = true;
          this.hooks.onUp(this.address, everUp || this.attempts > 0);
          everUp = true;
          this.attempts = 0;
          for (;;) {
            const current = conn;
            lost = await new Promise<Error | undefined>((r) => (current.isOpen ? current.once('close', r) : r(current.closeReason)));
            // reauthenticate() replaced it with a subscriber that logged in afresh: keep listening there.
            if (this.conn === current || this.conn === undefined || !this.conn.isOpen || this.stopped) break;
            conn = this.conn;
          }
          this.connected = false;
          this.conn = undefined;
          if (this.stopped) break;
          lost ??= new Error('sentinel connection closed');
        }
      } catch (err) {
        this.conn?.destroy();
        this.conn = undefined;
        this.connected = false;
        if (this.stopped) break;
        if (isPermissionError(err)) {
          this.polling = true;
          this.hooks.onPolling(this.address, err as Error);
          continue;
        }
        lost = err as Error;
      }
      // Report a sentinel going down once per outage, not once per failed reconnect.
      if (lost && (this.wasUp || !this.reportedDown)) this.hooks.onDown(this.address, lost);
      if (lost) {
        this.wasUp = false;
        this.reportedDown = true;
      }
      // A refused connection (nothing listening: the sentinel is down or restarting) costs the
      // sentinel nothing, so it is retried at the first delay without growing: the loop is back
      // within initialDelay of the sentinel answering again, in time to hear the failover a
      // restarted sentinel may lead at once. Other failures back off exponentially.
      const refused = isRefused(lost);
      const delay = refused ? backoffDelay(0, this.backoff) : backoffDelay(this.attempts, this.backoff);
      this.hooks.onBackoff?.(this.address, delay, this.attempts);
      this.attempts++;
      await sleep(delay, this.stopSignal.signal, { unref: true });
    }
  }

  /**
   * Polling mode: every `pollEvery` ms, on one connection, ask for the master and whether a
   * failover of it is in progress (and which replica is being promoted), until stopped or an
   * error. Without pub/sub this is the only way to see a failover coming.
   */
  private async poll(): Promise<void> {
    const conn = await Connection.connect(this.address, this.conn0);
    this.conn = conn;
    try {
      while (!this.stopped) {
        const [addr, master, replicas] = await Promise.all([
          conn.send(['SENTINEL', 'get-master-addr-by-name', this.masterName]),
          conn.send(['SENTINEL', 'master', this.masterName]).catch(() => null),
          conn.send(['SENTINEL', 'replicas', this.masterName]).catch(() => null),
        ]);
        if (!this.connected) {
          this.connected = true;
          this.wasUp = true;
          this.hooks.onUp(this.address, this.attempts > 0);
          this.attempts = 0;
        }
        this.hooks.onPolledMaster(this.address, parseMasterAddr(addr), failoverState(master, replicas));
        await sleep(this.pollEvery, this.stopSignal.signal, { unref: true });
      }
    } finally {
      conn.destroy();
      this.conn = undefined;
    }
  }

  /** A connection subscribed to the failover channels (connect, HELLO/AUTH, SUBSCRIBE). */
  private async subscriber(): Promise<Connection> {
    const conn = await Connection.connect(this.address, this.conn0);
    try {
      conn.on('push', (v: Reply[]) => {
        if (v[0] === 'message') this.hooks.onMessage(String(v[1]), String(v[2]), this.address);
      });
      // Subscribed connections take no command timeout: they wait for messages forever.
      await conn.send(['SUBSCRIBE', ...SENTINEL_CHANNELS], { timeout: this.conn0.commandTimeout });
      return conn;
    } catch (err) {
      conn.destroy();
      throw err;
    }
  }

  /**
   * Logs the live connection in with fresh credentials. A polling connection takes AUTH in
   * place; a RESP2 subscriber cannot (Redis refuses AUTH there), so a new subscriber logs in
   * and subscribes first, and only then is the old one closed: no moment without a listener.
   */
  async reauthenticate(): Promise<void> {
    const old = this.conn;
    // Static credentials have nothing new; with none open, the next connect asks the provider itself.
    if (!this.conn0.auth.dynamic || this.stopped || old === undefined || !old.isOpen) return;
    if (!old.subscribedResp2) {
      const deadline = Date.now() + this.conn0.connectTimeout;
      await old.reauthenticate(await this.conn0.auth.resolve({ address: this.address, role: 'sentinel' }, deadline), deadline);
      return;
    }
    const next = await this.subscriber();
    if (this.stopped || this.conn !== old) {
      next.destroy();
      return;
    }
    this.conn = next;
    old.destroy();
  }

  /** Stops the loop and closes its connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopSignal.abort();
    this.conn?.destroy();
    await this.loop;
  }
}
