import { tlsHint } from '../connection/tls-errors.js';
import { publishFailover } from '../diagnostics.js';
import { AuthenticationError, ConnectionError, RedisError } from '../errors.js';
import { Coalescer } from '../retry.js';
import { backoffDelay, sleep } from '../pool/backoff.js';
import { NodePool, type NodePoolStats } from '../pool/node-pool.js';
import { settleAll } from '../pool/settle.js';
import type { DurabilityStats } from '../pool/durability.js';
import { BasePool, type Dispatcher, type PoolEvents } from '../pool/surface.js';
import { CommandRegistry } from '../commands/command-table.js';
import { KeyPrefixer } from '../commands/key-prefix.js';
import { formatAddress, type Address, type NodeAddress } from '../types.js';
import { discoverReplicas, discoverSentinels, newestAnswer, noteSentinelId, pollSentinels, sameAddress, verifyMaster, type DiscoveryContext } from './discovery.js';
import { MasterDispatcher, ReplicaDispatcher } from './dispatchers.js';
import type { DetectedBy, FailoverEvent, SentinelHost } from './sentinel-host.js';
import { majorityMaster } from './commitment.js';
import { Gate } from './gate.js';
import { classifySentinelMessage, type SentinelSignal } from './messages.js';
import { resolveSentinelOptions, type ResolvedSentinelOptions, type SentinelOptions } from './options.js';
import { SentinelWatcher } from './watcher.js';
import { PromotionWatch } from './promotion-watch.js';
import { MasterTracker, type SwitchInfo } from './master-tracker.js';
import { isPermissionError } from './sentinel-client.js';
import { PubSubHub, type PubSubStats } from '../pubsub/hub.js';
import { ClientCache, type CacheStats } from '../cache/client-cache.js';
import { trackingCommand } from '../cache/options.js';
import type { Connection } from '../connection/connection.js';
import { installPubSub, type PubSubMethods, type ShardedPubSubMethods } from '../pubsub/methods.js';
import { ZoneTracker, type ZoneReadStats } from '../pool/zones.js';
import type { ReadChoice } from '../pool/read-from.js';

export type { DetectedBy, FailoverEvent } from './sentinel-host.js';

/** Events of a {@link SentinelPool}. */
export interface SentinelEvents extends PoolEvents {
  /** The pool moved to a new master: once per switch, after no command can reach the old one. */
  failover: [event: FailoverEvent];
  /** A sentinel announced a failover of our master: writes are held (the write fence). */
  'failover-start': [
    info: {
      /** The monitored master's name. */
      masterName: string;
      /** The master being failed over (writes to it are held). */
      master: NodeAddress;
      /** The sentinel message that engaged the fence, e.g. `+try-failover`. */
      event: string;
      /** Epoch ms. */
      at: number;
    },
  ];
  /** The announced failover aborted or timed out: held commands go back to the old master. */
  'failover-abort': [
    info: {
      /** The monitored master's name. */
      masterName: string;
      /** The master that keeps its role; held commands go back to it. */
      master: NodeAddress;
      /** Why the fence was released (an abort message, `fenceTimeout`, the leader reported down). */
      reason: string;
      /** Epoch ms. */
      at: number;
    },
  ];
  /** A subscriber loop connected to a sentinel and subscribed. */
  'sentinel-up': [
    info: {
      /** The sentinel. */
      address: NodeAddress;
      /** False the first time, true after a lost connection came back. */
      reconnected: boolean;
    },
  ];
  /** A subscriber loop lost (or could not reach) its sentinel; it reconnects with backoff. */
  'sentinel-down': [
    info: {
      /** The sentinel. */
      address: NodeAddress;
      /** What failed. */
      error: Error;
    },
  ];
  /** A sentinel refused SUBSCRIBE (ACL); it is polled instead. Emitted once per sentinel. */
  'sentinel-polling': [
    info: {
      /** The sentinel. */
      address: NodeAddress;
      /** The refusal (typically `NOPERM`). */
      error: Error;
    },
  ];
  /** A subscriber loop waits `delay` ms before reconnecting (attempt counts from 0). */
  'sentinel-reconnect': [
    info: {
      /** The sentinel. */
      address: NodeAddress;
      /** Milliseconds until the next try (exponential backoff with jitter, see `resubscribe`). */
      delay: number;
      /** Failed tries so far, from 0. */
      attempt: number;
    },
  ];
}

