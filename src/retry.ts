/**
 * Retry and deadline rules, in one place below the pools (as go-redis keeps `shouldRetry` in
 * one file every client uses): was it written, may it be re-sent, how long may this wait, the
 * error at the deadline, the one timer race, and the one coalescer ("one run at a time").
 * Standalone and Sentinel (master and replica) dispatchers, dedicated connections and the
 * cluster's flights all decide with these, so the same fault gives the same error in every mode.
 */
import {
  AuthenticationError, ConnectionError, NodeUnreachableError, PoolClosedError, ProtocolError, TimeoutError, wasWritten,
} from './errors.js';
import { formatAddress, type NodeAddress } from './types.js';

// ---------------------------------------------------------------------------------------
// Was it written? May it be re-sent?
// ---------------------------------------------------------------------------------------

// The rule itself lives with the error classes (errors.ts), so that the public `isNotExecuted`
// shares it without importing this file.
export { wasWritten };

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
    // Says what became of the command, as the wait for a lane does: the same fault reads the same
    // whether the deadline passed while waiting or right after a failed attempt.
    const last = ((err as Error)?.message ?? String(err)).replace(/\s+/g, ' ').trim().replace(/\.$/, '');
    const outcome = wasWritten(err) ? 'it may have executed' : 'it was not sent';
    throw timedOut(`${a.name} to ${a.role ?? ''}${formatAddress(a.address)} could not be completed within ${within}; last error: ${last}; ${outcome}.`, err, a.address);
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

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * One run at a time (a refresh, a re-check, a reconcile round): {@link request} starts a run,
 * or, while one is under way, asks for exactly one more right after it, however many requests
 * came meanwhile. A request made before the run that will serve it has started (while the
 * loop waits out `minInterval`) is served by that run: it costs nothing more. With
 * `minInterval`, runs start at least that far apart (a storm of triggers costs a bounded number
 * of runs). {@link request} resolves once the runs settle; {@link next} as soon as one run that
 * began after it has finished.
 */
export class Coalescer {
  #running: Promise<void> | undefined;
  /** Between a run's start and its end: a request then asks for one more. */
  #inRun = false;
  #again = false;
  /** Requests waiting for the loop to settle, the next run to finish, the loop to end at all. */
  #settled: Deferred | undefined;
  #nextRun: Deferred | undefined;
  #idle: Deferred | undefined;
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

  /** One more run is asked for after the one under way (a run may end early to let it start). */
  get pending(): boolean {
    return this.#again;
  }

  /** Runs started so far (with those {@link noteStart} counted). */
  get runs(): number {
    return this.#runs;
  }

  /** Starts a run, or asks for one more after the current one; resolves when the runs settle. */
  request(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#settled ??= deferred();
    this.#ask();
    return this.#settled.promise;
  }

  /**
   * Asks for a run as {@link request} does, but resolves as soon as a run that started after
   * this call has finished (or at {@link close}): a caller waiting for fresh state is not kept
   * waiting by the further runs that later triggers ask for.
   */
  next(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#nextRun ??= deferred();
    this.#ask();
    return this.#nextRun.promise;
  }

  /**
   * A run made outside the coalescer (a first load) started now: it counts in {@link runs}, and
   * the next run waits `minInterval` from now.
   */
  noteStart(): void {
    this.#lastStart = Date.now();
    this.#runs++;
  }

  /** Resolves once no run is under way, without asking for one (at once when none is). */
  idle(): Promise<void> {
    if (!this.#running) return Promise.resolve();
    this.#idle ??= deferred();
    return this.#idle.promise;
  }

  /**
   * Stops: no further run starts, a wait for `minInterval` ends, and every request resolves now.
   * A run under way goes on to its end ({@link idle}).
   */
  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#wake?.();
    this.#settle();
  }

  #ask(): void {
    if (this.#inRun) this.#again = true;
    else this.#running ??= this.#loop();
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
        // This run serves every `next()` asked so far; those asked during it wait for the one after.
        const served = this.#nextRun;
        this.#nextRun = undefined;
        this.#inRun = true;
        try {
          await this.run();
        } catch (err) {
          // Without a handler a failing run is the caller's bug: it surfaces, unhandled.
          if (!this.o.onError) throw err;
          this.o.onError(err);
        } finally {
          this.#inRun = false;
          served?.resolve();
        }
      } while (this.#again && !this.#closed);
    } finally {
      this.#running = undefined;
      this.#again = false;
      this.#settle();
      const idle = this.#idle;
      this.#idle = undefined;
      idle?.resolve();
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
    const settled = this.#settled;
    const nextRun = this.#nextRun;
    this.#settled = this.#nextRun = undefined;
    settled?.resolve();
    nextRun?.resolve();
  }
}
