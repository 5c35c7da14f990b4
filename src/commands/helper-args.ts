import type { Arg, Reply } from '../types.js';

/**
 * Argument checks shared by the typed helpers. A helper that ignored an argument it does not
 * use would send something else than the caller meant (ioredis habits such as
 * `set(k, v, 'EX', 10)` used to set no expiry), so every helper refuses what it cannot place,
 * with a TypeError that names it and shows the form it takes.
 */

/**
 * The helper a check runs for: its name and the forms it takes, both shown by its TypeErrors.
 * Each helper's entry in the helper table (helpers.ts) is the one place both are written.
 */
export interface HelperRef {
  readonly name: string;
  readonly usage: string;
}

/** What a typed helper turns into: the command's arguments and how to shape its reply. */
export interface CommandSpec {
  args: Arg[];
  transform?: (reply: Reply) => unknown;
  /** Server-side blocking time in seconds (0 = forever); the client deadline is extended by it. */
  blockSeconds?: number;
  /** Absolute deadline (epoch ms) that replaces the call's own: a script's EVAL fallback stays within the first attempt's deadline. */
  deadline?: number;
}

/** A helper's builder: its arguments as one array (trailing undefineds already dropped), checked for helper `h`. */
export type Build = (a: unknown[], h: HelperRef) => CommandSpec;

/** The TypeError of a helper called the wrong way: what was wrong, then the forms it takes. */
export function usageError(h: HelperRef, problem: string): TypeError {
  return new TypeError(`${h.name}: ${problem}. Use ${h.usage}.`);
}

/** Whether `v` can be sent as one argument. */
export function isArg(v: unknown): v is Arg {
  return typeof v === 'string' || Buffer.isBuffer(v) || typeof v === 'bigint' || (typeof v === 'number' && Number.isFinite(v));
}

/** How a value that cannot be an argument reads in a message (never the value itself: it may be a secret). */
export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'number') return String(v);
  return typeof v === 'object' ? 'an object' : typeof v;
}

/** `v` as the `what` of helper `h`, or a TypeError. */
export function arg(h: HelperRef, what: string, v: unknown): Arg {
  if (!isArg(v)) throw usageError(h, `${what} must be a string, Buffer, number or bigint (got ${describe(v)})`);
  return v;
}

/** `v` as an integer (count, index, seconds); integer text is sent as given, never rounded through a number. */
export function int(h: HelperRef, what: string, v: unknown): number | bigint | string {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return v;
  throw usageError(h, `${what} must be an integer (got ${typeof v === 'string' ? JSON.stringify(v) : describe(v)})`);
}

/** Numeric text as Redis reads scores and bounds: '1.5', '-inf', '+inf', '(3' (exclusive). */
const NUMERIC = /^\(?[+-]?(inf|\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i;

/** `v` as a number, or a numeric string such as '-inf' or '(1.5' (score bounds, float increments). */
export function numeric(h: HelperRef, what: string, v: unknown): Arg {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && !Number.isNaN(v)) return Number.isFinite(v) ? v : v > 0 ? '+inf' : '-inf';
  if (typeof v === 'string' && NUMERIC.test(v)) return v;
  throw usageError(h, `${what} must be a number (got ${typeof v === 'string' ? JSON.stringify(v) : describe(v)})`);
}

/** Refuses arguments past the `max` a helper uses. */
export function atMost(h: HelperRef, args: readonly unknown[], max: number): void {
  if (args.length > max) throw usageError(h, `takes at most ${max} argument${max === 1 ? '' : 's'}, got ${args.length}; the extra ones would be ignored`);
}

/** Refuses calls that lack a required argument. */
export function atLeast(h: HelperRef, args: readonly unknown[], min: number): void {
  if (args.length < min) throw usageError(h, `needs ${min} argument${min === 1 ? '' : 's'}, got ${args.length}`);
}

/**
 * Variadic arguments, with arrays flattened one level as ioredis does (`del([a, b])`,
 * `sadd(k, ['x', 'y'])`). At least `min` items.
 */
export function list(h: HelperRef, what: string, items: readonly unknown[], min = 1): Arg[] {
  const out: Arg[] = [];
  for (const it of items) {
    if (Array.isArray(it)) for (const x of it) out.push(arg(h, what, x));
    else out.push(arg(h, what, it));
  }
  if (out.length < min) throw usageError(h, `needs at least ${min} ${what}`);
  return out;
}

/** A plain object or a Map, as `{ field: value }` forms take it (a Buffer or an array is neither). */
export function isRecord(v: unknown): v is Record<string, unknown> | Map<unknown, unknown> {
  return v instanceof Map || (typeof v === 'object' && v !== null && !Array.isArray(v) && !Buffer.isBuffer(v));
}

/** Flat `[k, v, k, v]` from a record or a Map. */
export function pairsOf(h: HelperRef, what: string, r: Record<string, unknown> | Map<unknown, unknown>): Arg[] {
  const out: Arg[] = [];
  const entries = r instanceof Map ? r.entries() : Object.entries(r);
  for (const [k, v] of entries) out.push(arg(h, `every ${what} name`, k), arg(h, `the value of ${what} ${JSON.stringify(String(k))}`, v));
  return out;
}

/** Refuses option names a helper does not know: `{ ex: 10 }` must not set no expiry. */
export function knownKeys(h: HelperRef, o: object, known: readonly string[]): void {
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) throw usageError(h, `unknown option ${JSON.stringify(k)} (known: ${known.join(', ')})`);
  }
}

/** Upper-case text of a token argument, or undefined when it is not text. */
export function token(v: unknown): string | undefined {
  return typeof v === 'string' ? v.toUpperCase() : undefined;
}

/**
 * Reads ioredis-style option tokens (`'EX', 10, 'NX'`, `'LIMIT', 0, 10`) into a record of
 * upper-case token to its values. `arity` gives how many values follow each known token (0 for
 * a flag). Anything else is refused: it would otherwise be sent where the server reads
 * something else, or dropped.
 */
export function tokens(h: HelperRef, rest: readonly unknown[], arity: Readonly<Record<string, number>>): Record<string, Arg[]> {
  // No prototype: looking up an option that was not given must not find Object's members.
  const out: Record<string, Arg[]> = Object.create(null) as Record<string, Arg[]>;
  for (let i = 0; i < rest.length; i++) {
    const t = token(rest[i]);
    const n = t === undefined || !Object.hasOwn(arity, t) ? undefined : arity[t];
    if (t === undefined || n === undefined) {
      throw usageError(h, `unexpected argument ${typeof rest[i] === 'string' ? JSON.stringify(rest[i]) : describe(rest[i])} (options it knows: ${Object.keys(arity).join(', ')})`);
    }
    if (i + n > rest.length - 1) throw usageError(h, `${t} needs ${n} value${n === 1 ? '' : 's'} after it`);
    const values: Arg[] = [];
    for (let j = 0; j < n; j++) values.push(arg(h, `the value of ${t}`, rest[++i]));
    out[t] = values;
  }
  return out;
}

/** Strips trailing `undefined` arguments: `set(k, v, undefined)` is `set(k, v)`. */
export function trimmed(a: readonly unknown[]): unknown[] {
  let n = a.length;
  while (n > 0 && a[n - 1] === undefined) n--;
  return n === a.length ? (a as unknown[]) : a.slice(0, n);
}
