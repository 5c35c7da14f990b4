/**
 * The option tables (one entry per option, src/options.ts): for every option of every mode, each
 * kind of bad value is a TypeError naming the option, its default is accepted, unknown names are
 * refused, every backoff refuses initialDelay > maxDelay (the Cluster's retryBackoff did not), and
 * docs/options.md is exactly what the tables render, and the TSDoc's "Default …" agrees. The compile-time ties between the tables and
 * the public interfaces are in option-table.types.ts (checked by `npm run typecheck`).
 */
import { readFileSync } from 'node:fs';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { OPTIONS_PAGE, renderOptionsDoc } from '../../scripts/options-doc.js';
import { CACHE_OPTIONS } from '../../src/cache/options.js';
import { CLUSTER_OPTIONS, CLUSTER_OWN_OPTIONS, resolveClusterOptions } from '../../src/cluster/options.js';
import { CONNECTION_OPTIONS } from '../../src/connection/options.js';
import type { AnyTable } from '../../src/options.js';
import { CALL_OPTIONS, checkCallOptions } from '../../src/pool/call-options.js';
import { COMMON_OPTIONS } from '../../src/pool/common-options.js';
import { POOL_OPTIONS, resolvePoolOptions } from '../../src/pool/options.js';
import { resolveSentinelOptions, SENTINEL_OPTIONS, SENTINEL_OWN_OPTIONS } from '../../src/sentinel/options.js';
import { resolveStandaloneOptions, STANDALONE_OPTIONS } from '../../src/standalone-options.js';

type Spec = AnyTable[string];
type Options = Record<string, unknown>;

interface Mode {
  table: AnyTable;
  /** How messages name the options ('with.' for per-call options). */
  scope: string;
  /** What every case starts from, so that an option's own check is the one that runs. */
  base: Options;
  resolve: (o: Options) => unknown;
}

const MODES: Record<string, Mode> = {
  'StandalonePool.create': { table: STANDALONE_OPTIONS, scope: '', base: { protocol: 3 }, resolve: (o) => resolveStandaloneOptions('127.0.0.1:6379', o) },
  'SentinelPool.create': { table: SENTINEL_OPTIONS, scope: '', base: { protocol: 3 }, resolve: (o) => resolveSentinelOptions('mymaster', ['127.0.0.1:26379'], o) },
  'ClusterPool.create': { table: CLUSTER_OPTIONS, scope: '', base: { protocol: 3 }, resolve: (o) => resolveClusterOptions(['127.0.0.1:7000'], o) },
  'with()': { table: CALL_OPTIONS, scope: 'with.', base: {}, resolve: (o) => checkCallOptions(o) },
};

/** Values no entry of this kind accepts. */
function badValues(spec: Spec): unknown[] {
  const always = [Symbol('bad'), null];
  switch (spec.kind) {
    case 'integer': {
      const min = spec.min ?? 0;
      return [...always, 'x', 1.5 + min, NaN, min - 1, ...(spec.max === undefined ? [] : [spec.max + 1]), true];
    }
    case 'boolean': return [...always, 'yes', 1];
    case 'string': return [...always, 5, ...(spec.allowEmpty ? [] : [''])];
    case 'oneOf': return [...always, 'no-such-value', 99];
    case 'custom': return always;
    case 'group': return [...always, 5, 'x', [], { 'no-such-field': 1 }];
  }
}

/** A value the entry accepts on its own: its default, else the smallest allowed. */
function goodValue(spec: Spec): unknown {
  if (spec.kind === 'group') return spec.optional ? undefined : {};
  if (spec.default !== undefined) return spec.default;
  if (spec.kind === 'integer') return spec.min ?? 0;
  return undefined;
}

/** The required fields of a group, filled in. */
function required(fields: AnyTable): Options {
  const out: Options = {};
  for (const [k, s] of Object.entries(fields)) if (s.required !== undefined) out[k] = goodValue(s);
  return out;
}

interface Case { name: string; spec: Spec; build: (value: unknown) => Options }

