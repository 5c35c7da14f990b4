import type { Arg, Reply } from '../types.js';
import { RAW_COMMANDS, GENERATED_FROM_VERSION, type RawKeySpec } from './command-table.generated.js';

/** How a cluster client should spread a keyless or multi-key command (Redis command tips). */
export type RequestPolicy = 'all_shards' | 'all_nodes' | 'multi_shard' | 'special';

/** How a cluster client should merge the replies of a fanned-out command (Redis command tips). */
export type ResponsePolicy =
  | 'one_succeeded'
  | 'all_succeeded'
  | 'agg_logical_and'
  | 'agg_logical_or'
  | 'agg_min'
  | 'agg_max'
  | 'agg_sum'
  | 'special';

/**
 * A key spec as `COMMAND` reports it since Redis 7, normalised to one shape for RESP2 and
 * RESP3. Only the search rules are kept; `notes` are dropped.
 */
export type KeySpec = RawKeySpec;

/** What the library needs to know about a command to route and retry it. */
export interface CommandInfo {
  /** Lower-case name; subcommands are `parent|sub` as Redis names them (`script|load`). */
  name: string;
  /** Redis arity: positive is exact, negative is a minimum; both count the command name. */
  arity: number;
  /** Redis command flags: `readonly`, `write`, `blocking`, `pubsub`, `noscript`, `movablekeys`, `admin`, … */
  flags: Set<string>;
  /** Index of the first key in the argument vector (0 = no keys; the name is index 0). */
  firstKey: number;
  /** Index of the last key; negative counts from the end (-1 = last argument). */
  lastKey: number;
  /** Distance between keys (2 for MSET's key/value pairs). */
  step: number;
  /** The `request_policy:` tip, when the command has one. */
  requestPolicy?: RequestPolicy;
  /** The `response_policy:` tip, when the command has one. */
  responsePolicy?: ResponsePolicy;
  /** Every tip as reported, e.g. `nondeterministic_output`. */
  tips: string[];
  /** Key specs; the built-in table keeps them only for `movablekeys` commands. */
  keySpecs?: KeySpec[];
  /** Subcommands of a container command (CLIENT, CONFIG, SCRIPT, …), keyed by lower-case subcommand name. */
  subcommands?: Map<string, CommandInfo>;
}

/** The redis-server version the built-in table was generated from. */
export const BUILTIN_TABLE_VERSION = GENERATED_FROM_VERSION;

// ---------------------------------------------------------------------------------------
// Building CommandInfo
// ---------------------------------------------------------------------------------------

function policiesFromTips(info: CommandInfo): CommandInfo {
  for (const tip of info.tips) {
    if (tip.startsWith('request_policy:')) info.requestPolicy = tip.slice(15) as RequestPolicy;
    else if (tip.startsWith('response_policy:')) info.responsePolicy = tip.slice(16) as ResponsePolicy;
  }
  return info;
}

/** Adds `parent|sub` entries under their parent, creating nothing if the parent is missing. */
function attach(table: Map<string, CommandInfo>, info: CommandInfo): void {
  const bar = info.name.indexOf('|');
  if (bar === -1) {
    table.set(info.name, info);
    return;
  }
  const parent = table.get(info.name.slice(0, bar));
  if (!parent) return;
  (parent.subcommands ??= new Map()).set(info.name.slice(bar + 1), info);
}

let builtin: Map<string, CommandInfo> | undefined;

/**
 * The built-in table, generated from `COMMAND` on a real server (see
 * `scripts/generate-command-table.mjs`). Used when `COMMAND` is denied by ACL or not loaded yet.
 * Built on first use so that importing this module stays cheap.
 */
export function builtinCommands(): Map<string, CommandInfo> {
  if (builtin) return builtin;
  const table = new Map<string, CommandInfo>();
  // Rows are sorted by name, so `parent` always precedes `parent|sub`.
  for (const [name, arity, flags, firstKey, lastKey, step, tips, keySpecs] of RAW_COMMANDS) {
    const info: CommandInfo = {
      name,
      arity,
      flags: new Set(flags ? flags.split(' ') : []),
      firstKey,
      lastKey,
      step,
      tips: tips ? tips.split(' ') : [],
    };
    if (keySpecs) info.keySpecs = keySpecs;
    attach(table, policiesFromTips(info));
  }
  return (builtin = table);
}

// ---------------------------------------------------------------------------------------
// Parsing a live COMMAND reply
// ---------------------------------------------------------------------------------------

