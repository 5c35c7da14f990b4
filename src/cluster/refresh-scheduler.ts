import { Coalescer } from '../retry.js';
import { formatAddress, type NodeAddress } from '../types.js';

/** Floor of the trouble polling period, for `refresh.minInterval: 0`. */
export const MIN_POLL_PERIOD = 50;

/** When to refresh the slot map: its options and what it asks of the topology. */
export interface RefreshSchedulerOptions {
  /** `refresh.minInterval`: no refresh starts sooner than this after the previous one started. */
  minInterval: number;
  /** `refresh.interval`: a periodic refresh (0: none; the watch window of a down node is then 30 s). */
  interval: number;
  /**
   * `refresh.jitter`: each trouble poll waits its period plus a random 0..jitter ms, so the
   * processes of a fleet that saw the same failure at the same moment do not keep asking in
   * step. 0: none.
   */
  jitter?: number;
  /**
   * `refresh.watchInterval`: the longest period of the down-node watch (it doubles from
   * `minInterval` up to this), so a promotion of the down node's replica is found within about
   * this long. Default (when absent here): the watch window (`interval`, else 30 s).
   */
  watchInterval?: number;
  /** The random source (tests fix it); default `Math.random`. */
  random?: () => number;
}

/** What the scheduler runs and reads: the refresh itself, and which nodes serve slots now. */
export interface RefreshTarget {
  /**
   * Fetches and installs the map, asking the nodes in `prefer` too; never rejects. `since`
   * (`performance.now()`) is when the oldest trigger this refresh serves was made: a map
   * fetched after it (by another pool of the process, see shared-refresh.ts) answers it.
   */
  refresh(prefer: readonly NodeAddress[], since: number): Promise<void>;
  /** Keys (`host:port`) of the masters that serve slots in the current map. */
  serving(): Set<string>;
}

/**
 * The cluster's refresh scheduler, as Lettuce's `ClusterTopologyRefreshScheduler`: named
 * triggers in (a MOVED or a new node: {@link request}; a command retrying after a node-level
 * failure: {@link failing}; a connection that failed or succeeded: {@link nodeDown} /
 * {@link nodeUp}; the periodic timer), "fetch now" out (`target.refresh`).
 *
 * One refresh at a time, rate limited, through the one {@link Coalescer}: a trigger during a
 * refresh runs one more after it; none starts less than `minInterval` after the previous start
 * (the trigger is kept and runs when the interval is over; more triggers meanwhile join it).
 * While commands fail or a node that serves slots is down, a refresh is requested at a period
 * that doubles from `minInterval` up to `watchInterval` (each plus a random 0..`jitter`), so a
 * replica promoted by the cluster is found within about `watchInterval` of its promotion; a
 * down node is watched for at most `interval` (30 s when the periodic refresh is off). Polling
 * stops as soon as neither holds.
 */
export class RefreshScheduler {
  private readonly refreshesRun: Coalescer;
  private periodic: NodeJS.Timeout | undefined;
  /** Nodes the next refresh asks first, by key: a MOVED storm names the same few. */
  private readonly preferred = new Map<string, NodeAddress>();
  /** Commands retrying after a node-level failure. */
  private failingCommands = 0;
  /** Nodes a connection could not be made to, or that failed a command with a connection error, by key: since when. */
  private readonly down = new Map<string, number>();
  private poll: NodeJS.Timeout | undefined;
  private pollPeriod = 0;
  private closed = false;
  /** When the oldest trigger not yet served by a started refresh was made. */
  private pendingSince: number | undefined;
  private readonly random: () => number;

  constructor(
    private readonly o: RefreshSchedulerOptions,
    private readonly target: RefreshTarget,
  ) {
    this.random = o.random ?? Math.random;
    this.refreshesRun = new Coalescer(() => {
      // The nodes every trigger since the last start named: this refresh serves them all.
      const preferred = [...this.preferred.values()];
      this.preferred.clear();
      const since = this.pendingSince ?? performance.now();
      this.pendingSince = undefined;
      return this.target.refresh(preferred, since).catch(() => {});
    }, { minInterval: o.minInterval });
  }

  private trigger(): void {
    this.pendingSince ??= performance.now();
  }

  /** A random 0..jitter ms. */
  private jitter(): number {
    return this.o.jitter ? Math.floor(this.random() * (this.o.jitter + 1)) : 0;
  }

  /** Refreshes started so far (the initial load included, see {@link started}). */
  get refreshes(): number {
    return this.refreshesRun.runs;
  }

  /** Whether trouble polling is running. */
  get polling(): boolean {
    return this.poll !== undefined;
  }

  /** Keys of the nodes watched as down (refreshes ask them last). */
  downKeys(): Set<string> {
    return new Set(this.down.keys());
  }

