import {
  ConnectionError,
  ProtocolError,
  RedisError,
  TimeoutError,
  isNotExecuted,
  type RedirectAttempt,
} from '../errors.js';
import { mayResend } from '../retry.js';
import type { NodeAddress } from '../types.js';
import { SLOT_COUNT } from './slot.js';

/** A parsed `-MOVED` or `-ASK` reply. */
export interface Redirect {
  kind: 'moved' | 'ask';
  slot: number;
  /** Where to go, as the server reported it (not NAT-mapped). */
  address: NodeAddress;
}

/**
 * Parses `MOVED <slot> <endpoint>:<port>` / `ASK …`. The endpoint may be empty (`:6380`,
 * meaning the host of `from`, the node that replied), an IPv6 address with or without
 * brackets (`::1:6380`, `[::1]:6380`: the last colon splits the port), or a hostname.
 * Returns undefined for any other error, for a slot outside 0..16383, a port outside
 * 1..65535, or an unknown endpoint (`?`).
 */
export function parseRedirect(err: RedisError, from: NodeAddress): Redirect | undefined {
  if (!(err instanceof RedisError) || (err.code !== 'MOVED' && err.code !== 'ASK')) return undefined;
  const parts = err.message.trim().split(/\s+/);
  if (parts.length < 3) return undefined;
  const slotText = parts[1]!;
  const target = parts[2]!;
  if (!/^\d{1,5}$/.test(slotText)) return undefined;
  const slot = Number(slotText);
  if (slot >= SLOT_COUNT) return undefined;
  const colon = target.lastIndexOf(':');
  if (colon === -1) return undefined;
  const portText = target.slice(colon + 1);
  if (!/^\d{1,5}$/.test(portText)) return undefined;
  const port = Number(portText);
  if (port < 1 || port > 65535) return undefined;
  let host = target.slice(0, colon);
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (host === '?') return undefined;
  // Validated so that a hostile or broken server cannot steer us to a malformed address.
  if (host !== '' && !/^[A-Za-z0-9._:%-]+$/.test(host)) return undefined;
  return { kind: err.code === 'MOVED' ? 'moved' : 'ask', slot, address: { host: host || from.host, port } };
}

/** What the cluster executor should do after an attempt failed; see {@link decideRedirect}. */
export type Decision =
  | { action: 'done' }
  | { action: 'moved'; slot: number; address: NodeAddress }
  | { action: 'ask'; slot: number; address: NodeAddress }
  | { action: 'retry'; delay: 'tryagain' | 'clusterdown'; refresh: boolean }
  | { action: 'retry-elsewhere'; refresh: true }
  | { action: 'fail'; error: unknown; exhausted: boolean };

/** What the executor knows about the failed attempt. */
export interface RedirectContext {
  /** Whether the command was written to the socket (the error classes may also say so). */
  sent: boolean;
  /** The command is flagged readonly: resending it cannot change data. */
  readOnly: boolean;
  /** The caller declared the command safe to run twice. */
  idempotent: boolean;
  /** Redirections and retries used so far by this command. */
  redirections: number;
  maxRedirections: number;
  /** The node that replied; fills the empty host of `MOVED 3999 :6380`. Defaults to `err.address`. */
  from?: NodeAddress;
}

/**
 * The pure retry/redirect decision of the cluster executor (ARCHITECTURE 3.5).
 *
 * - `done`: `err` is undefined or null, nothing to decide.
 * - `moved` / `ask`: go to `address` (MOVED: also patch the slot and trigger a refresh;
 *   ASK: send ASKING + the command on one connection, no patch).
 * - `retry`: TRYAGAIN (`delay: 'tryagain'`, same target, short fixed delay), CLUSTERDOWN and
 *   READONLY (`'clusterdown'`, backoff, refresh), LOADING / NOREPLICAS (`'clusterdown'`
 *   backoff, no refresh), or a MOVED/ASK whose target cannot be used (`?`), which needs a refresh.
 * - `retry-elsewhere`: the node is unusable (connection error, MASTERDOWN) and the command
 *   provably did not run, or running it twice is harmless (read-only or idempotent).
 * - `fail`: any other error, an uncertain write of a non-idempotent command, or the budget
 *   is spent (`exhausted: true`; build a MaxRedirectionsError from the attempts).
 *
 * The budget is shared: every decision other than `done` and `fail` counts as one
 * redirection, so the caller increments `redirections` each time it acts on one.
 */
export function decideRedirect(err: unknown, ctx: RedirectContext): Decision {
  if (err === undefined || err === null) return { action: 'done' };
  const decision = classify(err, ctx);
  if (decision.action !== 'fail' && decision.action !== 'done' && ctx.redirections >= ctx.maxRedirections) {
    return { action: 'fail', error: err, exhausted: true };
  }
  return decision;
}

function classify(err: unknown, ctx: RedirectContext): Decision {
  if (err instanceof RedisError) {
    switch (err.code) {
      case 'MOVED':
      case 'ASK': {
        // An unusable target (`?`, garbage, or an empty host from an unknown node) still
        // proves the command did not run; a fresh map will say where the slot lives.
        const r = parseRedirect(err, ctx.from ?? err.address ?? { host: '', port: 0 });
        if (!r || r.address.host === '') return { action: 'retry', delay: 'clusterdown', refresh: true };
        return { action: r.kind, slot: r.slot, address: r.address };
      }
      case 'TRYAGAIN':
        return { action: 'retry', delay: 'tryagain', refresh: false };
      case 'UNBLOCKED':
        // A blocked command the server released without running it (its slot moved away, or
        // the node became a replica): it did not pop, and the map is stale.
        return { action: 'retry', delay: 'clusterdown', refresh: true };
      case 'CLUSTERDOWN':
      case 'READONLY':
        // READONLY: we wrote to a node that is a replica now (failover): our map is stale.
        return { action: 'retry', delay: 'clusterdown', refresh: true };
      case 'LOADING':
      case 'NOREPLICAS':
        return { action: 'retry', delay: 'clusterdown', refresh: false };
      case 'MASTERDOWN':
        // A replica lost its master link and serves no stale data: another node may answer.
        return { action: 'retry-elsewhere', refresh: true };
      default:
        return { action: 'fail', error: err, exhausted: false };
    }
  }
  if (err instanceof ConnectionError || err instanceof TimeoutError || err instanceof ProtocolError) {
    // isNotExecuted says "never written" for a plain ConnectionError or an unsent timeout;
    // the executor's own `sent` overrides it, because only it knows whether the bytes left.
    if (mayResend(err, ctx.sent || !isNotExecuted(err), ctx.readOnly, ctx.idempotent)) return { action: 'retry-elsewhere', refresh: true };
    return { action: 'fail', error: err, exhausted: false };
  }
  return { action: 'fail', error: err, exhausted: false };
}

/** The `RedirectAttempt.kind` for an attempt that failed with `err`, for MaxRedirectionsError. */
export function attemptKind(err: unknown): RedirectAttempt['kind'] {
  if (err instanceof RedisError) {
    switch (err.code) {
      case 'MOVED': return 'moved';
      case 'ASK': return 'ask';
      case 'TRYAGAIN': return 'tryagain';
      case 'CLUSTERDOWN': return 'clusterdown';
      default: return 'error';
    }
  }
  if (err instanceof TimeoutError) return 'timeout';
  if (err instanceof ConnectionError) return 'connection';
  return 'error';
}
