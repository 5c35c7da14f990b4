/**
 * node-redis pub/sub on a handle: listeners registered per (kind, name), in string or buffer
 * mode, over one pool subscription per name. Unsubscribing by name, or by name and listener,
 * ends the pool subscription once its last listener is gone, as node-redis sends UNSUBSCRIBE
 * then. The pool shares one subscriber connection per node among all of it and resubscribes
 * after faults, so a handle needs no connection of its own.
 */
import type { Subscription } from '../../index.js';

/** A node-redis pub/sub listener: `(message, channel)`, both strings, or both Buffers in buffer mode. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type PubSubListener = (message: any, channel: any) => unknown;

/** Channels (SUBSCRIBE), patterns (PSUBSCRIBE) or sharded channels (SSUBSCRIBE). */
export type PubSubKind = 'channel' | 'pattern' | 'shard';

/** Opens one pool subscription for `name`, delivering Buffers to `deliver`. */
export type OpenSubscription = (kind: PubSubKind, name: string, deliver: (message: Buffer, channel: string) => void) => Promise<Subscription<Buffer>>;

interface Entry {
  readonly strings: Set<PubSubListener>;
  readonly buffers: Set<PubSubListener>;
  /** Settles once the server confirmed the name (or the subscribe failed). */
  ready: Promise<Subscription<Buffer> | undefined>;
  /** Why the subscribe failed, once it did. */
  error: unknown;
  /** Unsubscribed (or its handle closed) before the subscribe settled. */
  removed: boolean;
}

/** The subscriptions of one handle. */
export class HandleSubscriptions {
  private readonly kinds: Record<PubSubKind, Map<string, Entry>> = { channel: new Map(), pattern: new Map(), shard: new Map() };

  constructor(
    private readonly open: OpenSubscription,
    /** A listener threw: the handle reports it (its `error` event) or hands it back to the pool subscription. */
    private readonly failed: (error: unknown) => void,
  ) {}

  /** True while any name of any kind has a listener. */
  get active(): boolean {
    return this.kinds.channel.size + this.kinds.pattern.size + this.kinds.shard.size > 0;
  }

  /** Adds `listener` to `names`; resolves once every name is confirmed by the server. */
  async add(kind: PubSubKind, names: readonly string[], listener: PubSubListener, buffers: boolean): Promise<void> {
    const map = this.kinds[kind];
    const entries: Entry[] = [];
    for (const name of names) {
      let e = map.get(name);
      if (e === undefined) {
        const entry: Entry = { strings: new Set(), buffers: new Set(), ready: Promise.resolve(undefined), error: undefined, removed: false };
        map.set(name, entry);
        entry.ready = this.open(kind, name, (m, ch) => this.deliver(entry, m, ch)).catch((err: unknown) => {
          // A name the server never confirmed keeps no listener: a later subscribe tries afresh.
          if (map.get(name) === entry) map.delete(name);
          entry.error = err;
          return undefined;
        });
        e = entry;
      }
      (buffers ? e.buffers : e.strings).add(listener);
      entries.push(e);
    }
    await Promise.all(entries.map((e) => e.ready));
    // A name unsubscribed meanwhile was given up by the caller itself: its failure (the pool
    // closing under it, say) is no news. The libraries fire subscribe() and forget it, so a
    // rejection here would be unhandled, which ends a Node process.
    const bad = entries.find((e) => e.error !== undefined && !e.removed);
    if (bad !== undefined) throw bad.error;
  }

  /**
   * Removes `listener` (every listener without one) from `names` (every name of the kind
   * without them); a name left without listeners is unsubscribed. Resolves once it is.
   */
  async remove(kind: PubSubKind, names: readonly string[] | undefined, listener: PubSubListener | undefined, buffers: boolean): Promise<void> {
    const map = this.kinds[kind];
    const closing: Array<Promise<void>> = [];
    for (const name of names ?? [...map.keys()]) {
      const e = map.get(name);
      if (e === undefined) continue;
      if (listener !== undefined) {
        (buffers ? e.buffers : e.strings).delete(listener);
        if (e.buffers.size > 0 || e.strings.size > 0) continue;
      }
      map.delete(name);
      e.removed = true;
      closing.push(e.ready.then((s) => s?.close()).catch(() => {}));
    }
    await Promise.all(closing);
  }

  /** Unsubscribes everything (the handle was closed). */
  async clear(): Promise<void> {
    await Promise.all((['channel', 'pattern', 'shard'] as const).map((k) => this.remove(k, undefined, undefined, false)));
  }

  private deliver(e: Entry, message: Buffer, channel: string): void {
    // node-redis hands buffer-mode listeners the channel as a Buffer too.
    if (e.buffers.size > 0) {
      const ch = Buffer.from(channel);
      for (const l of e.buffers) this.call(l, message, ch);
    }
    if (e.strings.size > 0) {
      const text = message.toString();
      for (const l of e.strings) this.call(l, text, channel);
    }
  }

  private call(l: PubSubListener, message: unknown, channel: unknown): void {
    try {
      l(message, channel);
    } catch (err) {
      // One throwing listener must not keep the message from the others.
      this.failed(err);
    }
  }
}
