import { tlsHint } from '../connection/tls-errors.js';
import { publishFailover } from '../diagnostics.js';
import { AllSentinelsDownError, AuthenticationError, ConnectionError, RedisError } from '../errors.js';
import { backoffDelay, sleep } from '../pool/backoff.js';
import { NodePool, type NodePoolStats } from '../pool/node-pool.js';
import { settleAll } from '../pool/settle.js';
import type { DurabilityStats } from '../pool/durability.js';
import { BasePool, type Dispatcher, type PoolEvents } from '../pool/surface.js';
import { CommandRegistry } from '../commands/command-table.js';
import { KeyPrefixer } from '../commands/key-prefix.js';
import { formatAddress, type Address, type NodeAddress } from '../types.js';
import { askSentinels, discoverReplicas, discoverSentinels, sameAddress, verifyMaster, type DiscoveryContext } from './discovery.js';
import { MasterDispatcher, ReplicaDispatcher } from './dispatchers.js';
import type { DetectedBy, SentinelHost } from './sentinel-host.js';
import { Gate } from './gate.js';
import { classifySentinelMessage, type SentinelSignal } from './messages.js';
import { resolveSentinelOptions, type ResolvedSentinelOptions, type SentinelOptions } from './options.js';
import { SentinelWatcher } from './watcher.js';
import { PromotionWatch } from './promotion-watch.js';
import { isPermissionError } from './sentinel-client.js';
import { blindWindow, epochAfterSwitch, judgeAnswer } from './master-view.js';
import { PubSubHub, type PubSubStats } from '../pubsub/hub.js';
import { ClientCache, type CacheStats } from '../cache/client-cache.js';
import { trackingCommand } from '../cache/options.js';
import type { Connection } from '../connection/connection.js';
import { installPubSub, type PubSubMethods, type ShardedPubSubMethods } from '../pubsub/methods.js';
import { ZoneTracker, type ZoneReadStats } from '../pool/zones.js';
import type { ReadChoice } from '../pool/read-from.js';

