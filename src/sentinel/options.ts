import { parseAddress } from '../address.js';
import { Auth } from '../connection/credentials.js';
import { checkTlsOptions, CONNECTION_OPTIONS, connectionFrom, resolveTls, type ConnectionOptions, type ResolvedConnectionOptions } from '../connection/options.js';
import { backoffSpec, checkOptions, defineOptions, MAX_TIMER, withDefaults } from '../options.js';
import type { BackoffOptions } from '../pool/backoff.js';
import { COMMON_OPTIONS, commonFrom, type CommonOptions, type ResolvedCommonOptions } from '../pool/common-options.js';
import { NAT_MAP_SPEC, resolveNatMap, type NatMap } from '../nat-map.js';
import type { Address, NodeAddress } from '../types.js';

export type { NatMap } from '../nat-map.js';
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import { cacheFrom, type ResolvedCacheOptions } from '../cache/options.js';
import { AZ_READ_FROM, checkAzOptions, type AzReadFrom } from '../pool/read-from.js';

/** Options of {@link SentinelPool.create}. Time values are in milliseconds. */
export interface SentinelOptions extends ConnectionOptions, CommonOptions {
  /** 'master' (default) serves the master; 'replica' serves reads from healthy replicas. */
  role?: 'master' | 'replica';
  /**
   * With `role: 'replica'` and no healthy replica: `'master'` (default) sends commands to the
   * master (an `error` event says so once per outage); `'error'` rejects them at once with a
   * `ConnectionError` (not sent).
   */
  replicaFallback?: 'master' | 'error';
  /**
   * With `role: 'replica'`, prefer replicas in the client's availability zone (`clientAz`,
   * required), as valkey-glide does. `'az-affinity'`: a healthy replica in `clientAz`, else any
   * healthy replica, else the master. `'az-affinity-replicas-and-primary'`: a healthy replica in
   * `clientAz`, else the master if it is in `clientAz`, else any healthy replica, else the
   * master. Each node's zone is asked once per connection (`HELLO`, else `INFO server` field
   * `availability_zone`: Valkey 8+ with `availability-zone` set); a node that reports none counts
   * as another zone. Reads per zone: `stats().reads`. Default: round robin over the replicas.
   */
  readFrom?: AzReadFrom;
  /** The availability zone this client runs in (e.g. `'use1-az1'`); required by, and only allowed with, a zone-aware `readFrom`. */
  clientAz?: string;
  /**
   * ACL user for the sentinels (separate from the data nodes' `username`). When neither this
   * nor `sentinelPassword` is given but `credentials` is, the provider is asked with role
   * `'sentinel'` (return `null` for sentinels without a password).
   */
  sentinelUsername?: string;
  /** Password for the sentinels (separate from the data nodes' `password`). */
  sentinelPassword?: string;
  /** TLS for the sentinel connections: `true` or Node TLS options. */
  sentinelTls?: boolean | TlsConnectionOptions;
  /** Timeout of each sentinel request and of each ROLE check. Default 500. */
  sentinelTimeout?: number;
  /**
   * Backoff of a subscriber loop that lost its sentinel. Default `{ initialDelay: 100, maxDelay: 5000 }`.
   * A refused connection (the sentinel is down or restarting) is retried every `initialDelay`
   * (jittered) without growing, so the loop is back promptly once the sentinel answers; other
   * failures (timeouts, refused logins) back off exponentially up to `maxDelay`.
   */
  resubscribe?: Partial<BackoffOptions>;
  /** Periodic re-check of the master through the sentinels and ROLE; 0 disables. Default 10000. */
  pollInterval?: number;
  /**
   * How often a sentinel that refuses SUBSCRIBE is polled instead (three cheap commands on one
   * connection): short, because polling must see a failover start before the promotion for
   * the write fence to help. Default 100.
   */
  sentinelPollInterval?: number;
  /** Commands that may wait while the master is switched; more are refused with QueueFullError. Default 10000. */
  maxQueued?: number;
  /** Longest a command waits for a switch to complete (within its own deadline). Default 5000. */
  queueTimeout?: number;
  /** Longest writes are held after a sentinel announced a failover that has not completed. Default 15000. */
  fenceTimeout?: number;
  /**
   * When a new master counts. `'majority'` (default): only once a majority of the sentinels the
   * pool knows (configured and discovered, answering or not) names it with a config epoch newer
   * than the one the pool follows; until then writes are held, sent to neither node, so no write
   * is acknowledged by a promotion the sentinels later roll back. `'promotion'`: as soon as the
   * promoted replica answers ROLE master, about a second sooner, at the risk of losing every
   * write acknowledged there when Sentinel does not keep that promotion (its leader went silent
   * before the others adopted it). See docs/failover-guarantees.md.
   */
  failoverCommit?: 'majority' | 'promotion';
  /**
   * While a failover of our master is under way, how often the replica the leader selected is
   * asked for its ROLE, so the pool switches the moment it is promoted. 0 waits for
   * `+promoted-slave` / `+switch-master` instead. Default 25.
   */
  promotionCheckInterval?: number;
  /** How long `create()` keeps retrying when the sentinels name a node that is not (yet) a master. Default 10000. */
  discoveryTimeout?: number;
  /**
   * Keep one idle connection to each replica of the master (master role only), so the pool
   * hears a promotion the moment it happens, even when it has lost the sentinel leading the
   * failover: Sentinel kills every normal client connection of the replica it promotes, and the
   * pool then asks that replica for its ROLE and, if it is the master now, holds no more writes
   * for the old one. Costs one connection per replica. Default true.
   */
  watchReplicas?: boolean;
  /** Announced address -> reachable address: `{ '10.0.0.5:6379': 'localhost:16379' }` or a function. */
  natMap?: NatMap;
}

