/**
 * Options declared once. Each option is one entry of a table (kind, bounds, default, one-line
 * doc) beside its public interface; the checks (a TypeError naming the option), the defaults,
 * the name lists and docs/options.md (`npm run docs:options`) are all read from the tables, so
 * they cannot disagree. `defineOptions<I>()` ties a table to its interface at compile time: an
 * option missing from the table, an entry the interface lacks, a kind that does not fit the
 * option's type, or a `oneOf` that leaves out a member of the type's union does not compile.
 */

/** Node's timers fire at once for delays above 2^31-1 ms: the bound of every time option. */
export const MAX_TIMER = 2 ** 31 - 1;

interface SpecBase<V> {
  /** What it does, for the reference page. */
  doc: string;
  /** The default as the reference page shows it, when the table cannot hold it (computed, "off", …). */
  defaultDoc?: string;
  /** A rule beyond the kind's own; throws a TypeError naming `name`. */
  check?(value: V, name: string): void;
  /** Must be given; the text says why. */
  required?: string;
}

/** An integer within [min (default 0), max]. */
export interface IntegerSpec extends SpecBase<number> {
  kind: 'integer';
  min?: number;
  max?: number;
  unit?: 'ms' | 'bytes';
  default?: number;
}

export interface BooleanSpec extends SpecBase<boolean> {
  kind: 'boolean';
  default?: boolean;
}

/** A string, non-empty unless `allowEmpty`. */
export interface StringSpec extends SpecBase<string> {
  kind: 'string';
  allowEmpty?: boolean;
  default?: string;
}

/** One of `values` (every member of the option's union: checked at compile time). */
export interface OneOfSpec<V> extends SpecBase<V> {
  kind: 'oneOf';
  values: readonly V[];
  default?: V;
}

/** Anything the kinds above cannot say (functions, TLS options, address maps): `validate` throws. */
export interface CustomSpec<V> extends SpecBase<V> {
  kind: 'custom';
  /** The type as the reference page shows it. */
  type: string;
  validate(value: unknown, name: string): void;
  default?: V;
}

/** Options nested under one name (`pool: { … }`), each field with its own entry. */
export interface GroupSpec<G> {
  kind: 'group';
  doc: string;
  fields: OptionTable<G>;
  /** Absent (or `false` when `orFalse`) means off: resolves to undefined instead of the fields' defaults. */
  optional?: boolean;
  /** `false` is accepted and means off. */
  orFalse?: boolean;
  required?: string;
  defaultDoc?: string;
  /** A rule across the fields, given them with defaults applied. */
  check?(value: Required<G>, name: string): void;
}

type Kinds<V> = V extends unknown ? V : never;
type IsOnly<V, T> = [V] extends [T] ? true : false;

/** The entries an option of type `V` may have. */
export type SpecFor<V> =
  | CustomSpec<NonNullable<V>>
  | (IsOnly<NonNullable<V>, number> extends true ? IntegerSpec | OneOfSpec<NonNullable<V>> : never)
  | (IsOnly<NonNullable<V>, boolean> extends true ? BooleanSpec : never)
  | (IsOnly<NonNullable<V>, string> extends true ? StringSpec | OneOfSpec<NonNullable<V>> : never)
  | (IsOnly<Exclude<NonNullable<V>, false>, object> extends true
    ? Kinds<Exclude<NonNullable<V>, false>> extends (...args: never[]) => unknown ? never : Exclude<NonNullable<V>, false> extends readonly unknown[] ? never : GroupSpec<Exclude<NonNullable<V>, false>>
    : never);

/** One entry per option of `I`. */
export type OptionTable<I> = { [K in keyof I]-?: SpecFor<I[K]> };

/** Any table, as the functions below read it. */
export type AnyTable = Readonly<Record<string, AnySpec>>;
type AnySpec = IntegerSpec | BooleanSpec | StringSpec | OneOfSpec<any> | CustomSpec<any> | GroupSpec<any>;

