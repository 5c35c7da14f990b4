/**
 * Retry and deadline rules, in one place below the pools (as go-redis keeps `shouldRetry` in
 * one file every client uses): was it written, may it be re-sent, how long may this wait, the
 * error at the deadline, the one timer race, and the one coalescer ("one run at a time").
 * Standalone and Sentinel (master and replica) dispatchers, dedicated connections and the
 * cluster's flights all decide with these, so the same fault gives the same error in every mode.
 */
import {
  AuthenticationError, ConnectionError, NodeUnreachableError, PoolClosedError, ProtocolError, TimeoutError, UncertainWriteError,
} from './errors.js';
import { formatAddress, type NodeAddress } from './types.js';

// ---------------------------------------------------------------------------------------
// Was it written? May it be re-sent?
// ---------------------------------------------------------------------------------------

/**
 * Whether a failed attempt may have reached the server: its reply was lost after the write
 * (`UncertainWriteError`, a `TimeoutError` marked `sent`), or the caller knows it was (`sent`).
 * A plain `ConnectionError` and an unsent `TimeoutError` prove it never left.
 */
export function wasWritten(err: unknown, sent = false): boolean {
  return sent || err instanceof UncertainWriteError || (err instanceof TimeoutError && err.sent);
}

/** True when a pipeline's connection broke before any of it was written: the whole batch may go again. */
export function noneWritten(results: readonly unknown[]): boolean {
  return results.every((r) => r instanceof ConnectionError && !wasWritten(r));
}

/**
 * The one rule every mode follows for "may this failed attempt be sent again?":
 * - provably not sent (a plain `ConnectionError`, an unsent `TimeoutError`): yes;
 * - written, reply lost (`UncertainWriteError`, a sent `TimeoutError`, or `sent` known to the
 *   caller): only when read-only or marked `idempotent`, since it may have executed;
 * - its reply was refused (`ProtocolError`: malformed, or over `maxReplyBytes`): never, it ran
 *   and another try returns the same reply;
 * - refused credentials, a fail-fast refusal (`NodeUnreachableError`) and anything else
 *   (server errors, TypeErrors, a full queue): no.
 */
export function mayResend(err: unknown, sent: boolean, readOnly: boolean, idempotent: boolean): boolean {
  if (err instanceof ProtocolError || err instanceof AuthenticationError || err instanceof NodeUnreachableError) return false;
  if (!(err instanceof ConnectionError) && !(err instanceof TimeoutError)) return false;
  return !wasWritten(err, sent) || readOnly || idempotent;
}

/**
 * {@link mayResend} for a command sent over one node's connections (Standalone, Sentinel, a
 * dedicated connection): a `TimeoutError` there means the call's own deadline passed (the
 * connection's deadline is the call's), so there is nothing left to retry with.
 */
export function mayRetry(err: unknown, readOnly: boolean, idempotent: boolean): boolean {
  if (err instanceof TimeoutError) return false;
  return mayResend(err, false, readOnly, idempotent);
}

// ---------------------------------------------------------------------------------------
// How long may this wait?
// ---------------------------------------------------------------------------------------

/** Anything with an absolute deadline: epoch ms, 0 for none. */
export interface HasDeadline {
  deadline: number;
}

/** Milliseconds left before `deadline` (Infinity when there is none). */
export function remaining(c: HasDeadline): number {
  return c.deadline === 0 ? Infinity : c.deadline - Date.now();
}

/** Whether the deadline has passed (never, without one). */
export function pastDeadline(c: HasDeadline): boolean {
  return remaining(c) <= 0;
}

/**
 * Time left for another attempt: until the deadline, or without one within `window` ms of
 * `started` (retries of a call without a deadline are bounded by `connectTimeout`).
 */
export function retryTimeLeft(c: HasDeadline, started: number, window: number): number {
  return c.deadline === 0 ? window - (Date.now() - started) : remaining(c);
}

