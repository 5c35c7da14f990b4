/**
 * Durable acknowledgements at the pool level: the `durability` option, and which commands it
 * applies to. The connection does the WAIT itself (connection/durability.ts); the pool only
 * marks the commands that need one.
 */
import type { CommandInfo } from '../commands/command-table.js';
import { needsWait, traitsOf } from '../commands/traits.js';
import { DurabilityCounters, type Durability } from '../connection/durability.js';
import { checkOption, defineOptions, MAX_TIMER, type GroupSpec } from '../options.js';
import type { Arg } from '../types.js';

/**
 * `durability: { replicas, timeout }`: a write resolves only once `replicas` replicas confirmed
 * it (Redis `WAIT`), and rejects with `DurabilityError` when fewer did within `timeout` ms.
 */
export interface DurabilityOptions {
  /** Replicas that must have the write before it resolves (at least 1). */
  replicas: number;
  /** Longest the master waits for them, in ms (at least 1; within the call's own deadline). */
  timeout: number;
}

/** The most replicas one may ask for: more than any deployment has, far below what WAIT accepts. */
const MAX_REPLICAS = 1000;

/** `durability: { replicas, timeout }` as one option: off unless given. */
export const DURABILITY_GROUP = {
  kind: 'group',
  doc: 'Durable acknowledgements: a write resolves only once `replicas` replicas confirmed it (one `WAIT` per flush of writes on a connection), else `DurabilityError` (applied on the master, not confirmed, never re-sent).',
  defaultDoc: 'off',
  optional: true,
  fields: defineOptions<DurabilityOptions>()({
    replicas: { kind: 'integer', min: 1, max: MAX_REPLICAS, required: 'how many replicas must confirm a write', doc: 'Replicas that must have the write before it resolves.' },
    timeout: { kind: 'integer', unit: 'ms', min: 1, max: MAX_TIMER, required: 'how long (ms) the master waits for the replicas', doc: 'Longest the master waits for them (within the call\'s own deadline).' },
  }),
} as const satisfies GroupSpec<DurabilityOptions>;

/** Per call, `false` also turns the pool's `durability` off. */
export const CALL_DURABILITY_GROUP = {
  ...DURABILITY_GROUP,
  doc: 'This call\'s writes resolve only once `replicas` replicas confirmed them (as the pool option `durability`); `false` turns the pool\'s `durability` off for this call.',
  defaultDoc: 'the pool\'s',
  orFalse: true,
} as const satisfies GroupSpec<DurabilityOptions>;

/**
 * Validates a `durability` option (TypeError naming it). `allowFalse`: per call,
 * `with({ durability: false })` turns it off for that call.
 */
export function checkDurability(name: string, value: unknown, allowFalse: boolean): void {
  checkOption(allowFalse ? CALL_DURABILITY_GROUP : DURABILITY_GROUP, value, name);
}

/**
 * What one call asks for: its own `with({ durability })` (false = off), else the pool's.
 * A per-call value is counted with the pool's.
 */
export function effectiveDurability(pool: Durability | undefined, call: DurabilityOptions | false | undefined, counters: DurabilityCounters | undefined): Durability | undefined {
  if (call === undefined) return pool;
  if (call === false) return undefined;
  if (pool !== undefined && pool.replicas === call.replicas && pool.timeout === call.timeout) return pool;
  return { replicas: call.replicas, timeout: call.timeout, stats: counters ?? pool?.stats };
}

/**
 * Whether a command needs its WAIT (its traits' `durable`: see commands/traits.ts). For callers
 * that hold only the table's entry or the arguments; calls carry their traits.
 */
export function confirmsWrite(info: CommandInfo | undefined): boolean {
  return needsWait(info);
}

/** The traits' `durable` of an argument vector, by the built-in table. */
export function isDurableWrite(args: readonly Arg[]): boolean {
  return traitsOf(args).durable;
}

export { DurabilityCounters, type Durability, type DurabilityStats } from '../connection/durability.js';
