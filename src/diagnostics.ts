import dc from 'node:diagnostics_channel';
import type { Connection, SendOptions } from './connection/connection.js';
import type { Arg, NodeAddress, Reply } from './types.js';
import type { MaintenanceEvent } from './connection/maintenance.js';

/**
 * Observability through `node:diagnostics_channel`: what APM agents and the OpenTelemetry
 * example (docs/examples/otel.ts) read without any change to the application.
 *
 * The channel objects are created once, here. Every hook first checks `hasSubscribers`, so
 * with nobody listening a command costs a few property reads and no allocation; payloads
 * are built only for a subscriber. Argument values and replies are never published: they
 * may be secrets or personal data.
 */

/** The mode of the pool that sent a command or opened a connection. */
export type PoolMode = 'standalone' | 'sentinel' | 'cluster';

/**
 * The names of every channel the library publishes on: a stable contract (a rename is a
 * breaking change). `command` is a `TracingChannel` (subscribe with
 * `diagnostics_channel.tracingChannel(name)`), the others are plain channels
 * (`diagnostics_channel.subscribe(name, fn)`).
 */
export const DIAGNOSTICS_CHANNELS = {
  /** `TracingChannel` of every command sent to a node: {@link CommandTraceContext}. */
  command: 'redis-ha-pool:command',
  /** A connection passed its handshake: {@link ConnectDiagnostic}. */
  connect: 'redis-ha-pool:connect',
  /** A connection closed: {@link CloseDiagnostic}. */
  close: 'redis-ha-pool:close',
  /** A `SentinelPool` moved to a new master: {@link FailoverDiagnostic}. */
  failover: 'redis-ha-pool:failover',
  /** A `ClusterPool` refresh changed the slot map: {@link TopologyDiagnostic}. */
  topology: 'redis-ha-pool:topology',
  /** A cluster node answered MOVED or ASK: {@link RedirectDiagnostic}. */
  redirect: 'redis-ha-pool:redirect',
  /** A wait for an exclusive connection (`use()`, `multi()`, blocking commands) ended: {@link AcquireDiagnostic}. */
  acquire: 'redis-ha-pool:acquire',
  /** A connection received a maintenance notification (MOVING, MIGRATING …): {@link MaintenanceDiagnostic}. */
  maintenance: 'redis-ha-pool:maintenance',
} as const;

/**
 * The context object of one command on the `redis-ha-pool:command` tracing channel. The same
 * object goes to `start`, `end`, `asyncStart`, `asyncEnd` (and `error`, with `error` set), so
 * a subscriber may keep its own state on it (a span, a start time) under its own property name.
 *
 * One context per attempt: a command retried after a connection error or redirected by
 * MOVED/ASK is traced once per node it was sent to, `attempt` counting up. Every command of
 * a pipeline or transaction is traced on its own, with `batchSize`.
 */
export interface CommandTraceContext {
  /** The command name, upper-cased (`GET`, `HSET`, `MULTI`); never a subcommand or an argument. */
  readonly command: string;
  /** How many arguments followed the command name (their values are never published). */
  readonly argCount: number;
  /** The node the command was written to (a frozen object). */
  readonly address: Readonly<NodeAddress>;
  /** The mode of the pool that sent it. */
  readonly mode: PoolMode;
  /** 1 for the first send of a command, 2 and up for each retry or redirect of the same command. */
  readonly attempt: number;
  /**
   * For a command of a pipeline or transaction: how many commands went out in the same write
   * to this node (a transaction counts its MULTI and EXEC; a cluster pipeline counts the
   * entries for this node). Absent for a single command.
   */
  readonly batchSize?: number;
  /**
   * Set before `error` is published: what the command rejected with (`RedisError` with its
   * `code`, `ConnectionError`, `TimeoutError`, …). Its message is what the caller sees; the
   * argument values Redis quotes into an unknown-command error are cut from it.
   */
  error?: unknown;
}

/** Payload of `redis-ha-pool:connect`. */
export interface ConnectDiagnostic {
  /** The node connected to. */
  address: NodeAddress;
  /** Unique per process; the connection's `redis-ha-pool:close` carries it too. */
  connectionId: number;
  /** The mode of the pool that opened it. */
  mode: PoolMode;
}

/** Payload of `redis-ha-pool:close`. */
export interface CloseDiagnostic {
  /** The node the connection went to. */
  address: NodeAddress;
  /** The id its `redis-ha-pool:connect` carried. */
  connectionId: number;
  /** The mode of the pool that opened it. */
  mode: PoolMode;
  /** Why it closed; undefined when the pool closed it on purpose. */
  error: Error | undefined;
}