/** What `stats()` reports. */
export interface SentinelStats extends NodePoolStats {
  /** The monitored master's name. */
  masterName: string;
  /** The `role` option: whom commands go to. */
  role: 'master' | 'replica';
  /** The verified master. */
  master: NodeAddress;
  /** 'open' when commands flow; 'held' while a switch is in progress. */
  gate: 'open' | 'held';
  /** True while the write fence holds writes (a failover was announced and has not completed). */
  fenced: boolean;
  /** Commands held now (bounded by `maxQueued`). */
  queued: number;
  /** Master switches since `create()`. */
  switches: number;
  /** Master re-checks (sentinel query plus ROLE) since `create()`. */
  refreshes: number;
  /** Every sentinel known (given and discovered). */
  sentinels: Array<{
    /** The sentinel. */
    address: NodeAddress;
    /** Whether its subscriber loop is connected. */
    connected: boolean;
    /** Whether it refused SUBSCRIBE and is polled instead. */
    polling: boolean;
  }>;
  /** Healthy replicas (for `role: 'replica'`). */
  replicas: NodeAddress[];
  /** Replicas whose promotion the pool watches for (`watchReplicas`, master role). */
  watchedReplicas: NodeAddress[];
  /** Config epoch of the configuration the pool follows (undefined when the sentinels do not report one; x.5 after a promotion the pool saw before any sentinel announced it). */
  configEpoch: number | undefined;
  /** Durable acknowledgements (all zero while `durability` is off, and with `role: 'replica'`). */
  durability: DurabilityStats;
  /** Whether `close()` was called. */
  closed: boolean;
  /** Subscriptions, subscriber connections and messages of `subscribe()`/`psubscribe()`. */
  pubsub: PubSubStats;
  /** The client-side cache's counters, when `cache` is on. */
  cache?: CacheStats;
  /** Reads per zone and each node's zone, with a zone-aware `readFrom`. */
  reads?: ZoneReadStats;
}

const key = formatAddress;


/**
 * A pool for the master (or the replicas) of a Sentinel-managed Redis. Same API as
 * `StandalonePool` and `ClusterPool`.
 *
 * It finds the master through the sentinels, verifies it with ROLE, watches every sentinel's
 * pub/sub for failovers (re-checking each hint before acting on it), holds writes while a
 * failover is under way, and moves the pool to the new master as soon as it answers as one.
 */
export class SentinelPool extends BasePool<SentinelEvents> {
  protected readonly dispatcher: Dispatcher;
  private readonly o: ResolvedSentinelOptions;
  private readonly ctx: DiscoveryContext;
  private readonly node: NodePool;
  private readonly gate: Gate;
  private readonly tracker: MasterTracker;
  private readonly watchers = new Map<string, SentinelWatcher>();
  private promotionWatch: PromotionWatch | undefined;
  /** Re-lists the replicas to watch: one listing at a time, and one more after it for triggers meanwhile. */
  private readonly watchRefresh = new Coalescer(() => this.listWatched());
  private pollTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  private replicaPools: NodePool[] = [];
  private replicaRr = 0;
  private onMasterFallback = false;
  /** Re-loads the replicas that serve reads (role 'replica'), coalesced like {@link watchRefresh}. */
  private readonly replicaRefresh = new Coalescer(() => this.loadReplicas(), { onError: (err) => this.emit('error', err as Error) });
  private hub: PubSubHub | undefined;
  private readonly cache: ClientCache | undefined;
  /** Nodes' zones and reads per zone, with a zone-aware `readFrom`. */
  private readonly zones: ZoneTracker | undefined;