/**
 * What `satisfies` cannot say about an inferred table: no key the interface lacks (each must be
 * `never`, which no entry is), every `oneOf` lists the whole union, and the same inside groups.
 */
type Exact<I, T> = { [K in Exclude<keyof T, keyof I>]: never } & {
  [K in keyof T & keyof I]: T[K] extends { kind: 'oneOf'; values: readonly (infer A)[] }
    ? [Exclude<NonNullable<I[K]>, A>] extends [never] ? unknown : { values: { missing: Exclude<NonNullable<I[K]>, A> } }
    : T[K] extends { kind: 'group'; fields: infer F } ? { fields: Exact<Exclude<NonNullable<I[K]>, false>, F> } : unknown;
};

/**
 * `defineOptions<I>()({ … })`: the table of interface `I`, checked against it at compile time
 * (see the file comment), its literal type kept for {@link Resolved}.
 */
export function defineOptions<I>() {
  return <const T extends OptionTable<I>>(table: T & Exact<I, T>): T => table;
}

/** `I` after {@link withDefaults}: options with a default are always set; groups resolved. */
export type Resolved<I, T> = { -readonly [K in keyof I & keyof T]-?: ResolvedValue<I[K], T[K]> };
type ResolvedValue<V, S> = S extends { kind: 'group'; fields: infer F }
  ? S extends { optional: true } ? Resolved<Exclude<NonNullable<V>, false>, F> | undefined : Resolved<Exclude<NonNullable<V>, false>, F>
  : S extends { default: unknown } ? NonNullable<V> : V;

/** The options of `table` with their defaults applied (the value must have been checked). */
export function withDefaults<I, T extends AnyTable>(table: T, value: I | undefined): Resolved<I, T> {
  const v = (value ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, spec] of list(table).entries) {
    const given = v[k];
    if (spec.kind === 'group') {
      out[k] = spec.optional && (given === undefined || given === false) ? undefined : withDefaults(spec.fields as AnyTable, given as object | undefined);
    } else {
      out[k] = given ?? spec.default;
    }
  }
  return out as Resolved<I, T>;
}

// Tables never change: their entries are listed once (with() checks its options on every call).
const listed = new WeakMap<AnyTable, { names: readonly string[]; entries: [string, AnySpec][]; required: [string, AnySpec][] }>();
function list(table: AnyTable) {
  let l = listed.get(table);
  if (!l) {
    const entries = Object.entries(table);
    listed.set(table, l = { names: entries.map(([k]) => k), entries, required: entries.filter(([, s]) => s.required !== undefined) });
  }
  return l;
}

/** Names of a table's options, in table order. */
export function optionNames(table: AnyTable): readonly string[] {
  return list(table).names;
}

/**
 * Checks an options object: an object (`label` names it), no name the table lacks (a typo must
 * not be ignored), then every entry; `scope` prefixes the names in messages.
 */
export function checkOptions(table: AnyTable, value: unknown, scope = '', label = scope || 'options'): void {
  checkObject(label, value);
  checkKnown(scope, value as object | undefined, optionNames(table));
  checkFields(table, value, scope);
}

/** Checks every entry of `table` in `value` (other keys are someone else's). */
export function checkFields(table: AnyTable, value: unknown, scope = ''): void {
  if (value === undefined) return;
  const v = value as Record<string, unknown>;
  const l = list(table);
  for (const [k, spec] of l.required) {
    if (v[k] === undefined) throw new TypeError(`Option ${join(scope, k)} is required: ${spec.required}.`);
  }
  for (const [k, spec] of l.entries) {
    if (v[k] !== undefined) checkOption(spec, v[k], join(scope, k));
  }
}

