/**
 * `npm run fuzz`: the RESP decoder fuzzed at scale (issue 8, item 10).
 *
 *   npm run fuzz [-- --seed N] [--runs N] [--only name[#shard],...] [--path P] [--workers N] [--hang-seconds N]
 *
 * Runs the properties of ./decoder-properties.ts (split into shards of at most 50k inputs,
 * spread over one child process per core) and the connection property of
 * ./connection-property.ts (in this process, alongside), all from one printable seed (default
 * 810); each shard's own seed is derived from it and its name. Prints inputs, time and the
 * slowest input per property, and the seed; on a failure prints fast-check's counterexample
 * and the command that replays it, and exits 1. A child that reports no progress for 60 s
 * (--hang-seconds) is a hang: it is killed and reported with the input it was on.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectionProperty } from './connection-property.js';
import { decoderProperties, runProperty, runsFor, type FuzzProperty, type PropertyResult } from './decoder-properties.js';

const DEFAULT_SEED = 810;
const DEFAULT_RUNS = 1_000_000;
const SHARD_RUNS = 50_000;

interface Shard {
  id: string;
  property: string;
  runs: number;
}

/** `runs` is also written, after every input, to `progressFile`: readable while the child is stuck in one. */
type ToChild = { type: 'run'; shard: Shard; seed: number; path: string | undefined; progressFile: string };
type FromChild =
  | { type: 'progress'; id: string; runs: number }
  | { type: 'done'; id: string; result: PropertyResult };

// ------------------------------------------------------------------ main process

interface Args {
  seed: number;
  runs: number;
  only: string[] | undefined;
  path: string | undefined;
  workers: number;
  hangMs: number;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { seed: DEFAULT_SEED, runs: DEFAULT_RUNS, only: undefined, path: undefined, workers: Math.max(1, Math.min(os.availableParallelism(), 8)), hangMs: 60_000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined) usage(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--seed': args.seed = int(value(), flag); break;
      case '--runs': args.runs = int(value(), flag); break;
      case '--only': args.only = value().split(',').filter(Boolean); break;
      case '--path': args.path = value(); break;
      case '--workers': args.workers = Math.max(1, int(value(), flag)); break;
      case '--hang-seconds': args.hangMs = Math.max(1, int(value(), flag)) * 1000; break;
      case '--help': case '-h': usage(); break;
      default: usage(`unknown argument ${a}`);
    }
  }
  return args;
}

function int(v: string, flag: string): number {
  const n = Number(v.replace(/_/g, ''));
  if (!Number.isSafeInteger(n)) usage(`${flag} must be an integer (got ${v})`);
  return n;
}

function usage(err?: string): never {
  if (err) console.error(`fuzz: ${err}`);
  console.error('usage: npm run fuzz -- [--seed N] [--runs N] [--only name[#shard],...] [--path P] [--workers N] [--hang-seconds N]');
  console.error(`properties: ${[...decoderProperties, connectionProperty].map((p) => p.name).join(', ')}`);
  process.exit(err ? 2 : 0);
}

const fmt = (n: number) => n.toLocaleString('en-US');

function shardsOf(p: FuzzProperty, total: number): Shard[] {
  const runs = runsFor(p, total);
  const n = Math.max(1, Math.ceil(runs / SHARD_RUNS));
  return Array.from({ length: n }, (_, i) => ({
    id: `${p.name}#${i}`,
    property: p.name,
    runs: Math.floor(runs / n) + (i < runs % n ? 1 : 0),
  }));
}