/** Payload of `redis-ha-pool:failover`: the same facts as a `SentinelPool`'s `failover` event. */
export interface FailoverDiagnostic {
  /** The monitored master's name. */
  masterName: string;
  /** The old master. */
  from: NodeAddress;
  /** The new master. */
  to: NodeAddress;
  /** What noticed the switch: `'pubsub'`, `'poll'`, `'readonly'`, `'reconnect'` or `'promotion'`. */
  detectedBy: string;
  /** Epoch ms of the switch. */
  at: number;
  /** Writes to the old master stopped before the promotion (the write fence). */
  fenced: boolean;
  /** How long (ms) the old master could take writes after the promotion; 0 when fenced, undefined when unknown. */
  blindMs: number | undefined;
  /** Config epoch of the configuration followed from now on (see `FailoverEvent.epoch`). */
  epoch: number;
  /** How many sentinels named the new master at the switch (0: a switch on the promotion itself). */
  confirmedBy: number;
  /** How long (ms) writes were held before the switch. */
  heldMs: number;
}

/** Payload of `redis-ha-pool:topology`: the same facts as a `ClusterPool`'s `topology` event. */
export interface TopologyDiagnostic {
  /** Node addresses (`host:port`) that appeared. */
  added: string[];
  /** Node addresses that disappeared. */
  removed: string[];
  /** Slots whose master changed. */
  movedSlots: number;
}

/** Payload of `redis-ha-pool:redirect`. */
export interface RedirectDiagnostic {
  /** `'moved'`: the slot lives on `to` now (the map was patched); `'ask'`: sent once to `to` with ASKING. */
  kind: 'moved' | 'ask';
  /** The hash slot. */
  slot: number;
  /** The node that answered MOVED or ASK. */
  from: NodeAddress;
  /** The node it named. */
  to: NodeAddress;
}

/** Payload of `redis-ha-pool:acquire`, published when a borrow of an exclusive connection succeeds or fails. */
export interface AcquireDiagnostic {
  /** The node whose exclusive pool lent (or could not lend) the connection. */
  address: NodeAddress;
  /** The mode of the pool. */
  mode: PoolMode;
  /** Milliseconds from the request to the connection (or to the failure). */
  waitMs: number;
  /** Callers already waiting for a connection of this node when this one asked. */
  queued: number;
  /** Set when no connection was lent (`TimeoutError`, `PoolClosedError`, …). */
  error?: Error;
}

/**
 * Payload of `redis-ha-pool:maintenance`: the `maintenance` event's facts, and which pool and
 * connection received the notification. Published once the pool acted on it (a MOVING's
 * hand-over started, a SMIGRATED's slot map updated).
 */
export interface MaintenanceDiagnostic extends MaintenanceEvent {
  /** The mode of the pool whose connection received it. */
  mode: PoolMode;
  /** The connection's id (as in `redis-ha-pool:connect`). */
  connectionId: number;
}

const command = dc.tracingChannel<object, CommandTraceContext>(DIAGNOSTICS_CHANNELS.command);
const onStart = command.start;
const onEnd = command.end;
const onAsyncStart = command.asyncStart;
const onAsyncEnd = command.asyncEnd;
const onError = command.error;
const connectChannel = dc.channel(DIAGNOSTICS_CHANNELS.connect);
const closeChannel = dc.channel(DIAGNOSTICS_CHANNELS.close);
const failoverChannel = dc.channel(DIAGNOSTICS_CHANNELS.failover);
const topologyChannel = dc.channel(DIAGNOSTICS_CHANNELS.topology);
const redirectChannel = dc.channel(DIAGNOSTICS_CHANNELS.redirect);
const acquireChannel = dc.channel(DIAGNOSTICS_CHANNELS.acquire);
const maintenanceChannel = dc.channel(DIAGNOSTICS_CHANNELS.maintenance);

/** Where a connection came from, recorded once per connection (the payload's mode and frozen address). */
interface Origin {
  mode: PoolMode;
  address: Readonly<NodeAddress>;
}
const origins = new WeakMap<Connection, Origin>();

/** @internal Records which mode opened `conn` (NodePool does it for every connection it makes). */
export function noteConnection(conn: Connection, mode: PoolMode): void {
  origins.set(conn, { mode, address: frozenAddress(conn.address) });
}

function frozenAddress(a: NodeAddress): Readonly<NodeAddress> {
  return Object.freeze({ host: a.host, port: a.port });
}

function originOf(conn: Connection): Origin {
  return origins.get(conn) ?? { mode: 'standalone', address: frozenAddress(conn.address) };
}

/** Whether anyone listens on the command tracing channel (the one check on the hot path). */
export function commandTraced(): boolean {
  return onStart.hasSubscribers || onEnd.hasSubscribers || onAsyncStart.hasSubscribers || onAsyncEnd.hasSubscribers || onError.hasSubscribers;
}

