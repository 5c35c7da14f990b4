import { CrossSlotError } from '../errors.js';
import type { Arg, Reply } from '../types.js';

/** One per-slot piece of a split multi-key command. */
export interface SplitPart {
  slot: number;
  /** Arguments of the sub-command, without the command name. */
  args: Arg[];
  /** Positions of this part's keys among the original command's keys (0-based), in order. */
  indices: number[];
}

/** Commands that `splitBySlot` can split, with how many arguments each key carries. */
const SPLITTABLE: ReadonlyMap<string, number> = new Map([
  ['mget', 1],
  ['mset', 2],
  ['del', 1],
  ['unlink', 1],
  ['exists', 1],
  ['touch', 1],
]);

/** Whether `splitBySlot` knows how to split this command. */
export function isSplittable(command: string): boolean {
  return SPLITTABLE.has(command.toLowerCase());
}

/**
 * Multi-key commands whose keys must share one slot, and which are not split because
 * splitting would change their meaning: MSETNX is all-or-nothing (Redis tags it
 * `multi_shard` with `agg_min`, but split parts could set some keys and not others), and the
 * rest move data between their keys or combine them. A cross-slot call of one of these must be
 * refused with {@link CrossSlotError} before it is sent. (The cluster dispatcher refuses every
 * cross-slot command it does not split, listed here or not: this list documents the known ones.)
 */
const UNSPLITTABLE = new Set([
  'msetnx',
  'rename', 'renamenx', 'copy', 'smove', 'lmove', 'blmove', 'rpoplpush', 'brpoplpush',
  'sinter', 'sinterstore', 'sunion', 'sunionstore', 'sdiff', 'sdiffstore', 'sintercard',
  'zunion', 'zunionstore', 'zinter', 'zinterstore', 'zdiff', 'zdiffstore', 'zintercard', 'zrangestore',
  'lmpop', 'blmpop', 'zmpop', 'bzmpop', 'blpop', 'brpop', 'bzpopmin', 'bzpopmax',
  'pfcount', 'pfmerge', 'bitop', 'lcs', 'geosearchstore', 'georadius', 'georadiusbymember',
  'sort', 'eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro',
  'xread', 'xreadgroup', 'watch', 'migrate',
]);

/** See {@link UNSPLITTABLE}: true for MSETNX, RENAME, SUNIONSTORE, EVAL, … (case-insensitive). */
export function isUnsplittableMultiSlot(command: string): boolean {
  return UNSPLITTABLE.has(command.toLowerCase());
}

/** Builds the CrossSlotError for an unsplittable command whose keys span `slots`. */
export function crossSlotError(command: string, slots: Iterable<number>): CrossSlotError {
  const list = [...new Set(slots)].sort((a, b) => a - b);
  return new CrossSlotError(
    `${command.toUpperCase()} keys hash to ${list.length} different slots (${list.slice(0, 8).join(', ')}${list.length > 8 ? ', …' : ''}); ` +
      'put the keys in one slot with a hash tag, e.g. {user1}:a and {user1}:b.',
  );
}

/**
 * Splits MGET, MSET, DEL, UNLINK, EXISTS or TOUCH into one sub-command per slot. `args`
 * excludes the command name. Parts come in order of their slot's first key; keys keep their
 * order inside a part, so duplicates behave as on one server. Per the `multi_shard` tip this
 * splits by slot, not by node: group the parts with {@link groupByNode} to pipeline them.
 *
 * Returns undefined when the command is not splittable or its arguments are malformed (no
 * keys, odd MSET): send it unchanged and let the server report the error.
 */