export interface ResolvedSentinelOptions extends ResolvedCommonOptions {
  masterName: string;
  sentinels: NodeAddress[];
  role: 'master' | 'replica';
  replicaFallback: 'master' | 'error';
  /** Zone-aware replica reads; undefined: round robin. */
  readFrom: AzReadFrom | undefined;
  clientAz: string;
  data: ResolvedConnectionOptions;
  /** Data-node options for ROLE checks: short timeouts. */
  probe: ResolvedConnectionOptions;
  sentinel: ResolvedConnectionOptions;
  /** Client-side cache settings; undefined when off. */
  cache: ResolvedCacheOptions | undefined;
  resubscribe: BackoffOptions;
  pollInterval: number;
  sentinelPollInterval: number;
  maxQueued: number;
  queueTimeout: number;
  fenceTimeout: number;
  failoverCommit: 'majority' | 'promotion';
  promotionCheckInterval: number;
  discoveryTimeout: number;
  watchReplicas: boolean;
  natMap: (a: NodeAddress) => NodeAddress;
}

/** The options only a Sentinel pool has. */
export type SentinelOwnOptions = Omit<SentinelOptions, keyof ConnectionOptions | keyof CommonOptions>;

/** One entry per Sentinel option: its check, default and line of the reference page. */
export const SENTINEL_OWN_OPTIONS = defineOptions<SentinelOwnOptions>()({
  role: { kind: 'oneOf', values: ['master', 'replica'], default: 'master', doc: '`replica` serves commands from healthy replicas (replica reads).' },
  replicaFallback: { kind: 'oneOf', values: ['master', 'error'], default: 'master', doc: 'With `role: \'replica\'` and no healthy replica: `master` serves from the master (an `error` event says so once per outage); `error` rejects at once with a `ConnectionError` (not sent).' },
  readFrom: { kind: 'oneOf', values: AZ_READ_FROM, defaultDoc: 'round robin', doc: 'With `role: \'replica\'`, prefer replicas in `clientAz`: `az-affinity` (a healthy replica in the zone, else any healthy replica, else the master) or `az-affinity-replicas-and-primary` (a replica in the zone, else the master if it is in the zone, else any replica, else the master).' },
  clientAz: {
    kind: 'custom', type: 'string', doc: 'The availability zone this client runs in (e.g. `use1-az1`); required by, and only allowed with, a zone-aware `readFrom`.',
    // The zone's own rule; the combinations with readFrom are checked after the table.
    validate: (v) => checkAzOptions(AZ_READ_FROM[0], v, 'SentinelPool'),
  },
  sentinelUsername: { kind: 'string', doc: 'ACL user of the sentinels, separate from the data nodes\' `username`. Credentials in a sentinel URL are the sentinels\' own (the options win). With neither this nor `sentinelPassword` but `credentials`, the provider is asked with role `sentinel`.' },
  sentinelPassword: { kind: 'string', allowEmpty: true, doc: 'Password of the sentinels, separate from the data nodes\' `password`.' },
  sentinelTls: { kind: 'custom', type: '`true` or tls.connect options', defaultDoc: 'off', doc: 'TLS of the sentinel connections, as `tls`; a sentinel given as a `rediss://` URL turns it on.', validate: (v, name) => checkTlsOptions(name, v) },
  sentinelTimeout: { kind: 'integer', unit: 'ms', min: 1, max: MAX_TIMER, default: 500, doc: 'Timeout of each sentinel request and of each ROLE check.' },
  resubscribe: backoffSpec('Backoff of a subscriber loop that lost its sentinel: a refused connection is retried every `initialDelay` (jittered) without growing; other failures back off up to `maxDelay`.', 100, 5000),
  pollInterval: { kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 10000, doc: 'Periodic re-check of the master through the sentinels and ROLE; 0 disables.' },
  sentinelPollInterval: { kind: 'integer', unit: 'ms', min: 1, max: MAX_TIMER, default: 100, doc: 'How often a sentinel that refuses SUBSCRIBE is polled instead (short, so the write fence engages before the promotion).' },
  maxQueued: { kind: 'integer', default: 10000, doc: 'Commands that may wait while the master is switched; more are refused with `QueueFullError`.' },
  queueTimeout: { kind: 'integer', unit: 'ms', min: 1, max: MAX_TIMER, default: 5000, doc: 'Longest a command waits for a switch (within its own deadline). When no sentinel can be reached, the pool goes on with the last verified master as soon as it answers ROLE master.' },
  fenceTimeout: { kind: 'integer', unit: 'ms', min: 1, max: MAX_TIMER, default: 15000, doc: 'Longest writes are held after a sentinel announced a failover that has not completed (released sooner when it aborts or the other sentinels report its leader down).' },
  failoverCommit: { kind: 'oneOf', values: ['majority', 'promotion'], default: 'majority', doc: '`majority`: a new master counts once a majority of the known sentinels (configured and discovered, answering or not) names it with a newer config epoch; writes are held until then, so a promotion Sentinel rolls back costs no acknowledged write. `promotion`: switch as soon as the promoted replica answers ROLE master (about a second sooner), losing the writes acknowledged there if Sentinel does not keep the promotion.' },
  promotionCheckInterval: { kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 25, doc: 'During a failover of our master, how often the replica the leader selected is asked for its ROLE, so the pool switches the moment it is promoted; 0 waits for `+promoted-slave` / `+switch-master`.' },
  discoveryTimeout: { kind: 'integer', unit: 'ms', max: MAX_TIMER, default: 10000, doc: 'How long `create()` keeps retrying when the sentinels name a node that is not (yet) a master.' },
  watchReplicas: { kind: 'boolean', default: true, doc: 'Keep one idle connection to each replica (master role), so the pool hears a promotion the moment it happens even when it lost the sentinel leading the failover (Sentinel kills the promoted replica\'s client connections). One connection per replica.' },
  natMap: NAT_MAP_SPEC,
});