function selected(id: string, property: string, only: string[] | undefined): boolean {
  return only === undefined || only.includes(id) || only.includes(property);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const shards = decoderProperties.flatMap((p) => shardsOf(p, args.runs)).filter((s) => selected(s.id, s.property, args.only));
  const withConnection = selected(connectionProperty.name, connectionProperty.name, args.only);
  const connectionRuns = runsFor(connectionProperty, args.runs);
  const total = shards.reduce((n, s) => n + s.runs, 0) + (withConnection ? connectionRuns : 0);
  const workers = Math.min(args.workers, shards.length);
  console.log(`RESP decoder fuzz: seed ${args.seed}, ${fmt(total)} inputs, ${workers} worker process(es)${withConnection ? ' + the connection property in this one' : ''}`);
  console.log(`(same inputs again: npm run fuzz -- --seed ${args.seed}${args.runs !== DEFAULT_RUNS ? ` --runs ${args.runs}` : ''})`);
  const t0 = performance.now();

  const progress = new Map<string, number>();
  const results: PropertyResult[] = [];
  const hangs: string[] = [];
  const ticker = setInterval(() => {
    const done = [...progress.values()].reduce((a, b) => a + b, 0);
    console.log(`[${((performance.now() - t0) / 1000).toFixed(0)} s] ${fmt(done)} / ${fmt(total)} inputs`);
  }, 15_000);

  const decoderDone = runShards(shards, workers, args, progress, results, hangs);
  const connectionDone = withConnection ? runConnection(args, connectionRuns, progress) : Promise.resolve(undefined);
  const [, conn] = await Promise.all([decoderDone, connectionDone]);
  clearInterval(ticker);
  const elapsed = (performance.now() - t0) / 1000;

  // One line per property (its shards summed; time is CPU time across the workers).
  const rows = new Map<string, { runs: number; ms: number; slowest: number; failed: number }>();
  for (const r of [...results, ...(conn ? [conn] : [])]) {
    const name = r.name.replace(/#\d+$/, '');
    const row = rows.get(name) ?? { runs: 0, ms: 0, slowest: 0, failed: 0 };
    row.runs += r.runs;
    row.ms += r.ms;
    row.slowest = Math.max(row.slowest, r.slowestMs);
    if (r.failure) row.failed++;
    rows.set(name, row);
  }
  console.log('');
  console.log(`${'property'.padEnd(26)}${'inputs'.padStart(11)}${'time (s)'.padStart(10)}${'slowest (ms)'.padStart(14)}  result`);
  let sum = 0;
  for (const p of [...decoderProperties, connectionProperty]) {
    const row = rows.get(p.name);
    if (!row) continue;
    sum += row.runs;
    console.log(`${p.name.padEnd(26)}${fmt(row.runs).padStart(11)}${(row.ms / 1000).toFixed(1).padStart(10)}${row.slowest.toFixed(1).padStart(14)}  ${row.failed ? 'FAILED' : 'ok'}`);
  }
  console.log(`${'total'.padEnd(26)}${fmt(sum).padStart(11)}${elapsed.toFixed(1).padStart(10)}  (wall clock)   seed ${args.seed}`);

  const failures = [...results, ...(conn ? [conn] : [])].filter((r) => r.failure);
  for (const f of failures) {
    console.log(`\n--- FAILED: ${f.name} (seed ${args.seed}, property seed ${f.seed})\n${f.failure}`);
    const path = /path: "([^"]*)"/.exec(f.failure!)?.[1];
    console.log(`replay: npm run fuzz -- --seed ${args.seed} --only ${f.name}${path ? ` --path "${path}"` : ''}${args.runs !== DEFAULT_RUNS ? ` --runs ${args.runs}` : ''}`);
  }
  for (const h of hangs) console.log(`\n--- HANG: ${h}`);
  if (failures.length > 0 || hangs.length > 0) {
    console.log(`\nfuzz: ${failures.length + hangs.length} failure(s); seed ${args.seed}`);
    process.exit(1);
  }
  console.log(`\nfuzz: all properties hold (${fmt(sum)} inputs, ${elapsed.toFixed(1)} s, seed ${args.seed})`);
  process.exit(0);
}