// ---------------------------------------------------------------------------------------
// The decision after a failed attempt
// ---------------------------------------------------------------------------------------

/** What the rule needs to know of a call that failed an attempt. */
export interface FailedAttempt {
  /** The command's name as sent (`args[0]`), for messages. */
  name: string;
  deadline: number;
  signal?: AbortSignal | undefined;
  /** The caller said it may run twice. */
  idempotent: boolean;
  /** Resending it cannot change data. */
  readOnly: boolean;
  /** When the call's first attempt started. */
  started: number;
  /** Bound of the retries of a call without a deadline (ms; `connectTimeout`). */
  window: number;
  /** The node it went to, and what to call it in messages (`'replica '`, or nothing). */
  address: NodeAddress;
  role?: string;
  /** The pool closed meanwhile. */
  closed: boolean;
}

/**
 * The error of a call whose time ran out after failed attempts: a `TimeoutError` that names the
 * node and what the limit was, keeps the last attempt's error as `cause`, and says whether that
 * attempt may have run (`sent`).
 */
export function timedOut(message: string, last: unknown, address?: NodeAddress): TimeoutError {
  return new TimeoutError(message, { cause: last, sent: wasWritten(last), ...(address ? { address: { host: address.host, port: address.port } } : {}) });
}

/**
 * After a failed attempt, in this order: a closed pool rejects with `PoolClosedError` (the
 * attempt's error as its cause); an attempt that may not go again rejects with its own error;
 * an aborted call with the signal's reason; a call out of time with {@link timedOut}. Returns
 * (nothing thrown) when the attempt may go again now.
 */
export function retryOrThrow(err: unknown, a: FailedAttempt): void {
  if (a.closed) throw err instanceof PoolClosedError ? err : new PoolClosedError(undefined, { cause: err });
  if (!mayRetry(err, a.readOnly, a.idempotent)) throw err;
  if (a.signal?.aborted) throw a.signal.reason;
  if (retryTimeLeft(a, a.started, a.window) <= 0) {
    // Without a deadline (commandTimeout 0) retries are bounded by connectTimeout instead: say which.
    const within = a.deadline === 0 ? `the retry window (connectTimeout ${a.window} ms; the call has no deadline)` : 'its deadline';
    throw timedOut(`${a.name} to ${a.role ?? ''}${formatAddress(a.address)} could not be completed within ${within}; last error: ${(err as Error)?.message ?? String(err)}`, err, a.address);
  }
}

/**
 * The checks before every attempt of a call that retries on its own schedule (a cluster
 * flight): a closed pool, an aborted call, a passed deadline (`onDeadline` builds that error).
 */
export function checkTime(c: HasDeadline & { signal?: AbortSignal | undefined }, closed: boolean, onDeadline: () => Error): void {
  if (closed) throw new PoolClosedError();
  if (c.signal?.aborted) throw c.signal.reason;
  if (pastDeadline(c)) throw onDeadline();
}

// ---------------------------------------------------------------------------------------
// The one timer race
// ---------------------------------------------------------------------------------------

const ignore = (): void => {};

/**
 * `p`, unless `ms` pass first: then what `onTimer()` returns (or the error it throws). A value
 * `p` delivers after that goes to `discard` (a connection goes back to its pool). No timer at
 * all when `ms` is Infinity.
 */
