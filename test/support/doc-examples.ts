/**
 * The code examples of README.md and docs/*.md, as runnable modules (run by
 * test/integration/docs.test.ts against real servers), so the docs cannot drift from the API.
 *
 * Every ```ts / ```js block is an example. What it may assume is said in an HTML comment right
 * above its fence (invisible on GitHub and npm):
 *
 * - nothing: the block is a complete program (imports from 'redis-ha-pool', creates and closes
 *   its own pool);
 * - `<!-- example: standalone -->` (or `sentinel`, `cluster`): a hidden `pool` of that mode
 *   is created before the block and closed after it; `sentinels`, `seeds` and `log` name the
 *   other hidden set-ups (see PRELUDES);
 * - `<!-- skip-run: reason -->`: the block cannot run here (a managed cloud, …). Keep these
 *   rare: the test lists them.
 *
 * Addresses are written as a user runs them locally and are mapped to the test's servers:
 * 127.0.0.1:6379 (or localhost:6379) a standalone server, :6380 a TLS server that requires a
 * client certificate (the files ca.crt, client.crt and client.key are its test certificates),
 * :26379/:26380/:26381 the sentinels of master "mymaster", :7000…:7005 cluster nodes.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface DocExample {
  /** Path relative to the repository root. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: 'ts' | 'js';
  code: string;
  /** Hidden set-ups the block assumes (`<!-- example: … -->`). */
  setups: string[];
  /** Why it is not run (`<!-- skip-run: … -->`), if so. */
  skip?: string;
}

