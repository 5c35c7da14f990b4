/**
 * A sequenced publisher and a receiver check for pub/sub fault tests: the publisher sends
 * `seq` numbers at a steady rate, the check records what a subscription delivered, and the
 * verdict says whether every message published after a point arrived exactly once and in order.
 */
import { waitFor } from './wait.js';

export interface SequencedPublisher {
  /** The next sequence number to be published. */
  readonly next: number;
  /** Sequence numbers whose PUBLISH resolved (the server took them). */
  readonly acknowledged: number[];
  /** Failed publishes (during a failover a publish may fail: that message was never sent to subscribers). */
  readonly failures: number;
  stop(): Promise<void>;
}

/**
 * Publishes `prefix:seq` every `1000 / rate` ms through `publish` (one at a time, so the order
 * of acknowledgements is the order of publishing).
 */
export function startPublisher(publish: (message: string) => Promise<unknown>, rate = 1000, prefix = 'm'): SequencedPublisher {
  let next = 0;
  let failures = 0;
  let stopped = false;
  const acknowledged: number[] = [];
  const interval = 1000 / rate;
  const loop = (async () => {
    const start = Date.now();
    while (!stopped) {
      const seq = next++;
      try {
        await publish(`${prefix}:${seq}`);
        acknowledged.push(seq);
      } catch {
        failures++;
      }
      // Keep the rate: wait until this message's slot has passed (short waits batch up under load).
      const due = start + (seq + 1) * interval;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  })();
  return {
    get next() { return next; },
    acknowledged,
    get failures() { return failures; },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

/** Sequence numbers a subscription received, in arrival order. */
export class ReceivedLog {
  readonly seqs: number[] = [];
  constructor(private readonly prefix = 'm') {}

  /** A listener to pass to subscribe(). */
  readonly listener = (message: string | Buffer): void => {
    const text = message.toString();
    if (!text.startsWith(`${this.prefix}:`)) return;
    this.seqs.push(Number(text.slice(this.prefix.length + 1)));
  };

  /** Duplicates or out-of-order arrivals (each entry: the offending seq). */
  disorder(): number[] {
    const bad: number[] = [];
    for (let i = 1; i < this.seqs.length; i++) if (this.seqs[i]! <= this.seqs[i - 1]!) bad.push(this.seqs[i]!);
    return bad;
  }

  /** Acknowledged sequence numbers >= `from` that never arrived. */
  missingFrom(from: number, acknowledged: readonly number[]): number[] {
    const got = new Set(this.seqs);
    return acknowledged.filter((s) => s >= from && !got.has(s));
  }

  /** Waits until every acknowledged message >= `from` arrived (or the deadline passes). */
  async waitComplete(from: number, acknowledged: readonly number[], timeoutMs = 10_000): Promise<void> {
    await waitFor(() => this.missingFrom(from, acknowledged).length === 0, `messages from ${from} to arrive`, timeoutMs).catch(() => {});
  }
}
