/**
 * Durable acknowledgements at the pool level: the `durability` option, and which commands it
 * applies to. The connection does the WAIT itself (connection/durability.ts); the pool only
 * marks the commands that need one.
 */
import { CommandRegistry, type CommandInfo } from '../commands/command-table.js';
import { DurabilityCounters, type Durability } from '../connection/durability.js';
import { MAX_TIMER } from '../connection/options.js';
import { checkKnown, checkNumber } from '../options.js';
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

/**
 * Validates a `durability` option (TypeError naming it). `allowFalse`: per call,
 * `with({ durability: false })` turns it off for that call.
 */
export function checkDurability(name: string, value: unknown, allowFalse: boolean): void {
  if (value === undefined || (allowFalse && value === false)) return;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`Option ${name} must be an object { replicas, timeout }${allowFalse ? ' or false' : ''} (got ${value === null ? 'null' : typeof value}).`);
  }
  checkKnown(name, value, ['replicas', 'timeout']);
  const v = value as Partial<DurabilityOptions>;
  if (v.replicas === undefined) throw new TypeError(`Option ${name}.replicas is required: how many replicas must confirm a write.`);
  if (v.timeout === undefined) throw new TypeError(`Option ${name}.timeout is required: how long (ms) the master waits for the replicas.`);
  checkNumber(`${name}.replicas`, v.replicas, { min: 1, max: MAX_REPLICAS });
  checkNumber(`${name}.timeout`, v.timeout, { min: 1, max: MAX_TIMER });
}

/** A validated pool-wide option, counted in `counters`; undefined when off. */
export function resolveDurability(value: DurabilityOptions | undefined, counters: DurabilityCounters): Durability | undefined {
  checkDurability('durability', value, false);
  return value === undefined ? undefined : { replicas: value.replicas, timeout: value.timeout, stats: counters };
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
 * Whether a command needs its WAIT: writes (flag `write`), scripts and functions, which may
 * write (EVAL, EVALSHA, FCALL; their `_RO` forms are read-only), and commands the table does not
 * know (a module's, perhaps a write: a WAIT too many costs a round trip, one too few a lost write).
 */
export function confirmsWrite(info: CommandInfo | undefined): boolean {
  if (info === undefined) return true;
  if (info.flags.has('write')) return true;
  return info.name === 'eval' || info.name === 'evalsha' || info.name === 'fcall';
}

let registry: CommandRegistry | undefined;
const BY_NAME = new Map<string, boolean>();

/** {@link confirmsWrite} for an argument vector, cached by name (it runs on every durable call). */
export function isDurableWrite(args: readonly Arg[]): boolean {
  const name = args[0];
  if (typeof name === 'string') {
    const known = BY_NAME.get(name);
    if (known !== undefined) return known;
  }
  const table = (registry ??= new CommandRegistry());
  const parent = table.get(String(name));
  // FUNCTION LOAD writes, FUNCTION LIST does not: container commands are decided per subcommand.
  if (parent?.subcommands) return confirmsWrite(args.length > 1 ? table.get(String(name), args[1]) : parent);
  const w = confirmsWrite(parent);
  if (typeof name === 'string' && BY_NAME.size < 4096) BY_NAME.set(name, w);
  return w;
}

export { DurabilityCounters, type Durability, type DurabilityStats } from '../connection/durability.js';