function str(v: Reply | undefined): string {
  if (typeof v === 'string') return v;
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  return v === undefined || v === null ? '' : String(v);
}

function num(v: Reply | undefined): number {
  return typeof v === 'number' ? v : Number(str(v));
}

/** RESP3 sends flags, tips and key specs as sets; RESP2 as arrays. */
function items(v: Reply | undefined): Reply[] {
  if (Array.isArray(v)) return v;
  if (v instanceof Set) return [...v];
  return [];
}

/** A RESP3 map, or a RESP2 flat `[k1, v1, k2, v2, …]` array, as a Map with string keys. */
function fields(v: Reply | undefined): Map<string, Reply> {
  const out = new Map<string, Reply>();
  if (v instanceof Map) for (const [k, x] of v) out.set(str(k), x);
  else if (Array.isArray(v)) for (let i = 0; i + 1 < v.length; i += 2) out.set(str(v[i]), v[i + 1]!);
  return out;
}

function parseKeySpec(raw: Reply): KeySpec {
  const m = fields(raw);
  const bs = fields(m.get('begin_search'));
  const bsSpec = fields(bs.get('spec'));
  const fk = fields(m.get('find_keys'));
  const fkSpec = fields(fk.get('spec'));
  const bsType = str(bs.get('type'));
  const fkType = str(fk.get('type'));
  return {
    flags: items(m.get('flags')).map(str),
    beginSearch:
      bsType === 'index'
        ? { type: 'index', index: num(bsSpec.get('index')) }
        : bsType === 'keyword'
          ? { type: 'keyword', keyword: str(bsSpec.get('keyword')), startFrom: num(bsSpec.get('startfrom')) }
          : { type: 'unknown' },
    findKeys:
      fkType === 'range'
        ? { type: 'range', lastKey: num(fkSpec.get('lastkey')), keyStep: num(fkSpec.get('keystep')), limit: num(fkSpec.get('limit')) }
        : fkType === 'keynum'
          ? { type: 'keynum', keyNumIdx: num(fkSpec.get('keynumidx')), firstKey: num(fkSpec.get('firstkey')), keyStep: num(fkSpec.get('keystep')) }
          : { type: 'unknown' },
  };
}

function parseEntry(entry: Reply): CommandInfo | undefined {
  // COMMAND INFO answers null for an unknown name.
  if (!Array.isArray(entry) || entry.length < 6) return undefined;
  const info: CommandInfo = {
    name: str(entry[0]).toLowerCase(),
    arity: num(entry[1]),
    flags: new Set(items(entry[2]).map((f) => str(f).toLowerCase())),
    firstKey: num(entry[3]),
    lastKey: num(entry[4]),
    step: num(entry[5]),
    // Before Redis 7 the reply ends after the ACL categories (element 6).
    tips: items(entry[7]).map(str),
  };
  const specs = items(entry[8]);
  if (specs.length) info.keySpecs = specs.map(parseKeySpec);
  policiesFromTips(info);
  const subs = items(entry[9]);
  for (const sub of subs) {
    const s = parseEntry(sub);
    if (!s) continue;
    const bar = s.name.indexOf('|');
    (info.subcommands ??= new Map()).set(bar === -1 ? s.name : s.name.slice(bar + 1), s);
  }
  if (entry.length < 8) fillFromBuiltin(info);
  return info;
}

/**
 * A Redis 6.x entry has no tips, key specs or subcommands (they came with 7.0), so a cluster
 * would send FLUSHALL, DBSIZE or SCRIPT LOAD to one node only: take those from the built-in
 * table, which describes the same commands. The server's own arity, flags and key positions stay.
 */
function fillFromBuiltin(info: CommandInfo): void {
  const known = builtinCommands().get(info.name);
  if (!known) return;
  if (info.tips.length === 0 && known.tips.length > 0) {
    info.tips = [...known.tips];
    policiesFromTips(info);
  }
  if (!info.keySpecs && known.keySpecs) info.keySpecs = known.keySpecs;
  if (!info.subcommands && known.subcommands) info.subcommands = known.subcommands;
}

/**
 * Parses a live `COMMAND` (or `COMMAND INFO …`) reply, RESP2 or RESP3, into a table keyed by
 * lower-case command name. Subcommands are nested under their parent's `subcommands`.
 * Entries that are null (unknown names in `COMMAND INFO`) are skipped.
 */
export function parseCommandReply(reply: Reply): Map<string, CommandInfo> {
  const table = new Map<string, CommandInfo>();
  for (const entry of items(reply)) {
    const info = parseEntry(entry);
    if (info) table.set(info.name, info);
  }
  return table;
}

