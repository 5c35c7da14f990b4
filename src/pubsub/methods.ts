import { checkSubscribeInput, type SubscriptionKind, type SubscriptionOptions } from './frames.js';
import type { PubSubHub } from './hub.js';
import type { Listener, Subscription } from './subscription.js';
import type { Arg } from '../types.js';
import { isUnknownCommand, shardedPubSubUnsupported } from './unsupported.js';

/** Pool-level pub/sub of every mode. */
export interface PubSubMethods {
  /**
   * Subscribes to channels. Messages go to `listener` and/or the returned subscription's async
   * iterator. Subscriptions of one pool share one subscriber connection per node, and the pool
   * subscribes them again by itself after a dropped connection or a failover (each time the
   * subscription emits `resubscribed` with the gap during which messages may have been lost).
   * Resolves once the server confirmed every channel.
   */
  subscribe(channels: string | string[], listener: Listener<Buffer> | undefined, options: SubscriptionOptions & { returnBuffers: true }): Promise<Subscription<Buffer>>;
  /** Messages as strings (the default). */
  subscribe(channels: string | string[], listener?: Listener<string>, options?: SubscriptionOptions & { returnBuffers?: false }): Promise<Subscription<string>>;
  /** `returnBuffers` known only at run time: strings or Buffers. */
  subscribe(channels: string | string[], listener?: Listener, options?: SubscriptionOptions): Promise<Subscription>;
  /** Same as {@link subscribe}, for glob-style patterns (`PSUBSCRIBE`): the message also carries the pattern. */
  psubscribe(patterns: string | string[], listener: Listener<Buffer> | undefined, options: SubscriptionOptions & { returnBuffers: true }): Promise<Subscription<Buffer>>;
  /** Messages as strings (the default). */
  psubscribe(patterns: string | string[], listener?: Listener<string>, options?: SubscriptionOptions & { returnBuffers?: false }): Promise<Subscription<string>>;
  /** `returnBuffers` known only at run time: strings or Buffers. */
  psubscribe(patterns: string | string[], listener?: Listener, options?: SubscriptionOptions): Promise<Subscription>;
}

/**
 * Sharded pub/sub (Redis 7), in every mode. In a cluster each sharded channel lives on the
 * master owning its slot; a standalone server or a Sentinel-managed master holds them all, so
 * `ssubscribe`/`spublish` work there too (libraries written for a cluster, such as the
 * Socket.IO sharded adapter, run unchanged on one server).
 */
export interface ShardedPubSubMethods {
  /**
   * Subscribes to sharded channels (`SSUBSCRIBE`, Redis 7). In a cluster each channel lives on
   * the master owning its slot, and the subscription follows it through failovers and slot
   * migrations; on a standalone or Sentinel pool it lives where `subscribe()` does and is
   * subscribed again after a dropped connection or a failover in the same way.
   */
  ssubscribe(channels: string | string[], listener: Listener<Buffer> | undefined, options: SubscriptionOptions & { returnBuffers: true }): Promise<Subscription<Buffer>>;
  /** Messages as strings (the default). */
  ssubscribe(channels: string | string[], listener?: Listener<string>, options?: SubscriptionOptions & { returnBuffers?: false }): Promise<Subscription<string>>;
  /** `returnBuffers` known only at run time: strings or Buffers. */
  ssubscribe(channels: string | string[], listener?: Listener, options?: SubscriptionOptions): Promise<Subscription>;
  /**
   * Publishes to a sharded channel (`SPUBLISH`, Redis 7): in a cluster on the master owning
   * the channel's slot, otherwise on the pool's server (the master, with Sentinel). Resolves
   * with the number of sharded subscribers that received it on that node.
   */
  spublish(channel: string, message: Arg): Promise<number>;
}

interface HubOwner {
  /** @internal */
  pubsubHub(): PubSubHub;
}

function open(owner: HubOwner, method: string, kind: SubscriptionKind, names: unknown, listener: unknown, options: unknown): Promise<Subscription> {
  let checked: ReturnType<typeof checkSubscribeInput>;
  try {
    checked = checkSubscribeInput(method, names, listener, options);
  } catch (e) {
    return Promise.reject(e);
  }
  let hub: PubSubHub;
  try {
    hub = owner.pubsubHub();
  } catch (e) {
    return Promise.reject(e);
  }
  return hub.add(kind, checked.names, listener as Listener | undefined, checked.options);
}

/** What `spublish` needs of a pool. */
export interface Caller {
  call<T>(command: string, ...args: Arg[]): Promise<T>;
}

/**
 * Adds subscribe/psubscribe/ssubscribe and spublish to a pool class whose instances have
 * `pubsubHub()` and `call()`. A class that defines its own `spublish` keeps it. `_sharded` is
 * ignored (every mode has sharded pub/sub now); it stays until every caller stops passing it.
 */
export function installPubSub(proto: object, _sharded?: boolean): void {
  const methods: Record<string, (this: HubOwner & Caller, ...a: never[]) => Promise<unknown>> = {
    subscribe(names: unknown, listener?: unknown, options?: unknown) {
      return open(this, 'subscribe', 'channel', names, listener, options);
    },
    psubscribe(names: unknown, listener?: unknown, options?: unknown) {
      return open(this, 'psubscribe', 'pattern', names, listener, options);
    },
    ssubscribe(names: unknown, listener?: unknown, options?: unknown) {
      return open(this, 'ssubscribe', 'shard', names, listener, options);
    },
  };
  if (!Object.prototype.hasOwnProperty.call(proto, 'spublish')) {
    methods.spublish = function (this: Caller, channel: string, message: Arg) {
      return spublish(this, channel, message);
    };
  }
  for (const [name, fn] of Object.entries(methods)) {
    Object.defineProperty(proto, name, { value: fn, writable: true, configurable: true, enumerable: false });
  }
}

/**
 * `SPUBLISH` through `pool.call`; on a server without sharded pub/sub (Redis 6.2) it rejects with
 * `UnsupportedCommandError` naming the server version, instead of a bare "unknown command".
 */
export async function spublish(pool: Caller, channel: string, message: Arg): Promise<number> {
  try {
    return await pool.call<number>('SPUBLISH', channel, message);
  } catch (err) {
    if (!isUnknownCommand(err)) throw err;
    throw await shardedPubSubUnsupported('SPUBLISH', err, () => pool.call('INFO', 'server'), err.address);
  }
}
