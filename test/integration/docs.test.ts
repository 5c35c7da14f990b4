/**
 * The documentation, checked:
 * - the API reference: TypeDoc over the package's entry point, with every exported symbol
 *   required to have documentation and every warning (a broken link, a type referenced but not
 *   exported) treated as an error (typedoc.json). This is `npm run docs:check`.
 * - every code example of README.md and docs/*.md (each ```ts / ```js block) type-checks and
 *   runs against real servers, so the docs cannot drift from the API. How a block says what it
 *   assumes (a hidden pool, `<!-- skip-run: reason -->`) is in test/support/doc-examples.ts.
 */
import { execFile } from 'node:child_process';
import dc from 'node:diagnostics_channel';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DIAGNOSTICS_CHANNELS, type CloseDiagnostic, type ConnectDiagnostic } from '../../src/index.js';
import { exampleModule, extractExamples, serversNeeded, type DocExample, type ExampleServers } from '../support/doc-examples.js';
import { waitFor } from '../support/wait.js';
import {
  makeTestCerts,
  startCluster,
  startSentinel,
  startStandalone,
  type ClusterTopology,
  type SentinelTopology,
  type StandaloneTopology,
} from '../support/topology.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function run(args: string[], timeout: number): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: ROOT, timeout, maxBuffer: 64 << 20, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: stdout + stderr });
    });
  });
}

describe('the API reference', () => {
  it('builds with no warnings: every export is documented', async () => {
    const result = await run([path.join(ROOT, 'node_modules', 'typedoc', 'bin', 'typedoc'), '--emit', 'none'], 120_000);
    // The output lists each undocumented symbol by name: it is the failure message.
    expect(result.output).not.toMatch(/\[warning\]|\[error\]/);
    expect(result.code).toBe(0);
  }, 120_000);
});

