import { MaxRedirectionsError, PoolClosedError, TimeoutError, type RedirectAttempt } from '../errors.js';
import { backoffDelay } from '../pool/backoff.js';
import type { ResolvedCall } from '../pool/call-options.js';
import { timedOut } from '../retry.js';
import { formatAddress, type Arg, type NodeAddress } from '../types.js';
import type { ResolvedClusterOptions } from './options.js';
import type { Decision } from './redirect.js';
import type { Route } from './route.js';

/** The retry state of one command (or one pipeline entry, or one transaction). */
export interface Flight {
  args: Arg[];
  route: Route;
  /** Explicit next target (after MOVED or ASK); else the map decides. */
  target: NodeAddress | undefined;
  asking: boolean;
  redirections: number;
  attempts: RedirectAttempt[];
  /** Nodes that failed this command (skipped for replica reads and keyless commands). */
  avoid: Set<string>;
  uncoveredRefreshed: boolean;
  /** Key of the node of the last attempt: a map change that routes the command elsewhere wakes its retry wait. */
  lastNode: string | undefined;
  /** The last failure was cluster-wide (CLUSTERDOWN, READONLY, …): any map change wakes the retry wait. */
  wakeOnAnyChange: boolean;
  /** `redirections` when the backoff last started over (a map change restarts it). */
  backoffBase: number;
  /** Set while the command retries after a node-level failure: the topology polls until it is called. */
  troubled: (() => void) | undefined;
  /** The map's version when the last attempt failed (see `pauseBeforeRetry`). */
  failedAtVersion: number;
}

/** A flight that has not been sent yet. */
export function newFlight(args: Arg[], route: Route): Flight {
  return {
    args, route, target: undefined, asking: false, redirections: 0, attempts: [], avoid: new Set(), uncoveredRefreshed: false,
    lastNode: undefined, wakeOnAnyChange: false, backoffBase: 0, troubled: undefined, failedAtVersion: 0,
  };
}

/**
 * Clears the flight's MOVED/ASK target as its attempt starts: a redirect holds for one
 * attempt only, later ones follow the map (or a new redirect). Returns whether this attempt
 * must be preceded by ASKING.
 */
export function takeRedirect(f: Flight): boolean {
  const asking = f.asking;
  f.target = undefined;
  f.asking = false;
  return asking;
}

/**
 * The error of a flight whose deadline passed: a TimeoutError that lists every attempt, has
 * the last attempt's error as `cause` and the node the command was going to (`at`, else that
 * of the last attempt) as `address`. A lone attempt that timed out is reported as is.
 */
export function deadlineError(f: Flight, call: ResolvedCall, at?: NodeAddress): TimeoutError {
  const last = f.attempts[f.attempts.length - 1];
  if (last && f.attempts.length === 1 && last.error instanceof TimeoutError && !at) return last.error;
  const list = f.attempts.map((a) => `${formatAddress(a.node)} ${a.kind} after ${a.elapsed} ms: ${a.error.message}`).join('; ');
  return timedOut(
    `${String(f.args[0]).toUpperCase()} did not complete within its deadline (${call.budget} ms)` + (list ? ` after ${f.attempts.length} attempts: ${list}` : '') + '.',
    last?.error,
    at ?? last?.node,
  );
}

/**
 * What a flight that gives up reports: MaxRedirectionsError when its budget is spent, the
 * PoolClosedError when the pool closed under it (as every mode reports it), else the
 * attempt's own error.
 */
export function giveUpError<E>(f: Flight, d: Extract<Decision, { action: 'fail' }>, err: E, maxRedirections: number): E | MaxRedirectionsError | PoolClosedError {
  if (d.exhausted) return new MaxRedirectionsError(String(f.args[0]).toUpperCase(), f.attempts, maxRedirections);
  return d.error instanceof PoolClosedError ? d.error : err;
}

/**
 * Delay before the next attempt of a flight. The backoff counts the redirections since it last
 * started over (a map change restarts it). TRYAGAIN (a multi-key command in a slot being
 * migrated) lasts as long as the migration, so its delay doubles from `retryDelayOnTryAgain`
 * up to `retryBackoff.maxDelay`, letting the budget cover a migration of several seconds. A
 * node-level failure starts lower (at most 50 ms): another node may well answer at once.
 */
export function retryDelay(d: Decision, f: Flight, o: Pick<ResolvedClusterOptions, 'retryDelayOnTryAgain' | 'retryBackoff'>): number {
  const n = f.redirections - f.backoffBase;
  if (d.action === 'retry' && d.delay === 'tryagain') {
    const tries = f.attempts.filter((a) => a.kind === 'tryagain').length;
    return Math.min(o.retryDelayOnTryAgain * 2 ** Math.max(0, tries - 1), o.retryBackoff.maxDelay);
  }
  if (d.action === 'retry') return backoffDelay(Math.max(0, n - 1), o.retryBackoff);
  if (d.action === 'retry-elsewhere') return backoffDelay(Math.max(0, n - 1), { initialDelay: Math.min(50, o.retryBackoff.initialDelay), maxDelay: o.retryBackoff.maxDelay });
  return 0;
}
