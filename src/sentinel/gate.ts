import { PoolClosedError, QueueFullError, TimeoutError } from '../errors.js';
import { remaining, type ResolvedCall } from '../pool/call-options.js';

interface Waiter {
  resolve: () => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout | undefined;
  cleanup: (() => void) | undefined;
}

/**
 * Holds commands while the master is being switched. Bounded by count (`maxQueued`) and by
 * age (`queueTimeout`, within each command's own deadline): nothing waits forever and the
 * queue never grows without limit.
 */
export class Gate {
  private openNow = true;
  private waiters: Waiter[] = [];

  constructor(
    private readonly maxQueued: number,
    private readonly queueTimeout: number,
    private readonly describe: () => string,
  ) {}

  get isOpen(): boolean {
    return this.openNow;
  }

  get queued(): number {
    return this.waiters.length;
  }

  close(): void {
    this.openNow = false;
  }

  /** Lets every waiting command go. */
  open(): void {
    this.openNow = true;
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) {
      if (w.timer) clearTimeout(w.timer);
      w.cleanup?.();
      w.resolve();
    }
  }

  /** Waits until the gate opens, the command's deadline or `queueTimeout` passes, or its signal aborts. */
  wait(call: ResolvedCall, command: string): Promise<void> {
    if (this.openNow) return Promise.resolve();
    if (call.signal?.aborted) return Promise.reject(call.signal.reason);
    if (this.waiters.length >= this.maxQueued) {
      return Promise.reject(new QueueFullError(`${command} refused: ${this.waiters.length} commands already wait for ${this.describe()} (maxQueued ${this.maxQueued}).`));
    }
    return new Promise<void>((resolve, reject) => {
      const left = remaining(call);
      const byQueue = this.queueTimeout <= left;
      const limit = Math.max(0, Math.min(left, this.queueTimeout));
      const w: Waiter = { resolve, reject, timer: undefined, cleanup: undefined };
      const drop = (e: Error) => {
        const i = this.waiters.indexOf(w);
        if (i !== -1) this.waiters.splice(i, 1);
        if (w.timer) clearTimeout(w.timer);
        w.cleanup?.();
        reject(e);
      };
      w.timer = setTimeout(() => {
        const msg = `${command} waited ${limit} ms for ${this.describe()} and was not sent`;
        drop(byQueue ? new QueueFullError(`${msg} (queueTimeout ${this.queueTimeout} ms).`) : new TimeoutError(`${msg} (its deadline passed).`, { sent: false }));
      }, limit);
      if (call.signal) {
        const s = call.signal;
        const onAbort = () => drop(s.reason as Error);
        s.addEventListener('abort', onAbort, { once: true });
        w.cleanup = () => s.removeEventListener('abort', onAbort);
      }
      this.waiters.push(w);
    });
  }

  /** Rejects every waiter (the pool closed). */
  fail(): void {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) {
      if (w.timer) clearTimeout(w.timer);
      w.cleanup?.();
      w.reject(new PoolClosedError());
    }
  }
}
