/**
 * The layers of src/ as a test (CONTRIBUTING.md, "How the source is laid out"): no import runs
 * back up a layer or sideways between the two HA modes, and no file imports itself through a
 * chain of others. Read from the sources, so a new import that breaks either fails here with
 * the file and the import named.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(__dirname, '../../src');

/**
 * Each room's layer: a room may import only from rooms of a lower layer (and from itself).
 * Sentinel and cluster share a layer, so neither may import the other.
 */
const LAYER: Record<string, number> = {
  'types.ts': 0,
  'version.ts': 0,
  'errors.ts': 1,
  'address.ts': 1,
  'options.ts': 1,
  'retry.ts': 2,
  'nat-map.ts': 2,
  resp: 2,
  commands: 2,
  connection: 3,
  cache: 4,
  'diagnostics.ts': 4,
  pool: 5,
  pubsub: 6,
  sentinel: 7,
  cluster: 7,
  'standalone-options.ts': 7,
  'standalone.ts': 8,
  'index.ts': 9,
  integrations: 10,
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

/** A file's room: its folder under src/, or the file itself at the top. */
const room = (file: string) => path.relative(SRC, file).split(path.sep)[0]!;

/** Relative imports and re-exports of each file (type-only ones too: they tie the modules just as well). */
function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const file of sources(SRC)) {
    const text = readFileSync(file, 'utf8');
    const targets: string[] = [];
    for (const m of text.matchAll(/^(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gms)) {
      targets.push(path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts')));
    }
    g.set(file, targets);
  }
  return g;
}

/** Strongly connected components of more than one file (or a file importing itself): the cycles. */
function cycles(g: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of g.get(v) ?? []) {
      if (!g.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(path.relative(SRC, w));
      } while (w !== v);
      if (scc.length > 1 || (g.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of g.keys()) if (!idx.has(v)) visit(v);
  return out;
}

describe('the layers of src/', () => {
  const g = graph();

  it('finds the sources and every import it reads resolves to a file', () => {
    expect(g.size).toBeGreaterThan(100);
    const missing = [...g].flatMap(([f, ts]) => ts.filter((t) => !g.has(t)).map((t) => `${path.relative(SRC, f)} -> ${path.relative(SRC, t)}`));
    expect(missing).toEqual([]);
  });

  it('every room has a layer', () => {
    const rooms = new Set([...g.keys()].map(room));
    expect([...rooms].filter((r) => LAYER[r] === undefined)).toEqual([]);
  });

  it('no import runs back up a layer, or between sentinel/ and cluster/', () => {
    const wrong: string[] = [];
    for (const [file, targets] of g) {
      const from = room(file);
      for (const t of targets) {
        const to = room(t);
        if (to !== from && !(LAYER[to]! < LAYER[from]!)) wrong.push(`${path.relative(SRC, file)} -> ${path.relative(SRC, t)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(cycles(g)).toEqual([]);
  });
});