  private constructor(o: ResolvedSentinelOptions, master: NodeAddress, epoch: number | undefined, learned: Pick<DiscoveryContext, 'noMasterRecord' | 'sentinelIds'>) {
    super();
    this.o = o;
    // What create()'s discovery learned (sentinels refusing SENTINEL MASTER, their run ids) is not asked again.
    this.ctx = { masterName: o.masterName, sentinels: o.sentinels, sentinelConn: o.sentinel, dataConn: o.probe, natMap: o.natMap, noMasterRecord: learned.noMasterRecord, sentinelIds: learned.sentinelIds };
    this.gate = new Gate(o.maxQueued, o.queueTimeout, () => `the master of "${o.masterName}" to be confirmed`, () => this.tracker.onGateStall());
    this.cache = o.cache ? new ClientCache(o.cache) : undefined;
    this.zones = o.readFrom ? new ZoneTracker(o.readFrom, o.clientAz, o.data.connectTimeout || 5000) : undefined;
    this.node = this.makeNode(master, true);
    this.tracker = new MasterTracker({
      o,
      node: this.node,
      gate: this.gate,
      ask: () => pollSentinels(this.ctx),
      verify: (address) => verifyMaster(address, o.probe),
      isClosed: () => this.closed,
      emit: (event, payload) => (this.emit as (e: string, p: unknown) => boolean)(event, payload),
      switched: (e) => this.onSwitched(e),
    }, epoch);
    const host: SentinelHost = {
      node: this.node,
      gate: this.gate,
      o,
      isClosed: () => this.closed,
      isFenced: () => this.tracker.fenced,
      requestRefresh: (reason, hold) => this.requestRefresh(reason, hold),
      replicaCount: () => this.replicaCount(),
      pickReplica: () => this.pickReplica(),
    };
    this.dispatcher = o.role === 'replica' ? new ReplicaDispatcher(host) : new MasterDispatcher(host);
    if (o.keyPrefix) this.keyPrefix = new KeyPrefixer(o.keyPrefix, new CommandRegistry());
    if (this.cache) this.dispatcher.cache = this.cache;
  }

  private makeNode(address: NodeAddress, isMaster: boolean): NodePool {
    const cache = this.cache;
    const zones = this.zones;
    const node = new NodePool(address, isMaster ? this.o.data : { ...this.o.data, role: 'replica' }, this.o.pool, {
      onConnectionLost: isMaster ? () => this.requestRefresh('reconnect', true) : () => this.refreshReplicas(),
      mode: 'sentinel',
      ...(cache && this.o.cache ? { handshake: [trackingCommand(this.o.cache)] } : {}),
      // Each connection asks its node's zone once, before anything else goes out on it.
      ...(cache || zones ? { onConnection: (c: Connection) => { cache?.attach(c); zones?.observe(c); } } : {}),
    });
    node.on('connect', (i) => this.emit('connect', { address: i.address, connectionId: i.connectionId }));
    node.on('close', (i) => this.emit('close', { address: i.address, connectionId: i.connectionId, error: i.error }));
    node.on('error', (e) => this.emit('error', e));
    node.on('maintenance', (e) => this.emit('maintenance', e));
    return node;
  }

  /**
   * Finds the master of `masterName` through `sentinels` (`'host:port'` or `{ host, port }`),
   * verifies it with ROLE, connects, and starts watching the sentinels.
   * Rejects with `MasterNotMonitoredError`, `AllSentinelsDownError`, or the connection error.
   */
  static async create(masterName: string, sentinels: Address[], options: SentinelOptions = {}): Promise<SentinelPool> {
    const o = resolveSentinelOptions(masterName, sentinels, options);
    const ctx: DiscoveryContext = { masterName: o.masterName, sentinels: o.sentinels, sentinelConn: o.sentinel, dataConn: o.probe, natMap: o.natMap };
    const deadline = Date.now() + o.discoveryTimeout;
    let master: NodeAddress;
    let epoch: number | undefined;
    for (let attempt = 0; ; attempt++) {
      // Name unknown / all down: fail at once. With 'majority', start where a majority of the
      // sentinels says (a lone sentinel naming an uncommitted promotion is one voice), else the newest answer.
      const poll = await pollSentinels(ctx);
      const answer = (o.failoverCommit === 'majority' ? majorityMaster(poll.answers, poll.known) : undefined) ?? newestAnswer(poll.answers)!;
      try {
        await verifyMaster(answer.address, o.probe);
        master = answer.address;
        epoch = answer.epoch;
        break;
      } catch (err) {
        // Wrong credentials or a refused ROLE (ACL) will not get better by waiting.
        if (err instanceof AuthenticationError) throw err;
        // Nor will a certificate that does not verify, or a port that does (not) speak TLS.
        if (err instanceof ConnectionError && tlsHint(err.cause ?? err) !== undefined) throw err;
        if (err instanceof RedisError && err.code === 'NOPERM') {
          throw new ConnectionError(
            `The data-node user may not run ROLE on ${key(answer.address)} (${err.message}); the pool checks every master the sentinels name with ROLE: grant +role (after any -@dangerous).`,
            { cause: err, address: answer.address },
          );
        }
        // A stale answer (a replica) or a master that is restarting: ask again, within discoveryTimeout.
        if (Date.now() >= deadline) {
          throw new ConnectionError(`The sentinels name ${key(answer.address)} as master of "${o.masterName}", but it could not be confirmed within discoveryTimeout (${o.discoveryTimeout} ms): ${(err as Error).message}`, { cause: err, address: answer.address });
        }
        await sleep(backoffDelay(attempt, o.pool.reconnect));
      }
    }
    const pool = new SentinelPool(o, master, epoch, ctx);
    try {
      if (o.role === 'master') await pool.node.lane();
      else await pool.loadReplicas();
    } catch (err) {
      await pool.close();
      throw err;
    }
    pool.start();
    return pool;
  }