/** Every option of a Sentinel pool. */
export const SENTINEL_OPTIONS = defineOptions<SentinelOptions>()({ ...CONNECTION_OPTIONS, ...COMMON_OPTIONS, ...SENTINEL_OWN_OPTIONS });

/** Validates everything (TypeError naming the argument or option) and applies defaults. */
export function resolveSentinelOptions(masterName: unknown, sentinels: unknown, o: SentinelOptions): ResolvedSentinelOptions {
  if (typeof masterName !== 'string' || masterName.trim() === '') throw new TypeError('masterName must be a non-empty string (the name the sentinels monitor).');
  if (!Array.isArray(sentinels) || sentinels.length === 0) throw new TypeError('sentinels must be a non-empty array of \'host:port\' strings, redis:// or rediss:// URLs, or { host, port } objects.');
  const parsed = sentinels.map((s, i) => {
    const p = parseAddress(s as Address, `sentinels[${i}]`);
    if (p.db !== undefined) throw new TypeError(`sentinels[${i}] names a database; sentinels have none (use the db option for the data nodes).`);
    return p;
  });
  const list = parsed.map((p) => ({ host: p.host, port: p.port }));
  // A sentinel URL's scheme and credentials are the sentinels' own (rediss:// turns sentinelTls on).
  const fromUrl = parsed.find((p) => p.username !== undefined || p.password !== undefined || p.tls !== undefined);
  checkOptions(SENTINEL_OPTIONS, o);
  if (o.readFrom !== undefined && o.role !== 'replica') {
    throw new TypeError(`Option readFrom: '${o.readFrom}' of SentinelPool needs role: 'replica' (role is ${o.role === undefined ? "'master' by default" : `'${o.role}'`}): with role 'master' every command goes to the master.`);
  }
  checkAzOptions(o.readFrom, o.clientAz, 'SentinelPool');
  const data = connectionFrom(o);
  const common = commonFrom(o);
  const own = withDefaults(SENTINEL_OWN_OPTIONS, o);
  const sentinelTimeout = own.sentinelTimeout;
  const sentinelTls = resolveTls(o.sentinelTls ?? fromUrl?.tls);
  const sentinelUsername = o.sentinelUsername ?? (o.sentinelPassword === undefined ? fromUrl?.username : undefined);
  const sentinelPassword = o.sentinelPassword ?? (o.sentinelUsername === undefined ? fromUrl?.password : undefined);
  const staticSentinelAuth = sentinelUsername !== undefined || sentinelPassword !== undefined;
  // A provider (if any) serves the sentinels too unless they have static credentials of their own.
  const sentinelAuth = !staticSentinelAuth && data.auth.dynamic ? data.auth : Auth.of(sentinelUsername, sentinelPassword);
  return {
    ...common,
    masterName,
    sentinels: list,
    role: own.role,
    replicaFallback: own.replicaFallback,
    readFrom: own.readFrom,
    clientAz: own.clientAz ?? '',
    data,
    probe: { ...data, connectTimeout: sentinelTimeout, commandTimeout: sentinelTimeout, clientName: undefined },
    sentinel: {
      auth: sentinelAuth, role: 'sentinel', db: 0, clientName: undefined, protocol: 2, tls: sentinelTls,
      connectTimeout: sentinelTimeout, commandTimeout: sentinelTimeout, socketTimeout: 0, maxReplyBytes: data.maxReplyBytes,
      // A subscriber loop waits in silence: only a heartbeat finds a sentinel that vanished without a RST.
      pingInterval: data.pingInterval, keepAlive: data.keepAlive, maxPending: data.maxPending, maxPendingBytes: data.maxPendingBytes,
    },
    cache: cacheFrom(o.cache, data.protocol),
    resubscribe: own.resubscribe,
    pollInterval: own.pollInterval,
    sentinelPollInterval: own.sentinelPollInterval,
    maxQueued: own.maxQueued,
    queueTimeout: own.queueTimeout,
    fenceTimeout: own.fenceTimeout,
    failoverCommit: own.failoverCommit,
    promotionCheckInterval: own.promotionCheckInterval,
    discoveryTimeout: own.discoveryTimeout,
    watchReplicas: own.watchReplicas,
    natMap: resolveNatMap(o.natMap),
  };
}