/**
 * @internal The trace context of one command: its name and argument count only, never the
 * arguments themselves.
 */
export function commandContext(args: readonly Arg[], origin: Origin, attempt: number, batchSize?: number): CommandTraceContext {
  const ctx: { -readonly [K in keyof CommandTraceContext]: CommandTraceContext[K] } = {
    command: String(args[0]).toUpperCase(),
    argCount: Math.max(0, args.length - 1),
    address: origin.address,
    mode: origin.mode,
    attempt,
  };
  if (batchSize !== undefined) ctx.batchSize = batchSize;
  return ctx;
}

/**
 * @internal Sends one command on `conn`, traced on `redis-ha-pool:command` when someone
 * listens. `attempt` is 1 for a first send; `batchSize` is set for pipelines and transactions.
 */
export function sendTraced(conn: Connection, args: Arg[], opts: SendOptions, attempt: number, batchSize?: number): Promise<Reply> {
  if (!commandTraced()) return conn.send(args, opts);
  const ctx = commandContext(args, originOf(conn), attempt, batchSize);
  return onStart.runStores(ctx, () => {
    let p: Promise<Reply>;
    try {
      p = conn.send(args, opts);
    } catch (err) {
      ctx.error = err;
      onError.publish(ctx);
      throw err;
    } finally {
      onEnd.publish(ctx);
    }
    return p.then(
      (reply) => {
        onAsyncStart.publish(ctx);
        onAsyncEnd.publish(ctx);
        return reply;
      },
      (err: unknown) => {
        ctx.error = err;
        onError.publish(ctx);
        onAsyncStart.publish(ctx);
        onAsyncEnd.publish(ctx);
        throw err;
      },
    );
  });
}

/** @internal `redis-ha-pool:connect`. */
export function publishConnect(conn: Connection, mode: PoolMode): void {
  if (connectChannel.hasSubscribers) {
    connectChannel.publish({ address: { host: conn.address.host, port: conn.address.port }, connectionId: conn.id, mode } satisfies ConnectDiagnostic);
  }
}

/** @internal `redis-ha-pool:close`. */
export function publishClose(conn: Connection, mode: PoolMode, error: Error | undefined): void {
  if (closeChannel.hasSubscribers) {
    closeChannel.publish({ address: { host: conn.address.host, port: conn.address.port }, connectionId: conn.id, mode, error } satisfies CloseDiagnostic);
  }
}

/** @internal `redis-ha-pool:failover`. */
export function publishFailover(info: FailoverDiagnostic): void {
  if (failoverChannel.hasSubscribers) {
    failoverChannel.publish({ ...info, from: { ...info.from }, to: { ...info.to } } satisfies FailoverDiagnostic);
  }
}

/** @internal `redis-ha-pool:topology`. */
export function publishTopology(change: TopologyDiagnostic): void {
  if (topologyChannel.hasSubscribers) {
    topologyChannel.publish({ added: [...change.added], removed: [...change.removed], movedSlots: change.movedSlots } satisfies TopologyDiagnostic);
  }
}

/** @internal `redis-ha-pool:redirect`. */
export function publishRedirect(kind: 'moved' | 'ask', slot: number, from: NodeAddress, to: NodeAddress): void {
  if (redirectChannel.hasSubscribers) {
    redirectChannel.publish({ kind, slot, from: { host: from.host, port: from.port }, to: { host: to.host, port: to.port } } satisfies RedirectDiagnostic);
  }
}

/** @internal Whether `redis-ha-pool:acquire` has a subscriber (checked before reading the clock). */
export function acquireTraced(): boolean {
  return acquireChannel.hasSubscribers;
}

/** @internal The payload of `redis-ha-pool:acquire`. */
export function acquireInfo(address: NodeAddress, mode: PoolMode, startedAt: number, endedAt: number, queued: number, error?: unknown): AcquireDiagnostic {
  const info: AcquireDiagnostic = { address: { host: address.host, port: address.port }, mode, waitMs: Math.max(0, endedAt - startedAt), queued };
  if (error !== undefined) info.error = error instanceof Error ? error : new Error(String(error));
  return info;
}

/** @internal `redis-ha-pool:acquire`. */
export function publishAcquire(info: AcquireDiagnostic): void {
  acquireChannel.publish(info);
}

/** @internal `redis-ha-pool:maintenance`. */
export function publishMaintenance(event: MaintenanceEvent, mode: PoolMode, connectionId: number): void {
  if (maintenanceChannel.hasSubscribers) {
    const out: MaintenanceDiagnostic = { ...event, address: { ...event.address }, mode, connectionId };
    if (event.target) out.target = { ...event.target };
    maintenanceChannel.publish(out);
  }
}