  private start(): void {
    for (const s of this.o.sentinels) this.addSentinel(s);
    if (this.o.role === 'master' && this.o.watchReplicas) {
      this.promotionWatch = new PromotionWatch(this.o.probe, this.o.pool.reconnect, { onLost: (r, at) => this.tracker.onReplicaLost(r, at) });
      this.refreshWatch();
    }
    void discoverSentinels(this.ctx, this.o.sentinels[0]!).then(
      (more) => more.forEach((s) => this.addSentinel(s)),
      (err) => this.emit('error', err as Error),
    );
    if (this.o.pollInterval > 0) {
      this.pollTimer = setInterval(() => {
        this.requestRefresh('poll', false);
        this.refreshWatch();
        if (this.o.role === 'replica') this.refreshReplicas();
      }, this.o.pollInterval);
      this.pollTimer.unref();
    }
  }

  private addSentinel(address: NodeAddress): void {
    if (this.closed || this.watchers.has(key(address))) return;
    if (!this.ctx.sentinels.some((s) => sameAddress(s, address))) this.ctx.sentinels.push(address);
    const w = new SentinelWatcher(address, this.o.masterName, this.o.sentinel, this.o.resubscribe, this.o.sentinelPollInterval, {
      onMessage: (channel, payload, sentinel) => {
        const sig = classifySentinelMessage(channel, payload, this.o.masterName);
        if (sig) this.onSignal(sig, channel, sentinel);
      },
      onUp: (a, reconnected) => {
        this.emit('sentinel-up', { address: a, reconnected });
        // Messages published while the loop was away are lost: check now.
        if (reconnected) this.requestRefresh('reconnect', false);
      },
      onDown: (a, error) => this.emit('sentinel-down', { address: a, error }),
      onPolling: (a, error) => this.emit('sentinel-polling', { address: a, error }),
      onPolledMaster: (_a, m, failover) => this.tracker.onPolled(m, failover),
      onBackoff: (a, delay, attempt) => this.emit('sentinel-reconnect', { address: a, delay, attempt }),
    });
    this.watchers.set(key(address), w);
    w.start();
  }

  /** A sentinel signal: the tracker acts on the master; the pool keeps its replicas, watch and loops current. */
  private onSignal(sig: SentinelSignal, channel: string, leader?: NodeAddress): void {
    if (this.closed) return;
    this.tracker.onSignal(sig, channel, leader);
    switch (sig.kind) {
      case 'switch':
      case 'refresh':
        if (this.o.role === 'replica') this.refreshReplicas();
        return;
      case 'replicas':
        if (this.o.role === 'replica') this.refreshReplicas();
        this.refreshWatch();
        return;
      case 'sentinel':
        noteSentinelId(this.ctx, this.o.natMap(sig.address), sig.id);
        this.addSentinel(this.o.natMap(sig.address));
        return;
    }
  }

  /** Asks for the master again: the tracker coalesces re-checks; with `hold`, commands wait for it. */
  private requestRefresh(reason: DetectedBy, hold: boolean): void {
    this.tracker.requestRefresh(reason, hold);
  }