export function splitBySlot(command: string, args: readonly Arg[], slotOf: (key: Arg) => number): SplitPart[] | undefined {
  const width = SPLITTABLE.get(command.toLowerCase());
  if (width === undefined || args.length === 0 || args.length % width !== 0) return undefined;
  const bySlot = new Map<number, SplitPart>();
  for (let k = 0; k * width < args.length; k++) {
    const key = args[k * width]!;
    const slot = slotOf(key);
    let part = bySlot.get(slot);
    if (!part) bySlot.set(slot, (part = { slot, args: [], indices: [] }));
    for (let j = 0; j < width; j++) part.args.push(args[k * width + j]!);
    part.indices.push(k);
  }
  return [...bySlot.values()];
}

function firstError(results: readonly (Reply | Error)[]): Error | undefined {
  for (const r of results) if (r instanceof Error) return r;
  return undefined;
}

function toNumber(r: Reply | Error): number {
  if (typeof r === 'number') return r;
  if (typeof r === 'bigint') return Number(r);
  throw new TypeError(`expected an integer reply, got ${describe(r)}`);
}

function describe(r: unknown): string {
  return r === null ? 'null' : Array.isArray(r) ? 'an array' : r instanceof Map ? 'a map' : typeof r;
}

/**
 * Merges the replies of the parts of {@link splitBySlot} (`results[i]` answers `parts[i]`):
 * MGET values go back to their key positions, DEL/UNLINK/EXISTS/TOUCH counts are summed,
 * MSET gives 'OK'. If any part failed, the first error is thrown: a partial result would lie.
 */
export function mergeSplit(command: string, parts: readonly SplitPart[], results: readonly (Reply | Error)[]): Reply {
  if (parts.length !== results.length) throw new RangeError(`${parts.length} parts but ${results.length} results`);
  const err = firstError(results);
  if (err) throw err;
  switch (command.toLowerCase()) {
    case 'mget': {
      const out: Reply[] = new Array(parts.reduce((n, p) => n + p.indices.length, 0)).fill(null);
      parts.forEach((p, i) => {
        const values = results[i];
        if (!Array.isArray(values) || values.length !== p.indices.length) {
          throw new TypeError(`MGET part for slot ${p.slot} returned ${describe(values)} for ${p.indices.length} keys`);
        }
        p.indices.forEach((at, j) => (out[at] = values[j]!));
      });
      return out;
    }
    case 'del':
    case 'unlink':
    case 'exists':
    case 'touch':
      return results.reduce<number>((sum, r) => sum + toNumber(r), 0);
    case 'mset':
      return 'OK';
    default:
      throw new TypeError(`mergeSplit does not know how to merge ${command}`);
  }
}

// ---------------------------------------------------------------------------------------
// Fan-out response policies
// ---------------------------------------------------------------------------------------

type Scalar = number | bigint | boolean;

function isScalar(r: Reply): r is Scalar {
  return typeof r === 'number' || typeof r === 'bigint' || typeof r === 'boolean';
}

/** Folds equally shaped replies: numbers directly, arrays element-wise (SCRIPT EXISTS). */
function fold(replies: readonly Reply[], op: (a: Scalar, b: Scalar) => Scalar, policy: string): Reply {
  const first = replies[0];
  if (Array.isArray(first)) {
    return first.map((_, i) =>
      fold(
        replies.map((r) => {
          if (!Array.isArray(r) || r.length !== first.length) throw new TypeError(`${policy}: replies have different shapes`);
          return r[i]!;
        }),
        op,
        policy,
      ),
    );
  }
  let acc: Scalar | undefined;
  for (const r of replies) {
    if (!isScalar(r)) throw new TypeError(`${policy} needs integer replies, got ${describe(r)}`);
    acc = acc === undefined ? r : op(acc, r);
  }
  if (acc === undefined) throw new TypeError(`${policy}: no replies`);
  return acc;
}

const sum = (a: Scalar, b: Scalar): Scalar =>
  typeof a === 'bigint' || typeof b === 'bigint' ? BigInt(a) + BigInt(b) : Number(a) + Number(b);
