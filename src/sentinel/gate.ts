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
    /**
     * Asked when a command has waited `queueTimeout`: resolves true when the pool may go on
     * (it then opens the gate), false to refuse the command as usual.
     */
    private readonly onStall?: () => Promise<boolean>,
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
      const refuse = (waited: number, byQueueTimeout: boolean) => {
        const msg = `${command} waited ${waited} ms for ${this.describe()} and was not sent`;
        drop(byQueueTimeout ? new QueueFullError(`${msg} (queueTimeout ${this.queueTimeout} ms).`) : new TimeoutError(`${msg} (its deadline passed).`, { sent: false }));
      };
      w.timer = setTimeout(() => {
        if (!byQueue || !this.onStall) return refuse(limit, byQueue);
        // The pool may know a way on (the last verified master still answers): ask, within the deadline.
        const rest = remaining(call);
        w.timer = rest === Infinity ? undefined : setTimeout(() => refuse(limit + Math.round(rest), false), Math.max(0, rest));
        this.onStall().then((ok) => {
          if (!ok && this.waiters.includes(w)) refuse(limit, true);
        }, () => {
          if (this.waiters.includes(w)) refuse(limit, true);
        });
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