// ---------------------------------------------------------------------------------------
// Key extraction
// ---------------------------------------------------------------------------------------

function lower(a: Arg | undefined): string {
  if (a === undefined) return '';
  return (typeof a === 'string' ? a : Buffer.isBuffer(a) ? a.toString('latin1') : String(a)).toLowerCase();
}

function int(a: Arg | undefined): number {
  if (typeof a === 'number') return Number.isInteger(a) ? a : NaN;
  if (typeof a === 'bigint') return Number(a);
  const s = lower(a);
  return /^-?\d+$/.test(s) ? Number(s) : NaN;
}

/** Positions `from`, `from + 1`, … `to` (inclusive). */
function span(from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i <= to; i++) out.push(i);
  return out;
}

/** `args[numkeysAt]` keys starting right after it. A bad count yields no keys: the server will reply with the error. */
function numkeys(args: readonly Arg[], numkeysAt: number): number[] {
  const n = int(args[numkeysAt]);
  if (!(n >= 0) || numkeysAt + 1 + n > args.length) return [];
  return span(numkeysAt + 1, numkeysAt + n);
}

function storeThenNumkeys(args: readonly Arg[]): number[] {
  const sources = numkeys(args, 2);
  // With a bad count the command is invalid, and Redis reports no keys at all.
  return sources.length ? [1, ...sources] : [];
}

function xreadKeys(args: readonly Arg[]): number[] {
  // Walk the options instead of searching for "STREAMS": a group, consumer or stream can be
  // named "streams" too (the same reasoning as Redis's own xreadGetKeys).
  let streams = -1;
  for (let i = 1; i < args.length; i++) {
    const a = lower(args[i]);
    if (a === 'block' || a === 'count') i += 1;
    else if (a === 'group') i += 2;
    else if (a === 'noack') continue;
    else if (a === 'streams') {
      streams = i;
      break;
    } else break;
  }
  const rest = args.length - streams - 1;
  if (streams === -1 || rest === 0 || rest % 2 !== 0) return [];
  return span(streams + 1, streams + rest / 2);
}

function sortKeys(args: readonly Arg[], withStore: boolean): number[] {
  if (args.length < 2) return [];
  const keys: number[] = [1];
  if (!withStore) return keys;
  // As Redis's sortGetKeys: skip option arguments, and the *last* STORE wins.
  let store: number | undefined;
  for (let i = 2; i < args.length; i++) {
    const a = lower(args[i]);
    if (a === 'limit') i += 2;
    else if (a === 'get' || a === 'by') i += 1;
    else if (a === 'store' && i + 1 < args.length) store = ++i;
  }
  if (store !== undefined) keys.push(store);
  return keys;
}

function migrateKeys(args: readonly Arg[]): number[] {
  // MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw] [AUTH2 user pw] [KEYS k…]
  for (let i = 6; i < args.length; i++) {
    const a = lower(args[i]);
    if (a === 'auth') i += 1;
    else if (a === 'auth2') i += 2;
    else if (a === 'keys') {
      // Redis rejects KEYS unless the single-key slot is empty, and reports no keys then.
      return lower(args[3]) === '' ? span(i + 1, args.length - 1) : [];
    }
  }
  return args.length > 3 ? [3] : [];
}

/** Hand-written extractors for movable-keys commands, mirroring Redis's `*GetKeys` procs; they answer positions. */
// A Map, not an object literal: a command named `constructor` must not find Object's.
const MOVABLE = new Map<string, KeyExtractor>(Object.entries({
  eval: (a) => numkeys(a, 2),
  evalsha: (a) => numkeys(a, 2),
  eval_ro: (a) => numkeys(a, 2),
  evalsha_ro: (a) => numkeys(a, 2),
  fcall: (a) => numkeys(a, 2),
  fcall_ro: (a) => numkeys(a, 2),
  // destination first, then numkeys sources
  zunionstore: storeThenNumkeys,
  zinterstore: storeThenNumkeys,
  zdiffstore: storeThenNumkeys,
  zunion: (a) => numkeys(a, 1),
  zinter: (a) => numkeys(a, 1),
  zdiff: (a) => numkeys(a, 1),
  zintercard: (a) => numkeys(a, 1),
  sintercard: (a) => numkeys(a, 1),
  lmpop: (a) => numkeys(a, 1),
  zmpop: (a) => numkeys(a, 1),
  // timeout first, then numkeys
  blmpop: (a) => numkeys(a, 2),
  bzmpop: (a) => numkeys(a, 2),
  xread: xreadKeys,
  xreadgroup: xreadKeys,
  sort: (a) => sortKeys(a, true),
  sort_ro: (a) => sortKeys(a, false),
  migrate: migrateKeys,
} satisfies Record<string, (args: readonly Arg[]) => number[]>));