/** Hands shards to child processes as they become free; a silent child is killed as hung. */
async function runShards(shards: Shard[], workers: number, args: Args, progress: Map<string, number>, results: PropertyResult[], hangs: string[]): Promise<void> {
  // Largest first, so the tail of the queue is short work.
  const queue = [...shards].sort((a, b) => b.runs - a.runs);
  const self = fileURLToPath(import.meta.url);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'resp-fuzz-'));
  let nextFile = 0;
  const spawn = (): ChildProcess => fork(self, ['--child'], { execArgv: ['--import', 'tsx', '--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await Promise.all(Array.from({ length: workers }, async () => {
    let child = spawn();
    for (let shard = queue.shift(); shard !== undefined; shard = queue.shift()) {
      const s = shard;
      const progressFile = path.join(dir, `${nextFile++}`);
      const outcome = await new Promise<PropertyResult | string>((resolve) => {
        let last = Date.now();
        let runs = 0;
        /** Inputs done, exactly: the child writes the count after each one. */
        const doneSoFar = () => {
          const n = Number.parseInt(fs.existsSync(progressFile) ? fs.readFileSync(progressFile, 'latin1') : '', 10);
          // A replay (--path N) starts at input N.
          const base = args.path !== undefined && /^\d+$/.test(args.path) ? Number(args.path) : 0;
          return base + (Number.isNaN(n) ? runs : n);
        };
        const watchdog = setInterval(() => {
          if (Date.now() - last < args.hangMs) return;
          cleanup();
          child.kill('SIGKILL');
          const n = doneSoFar();
          resolve(`${s.id}: no progress for ${args.hangMs / 1000} s after ${n} inputs: input #${n} (0-based) hangs or is pathologically slow.\n` +
            `replay: npm run fuzz -- --seed ${args.seed} --only ${s.id} --path "${n}"${args.runs !== DEFAULT_RUNS ? ` --runs ${args.runs}` : ''}`);
        }, 1000);
        const onMessage = (m: FromChild) => {
          if (m.id !== s.id) return;
          last = Date.now();
          if (m.type === 'progress') {
            runs = m.runs;
            progress.set(s.id, m.runs);
          } else {
            cleanup();
            resolve(m.result);
          }
        };
        const onExit = (code: number | null, signal: string | null) => {
          cleanup();
          const n = doneSoFar();
          resolve(`${s.id}: the worker process died (${signal ?? `exit code ${code}`}) on input #${n} (0-based), e.g. out of memory or a native crash.\n` +
            `replay: npm run fuzz -- --seed ${args.seed} --only ${s.id} --path "${n}"${args.runs !== DEFAULT_RUNS ? ` --runs ${args.runs}` : ''}`);
        };
        const cleanup = () => {
          clearInterval(watchdog);
          child.off('message', onMessage);
          child.off('exit', onExit);
        };
        child.on('message', onMessage);
        child.on('exit', onExit);
        child.send({ type: 'run', shard: s, seed: args.seed, path: args.path, progressFile } satisfies ToChild);
      });
      if (typeof outcome === 'string') {
        hangs.push(outcome);
        child = spawn();
      } else {
        results.push(outcome);
        progress.set(s.id, outcome.runs);
      }
    }
    child.kill();
  }));
  fs.rmSync(dir, { recursive: true, force: true });
}

async function runConnection(args: Args, runs: number, progress: Map<string, number>): Promise<PropertyResult> {
  const teardown = await connectionProperty.setup();
  try {
    return await runProperty(connectionProperty, {
      seed: args.seed,
      numRuns: runs,
      path: args.path,
      onProgress: (n) => progress.set(connectionProperty.name, n),
    });
  } finally {
    await teardown();
  }
}

// ------------------------------------------------------------------ child process

if (process.argv[2] === '--child') {
  process.on('disconnect', () => process.exit(0));
  process.on('message', (msg: ToChild) => {
    void (async () => {
      const p = decoderProperties.find((x) => x.name === msg.shard.property)!;
      const fd = fs.openSync(msg.progressFile, 'w');
      const result = await runProperty({ ...p, name: msg.shard.id }, {
        onRun: (runs) => fs.writeSync(fd, String(runs).padEnd(16), 0),
        seed: msg.seed,
        numRuns: msg.shard.runs,
        path: msg.path,
        fastErrors: true,
        onProgress: (runs) => process.send!({ type: 'progress', id: msg.shard.id, runs } satisfies FromChild),
      });
      fs.closeSync(fd);
      process.send!({ type: 'done', id: msg.shard.id, result } satisfies FromChild);
    })();
  });
} else {
  await main();
}