export type { DetectedBy } from './sentinel-host.js';

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
}

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
  private readonly watchers = new Map<string, SentinelWatcher>();
  private fence: { from: NodeAddress; timer: NodeJS.Timeout; leader: NodeAddress | undefined; at: number } | undefined;
  /** Config epoch of the followed configuration (see MasterView). */
  private epoch: number | undefined;
  private promotionWatch: PromotionWatch | undefined;
  private watchRefresh: Promise<void> | undefined;
  /** Replica -> when its watch connection was last killed (a promotion, if ROLE then says master). */
  private readonly lostAt = new Map<string, number>();
  /** Watch connections lost and not yet judged by ROLE: writes are held meanwhile. */
  private suspects = 0;
  /** When writes to the current master were first held for the switch under way. */
  private heldSince: number | undefined;
  private pin: { against: NodeAddress; until: number } | undefined;
  private refreshing: Promise<void> | undefined;
  private again: DetectedBy | undefined;
  private wake = new AbortController();
  private pollTimer: NodeJS.Timeout | undefined;
  private switches = 0;
  private refreshes = 0;
  private closing: Promise<void> | undefined;
  private replicaPools: NodePool[] = [];
  private replicaRr = 0;
  private onMasterFallback = false;
  private stallCheck: Promise<boolean> | undefined;
  private replicaRefresh: Promise<void> | undefined;
  private watching: NodeAddress | undefined;
  private readonly closeSignal = new AbortController();
  private hub: PubSubHub | undefined;
  private readonly cache: ClientCache | undefined;
  /** Nodes' zones and reads per zone, with a zone-aware `readFrom`. */
  private readonly zones: ZoneTracker | undefined;

  private constructor(o: ResolvedSentinelOptions, master: NodeAddress, epoch: number | undefined, noMasterRecord: Set<string> | undefined) {
    super();
    this.o = o;
    this.epoch = epoch;
    // What create()'s discovery learned (sentinels refusing SENTINEL MASTER) is not asked again.
    this.ctx = { masterName: o.masterName, sentinels: o.sentinels, sentinelConn: o.sentinel, dataConn: o.probe, natMap: o.natMap, noMasterRecord };
    this.gate = new Gate(o.maxQueued, o.queueTimeout, () => `the master of "${o.masterName}" to be confirmed`, () => this.onGateStall());
    this.cache = o.cache ? new ClientCache(o.cache) : undefined;
    this.zones = o.readFrom ? new ZoneTracker(o.readFrom, o.clientAz, o.data.connectTimeout || 5000) : undefined;
    this.node = this.makeNode(master, true);
    const host: SentinelHost = {
      node: this.node,
      gate: this.gate,
      o,
      isClosed: () => this.closed,
      isFenced: () => this.fence !== undefined,
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
      const answer = await askSentinels(ctx); // name unknown / all down: fail at once
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
    const pool = new SentinelPool(o, master, epoch, ctx.noMasterRecord);
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
      this.promotionWatch = new PromotionWatch(this.o.probe, this.o.pool.reconnect, { onLost: (r, at) => this.onReplicaLost(r, at) });
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
      onPolledMaster: (_a, m, failover) => {
        // Without pub/sub, a failover in progress seen by polling engages the same write fence.
        const promoting = failover?.candidate && this.o.natMap(failover.candidate);
        if (failover && m && sameAddress(this.o.natMap(m), this.node.target) && !(promoting && sameAddress(promoting, this.node.target))) {
          this.onSignal({ kind: 'failover-start', event: 'poll:failover_in_progress', master: m, candidate: failover.candidate }, 'poll');
          return;
        }
        if (m && !sameAddress(this.o.natMap(m), this.node.target)) this.requestRefresh('poll', false);
      },
      onBackoff: (a, delay, attempt) => this.emit('sentinel-reconnect', { address: a, delay, attempt }),
    });
    this.watchers.set(key(address), w);
    w.start();
  }

  private onSignal(sig: SentinelSignal, channel: string, leader?: NodeAddress): void {
    if (this.closed) return;
    switch (sig.kind) {
      case 'failover-start':
        // A failover of another address (a replayed old one) is only a hint to look again.
        if (!sameAddress(this.o.natMap(sig.master), this.node.target)) {
          this.requestRefresh('pubsub', false);
          return;
        }
        if (this.o.role === 'master' && !this.fence) {
          const from = this.node.target;
          this.holdWrites();
          const timer = setTimeout(() => {
            if (this.fence?.timer !== timer) return;
            this.fence = undefined;
            this.emit('failover-abort', { masterName: this.o.masterName, master: from, reason: `no switch within fenceTimeout (${this.o.fenceTimeout} ms)`, at: Date.now() });
            this.requestRefresh('pubsub', false);
          }, this.o.fenceTimeout);
          timer.unref();
          // The sentinel announcing the failover leads it: if it goes down, the failover is stuck.
          this.fence = { from, timer, leader: channel === 'poll' ? undefined : leader, at: Date.now() };
          this.emit('failover-start', { masterName: this.o.masterName, master: from, event: sig.event, at: Date.now() });
        }
        if (sig.candidate && this.fence) void this.watchPromotion(this.o.natMap(sig.candidate), channel === 'poll' ? 'poll' : 'pubsub');
        return;
      case 'promoted':
        void this.tryPromoted(this.o.natMap(sig.address));
        return;
      case 'switch':
        // Announced, not yet trusted: hold writes to the old master while we check.
        this.requestRefresh('pubsub', !sameAddress(this.o.natMap(sig.to), this.node.target));
        if (this.o.role === 'replica') this.refreshReplicas();
        return;
      case 'failover-end':
        if (sig.aborted && this.fence) {
          clearTimeout(this.fence.timer);
          const from = this.fence.from;
          this.fence = undefined;
          this.emit('failover-abort', { masterName: this.o.masterName, master: from, reason: sig.event, at: Date.now() });
        }
        this.requestRefresh('pubsub', false);
        return;
      case 'refresh':
        this.requestRefresh('pubsub', false);
        if (this.o.role === 'replica') this.refreshReplicas();
        return;
      case 'replicas':
        if (this.o.role === 'replica') this.refreshReplicas();
        this.refreshWatch();
        return;
      case 'sentinel':
        this.addSentinel(this.o.natMap(sig.address));
        return;
      case 'sentinel-down':
        // The failover leader stopped (paused, partitioned): nobody will finish its failover before
        // fenceTimeout, so release the held writes to the master the sentinels still name.
        if (this.fence?.leader && sameAddress(this.fence.leader, this.o.natMap(sig.address))) {
          clearTimeout(this.fence.timer);
          const from = this.fence.from;
          this.fence = undefined;
          this.emit('failover-abort', { masterName: this.o.masterName, master: from, reason: `the failover leader ${formatAddress(sig.address)} is down`, at: Date.now() });
          this.requestRefresh('pubsub', false);
        }
        return;
    }
  }

  /**
   * The leader selected `candidate` for promotion: ask it for its ROLE until it is a master
   * (then switch at once, about a second before Sentinel publishes `+promoted-slave`), the
   * fence ends, or the pool closes.
   */
  private async watchPromotion(candidate: NodeAddress, detectedBy: DetectedBy): Promise<void> {
    const every = this.o.promotionCheckInterval;
    if (every === 0 || this.watching?.host === candidate.host && this.watching.port === candidate.port) return;
    this.watching = candidate;
    try {
      while (this.fence && !this.closed) {
        try {
          await verifyMaster(candidate, this.o.probe);
          if (this.fence && !this.closed) this.applyMaster(candidate, detectedBy, undefined);
          return;
        } catch {
          // Not promoted yet (or not reachable): look again shortly.
        }
        await sleep(every, this.closeSignal.signal, { unref: true });
      }
    } finally {
      this.watching = undefined;
    }
  }

  /** `+promoted-slave`: switch as soon as the promoted replica answers ROLE as master. */
  private async tryPromoted(address: NodeAddress): Promise<void> {
    if (this.o.role !== 'master' || sameAddress(address, this.node.target)) return;
    try {
      await verifyMaster(address, this.o.probe);
    } catch {
      this.requestRefresh('pubsub', false);
      return;
    }
    if (!this.closed) this.applyMaster(address, 'pubsub', undefined);
  }

  /**
   * Asks for the master again (coalesced: one resolution at a time, and a trigger that
   * arrives meanwhile runs one more). With `hold`, new commands wait until it completes.
   */
  requestRefresh(reason: DetectedBy, hold: boolean): void {
    if (this.closed || this.o.role !== 'master' && reason === 'readonly') return;
    if (hold) this.holdWrites();
    if (this.refreshing) {
      this.again = reason;
      this.wake.abort();
      return;
    }
    this.refreshing = this.refreshLoop(reason).finally(() => {
      this.refreshing = undefined;
    });
  }

  private async refreshLoop(reason: DetectedBy): Promise<void> {
    for (let attempt = 0; !this.closed; ) {
      this.again = undefined;
      let ok = false;
      try {
        this.refreshes++;
        ok = await this.resolveOnce(reason);
      } catch (err) {
        if (!this.closed) this.emit('error', err as Error);
      }
      if (this.closed) return;
      if (this.again !== undefined) {
        reason = this.again;
        continue;
      }
      // Nothing waits and no failover is announced: the next trigger or poll will look again.
      if (ok || (this.gate.isOpen && !this.fence)) return;
      this.wake = new AbortController();
      await sleep(backoffDelay(attempt++, this.o.pool.reconnect), this.wake.signal, { unref: true });
      if (this.again !== undefined) reason = this.again;
    }
  }

  /** One resolution: true when a master is confirmed and commands may flow. */
  private async resolveOnce(reason: DetectedBy): Promise<boolean> {
    let answer: NodeAddress;
    let answerEpoch: number | undefined;
    try {
      ({ address: answer, epoch: answerEpoch } = await askSentinels(this.ctx));
    } catch (err) {
      // Cut off from every sentinel (not from the master): carry on with the last verified
      // master while it still answers ROLE master, rather than hold every command until the
      // sentinels come back.
      if (err instanceof AllSentinelsDownError && (await this.continueWithCurrent(`No sentinel of "${this.o.masterName}" could be reached`, err))) return true;
      throw err;
    }
    if (this.fence && sameAddress(answer, this.fence.from)) return false; // the announced failover has not switched yet
    const current = this.node.target;
    const verdict = judgeAnswer({ address: current, epoch: this.epoch }, { address: answer, epoch: answerEpoch });
    if (verdict === 'stale') {
      // The newest answer comes from an older configuration than the one we follow (the sentinels
      // have not caught up with a switch we verified): stay while the current master still is one.
      try {
        await verifyMaster(current, this.o.probe);
        this.openGate();
        return true;
      } catch {
        // Ours is no master either (the sentinels were reset and their epochs restarted): follow them.
      }
    }
    if (this.pin && Date.now() > this.pin.until) this.pin = undefined;
    if (this.pin && sameAddress(answer, this.pin.against)) {
      // The sentinels lag behind a switch we already verified: keep the current master while it still is one.
      try {
        await verifyMaster(current, this.o.probe);
        this.openGate();
        return true;
      } catch {
        this.pin = undefined;
      }
    }
    if (this.pin && sameAddress(answer, current)) this.pin = undefined;
    await verifyMaster(answer, this.o.probe);
    if (this.closed) return false;
    this.applyMaster(answer, reason, answerEpoch);
    return true;
  }

  /**
   * Commands have waited `queueTimeout` for a confirmation that has not come (the sentinels do
   * not answer): go on with the last verified master if it still answers ROLE master. Never
   * while a failover is announced (its fence holds writes) or after the master said READONLY.
   */
  private onGateStall(): Promise<boolean> {
    if (this.o.role !== 'master') return Promise.resolve(false);
    return this.continueWithCurrent(`The master of "${this.o.masterName}" could not be confirmed through the sentinels within queueTimeout (${this.o.queueTimeout} ms)`);
  }

  /**
   * Opens the gate on the last verified master if it still answers ROLE master (one check at a
   * time; said once per hold). Never while a failover is announced: its fence holds writes.
   */
  private continueWithCurrent(why: string, cause?: unknown): Promise<boolean> {
    if (this.fence || this.closed) return Promise.resolve(false);
    this.stallCheck ??= verifyMaster(this.node.target, this.o.probe).then(
      () => {
        if (this.fence || this.closed) return false;
        if (!this.gate.isOpen) {
          this.node.reconnectLanes();
          this.openGate();
          this.emit('error', new ConnectionError(`${why}; commands go on to the last verified master ${key(this.node.target)}, which still answers ROLE master.`, { cause, address: { ...this.node.target } }));
        }
        return true;
      },
      () => false,
    ).finally(() => {
      this.stallCheck = undefined;
    });
    return this.stallCheck;
  }

  /**
   * Points the pool at `address` (verified with ROLE). `epoch`: the config epoch of the
   * configuration that names it (undefined when unknown or when the pool saw the promotion itself).
   */
  private applyMaster(address: NodeAddress, reason: DetectedBy, epoch: number | undefined): void {
    const from = this.node.target;
    const fencedAt = this.fence?.at;
    if (this.fence) {
      clearTimeout(this.fence.timer);
      this.fence = undefined;
    }
    if (!sameAddress(from, address)) {
      const at = Date.now();
      const promoted = this.lostAt.get(key(address));
      const promotedAt = promoted !== undefined && at - promoted <= this.o.fenceTimeout ? promoted : undefined;
      const { fenced, blindMs } = blindWindow(fencedAt, promotedAt, this.heldSince ?? at);
      this.node.swap(address);
      this.switches++;
      this.epoch = epochAfterSwitch(this.epoch, epoch);
      this.lostAt.clear();
      this.pin = { against: from, until: at + this.o.fenceTimeout };
      this.openGate();
      // Subscribers move with the data connections: the old master may stay a master (and
      // keep its subscribers) for seconds after the switch, hearing nothing new.
      this.hub?.replace('failover', at);
      publishFailover({ masterName: this.o.masterName, from, to: address, detectedBy: reason, at, fenced, blindMs });
      // Tracking lives on the old master's connections: nothing it cached can be trusted now.
      this.cache?.flush('failover');
      this.emit('failover', { masterName: this.o.masterName, from, to: { ...address }, detectedBy: reason, at, fenced, blindMs });
      if (this.o.role === 'replica') this.refreshReplicas();
      this.refreshWatch();
    } else {
      if (epoch !== undefined && (this.epoch === undefined || epoch > this.epoch)) this.epoch = epoch;
      this.node.reconnectLanes();
      this.openGate();
    }
  }

  /** Holds commands at the gate, remembering since when (for the blind window of the switch). */
  private holdWrites(): void {
    if (this.gate.isOpen) this.heldSince = Date.now();
    this.gate.close();
  }

  private openGate(): void {
    this.heldSince = undefined;
    this.gate.open();
  }

  // ---- promotion watch ------------------------------------------------------------------

  /** Watches the replicas the sentinels list for our master (coalesced; errors go to 'error'). */
  private refreshWatch(): void {
    const watch = this.promotionWatch;
    if (!watch || this.closed || this.watchRefresh) return;
    this.watchRefresh = discoverReplicas(this.ctx, 'reachable')
      .then((found) => {
        if (!this.closed) watch.set(found.filter((a) => !sameAddress(a, this.node.target)));
      })
      .catch((err: unknown) => {
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
      })
      .finally(() => {
        this.watchRefresh = undefined;
      });
  }

  /**
   * A watch connection to `replica` closed. Sentinel kills every normal connection of the
   * replica it promotes, so hold writes at once, then ask the replica for its ROLE: a master
   * means a promotion (switch now, before any sentinel announces it); anything else (restart,
   * network) releases the hold.
   */
  private onReplicaLost(replica: NodeAddress, at: number): void {
    if (this.closed || sameAddress(replica, this.node.target)) return;
    this.lostAt.set(key(replica), at);
    this.suspects++;
    this.holdWrites();
    if (this.heldSince !== undefined && this.heldSince > at) this.heldSince = at;
    void verifyMaster(replica, this.o.probe).then(
      () => {
        if (!this.closed && !sameAddress(replica, this.node.target)) this.applyMaster(replica, 'promotion', undefined);
      },
      () => {},
    ).finally(() => {
      this.suspects--;
      // Not a promotion: release the hold unless a fence, a refresh or another suspect holds it.
      if (this.suspects === 0 && !this.closed && !this.fence && !this.refreshing && !this.gate.isOpen) this.openGate();
    });
  }

  // ---- replica reads -------------------------------------------------------------------

  private async loadReplicas(): Promise<void> {
    const found = await discoverReplicas(this.ctx);
    const checked = await Promise.all(found.map((a) => verifyMaster(a, this.o.probe, 'slave').then(() => a, () => undefined)));
    const healthy = checked.filter((a): a is NodeAddress => a !== undefined);
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
        for (const p of created.values()) void p.close(this.o.closeTimeout);
        return;
      }
    }
    this.replicaPools = healthy.map((a) => existing.get(key(a)) ?? created.get(key(a))!);
    this.hub?.replace('replicas-changed');
  }

  private refreshReplicas(): void {
    if (this.closed || this.o.role !== 'replica' || this.replicaRefresh) return;
    this.replicaRefresh = this.loadReplicas()
      .catch((err) => { this.emit('error', err as Error); })
      .finally(() => { this.replicaRefresh = undefined; });
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
      fenced: this.fence !== undefined,
      queued: this.gate.queued,
      switches: this.switches,
      refreshes: this.refreshes,
      sentinels: [...this.watchers.values()].map((w) => ({ address: { ...w.address }, connected: w.connected, polling: w.polling })),
      replicas: this.replicaPools.map((p) => ({ ...p.target })),
      watchedReplicas: this.promotionWatch?.addresses ?? [],
      configEpoch: this.epoch,
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
    this.closing = (async () => {
      if (this.pollTimer) clearInterval(this.pollTimer);
      this.promotionWatch?.stop();
      if (this.fence) clearTimeout(this.fence.timer);
      this.fence = undefined;
      this.wake.abort();
      this.closeSignal.abort();
      this.gate.fail();
      await Promise.all([...this.watchers.values()].map((w) => w.stop()));
      await Promise.all([this.node.close(this.o.closeTimeout), ...this.replicaPools.map((p) => p.close(this.o.closeTimeout))]);
      await this.refreshing?.catch(() => {});
    })();
    return this.closing;
  }
}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface SentinelPool extends PubSubMethods, ShardedPubSubMethods {}
installPubSub(SentinelPool.prototype);