/** Checks one option's value (undefined is always accepted: the default applies). */
export function checkOption(spec: AnySpec, value: unknown, name: string): void {
  if (value === undefined) return;
  switch (spec.kind) {
    case 'integer': checkNumber(name, value, { min: spec.min, max: spec.max }); break;
    case 'boolean': checkBoolean(name, value); break;
    case 'string': checkString(name, value, spec.allowEmpty); break;
    case 'oneOf': checkOneOf(name, value, spec.values); break;
    case 'custom': spec.validate(value, name); break;
    case 'group': {
      if (spec.orFalse && value === false) return;
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        const shape = optionNames(spec.fields as AnyTable).join(', ');
        throw new TypeError(`Option ${name} must be an object { ${shape} }${spec.orFalse ? ' or false' : ''} (got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}).`);
      }
      checkKnown(name, value, optionNames(spec.fields as AnyTable));
      checkFields(spec.fields as AnyTable, value, name);
      spec.check?.(withDefaults(spec.fields as AnyTable, value) as never, name);
      return;
    }
  }
  (spec.check as ((v: unknown, n: string) => void) | undefined)?.(value, name);
}

const join = (scope: string, k: string) => (scope ? `${scope}.${k}` : k);

/** A backoff option `{ initialDelay, maxDelay }`, with the rule every backoff obeys: initialDelay <= maxDelay. */
export function backoffSpec(doc: string, initialDelay: number, maxDelay: number) {
  return {
    kind: 'group',
    doc,
    fields: {
      initialDelay: { kind: 'integer', unit: 'ms', min: 1, max: MAX_TIMER, default: initialDelay, doc: 'First delay (the cap of the first jittered wait); doubles on each further failure.' },
      maxDelay: { kind: 'integer', unit: 'ms', min: 1, max: MAX_TIMER, default: maxDelay, doc: 'Longest delay.' },
    },
    check(b: { initialDelay: number; maxDelay: number }, name: string) {
      if (b.initialDelay > b.maxDelay) throw new TypeError(`Option ${name}.initialDelay (${b.initialDelay}) must not exceed ${name}.maxDelay (${b.maxDelay}).`);
    },
  } as const satisfies GroupSpec<{ initialDelay?: number; maxDelay?: number }>;
}

// The checks of one value each; the tables above call them, and so do a few call sites that
// validate arguments rather than options.

export function checkNumber(name: string, value: unknown, opts: { min?: number | undefined; max?: number | undefined; integer?: boolean } = {}): void {
  if (value === undefined) return;
  const min = opts.min ?? 0;
  if (typeof value !== 'number' || Number.isNaN(value) || (opts.integer !== false && !Number.isInteger(value)) || value < min || (opts.max !== undefined && value > opts.max)) {
    const range = opts.max !== undefined ? `from ${min} to ${opts.max}` : `>= ${min}`;
    throw new TypeError(`Option ${name} must be ${opts.integer === false ? 'a number' : 'an integer'} ${range} (got ${typeof value === 'number' ? value : typeof value}).`);
  }
}

export function checkBoolean(name: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'boolean') throw new TypeError(`Option ${name} must be a boolean (got ${typeof value}).`);
}

export function checkString(name: string, value: unknown, allowEmpty = false): void {
  if (value === undefined) return;
  if (typeof value !== 'string' || (!allowEmpty && value === '')) {
    throw new TypeError(`Option ${name} must be a ${allowEmpty ? '' : 'non-empty '}string (got ${value === null ? 'null' : typeof value === 'string' ? 'an empty string' : typeof value}).`);
  }
}

export function checkOneOf<T>(name: string, value: unknown, allowed: readonly T[]): void {
  if (value !== undefined && !allowed.includes(value as T)) {
    throw new TypeError(`Option ${name} must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')} (got ${typeof value === 'symbol' ? 'a symbol' : JSON.stringify(value)}).`);
  }
}

export function checkObject(name: string, value: unknown): void {
  if (value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value))) {
    throw new TypeError(`Option ${name} must be an object.`);
  }
}

/** Rejects option names nobody reads: a typo must not be ignored silently. */
export function checkKnown(scope: string, value: object | undefined, known: readonly string[]): void {
  if (!value) return;
  for (const k of Object.keys(value)) {
    if (!known.includes(k)) throw new TypeError(`Unknown option ${scope ? scope + '.' : ''}${k}; known options are: ${known.join(', ')}.`);
  }
}