/** Interprets Redis 7 key specs the way `getKeysUsingKeySpecs` in db.c does; answers positions. */
function keysFromSpecs(specs: readonly KeySpec[], args: readonly Arg[]): number[] {
  const argc = args.length;
  const out: number[] = [];
  for (const spec of specs) {
    let first = 0;
    const bs = spec.beginSearch;
    if (bs.type === 'index') first = bs.index;
    else if (bs.type === 'keyword') {
      const from = bs.startFrom > 0 ? bs.startFrom : argc + bs.startFrom;
      const to = bs.startFrom > 0 ? argc - 1 : 0;
      const kw = bs.keyword.toLowerCase();
      for (let i = from; i >= 1 && i < argc; i = from <= to ? i + 1 : i - 1) {
        if (lower(args[i]) === kw) {
          first = i + 1;
          break;
        }
        if (i === to) break;
      }
      if (!first) continue;
    } else continue;

    let last: number;
    let step: number;
    const fk = spec.findKeys;
    if (fk.type === 'range') {
      step = fk.keyStep;
      if (fk.lastKey >= 0) last = first + fk.lastKey;
      else if (!fk.limit) last = argc + fk.lastKey;
      else last = first + (Math.floor((argc - first) / fk.limit) + fk.lastKey);
    } else if (fk.type === 'keynum') {
      step = fk.keyStep;
      const n = int(args[first + fk.keyNumIdx]);
      if (!(n >= 0)) continue;
      first += fk.firstKey;
      last = first + n - 1;
    } else continue;
    // Out of bounds means a syntax error the server will report; contribute no keys.
    if (last >= argc || last < first || first >= argc || step < 1) continue;
    for (let i = first; i <= last; i += step) out.push(i);
  }
  return out;
}

/**
 * The positions of the key arguments of a command, in order. `args[0]` is the command name
 * (and `args[1]` the subcommand of a container command such as `OBJECT ENCODING key`; pass
 * the parent's info and the subcommand's is used). The cluster router reads the keys at these
 * positions to pick a slot, and `keyPrefix` prefixes the arguments at these positions, so a
 * prefixed key always routes to its own slot.
 *
 * Movable-keys commands are handled by hand (EVAL*, FCALL*, Z*STORE/ZUNION/ZINTER/ZDIFF,
 * *INTERCARD, *MPOP, XREAD[GROUP], SORT[_RO], MIGRATE); other movable-keys commands use
 * their key specs when the table has them (GEORADIUS … STORE). Everything else uses
 * first/last/step. An unknown command (`info` undefined and not hand-handled) has no keys.
 * Malformed arguments yield the keys that can be found, often none: the server replies
 * with the real error.
 *
 * Shard channels (SPUBLISH, SSUBSCRIBE, SUNSUBSCRIBE) are returned as keys, because they
 * are routed by slot exactly like keys, although `COMMAND GETKEYS` leaves them out
 * (their key specs are flagged `not_key`).
 */
export function commandKeyPositions(info: CommandInfo | undefined, args: readonly Arg[]): number[] {
  if (args.length === 0) return [];
  const special = MOVABLE.get(lower(args[0]));
  if (special) return special(args);
  if (!info) return [];
  if (info.subcommands && args.length > 1) info = info.subcommands.get(lower(args[1])) ?? info;
  return infoKeyPositions(info, args);
}

/** A hand-written key extractor for a movable-keys command, by lower-case name (EVAL, XREAD, SORT, …). */
export function movableKeys(lowerName: string): KeyExtractor | undefined {
  return MOVABLE.get(lowerName);
}

/** Answers the positions of the key arguments of `args`. */
export type KeyExtractor = (args: readonly Arg[]) => number[];

/**
 * The key positions `info` describes (its key specs for a movable-keys command, else
 * first/last/step), for `info` already resolved to the subcommand and without the hand-written
 * extractors: the part of {@link commandKeyPositions} that needs no name lookup.
 */