// ------------------------------------------------------------------------------------- links

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (/^```/.test(line.trim())) fenced = !fenced;
    const h = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

describe('the links between README.md, CONTRIBUTING.md and docs/', () => {
  it('point at files that exist and at headings they have', () => {
    const broken: string[] = [];
    for (const page of ['README.md', 'CONTRIBUTING.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]) {
      // Code blocks and inline code hold brackets that are no links.
      const text = readFileSync(path.join(ROOT, page), 'utf8').replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
      for (const m of text.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
        const [file, anchor] = target.split('#') as [string, string | undefined];
        const resolved = file === '' ? path.join(ROOT, page) : path.resolve(path.dirname(path.join(ROOT, page)), file);
        if (!existsSync(resolved)) {
          broken.push(`${page}: ${target} (no such file)`);
          continue;
        }
        if (anchor !== undefined && resolved.endsWith('.md') && !anchors(resolved).has(anchor)) broken.push(`${page}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------- examples

const PAGES = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
const EXAMPLES: DocExample[] = PAGES.flatMap((p) => extractExamples(ROOT, p));
const RUN = EXAMPLES.filter((e) => e.skip === undefined);

/**
 * The blocks that cannot run here, each with its reason. A new `<!-- skip-run -->` must be added
 * to this list, so that skipping stays a decision someone made, not a way around a failure.
 */
const SKIPPED: string[] = [];

const label = (e: DocExample) => `${e.file}:${e.line}`;

describe('the code examples of README.md and docs/', () => {
  let dir: string;
  const files = new Map<DocExample, string>();
  let standalone: StandaloneTopology | undefined;
  let tls: StandaloneTopology | undefined;
  let sentinel: SentinelTopology | undefined;
  let cluster: ClusterTopology | undefined;

  beforeAll(async () => {
    const need = new Set(RUN.flatMap((e) => [...serversNeeded(e)]));
    const certs = need.has('tls') ? await makeTestCerts() : undefined;
    [standalone, tls, sentinel, cluster] = await Promise.all([
      // Keyspace notifications on, as the pub/sub page asks of the server; the ACL user "app"
      // is the one the rotating-credentials example logs in as (its `tokens` set-up).
      need.has('standalone') ? startStandalone({ config: { 'notify-keyspace-events': 'KEA' }, acl: ['user app on >app-token-1 ~* &* +@all'] }) : undefined,
      certs ? startStandalone({ tls: { certs, authClients: true } }) : undefined,
      need.has('sentinels') ? startSentinel() : undefined,
      need.has('cluster') ? startCluster() : undefined,
    ]);
    const servers: ExampleServers = {
      ...(standalone ? { standalone: standalone.address } : {}),
      ...(tls && certs ? { tls: { ...tls.address, caFile: certs.ca.certFile, certFile: certs.client.certFile, keyFile: certs.client.keyFile } } : {}),
      ...(sentinel ? { sentinels: sentinel.sentinelAddresses } : {}),
      ...(cluster ? { cluster: cluster.nodes.map((n) => n.address) } : {}),
    };
    // Inside the checkout, so that the examples' own imports (keyv, bullmq …) resolve.
    mkdirSync(path.join(ROOT, 'test', '.doc-examples'), { recursive: true });
    dir = mkdtempSync(path.join(ROOT, 'test', '.doc-examples', 'run-'));
    RUN.forEach((e, i) => {
      const name = `${String(i).padStart(3, '0')}-${e.file.replace(/[^a-z0-9]+/gi, '-')}-${e.line}.${e.lang === 'ts' ? 'ts' : 'mjs'}`;
      const file = path.join(dir, name);
      writeFileSync(file, `// ${label(e)}\n${exampleModule(e, ROOT, servers)}\n`);
      files.set(e, file);
    });
  }, 180_000);

  afterAll(async () => {
    await Promise.all([standalone, tls, sentinel, cluster].map((t) => t?.stop()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('exist, and the blocks that do not run are few and listed with their reason', () => {
    expect(RUN.length).toBeGreaterThan(20);
    expect(EXAMPLES.filter((e) => e.skip !== undefined).map((e) => `${label(e)}: ${e.skip}`)).toEqual(SKIPPED);
  });

  it('type-check against the package\'s types', async () => {
    const ts = [...files.values()].filter((f) => f.endsWith('.ts'));
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022', lib: ['ES2022', 'ESNext.Disposable'], module: 'NodeNext', moduleResolution: 'NodeNext',
          strict: true, noEmit: true, skipLibCheck: true, esModuleInterop: true, types: ['node'],
        },
        files: ts.map((f) => path.basename(f)),
      }),
    );
    const result = await run([path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(dir, 'tsconfig.json')], 240_000);
    // tsc names the generated file; its first line says which page and line it came from.
    expect(result.output.trim(), result.output).toBe('');
    expect(result.code).toBe(0);
  }, 240_000);

  it.each(RUN.map((e) => [label(e), e] as const))('%s runs to completion and closes what it opened', async (_name, e) => {
    // Every connection a pool opens is published on these channels: what the example opened
    // and did not close is a pool it forgot (the reader's program would hold it open).
    const open = new Set<number>();
    const onConnect = (m: unknown) => void open.add((m as ConnectDiagnostic).connectionId);
    const onClose = (m: unknown) => void open.delete((m as CloseDiagnostic).connectionId);
    dc.subscribe(DIAGNOSTICS_CHANNELS.connect, onConnect);
    dc.subscribe(DIAGNOSTICS_CHANNELS.close, onClose);
    const output: string[] = [];
    const spies = (['log', 'info', 'warn', 'error'] as const).map((m) => vi.spyOn(console, m).mockImplementation((...a: unknown[]) => void output.push(a.map(String).join(' '))));
    try {
      await import(pathToFileURL(files.get(e)!).href);
      await waitFor(() => open.size === 0, `the example's ${open.size} connection(s) to close`, 10_000);
    } finally {
      for (const s of spies) s.mockRestore();
      dc.unsubscribe(DIAGNOSTICS_CHANNELS.connect, onConnect);
      dc.unsubscribe(DIAGNOSTICS_CHANNELS.close, onClose);
    }
  }, 60_000);
});