export function raceTimer<T, U = T>(p: Promise<T>, ms: number, onTimer: () => U, discard?: (late: T) => void): Promise<T | U> {
  if (ms === Infinity) return p;
  return new Promise<T | U>((resolve, reject) => {
    let over = false;
    const t = setTimeout(() => {
      over = true;
      if (discard) p.then(discard, ignore);
      else p.catch(ignore);
      try {
        resolve(onTimer());
      } catch (e) {
        reject(e);
      }
    }, Math.max(0, ms));
    p.then(
      (v) => {
        if (over) return;
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        if (over) return;
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

/**
 * Waits for `p` until the call's deadline; then rejects with an unsent `TimeoutError` saying
 * `what()`, with the cause and node from `context()` (e.g. the last failed connection attempt).
 * `discard` takes what `p` delivers too late.
 */
export function withinDeadline<T>(p: Promise<T>, call: HasDeadline, what: () => string, context?: () => { cause?: unknown; address?: NodeAddress }, discard?: (late: T) => void): Promise<T> {
  return raceTimer(p, remaining(call), () => {
    throw new TimeoutError(what(), { sent: false, ...context?.() });
  }, discard);
}

/**
 * `p`, or the signal's reason as soon as it aborts; a value that arrives after the abort is
 * handed to `discard` (e.g. a lease goes back to the pool).
 */
export function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined, discard: (v: T) => void): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) {
    p.then(discard, ignore);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    let gaveUp = false;
    const onAbort = () => {
      gaveUp = true;
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        if (gaveUp) discard(v);
        else resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        if (!gaveUp) reject(e);
      },
    );
  });
}

// ---------------------------------------------------------------------------------------
// One at a time
// ---------------------------------------------------------------------------------------

/** Options of a {@link Coalescer}. */
export interface CoalescerOptions {
  /** No run starts less than this many ms after the previous one started (0: no limit). */
  minInterval?: number;
  /** A run that throws (the loop goes on); without it the error is left unhandled. */
  onError?: (err: unknown) => void;
}

/**
 * One run at a time (a refresh, a reconcile round): {@link request} starts a run, or, while one
 * is under way, asks for exactly one more right after it, however many requests came
 * meanwhile. With `minInterval`, runs start at least that far apart (a storm of triggers costs
 * a bounded number of runs). Each request resolves once the runs settle, so a caller knows a
 * run that began after its request has finished.
 */
export class Coalescer {
  #running: Promise<void> | undefined;
  #again = false;
  #waiters: Array<() => void> = [];
  #lastStart = -Infinity;
  #timer: NodeJS.Timeout | undefined;
  #wake: (() => void) | undefined;
  #closed = false;
  #runs = 0;

  constructor(
    private readonly run: () => Promise<void>,
    private readonly o: CoalescerOptions = {},
  ) {}

  /** A run is under way (or waiting out `minInterval`). */
  get busy(): boolean {
    return this.#running !== undefined;
  }

  /** Runs started so far. */
  get runs(): number {
    return this.#runs;
  }

  /** Starts a run, or asks for one more after the current one; resolves when the runs settle. */
  request(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const done = new Promise<void>((r) => this.#waiters.push(r));
    if (this.#running) this.#again = true;
    else this.#running = this.#loop();
    return done;
  }

  /** Stops: no further run starts, a wait for `minInterval` ends, and every request resolves now. */
  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#wake?.();
    this.#settle();
  }

  async #loop(): Promise<void> {
    // Nothing runs before `#running` is set: a run may trigger a request synchronously (a
    // closed connection's handler), which must not start a second loop.
    await Promise.resolve();
    try {
      do {
        this.#again = false;
        const wait = this.#lastStart + (this.o.minInterval ?? 0) - Date.now();
        if (wait > 0) await this.#sleep(wait);
        if (this.#closed) break;
        this.#lastStart = Date.now();
        this.#runs++;
        try {
          await this.run();
        } catch (err) {
          // Without a handler a failing run is the caller's bug: it surfaces, unhandled.
          if (!this.o.onError) throw err;
          this.o.onError(err);
        }
      } while (this.#again && !this.#closed);
    } finally {
      this.#running = undefined;
      this.#settle();
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#wake = resolve;
      this.#timer = setTimeout(resolve, ms);
      this.#timer.unref();
    }).finally(() => {
      this.#timer = undefined;
      this.#wake = undefined;
    });
  }

  #settle(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const r of w) r();
  }
}
