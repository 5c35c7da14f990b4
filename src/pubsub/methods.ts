import { checkSubscribeInput, type SubscriptionKind, type SubscriptionOptions } from './frames.js';
import type { PubSubHub } from './hub.js';
import type { Listener, Subscription } from './subscription.js';

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

/** Sharded pub/sub, ClusterPool only. */
export interface ShardedPubSubMethods {
  /**
   * Subscribes to sharded channels (`SSUBSCRIBE`, Redis 7): each channel lives on the master
   * owning its slot, and the subscription follows it through failovers and slot migrations.
   */
  ssubscribe(channels: string | string[], listener: Listener<Buffer> | undefined, options: SubscriptionOptions & { returnBuffers: true }): Promise<Subscription<Buffer>>;
  /** Messages as strings (the default). */
  ssubscribe(channels: string | string[], listener?: Listener<string>, options?: SubscriptionOptions & { returnBuffers?: false }): Promise<Subscription<string>>;
  /** `returnBuffers` known only at run time: strings or Buffers. */
  ssubscribe(channels: string | string[], listener?: Listener, options?: SubscriptionOptions): Promise<Subscription>;
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

/** Adds subscribe/psubscribe (and, with `sharded`, ssubscribe) to a pool class whose instances have `pubsubHub()`. */
export function installPubSub(proto: object, sharded: boolean): void {
  const methods: Record<string, (this: HubOwner, names: unknown, listener?: unknown, options?: unknown) => Promise<Subscription>> = {
    subscribe(names, listener, options) {
      return open(this, 'subscribe', 'channel', names, listener, options);
    },
    psubscribe(names, listener, options) {
      return open(this, 'psubscribe', 'pattern', names, listener, options);
    },
    ssubscribe: sharded
      ? function (this: HubOwner, names, listener, options) {
        return open(this, 'ssubscribe', 'shard', names, listener, options);
      }
      : function () {
        // Not in the type of a non-cluster pool; a JavaScript caller gets told why.
        return Promise.reject(new TypeError('ssubscribe (sharded pub/sub) is for ClusterPool; use subscribe() on a standalone or Sentinel pool.'));
      },
  };
  for (const [name, fn] of Object.entries(methods)) {
    Object.defineProperty(proto, name, { value: fn, writable: true, configurable: true, enumerable: false });
  }
}