const min = (a: Scalar, b: Scalar): Scalar => (b < a ? b : a);
const max = (a: Scalar, b: Scalar): Scalar => (b > a ? b : a);
// Keep the reply type: RESP integers stay 0/1, booleans stay booleans.
const and = (a: Scalar, b: Scalar): Scalar => (typeof a === 'boolean' ? a && !!b : a && b ? 1 : 0);
const or = (a: Scalar, b: Scalar): Scalar => (typeof a === 'boolean' ? a || !!b : a || b ? 1 : 0);

/** Concatenates arrays, unions sets, merges maps; otherwise the first non-null reply. */
function aggregate(replies: readonly Reply[]): Reply {
  const first = replies[0];
  if (Array.isArray(first)) return replies.flatMap((r) => (Array.isArray(r) ? r : [r]));
  if (first instanceof Set) {
    const out = new Set<Reply>();
    for (const r of replies) if (r instanceof Set) for (const x of r) out.add(x);
    return out;
  }
  if (first instanceof Map) {
    const out = new Map<Reply, Reply>();
    for (const r of replies) if (r instanceof Map) for (const [k, v] of r) out.set(k, v);
    return out;
  }
  return replies.find((r) => r !== null) ?? null;
}

/**
 * Merges the replies of a command sent to several nodes, following its `response_policy`
 * tip (https://redis.io/docs/latest/develop/reference/command-tips/):
 *
 * - `agg_sum` / `agg_min` / `agg_max`: of integer replies, element-wise for arrays.
 * - `agg_logical_and` / `agg_logical_or`: of 0/1 replies, element-wise (SCRIPT EXISTS).
 * - `all_succeeded`: the first reply if none failed, else throws the first error.
 * - `one_succeeded`: the first successful reply; throws the first error if all failed.
 * - `special`: returns the per-node replies as an array, unmerged: INFO, LATENCY, MEMORY
 *   STATS need command-specific handling.
 * - none (keyless fan-out such as KEYS, RANDOMKEY): arrays concatenated, sets united, maps
 *   merged, scalars give the first non-null reply. SCAN is not a fan-out and is not handled.
 *
 * Apart from `one_succeeded`, any error among the replies is thrown.
 */
export function mergeFanout(responsePolicy: string | undefined, replies: readonly (Reply | Error)[]): Reply {
  if (responsePolicy === 'one_succeeded') {
    const ok = replies.find((r) => !(r instanceof Error));
    if (ok !== undefined) return ok as Reply;
    throw firstError(replies) ?? new TypeError('one_succeeded: no replies');
  }
  const err = firstError(replies);
  if (err) throw err;
  const rs = replies as readonly Reply[];
  if (responsePolicy === 'special') return rs.slice();
  if (rs.length === 0) throw new TypeError(`${responsePolicy ?? 'fan-out'}: no replies`);
  switch (responsePolicy) {
    case 'agg_sum': return fold(rs, sum, responsePolicy);
    case 'agg_min': return fold(rs, min, responsePolicy);
    case 'agg_max': return fold(rs, max, responsePolicy);
    case 'agg_logical_and': return fold(rs, and, responsePolicy);
    case 'agg_logical_or': return fold(rs, or, responsePolicy);
    case 'all_succeeded': return rs[0]!;
    case undefined: return aggregate(rs);
    default: throw new TypeError(`unknown response policy ${responsePolicy}`);
  }
}

/**
 * Groups items by target node, keeping first-seen node order and item order within a node.
 * `indices` are the items' positions in `items`, for putting replies back in order.
 */
export function groupByNode<T>(items: readonly T[], nodeOf: (item: T) => string): Map<string, { indices: number[]; items: T[] }> {
  const out = new Map<string, { indices: number[]; items: T[] }>();
  items.forEach((item, i) => {
    const node = nodeOf(item);
    let g = out.get(node);
    if (!g) out.set(node, (g = { indices: [], items: [] }));
    g.indices.push(i);
    g.items.push(item);
  });
  return out;
}