const FENCE = /^```(ts|typescript|js|javascript|mjs)\s*$/;

/** Every ts/js code block of a Markdown file, with the directive above it. */
export function extractExamples(root: string, file: string): DocExample[] {
  const lines = readFileSync(path.join(root, file), 'utf8').split('\n');
  const out: DocExample[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!.trim());
    if (!open) {
      // Skip over other fenced blocks (sh, text …) so a ``` inside them is not taken for an opening.
      if (/^```/.test(lines[i]!.trim())) {
        const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l.trim()));
        if (end > i) i = end;
      }
      continue;
    }
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l.trim()));
    if (end < 0) throw new Error(`${file}:${i + 1}: code block without a closing fence`);
    // The directive: the nearest non-blank line above the fence, when it is an HTML comment.
    let k = i - 1;
    while (k >= 0 && lines[k]!.trim() === '') k--;
    const above = k >= 0 ? lines[k]!.trim() : '';
    const directive = /^<!--\s*(example|skip-run)\s*:\s*(.*?)\s*-->$/.exec(above);
    const lang = open[1] === 'ts' || open[1] === 'typescript' ? 'ts' : 'js';
    out.push({
      file,
      line: i + 1,
      lang,
      code: lines.slice(i + 1, end).join('\n'),
      setups: directive?.[1] === 'example' ? directive[2]!.split(/[\s,]+/).filter(Boolean) : [],
      ...(directive?.[1] === 'skip-run' ? { skip: directive[2]! || 'no reason given' } : {}),
    });
    i = end;
  }
  return out;
}

/** The hidden set-ups a directive may name: code put before the block, and after it. */
export const PRELUDES: Record<string, { before: string; after?: string }> = {
  standalone: {
    before: "const pool = await __lib.StandalonePool.create('redis://127.0.0.1:6379');",
    after: 'await pool.close();',
  },
  sentinel: {
    before: "const pool = await __lib.SentinelPool.create('mymaster', ['127.0.0.1:26379', '127.0.0.1:26380', '127.0.0.1:26381']);",
    after: 'await pool.close();',
  },
  cluster: {
    before: "const pool = await __lib.ClusterPool.create(['127.0.0.1:7000', '127.0.0.1:7001', '127.0.0.1:7002']);",
    after: 'await pool.close();',
  },
  sentinels: { before: "const sentinels = ['127.0.0.1:26379', '127.0.0.1:26380', '127.0.0.1:26381'];" },
  seeds: { before: "const seeds = ['127.0.0.1:7000', '127.0.0.1:7001', '127.0.0.1:7002'];" },
  tokens: {
    // A token source: here the password of the ACL user "app" the test server has.
    before: "const tokens = Object.assign(new (await import('node:events')).EventEmitter(), { current: async () => 'app-token-1' });\nconst report = (err: unknown) => console.error(err);",
  },
  log: {
    before: 'const log = { info: (...a: unknown[]) => console.log(...a), warn: (...a: unknown[]) => console.warn(...a), error: (...a: unknown[]) => console.error(...a) };',
  },
};

/** The servers the examples' addresses are mapped to. */
export interface ExampleServers {
  standalone?: { host: string; port: number };
  tls?: { host: string; port: number; caFile: string; certFile: string; keyFile: string };
  sentinels?: Array<{ host: string; port: number }>;
  cluster?: Array<{ host: string; port: number }>;
}

/** Which servers an example needs, read from its addresses and set-ups. */
export function serversNeeded(e: DocExample): Set<keyof ExampleServers> {
  const text = `${e.setups.map((s) => PRELUDES[s]?.before ?? '').join('\n')}\n${e.code}`;
  const need = new Set<keyof ExampleServers>();
  if (/(?:127\.0\.0\.1|localhost):6379\b/.test(text)) need.add('standalone');
  if (/(?:127\.0\.0\.1|localhost):6380\b/.test(text)) need.add('tls');
  if (/(?:127\.0\.0\.1|localhost):263(79|8[0-9])\b/.test(text)) need.add('sentinels');
  if (/(?:127\.0\.0\.1|localhost):700[0-5]\b/.test(text)) need.add('cluster');
  return need;
}

/**
 * The module that runs one example: its set-ups, its code with the addresses, the certificate
 * files and the package's import specifiers mapped to this checkout and its test servers.
 */
export function exampleModule(e: DocExample, root: string, servers: ExampleServers): string {
  const unknown = e.setups.filter((s) => !(s in PRELUDES));
  if (unknown.length > 0) throw new Error(`${e.file}:${e.line}: unknown example set-up ${unknown.join(', ')} (known: ${Object.keys(PRELUDES).join(', ')})`);
  if (/\brequire\(/.test(e.code)) throw new Error(`${e.file}:${e.line}: the example uses require(); write it with import (or mark it <!-- skip-run: reason -->)`);
  const lib = path.join(root, 'src', 'index.js');
  const parts = [
    `import * as __lib from ${JSON.stringify(lib)};`,
    ...e.setups.map((s) => PRELUDES[s]!.before),
    e.code,
    ...e.setups.map((s) => PRELUDES[s]!.after ?? '').reverse(),
    'void __lib;',
    'export {};',
  ];
  let text = parts.join('\n');
  text = text.replace(/(['"])redis-ha-pool(\/[a-z-]+)?\1/g, (_m, q: string, sub: string | undefined) =>
    `${q}${sub ? path.join(root, 'src', 'integrations', `${sub.slice(1)}.js`) : lib}${q}`,
  );
  const hostPort = (a: { host: string; port: number }) => `${a.host}:${a.port}`;
  const map = (re: RegExp, to: (m: string) => string) => {
    text = text.replace(re, to);
  };
  map(/(?:127\.0\.0\.1|localhost):6379\b/g, () => hostPort(need(servers.standalone, 'standalone', e)));
  map(/(127\.0\.0\.1|localhost):6380\b/g, (m) => `${m.split(':')[0]}:${need(servers.tls, 'tls', e).port}`);
  const port = (m: string) => Number(m.slice(m.lastIndexOf(':') + 1));
  map(/(?:127\.0\.0\.1|localhost):263(?:79|8[0-9])\b/g, (m) => hostPort(pick(need(servers.sentinels, 'sentinels', e), port(m) - 26379)));
  map(/(?:127\.0\.0\.1|localhost):700[0-5]\b/g, (m) => hostPort(pick(need(servers.cluster, 'cluster', e), port(m) - 7000)));
  if (servers.tls) {
    map(/(['"])ca\.crt\1/g, () => JSON.stringify(servers.tls!.caFile));
    map(/(['"])client\.crt\1/g, () => JSON.stringify(servers.tls!.certFile));
    map(/(['"])client\.key\1/g, () => JSON.stringify(servers.tls!.keyFile));
  }
  return text;
}

function need<T>(v: T | undefined, what: string, e: DocExample): T {
  if (v === undefined) throw new Error(`${e.file}:${e.line}: no ${what} server was started for this example`);
  return v;
}

function pick<T>(list: T[], i: number): T {
  return list[i % list.length]!;
}
