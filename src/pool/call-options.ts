import { checkKnown, checkObject, checkOptions, defineOptions, MAX_TIMER } from '../options.js';
import type { Durability } from '../connection/durability.js';
import type { CommandTraits } from '../commands/traits.js';
import { CALL_DURABILITY_GROUP, type DurabilityOptions } from './durability.js';

/** Per-call options, given through `pool.with(options)` so they can never be mistaken for command arguments. */
export interface CallOptions {
  /** Abort the command: it rejects with `signal.reason`; if it was already sent, its late reply is discarded. */
  signal?: AbortSignal;
  /** Deadline in ms for this call, covering waits and retries; 0 disables. Default: `commandTimeout`. */
  timeout?: number;
  /** Bulk string replies as Buffers instead of strings. */
  returnBuffers?: boolean;
  /** The command may run twice without harm: retry it on a new connection even when it may have executed. */
  idempotent?: boolean;
  /** `false`: this call bypasses the client-side cache (it neither reads nor fills it). Default true when the pool has `cache`. */
  cache?: boolean;
  /**
   * This call's writes resolve only once `replicas` replicas confirmed them (see the pool option
   * `durability`); `false` turns the pool's `durability` off for this call.
   */
  durability?: DurabilityOptions | false;
}

/** Call options after validation, with an absolute deadline. Also the options a connection's `send` reads. */
export interface ResolvedCall {
  signal: AbortSignal | undefined;
  /** Epoch ms, or 0 for none. */
  deadline: number;
  returnBuffers: boolean;
  idempotent: boolean;
  /** The command blocks on the server (BLPOP …): exempt from the socket inactivity check. */
  blocking: boolean;
  /** Milliseconds the whole call may take (0 = unbounded), for messages. */
  budget: number;
  /** The caller's own `timeout` (0 when the default `commandTimeout` applies): only it stretches `socketTimeout`. */
  patience: number;
  /** What this call's writes ask of the replicas (the pool's `durability` or the call's own); undefined = off. */
  durability?: Durability | undefined;
  /** Set on the call of a write that needs its WAIT: what the connection reads. */
  durable?: Durability | undefined;
  /**
   * The traits of the one command this call sends (worked out where it entered; see
   * commands/traits.ts); undefined when the call sends several (a batch) or none was given.
   */
  traits?: CommandTraits | undefined;
  /** A batch's commands' traits, one per command in order. */
  batch?: readonly CommandTraits[] | undefined;
}

/** Validates the options of `use(fn, options)`: only `key` (a typo would lease a node by chance). */
export function checkUseOptions(o: unknown): void {
  if (o === undefined) return;
  checkObject('use(fn, options)', o);
  checkKnown('use', o as Record<string, unknown>, ['key']);
}

/** One entry per per-call option. */
export const CALL_OPTIONS = defineOptions<CallOptions>()({
  signal: {
    kind: 'custom', type: 'AbortSignal', doc: 'Abort the command: it rejects with `signal.reason`; if it was already sent, its late reply is discarded.',
    validate(v, name) {
      if (!(v instanceof AbortSignal)) throw new TypeError(`Option ${name} must be an AbortSignal.`);
    },
  },
  timeout: { kind: 'integer', unit: 'ms', max: MAX_TIMER, defaultDoc: '`commandTimeout`', doc: 'Deadline of this call, covering waits and retries (and stretching `socketTimeout` while its reply is awaited); 0 disables.' },
  returnBuffers: { kind: 'boolean', default: false, doc: 'Bulk string replies as Buffers instead of strings.' },
  idempotent: { kind: 'boolean', default: false, doc: 'The command may run twice without harm: retry it on a new connection even when it may have executed.' },
  cache: { kind: 'boolean', defaultDoc: 'true when the pool has `cache`', doc: '`false`: this call bypasses the client-side cache (it neither reads nor fills it).' },
  durability: CALL_DURABILITY_GROUP,
});

/** Validates per-call options. */
export function checkCallOptions(o: CallOptions): void {
  checkOptions(CALL_OPTIONS, o, 'with', 'with(options)');
}

/** "How long may this wait" is one of the retry rules: see retry.ts. */
export { remaining } from '../retry.js';