  /** The tracker switched the pool to a new master: everything that follows the master moves too. */
  private onSwitched(e: SwitchInfo): void {
    // Subscribers move with the data connections: the old master may stay a master (and
    // keep its subscribers) for seconds after the switch, hearing nothing new.
    this.hub?.replace('failover', e.at);
    publishFailover({ ...e });
    // Tracking lives on the old master's connections: nothing it cached can be trusted now.
    this.cache?.flush('failover');
    this.emit('failover', e);
    if (this.o.role === 'replica') this.refreshReplicas();
    this.refreshWatch();
  }

  // ---- promotion watch ------------------------------------------------------------------

  /** Watches the replicas the sentinels list for our master (coalesced; errors go to 'error'). */
  private refreshWatch(): void {
    if (!this.promotionWatch || this.closed) return;
    void this.watchRefresh.request();
  }

  private async listWatched(): Promise<void> {
    const watch = this.promotionWatch;
    if (!watch || this.closed) return;
    try {
      const found = await discoverReplicas(this.ctx, 'reachable');
      if (!this.closed) watch.set(found.filter((a) => !sameAddress(a, this.node.target)));
    } catch (err) {
      if (this.closed) return;
      if (isPermissionError(err)) {
        // The sentinel user may not list replicas: no watch (said once); sentinel messages, the
        // poll and READONLY still move the pool, with the blind window they leave.
        watch.stop();
        this.promotionWatch = undefined;
        this.emit('error', new ConnectionError(
          `The sentinel user may not run SENTINEL REPLICAS (${(err as Error).message}), so the pool cannot watch the replicas of "${this.o.masterName}" for a promotion it does not hear of; grant +sentinel|replicas, or set watchReplicas: false to silence this.`,
          { cause: err, address: { ...this.o.sentinels[0]! } },
        ));
        return;
      }
      this.emit('error', err as Error);
    }
  }

  // ---- replica reads -------------------------------------------------------------------

  private async loadReplicas(): Promise<void> {
    const found = await discoverReplicas(this.ctx);
    const checked = await Promise.all(found.map((a) => verifyMaster(a, this.o.probe, 'slave').then(() => a, () => undefined)));
    const healthy = checked.filter((a): a is NodeAddress => a !== undefined);
    // close() closes the replica pools it knows of: none is made after it.
    if (this.closed) return;
    const keep = new Set(healthy.map(key));
    for (const p of this.replicaPools) if (!keep.has(key(p.target))) void p.close(this.o.closeTimeout);
    const existing = new Map(this.replicaPools.filter((p) => keep.has(key(p.target))).map((p) => [key(p.target), p]));
    const created = new Map(healthy.filter((a) => !existing.has(key(a))).map((a) => [key(a), this.makeNode(a, false)]));
    if (this.zones) {
      // A new replica serves reads once its zone is known (else the first reads could cross
      // zones); the master's zone matters to 'az-affinity-replicas-and-primary'.
      this.replicaPools = [...existing.values()];
      await this.zones.learn([...created.values(), ...(this.o.readFrom === 'az-affinity-replicas-and-primary' ? [this.node] : [])]);
      if (this.closed) {
        // close() came while the zones were asked: the pools made for this load are ours to close.
        for (const p of created.values()) void p.close(this.o.closeTimeout);
        return;
      }
    }
    this.replicaPools = healthy.map((a) => existing.get(key(a)) ?? created.get(key(a))!);
    this.hub?.replace('replicas-changed');
  }

  private refreshReplicas(): void {
    if (this.closed || this.o.role !== 'replica') return;
    void this.replicaRefresh.request();
  }

  /** @internal Healthy replicas known now. */
  replicaCount(): number {
    return this.replicaPools.length;
  }

