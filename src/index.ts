/**
 * redis-ha-pool: one pool API for a standalone Redis server, a Sentinel-managed master and a
 * Redis Cluster.
 * @document ../docs/migrating.md
 * @packageDocumentation
 */
export { StandalonePool, type StandaloneOptions, type StandaloneStats, type CommonOptions } from './standalone.js';
// Classes whose instances the pools hand out (their constructors are internal): types only.
export type { BasePool, Batch, CommandView, Lease, PoolEvents, WithOverloads } from './pool/surface.js';
export type { BatchResult } from './pool/call.js';
export type { CallOptions } from './pool/call-options.js';
export type { DedicatedConnection, DedicatedOptions } from './pool/dedicated.js';
export type { PoolOptions } from './pool/options.js';
export type { DurabilityOptions, DurabilityStats } from './pool/durability.js';
export type { NodePoolStats } from './pool/node-pool.js';
export type { LaneStats } from './pool/lanes.js';
export type { ExclusiveStats } from './pool/exclusive-pool.js';
export type { ConnectionOptions } from './connection/options.js';
export type { MaintenanceEvent, MaintenanceKind, MaintenanceStats, MaintEndpointType, MaintNotificationsMode } from './connection/maintenance.js';
export type { CredentialsProvider, Credentials, CredentialContext, CredentialRole } from './connection/credentials.js';
export type {
  Commands, BatchCommands, ScanIterators, SetOptions, SetToken, GetExOptions, ScanOptions, ZRangeOptions, XAddOptions, XReadOptions, XReadGroupOptions,
  StreamsToRead, HelperReturn, ArgList, ArgPairs,
} from './commands/commands.js';
export type { StreamMessage, StreamMessages } from './commands/replies.js';
export type { Script, ScriptOptions } from './commands/script.js';
export type { Address, Arg, NodeAddress, Reply } from './types.js';
export {
  RedisError, ConnectionError, UncertainWriteError, DurabilityError, AuthenticationError, NodeUnreachableError, TimeoutError, ProtocolError, PoolClosedError,
  QueueFullError, SlowConsumerError, MasterNotMonitoredError, AllSentinelsDownError, MaxRedirectionsError, CrossSlotError, UnsupportedCommandError, isNotExecuted,
  type RedirectAttempt,
} from './errors.js';
export { keySlot } from './cluster/slot.js';
export { SentinelPool, type SentinelEvents, type SentinelStats, type FailoverEvent, type DetectedBy } from './sentinel/sentinel-pool.js';
export type { SentinelOptions, NatMap } from './sentinel/options.js';
export { ClusterPool, type ClusterEvents, type ClusterStats } from './cluster/cluster-pool.js';
export type { ClusterOptions, ReadFrom } from './cluster/options.js';
export type { AzReadFrom } from './pool/read-from.js';
export type { ZoneReadStats } from './pool/zones.js';
export type { TopologyChange } from './cluster/topology.js';
export type { BackoffOptions } from './pool/backoff.js';
export type { ClusterNodeInfo } from './cluster/cluster-pool.js';
export { RoleMismatchError } from './sentinel/discovery.js';
export type { Subscription, PubSubMessage, Listener, SubscriptionEvents } from './pubsub/subscription.js';
export type { SubscriptionOptions, SubscriptionKind } from './pubsub/frames.js';
export type { PubSubStats } from './pubsub/hub.js';
export type { PubSubMethods, ShardedPubSubMethods } from './pubsub/methods.js';
export type { CacheOptions } from './cache/options.js';
export type { CacheStats, FlushReason } from './cache/client-cache.js';
export {
  DIAGNOSTICS_CHANNELS, type PoolMode, type CommandTraceContext, type ConnectDiagnostic, type CloseDiagnostic, type FailoverDiagnostic,
  type TopologyDiagnostic, type RedirectDiagnostic, type AcquireDiagnostic, type MaintenanceDiagnostic,
} from './diagnostics.js';