export function infoKeyPositions(info: CommandInfo, args: readonly Arg[]): number[] {
  if (info.keySpecs && info.flags.has('movablekeys')) return keysFromSpecs(info.keySpecs, args);
  if (info.firstKey <= 0) return [];
  const last = info.lastKey < 0 ? args.length + info.lastKey : Math.min(info.lastKey, args.length - 1);
  const step = info.step > 0 ? info.step : 1;
  const out: number[] = [];
  for (let i = info.firstKey; i <= last; i += step) out.push(i);
  return out;
}

/** The key arguments of a command, in order: the arguments at {@link commandKeyPositions}. */
export function commandKeys(info: CommandInfo | undefined, args: readonly Arg[]): Arg[] {
  return commandKeyPositions(info, args).map((i) => args[i]!);
}

// ---------------------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------------------

/**
 * Command metadata: the built-in table, optionally overlaid by the live `COMMAND` reply of
 * the server (which knows about modules, renamed commands and newer versions).
 */
export class CommandRegistry {
  #live: Map<string, CommandInfo> | undefined;
  readonly #onLoad: Array<() => void> = [];
  readonly #builtin: Map<string, CommandInfo>;

  /** `builtin` replaces the generated table (tests, or a table for another server version). */
  constructor(options?: { builtin?: Map<string, CommandInfo> }) {
    this.#builtin = options?.builtin ?? builtinCommands();
  }

  /** Loads a live `COMMAND` reply; it takes precedence over the built-in table from now on. */
  load(reply: Reply): void {
    this.#live = parseCommandReply(reply);
    for (const f of this.#onLoad) f();
  }

  /** Calls `f` after every {@link load}: what is derived from the table (commands/traits.ts) is worked out again. */
  onLoad(f: () => void): void {
    this.#onLoad.push(f);
  }

  /** Whether a live table has been loaded. */
  get hasLiveTable(): boolean {
    return this.#live !== undefined;
  }

  /**
   * Looks up a command, case-insensitively. `get('script', 'load')`, `get('SCRIPT LOAD')` and
   * `get('script|load')` all return the SCRIPT LOAD entry. When the subcommand is unknown, or
   * the command has none (the second argument was a key), the parent is returned.
   */
  get(name: string | Buffer, subcommand?: Arg): CommandInfo | undefined {
    let n = lower(name);
    let sub = subcommand === undefined ? undefined : lower(subcommand);
    const sep = n.search(/[| ]/);
    if (sep !== -1) {
      sub = n.slice(sep + 1);
      n = n.slice(0, sep);
    }
    const parent = this.#live?.get(n) ?? this.#builtin.get(n);
    if (!parent || sub === undefined || !parent.subcommands) return parent;
    return parent.subcommands.get(sub) ?? parent;
  }

  /** The key arguments of `args` (`args[0]` is the command name); see {@link commandKeys}. */
  keys(args: readonly Arg[]): Arg[] {
    if (args.length === 0) return [];
    return commandKeys(this.get(lower(args[0])), args);
  }

  /** The positions of the key arguments of `args`; see {@link commandKeyPositions}. */
  keyPositions(args: readonly Arg[]): number[] {
    if (args.length === 0) return [];
    return commandKeyPositions(this.get(lower(args[0])), args);
  }
}

let defaultRegistry: CommandRegistry | undefined;

function resolve(name: string, table?: CommandRegistry | Map<string, CommandInfo>): CommandInfo | undefined {
  if (table instanceof Map) {
    const n = name.toLowerCase();
    const sep = n.search(/[| ]/);
    if (sep === -1) return table.get(n);
    const parent = table.get(n.slice(0, sep));
    return parent?.subcommands?.get(n.slice(sep + 1)) ?? parent;
  }
  return (table ?? (defaultRegistry ??= new CommandRegistry())).get(name);
}

/**
 * Whether the command is flagged `readonly` (never modifies data, so safe to resend after an
 * uncertain write and eligible for replicas). Unknown commands are not read-only.
 * `name` may include a subcommand: `'object encoding'`.
 */
export function isReadOnly(name: string, table?: CommandRegistry | Map<string, CommandInfo>): boolean {
  return resolve(name, table)?.flags.has('readonly') ?? false;
}

/**
 * Whether the command is flagged `blocking` (BLPOP, BZMPOP, XREAD, …). XREAD and XREADGROUP
 * only block with a BLOCK option; the flag is set regardless. WAIT is not flagged.
 */
export function isBlocking(name: string, table?: CommandRegistry | Map<string, CommandInfo>): boolean {
  return resolve(name, table)?.flags.has('blocking') ?? false;
}