/** One case per option, nested fields included (the group around them valid), with its dotted name. */
function cases(table: AnyTable, wrap: (o: Options) => Options = (o) => o, prefix = ''): Case[] {
  const out: Case[] = [];
  for (const [k, spec] of Object.entries(table)) {
    out.push({ name: prefix + k, spec, build: (v) => wrap({ [k]: v }) });
    if (spec.kind === 'group') {
      const fields = spec.fields as AnyTable;
      out.push(...cases(fields, (o) => wrap({ [k]: { ...required(fields), ...o } }), `${prefix}${k}.`));
    }
  }
  return out;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe.each(Object.entries(MODES))('%s: every option from its table', (mode, { table, scope, base, resolve }) => {
  const all = cases(table);

  it('has cases for every option and field', () => {
    expect(all.length).toBeGreaterThanOrEqual(Object.keys(table).length);
  });

  it.each(all.map((c) => [c.name, c] as const))('%s: each bad value is a TypeError naming it', (name, c) => {
    for (const bad of badValues(c.spec)) {
      const options = { ...base, ...c.build(bad) };
      let error: unknown;
      try {
        resolve(options);
      } catch (e) {
        error = e;
      }
      expect(error, `${mode} accepted ${name} = ${String(bad)}`).toBeInstanceOf(TypeError);
      // A nested unknown field names itself under the group (Unknown option pool.no-such-field).
      const named = scope + (typeof bad === 'object' && bad !== null && !Array.isArray(bad) ? `${name}.no-such-field` : name);
      expect((error as Error).message, `${name} = ${String(bad)}`).toMatch(new RegExp(`[Oo]ption ${escape(named)}\\b`));
    }
  });

  it.each(all.filter((c) => goodValue(c.spec) !== undefined).map((c) => [c.name, c] as const))('%s: its default is accepted', (_name, c) => {
    expect(() => resolve({ ...base, ...c.build(goodValue(c.spec)) })).not.toThrow();
  });

  it('refuses an unknown option name, listing the known ones', () => {
    expect(() => resolve({ ...base, tiemout: 5 })).toThrow(TypeError);
    const first = Object.keys(table)[0]!;
    expect(() => resolve({ ...base, tiemout: 5 })).toThrow(new RegExp(`Unknown option ${escape(scope)}tiemout; known options are: ${escape(first)}, `));
  });
});

describe('every backoff: initialDelay may not exceed maxDelay', () => {
  it.each<[string, () => unknown, RegExp]>([
    ['pool.reconnect', () => resolvePoolOptions({ reconnect: { initialDelay: 3000 } }), /Option pool\.reconnect\.initialDelay \(3000\) must not exceed pool\.reconnect\.maxDelay \(2000\)/],
    ['resubscribe', () => resolveSentinelOptions('m', ['127.0.0.1:26379'], { resubscribe: { initialDelay: 6000 } }), /Option resubscribe\.initialDelay \(6000\) must not exceed resubscribe\.maxDelay \(5000\)/],
    // The drift this table ended: the Cluster's copy of the checks never compared the two.
    ['retryBackoff', () => resolveClusterOptions(['127.0.0.1:7000'], { retryBackoff: { initialDelay: 3000 } }), /Option retryBackoff\.initialDelay \(3000\) must not exceed retryBackoff\.maxDelay \(2000\)/],
    ['retryBackoff, both given', () => resolveClusterOptions(['127.0.0.1:7000'], { retryBackoff: { initialDelay: 500, maxDelay: 400 } }), /retryBackoff\.initialDelay \(500\) must not exceed retryBackoff\.maxDelay \(400\)/],
  ])('%s', (_name, resolve, message) => {
    expect(resolve).toThrow(TypeError);
    expect(resolve).toThrow(message);
  });

  it('equal delays are accepted, and the resolved backoff is what was given', () => {
    expect(resolveClusterOptions(['127.0.0.1:7000'], { retryBackoff: { initialDelay: 400, maxDelay: 400 } }).retryBackoff).toEqual({ initialDelay: 400, maxDelay: 400 });
  });
});

describe('defaults come from the tables', () => {
  it('an empty options object resolves to the documented defaults', () => {
    const c = resolveClusterOptions(['127.0.0.1:7000'], {});
    expect([c.maxRedirections, c.minRefreshInterval, c.refreshInterval, c.readFrom, c.retryBackoff, c.refreshTimeout, c.splitMultiKey]).toEqual([16, 200, 30000, 'master', { initialDelay: 100, maxDelay: 2000 }, 2000, true]);
    const s = resolveSentinelOptions('m', ['127.0.0.1:26379'], {});
    expect([s.role, s.sentinelPollInterval, s.resubscribe, s.fenceTimeout, s.watchReplicas, s.pool.reconnect, s.data.commandTimeout, s.closeTimeout]).toEqual(['master', 100, { initialDelay: 100, maxDelay: 5000 }, 15000, true, { initialDelay: 50, maxDelay: 2000 }, 5000, 5000]);
    const a = resolveStandaloneOptions('redis://127.0.0.1:6379/3', {});
    expect([a.conn.db, a.conn.protocol, a.conn.maxPendingBytes, a.common.offlineQueue, a.common.keyPrefix, a.cache]).toEqual([3, 2, 128 * 1024 * 1024, true, '', undefined]);
  });
});

describe('docs/options.md', () => {
  it('is what `npm run docs:options` generates from the tables (run it after changing an option)', () => {
    expect(readFileSync(OPTIONS_PAGE, 'utf8')).toBe(renderOptionsDoc());
  });

  it('lists every option of every mode', () => {
    const page = readFileSync(OPTIONS_PAGE, 'utf8');
    for (const { table } of Object.values(MODES)) {
      for (const c of cases(table)) {
        expect(page.includes(`| \`${c.name}\` |`), c.name).toBe(true);
      }
    }
  });
});

describe('the TSDoc on the public interfaces', () => {
  // The interfaces keep their TSDoc for users' editors, and many say "Default …": a third text
  // of the default, so this compares each with the table's. (CallOptions states none the table
  // holds: its defaults are the pool's.)
  const INTERFACES: [file: string, name: string, table: AnyTable][] = [
    ['src/connection/options.ts', 'ConnectionOptions', CONNECTION_OPTIONS],
    ['src/pool/common-options.ts', 'CommonOptions', COMMON_OPTIONS],
    ['src/pool/options.ts', 'PoolOptions', POOL_OPTIONS],
    ['src/cache/options.ts', 'CacheOptions', CACHE_OPTIONS],
    ['src/sentinel/options.ts', 'SentinelOptions', SENTINEL_OWN_OPTIONS],
    ['src/cluster/options.ts', 'ClusterOptions', CLUSTER_OWN_OPTIONS],
  ];

  /** The default a comment states ("Default 5000.", "`'master'` (default)", "(default 200, …"), without backticks. */
  function statedDefault(comment: string): string | undefined {
    const text = comment.replace(/\s*\n\s*\*\s*/g, ' ');
    const m = /\b[Dd]efault (`[^`]+`|[\w'.-]+(?: MiB)?)(?= ms\b|[.,;)]|$)/.exec(text) ?? /(`[^`]+`|'[\w-]+'|\b\d+\b|\btrue\b|\bfalse\b) \(default\)/.exec(text);
    return m?.[1]!.replaceAll('`', '').replace(/\.$/, '');
  }

  function tableDefault(spec: Spec): string | undefined {
    if (spec.kind === 'group') {
      const f = Object.entries(spec.fields as AnyTable);
      return f.every(([, s]) => s.kind !== 'group' && s.default !== undefined) ? `{ ${f.map(([k, s]) => `${k}: ${String((s as { default: unknown }).default)}`).join(', ')} }` : undefined;
    }
    const d = spec.default;
    if (typeof d === 'number') return spec.kind === 'integer' && spec.unit === 'bytes' && d % (1024 * 1024) === 0 ? `${d / (1024 * 1024)} MiB` : String(d);
    if (typeof d === 'string') return `'${d}'`;
    return d === undefined ? undefined : String(d);
  }

  /** [option path, comment] of every member of `name` in `file`, the fields of inline object types included. */
  function members(file: string, name: string): [string, string][] {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const out: [string, string][] = [];
    const visit = (node: ts.Node, prefix: string) => {
      for (const m of (node as ts.InterfaceDeclaration | ts.TypeLiteralNode).members) {
        if (!ts.isPropertySignature(m)) continue;
        const key = prefix + m.name.getText(source);
        const comment = (ts.getLeadingCommentRanges(source.text, m.getFullStart()) ?? []).map((r) => source.text.slice(r.pos, r.end)).join('\n');
        out.push([key, comment]);
        if (m.type && ts.isTypeLiteralNode(m.type)) visit(m.type, `${key}.`);
      }
    };
    source.forEachChild((n) => {
      if (ts.isInterfaceDeclaration(n) && n.name.text === name) visit(n, '');
    });
    return out;
  }

  function specAt(table: AnyTable, path: string): Spec | undefined {
    const [head, ...rest] = path.split('.');
    const spec = table[head!];
    if (!spec || rest.length === 0) return spec;
    return spec.kind === 'group' ? specAt(spec.fields as AnyTable, rest.join('.')) : undefined;
  }

  it.each(INTERFACES)('%s: %s states the defaults of the table', (file, name, table) => {
    const checked: string[] = [];
    for (const [path, comment] of members(file, name)) {
      const spec = specAt(table, path);
      const stated = statedDefault(comment);
      // A group's comment may speak of its fields' defaults: only its own `{ … }` is compared.
      if (!spec || stated === undefined || (spec.kind === 'group' && !stated.startsWith('{'))) continue;
      const expected = tableDefault(spec);
      if (expected === undefined) continue;
      expect(stated, `${name}.${path}: the TSDoc says ${stated}, the table ${expected}`).toBe(expected);
      checked.push(path);
    }
    expect(checked.length, `${name}: no TSDoc default was found to compare`).toBeGreaterThan(0);
  });
});