  /**
   * @internal Next replica pool (round robin, or by zone with a zone-aware `readFrom`). With
   * none healthy: the master's pool (`replicaFallback: 'master'`, said once per outage) or a
   * not-sent ConnectionError.
   */
  pickReplica(): NodePool {
    const n = this.replicaPools.length;
    let last: ReadChoice<NodePool> | undefined;
    if (this.zones) {
      // A replica whose connection attempts keep failing is passed over (its pool reconnects in
      // the background when it is in our zone) until the sentinels' next answer drops it.
      const healthy = (p: NodePool) => p.lastError === undefined && !p.isClosed;
      const choice = this.zones.choose(
        [...this.replicaPools.map((p) => ({ node: p, address: p.target, primary: false, healthy: healthy(p) })), { node: this.node, address: this.node.target, primary: true, healthy: healthy(this.node) }],
        (p) => void p.lane().catch(() => {}),
      );
      // The master as the last resort goes through replicaFallback below; in our zone it is a choice.
      if (choice && choice.tier !== 'primary') {
        if (choice.tier !== 'same-zone-primary') this.onMasterFallback = false;
        this.zones.count(choice);
        return choice.node;
      }
      last = choice;
    } else if (n > 0) {
      this.onMasterFallback = false;
      return this.replicaPools[this.replicaRr++ % n]!;
    }
    if (this.o.replicaFallback === 'error') {
      throw new ConnectionError(`No healthy replica of "${this.o.masterName}" to serve this command (replicaFallback: 'error'); it was not sent.`, { address: { ...this.node.target } });
    }
    if (!this.onMasterFallback) {
      this.onMasterFallback = true;
      this.emit('error', new ConnectionError(`No healthy replica of "${this.o.masterName}": commands go to the master ${key(this.node.target)} (replicaFallback: 'master').`, { address: { ...this.node.target } }));
    }
    if (last) this.zones?.count(last);
    return this.node;
  }

  // ---- public -------------------------------------------------------------------------

  /** The master this pool writes to now. */
  master(): NodeAddress {
    return { ...this.node.target };
  }

  /** Generation, gate, queue, pool sizes, sentinels and counters. */
  stats(): SentinelStats {
    return {
      ...this.node.stats(),
      masterName: this.o.masterName,
      role: this.o.role,
      master: this.master(),
      gate: this.gate.isOpen ? 'open' : 'held',
      fenced: this.tracker.fenced,
      queued: this.gate.queued,
      switches: this.tracker.switches,
      refreshes: this.tracker.refreshes,
      sentinels: [...this.watchers.values()].map((w) => ({ address: { ...w.address }, connected: w.connected, polling: w.polling })),
      replicas: this.replicaPools.map((p) => ({ ...p.target })),
      watchedReplicas: this.promotionWatch?.addresses ?? [],
      configEpoch: this.tracker.configEpoch,
      durability: this.o.durabilityCounters.snapshot(),
      closed: this.closed,
      pubsub: this.hub?.stats() ?? PubSubHub.emptyStats(),
      ...(this.cache ? { cache: this.cache.stats() } : {}),
      ...(this.zones ? { reads: this.zones.stats() } : {}),
    };
  }

  /**
   * @internal Subscriptions go where this pool's commands go: the master, or with
   * `role: 'replica'` a healthy replica (the one they are on while it stays healthy; the master
   * when there is none, since every message published there is also sent to the replicas).
   */
  pubsubHub(): PubSubHub {
    this.ensureOpen();
    return this.hub ??= new PubSubHub({
      place: (_kind, _name, current) => {
        if (this.o.role === 'master') return [{ pool: this.node }];
        const here = current.find((p) => this.replicaPools.includes(p));
        if (here) return [{ pool: here }];
        const n = this.replicaPools.length;
        return [{ pool: n > 0 ? this.replicaPools[this.replicaRr++ % n]! : this.node }];
      },
    }, { reconnect: this.o.pool.reconnect, timeout: this.o.data.commandTimeout });
  }

  async reauthenticate(): Promise<void> {
    // async: after close() this rejects (a caller's .catch() sees it) instead of throwing.
    this.ensureOpen();
    return settleAll([
      this.node.reauthenticate(),
      ...this.replicaPools.map((p) => p.reauthenticate()),
      ...[...this.watchers.values()].map((w) => w.reauthenticate()),
    ]);
  }

  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closed = true;
    this.hub?.close();
    this.zones?.close();
    this.watchRefresh.close();
    this.replicaRefresh.close();
    this.closing = (async () => {
      if (this.pollTimer) clearInterval(this.pollTimer);
      this.promotionWatch?.stop();
      const tracking = this.tracker.close();
      this.gate.fail();
      await Promise.all([...this.watchers.values()].map((w) => w.stop()));
      await Promise.all([this.node.close(this.o.closeTimeout), ...this.replicaPools.map((p) => p.close(this.o.closeTimeout))]);
      await tracking;
    })();
    return this.closing;
  }
}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface SentinelPool extends PubSubMethods, ShardedPubSubMethods {}
installPubSub(SentinelPool.prototype);