  /** The initial load started now (counted, and it starts the rate limit's interval). */
  started(): void {
    this.refreshesRun.noteStart();
  }

  /**
   * The map is loaded: the periodic refresh starts (with `interval` > 0). The first one comes
   * after a random half to whole `interval`, so a fleet deployed at once does not refresh in
   * step every interval from then on.
   */
  startPeriodic(): void {
    if (this.closed || this.periodic || this.o.interval <= 0) return;
    const first = this.o.interval - Math.floor(this.random() * (this.o.interval / 2));
    this.periodic = setTimeout(() => {
      this.request();
      if (this.closed) return;
      this.periodic = setInterval(() => this.request(), this.o.interval);
      this.periodic.unref();
    }, first);
    this.periodic.unref();
  }

  /**
   * Asks for a refresh, which asks the nodes in `prefer` first. Coalesced and rate limited;
   * never rejects.
   */
  request(prefer: readonly NodeAddress[] = []): void {
    if (this.closed) return;
    for (const a of prefer) this.preferred.set(formatAddress(a), { host: a.host, port: a.port });
    this.trigger();
    void this.refreshesRun.request();
  }

  /** Resolves after a refresh that starts after this call has completed (successfully or not). */
  refreshed(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.trigger();
    return this.refreshesRun.next();
  }

  /**
   * A command is retrying after a node-level failure (connection error, CLUSTERDOWN, READONLY,
   * MASTERDOWN): poll until every such command has called the returned function (idempotent)
   * because it finished, one way or the other.
   */
  failing(): () => void {
    this.failingCommands++;
    this.startPolling();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.failingCommands--;
    };
  }

  /** A connection to `address` failed or could not be made: watch the map while it serves slots. */
  nodeDown(address: NodeAddress): void {
    if (this.closed) return;
    const key = formatAddress(address);
    if (!this.down.has(key)) this.down.set(key, Date.now());
    this.startPolling();
  }

  /** A connection to `address` succeeded. */
  nodeUp(address: NodeAddress): void {
    this.down.delete(formatAddress(address));
  }

  /** Drops watched nodes that serve no slot any more (or were watched long enough); true when some remain. */
  private watchingDownNodes(): boolean {
    if (this.down.size === 0) return false;
    const window = this.o.interval > 0 ? this.o.interval : 30_000;
    const serving = this.target.serving();
    const now = Date.now();
    for (const [key, since] of this.down) if (!serving.has(key) || now - since > window) this.down.delete(key);
    return this.down.size > 0;
  }

  /**
   * (Re)arms the poll timer: from `minInterval`, doubling up to `watchInterval`, while commands
   * fail or a down node is watched.
   */
  private startPolling(): void {
    if (this.closed) return;
    const base = Math.max(this.o.minInterval, MIN_POLL_PERIOD);
    if (this.poll) {
      // The first command to fail while a slow poll was pending: speed up (later ones do not
      // reset the doubling: a fleet-wide failure would otherwise keep every process at the base rate).
      if (this.failingCommands !== 1 || this.pollPeriod <= base) return;
      clearTimeout(this.poll);
      this.poll = undefined;
    }
    this.pollPeriod = this.failingCommands > 0 ? base : this.pollPeriod > 0 ? this.pollPeriod : base;
    this.poll = setTimeout(() => this.onPoll(), this.pollPeriod + this.jitter());
    this.poll.unref();
  }

  private onPoll(): void {
    this.poll = undefined;
    if (this.closed) return;
    const failing = this.failingCommands > 0;
    const watching = this.watchingDownNodes();
    if (!failing && !watching) {
      this.pollPeriod = 0;
      return;
    }
    this.request();
    const base = Math.max(this.o.minInterval, MIN_POLL_PERIOD);
    const window = this.o.interval > 0 ? this.o.interval : 30_000;
    const cap = Math.max(base, Math.min(window, this.o.watchInterval ?? window));
    // Doubling while commands fail too: the cluster cannot promote a replica sooner than its
    // node timeout, and a fleet polling at the base rate all that time is the storm (bench:fleet).
    this.pollPeriod = Math.min(cap, this.pollPeriod * 2);
    this.poll = setTimeout(() => this.onPoll(), this.pollPeriod + this.jitter());
    this.poll.unref();
  }

  /** Stops every timer, wakes the waiters, and waits for a refresh in flight. */
  async close(): Promise<void> {
    this.closed = true;
    // clearTimeout clears either kind (the first periodic refresh is a timeout).
    if (this.periodic) clearTimeout(this.periodic);
    if (this.poll) clearTimeout(this.poll);
    this.periodic = this.poll = undefined;
    this.down.clear();
    this.preferred.clear();
    this.refreshesRun.close();
    await this.refreshesRun.idle();
  }
}
