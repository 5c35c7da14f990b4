import type { Arg } from '../types.js';
import type { CommandRegistry } from './command-table.js';
import { classifierFor, keyPositions, type CommandClassifier, type CommandTraits } from './traits.js';

/** `arg` with `prefix` in front, keeping its kind: a Buffer key stays a Buffer (binary-safe). */
export function prefixArg(prefix: string, prefixBytes: Buffer, arg: Arg): Arg {
  if (Buffer.isBuffer(arg)) return Buffer.concat([prefixBytes, arg]);
  return prefix + String(arg);
}

/**
 * A copy of `args` with the arguments at `positions` prefixed. `args` itself is left alone:
 * callers (and batches that keep their commands) must never see a prefix applied twice.
 */
export function prefixAt(args: readonly Arg[], positions: readonly number[], prefix: string, prefixBytes: Buffer = Buffer.from(prefix)): Arg[] {
  const out = args.slice();
  for (const i of positions) out[i] = prefixArg(prefix, prefixBytes, args[i]!);
  return out;
}

/** Glob characters of SCAN MATCH that a literal prefix must not bring into the pattern. */
const GLOB = /[*?[\]\\]/g;

/**
 * The SCAN MATCH pattern for `match` under `prefix`: the prefix with its glob characters
 * escaped, then the user's pattern (every key of the prefix when there is none).
 */
export function prefixPattern(prefix: string, match: string | undefined): string {
  return prefix.replace(GLOB, '\\$&') + (match ?? '*');
}

/** A key SCAN returned under `prefix`, without it (keys that lack it are returned unchanged). */
export function stripPrefix<K extends string | Buffer>(prefix: string, prefixBytes: Buffer, key: K): K {
  if (Buffer.isBuffer(key)) {
    return (key.length >= prefixBytes.length && key.subarray(0, prefixBytes.length).equals(prefixBytes) ? key.subarray(prefixBytes.length) : key) as K;
  }
  return (key.startsWith(prefix) ? key.slice(prefix.length) : key) as K;
}

/**
 * Applies a pool's `keyPrefix` (as ioredis does): every key argument, at the same key
 * positions the cluster router reads, so a prefixed key routes to the slot of the prefixed
 * name. Replies are not rewritten (BLPOP and XREAD name the prefixed key, as in ioredis),
 * except that `scanIterator` scans only the prefix and yields keys without it.
 */
export class KeyPrefixer {
  readonly bytes: Buffer;
  private readonly classifier: CommandClassifier;

  /** `registry`: the table the pool routes by, for callers that do not pass the command's traits. */
  constructor(
    readonly prefix: string,
    registry: CommandRegistry,
  ) {
    this.bytes = Buffer.from(prefix);
    this.classifier = classifierFor(registry);
  }

  /**
   * `args` with its keys prefixed (a new array), or `args` itself when it has no keys. `t`: the
   * command's traits, as worked out where the call entered. Shard channels are found at key
   * positions (a cluster routes them by slot) but they are channels: SSUBSCRIBE is never
   * prefixed, so SPUBLISH must not be either or its messages would reach nobody.
   */
  apply(args: readonly Arg[], t: CommandTraits = this.classifier.of(args)): Arg[] {
    if (args.length < 2 || t.channels) return args as Arg[];
    const at = keyPositions(t, args);
    return at.length ? prefixAt(args, at, this.prefix, this.bytes) : (args as Arg[]);
  }

  /** One key (the `key` of `use(fn, { key })`). */
  key(key: Arg): Arg {
    return prefixArg(this.prefix, this.bytes, key);
  }

  /** See {@link prefixPattern}. */
  pattern(match: string | undefined): string {
    return prefixPattern(this.prefix, match);
  }

  /** See {@link stripPrefix}. */
  strip<K extends string | Buffer>(key: K): K {
    return stripPrefix(this.prefix, this.bytes, key);
  }
}
