#!/usr/bin/env node
// `npm run test:servers`: the integration suites on every server users run.
//
// The servers: every archive of ../shared/servers/ (Redis 6.2 to 8.0, Valkey 7.2 and 8.0, built
// for this machine type), checked against its SHA256SUMS and unpacked once into a cache outside
// the repository, plus the system's redis-server (on PATH). Each server's run is one vitest run
// of the suite files with REDIS_BIN_DIR pointing at its binaries (the test set-up honours it),
// one server after the other (they would compete for the 2 cores), with vitest's JSON report.
// It prints server x suite -> passed / failed / skipped, the reason of every skip (tests that need
// a feature the server lacks name it in their title) and the time each server took.
//
//   npm run test:servers -- [--servers redis-6.2.16,valkey-8.0.1,system] [--suites cluster,pubsub]
//                           [--files test/integration/x.test.ts,...] [--report-dir DIR] [--list]
//
// Environment: REDIS_SERVERS_DIR (default ../shared/servers beside the repository),
// REDIS_SERVERS_CACHE (default $XDG_CACHE_HOME or ~/.cache, then redis-ha-pool/servers).
// Exit status 1 when a test failed, a file did not load, or a server could not be prepared.
import { createHash } from 'node:crypto';
import { spawn, execFileSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The integration suites the matrix runs, by name. */
export const SUITES = {
  compat: ['server-compat.test.ts'],
  standalone: ['standalone.test.ts'],
  sentinel: ['sentinel.test.ts'],
  cluster: ['cluster.test.ts'],
  pubsub: ['pubsub.test.ts', 'pubsub-sharded.test.ts', 'pubsub-sentinel.test.ts', 'pubsub-cluster.test.ts'],
  cache: ['cache.test.ts', 'cache-ha.test.ts'],
  tls: ['tls.test.ts'],
  durability: ['durability.test.ts', 'durability-sentinel.test.ts', 'durability-cluster.test.ts'],
  failover: ['sentinel-faults.test.ts', 'cluster-faults.test.ts', 'resilience.test.ts'],
  zones: ['az-affinity-real-zones.test.ts'],
};

function fail(message) {
  process.stderr.write(`test:servers: ${message}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const out = { servers: undefined, suites: undefined, files: undefined, reportDir: undefined, list: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) fail(`${a} needs a value`);
      return v.split(',').map((s) => s.trim()).filter(Boolean);
    };
    if (a === '--servers') out.servers = value();
    else if (a === '--suites') out.suites = value();
    else if (a === '--files') out.files = value();
    else if (a === '--report-dir') out.reportDir = value()[0];
    else if (a === '--list') out.list = true;
    else if (a === '--help' || a === '-h') {
      process.stdout.write(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').filter((l) => l.startsWith('//')).map((l) => l.slice(3)).join('\n') + '\n');
      process.exit(0);
    } else fail(`unknown argument ${a} (see --help)`);
  }
  return out;
}

async function sha256(file) {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk);
  return hash.digest('hex');
}

/** name -> expected hash, from a `sha256sum` file. */
function readSums(dir) {
  const file = path.join(dir, 'SHA256SUMS');
  if (!existsSync(file)) fail(`${file} is missing: the archives cannot be checked`);
  const sums = new Map();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^([0-9a-f]{64})\s+\*?(.+)$/.exec(line.trim());
    if (m) sums.set(m[2], m[1]);
  }
  return sums;
}

/**
 * Every archive, checked and unpacked into the cache (once: a stamp file holds the archive's
 * hash, so a changed archive is unpacked again). Returns name -> bin dir.
 */
async function prepareArchives(dir, cache, wanted) {
  const sums = readSums(dir);
  const archives = readdirSync(dir).filter((f) => f.endsWith('.tar.xz')).sort();
  if (archives.length === 0) fail(`no .tar.xz archive in ${dir}`);
  const out = new Map();
  for (const archive of archives) {
    const name = archive.replace(/\.tar\.xz$/, '');
    if (wanted && !wanted.includes(name)) continue;
    const expected = sums.get(archive);
    if (!expected) fail(`${archive} is not listed in ${path.join(dir, 'SHA256SUMS')}`);
    const actual = await sha256(path.join(dir, archive));
    if (actual !== expected) fail(`${archive}: SHA-256 ${actual} does not match SHA256SUMS (${expected}); not using it`);
    const target = path.join(cache, name);
    const stamp = path.join(target, '.sha256');
    if (!existsSync(stamp) || readFileSync(stamp, 'utf8').trim() !== actual) {
      // Unpacked beside the target and renamed into place: an interrupted run leaves no half tree.
      const tmp = `${target}.tmp-${process.pid}`;
      rmSync(tmp, { recursive: true, force: true });
      mkdirSync(tmp, { recursive: true });
      execFileSync('tar', ['-xJf', path.join(dir, archive), '-C', tmp], { stdio: 'inherit' });
      const inner = path.join(tmp, name);
      if (!existsSync(path.join(inner, 'bin', 'redis-server'))) fail(`${archive} has no ${name}/bin/redis-server`);
      rmSync(target, { recursive: true, force: true });
      renameSync(inner, target);
      rmSync(tmp, { recursive: true, force: true });
      writeFileSync(stamp, `${actual}\n`);
      process.stdout.write(`unpacked ${archive} into ${target}\n`);
    }
    out.set(name, path.join(target, 'bin'));
  }
  return out;
}

function systemRedis() {
  for (const d of (process.env.PATH ?? '').split(path.delimiter)) {
    if (d && existsSync(path.join(d, 'redis-server'))) return d;
  }
  return undefined;
}

function version(bin) {
  try {
    return execFileSync(path.join(bin, 'redis-server'), ['--version'], { encoding: 'utf8' }).trim().replace(/ sha=.*$/, '');
  } catch (err) {
    return `unreadable (${err.message})`;
  }
}

function runVitest(files, env, report) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(REPO, 'node_modules/vitest/vitest.mjs'), 'run', ...files], {
      cwd: REPO,
      env: { ...env, VITEST_JSON: report, FORCE_COLOR: '0' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/** passed / failed / skipped per suite, skip reasons and failed test names, from one vitest JSON report. */
function summarise(reportFile, suiteOf) {
  const rows = new Map();
  const row = (suite) => {
    if (!rows.has(suite)) rows.set(suite, { passed: 0, failed: 0, skipped: 0, reasons: new Map(), failures: [] });
    return rows.get(suite);
  };
  if (!existsSync(reportFile)) return { rows, missing: true };
  const r = JSON.parse(readFileSync(reportFile, 'utf8'));
  for (const f of r.testResults ?? []) {
    const file = path.basename(f.name);
    const s = row(suiteOf(file));
    const results = f.assertionResults ?? [];
    // A file that failed to load has no results of its own: one failure, named.
    if (f.status === 'failed' && !results.some((a) => a.status === 'failed')) {
      s.failed += 1;
      s.failures.push(`${file}: ${String(f.message ?? 'did not load').split('\n')[0].slice(0, 200)}`);
    }
    for (const a of results) {
      if (a.status === 'passed') s.passed += 1;
      else if (a.status === 'failed') {
        s.failed += 1;
        s.failures.push(`${file} > ${a.title}`);
      } else {
        s.skipped += 1;
        const reason = /\((skipped: [^)]*)\)/.exec(a.title)?.[1] ?? `skipped without a stated reason: ${file} > ${a.title}`;
        s.reasons.set(reason, (s.reasons.get(reason) ?? 0) + 1);
      }
    }
  }
  return { rows, missing: false };
}

function table(headers, lines) {
  const widths = headers.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [fmt(headers), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(fmt)].join('\n');
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const serversDir = path.resolve(process.env.REDIS_SERVERS_DIR ?? path.join(REPO, '..', 'shared', 'servers'));
  const cache = path.resolve(process.env.REDIS_SERVERS_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'redis-ha-pool', 'servers'));
  if (cache.startsWith(REPO + path.sep)) fail(`the cache ${cache} must be outside the repository`);

  // Suites -> files (by base name); --files narrows to those files (their suite, else "files").
  const suiteNames = args.suites ?? Object.keys(SUITES);
  for (const s of suiteNames) if (!SUITES[s]) fail(`unknown suite ${s}; known: ${Object.keys(SUITES).join(', ')}`);
  let files = suiteNames.flatMap((s) => SUITES[s]);
  if (args.files) files = args.files.map((f) => path.basename(f));
  for (const f of files) if (!existsSync(path.join(REPO, 'test', 'integration', f))) fail(`no test file test/integration/${f}`);
  const suiteOf = (file) => Object.entries(SUITES).find(([, fs]) => fs.includes(file))?.[0] ?? 'files';
  const usedSuites = [...new Set(files.map(suiteOf))];

  // The servers: the archives (all, or those named) and the system's Redis.
  if (!existsSync(serversDir)) fail(`${serversDir} does not exist: the server archives are expected there (set REDIS_SERVERS_DIR)`);
  const wantedArchives = args.servers?.filter((s) => s !== 'system');
  const servers = await prepareArchives(serversDir, cache, wantedArchives);
  if (!args.servers || args.servers.includes('system')) {
    const sys = systemRedis();
    if (sys) servers.set('system', sys);
    else if (args.servers) fail('--servers names system, but no redis-server is on PATH');
  }
  for (const s of args.servers ?? []) if (!servers.has(s)) fail(`unknown server ${s}; known: ${[...servers.keys()].join(', ')}`);
  if (args.list) {
    for (const [name, bin] of servers) process.stdout.write(`${name}\t${version(bin)}\t${bin}\n`);
    return 0;
  }

  const reportDir = path.resolve(args.reportDir ?? path.join(os.tmpdir(), `redis-ha-pool-servers-${process.pid}`));
  mkdirSync(reportDir, { recursive: true });
  const results = [];
  for (const [name, bin] of servers) {
    const env = { ...process.env };
    // The system's server is the one on PATH; every other is found through REDIS_BIN_DIR.
    if (name === 'system') delete env.REDIS_BIN_DIR;
    else env.REDIS_BIN_DIR = bin;
    const report = path.join(reportDir, `${name}.json`);
    rmSync(report, { force: true });
    process.stdout.write(`\n=== ${name}: ${version(bin)} (${files.length} files) ===\n`);
    const t0 = Date.now();
    const code = await runVitest(files.map((f) => `test/integration/${f}`), env, report);
    const seconds = (Date.now() - t0) / 1000;
    const { rows, missing } = summarise(report, suiteOf);
    results.push({ name, version: version(bin), seconds, code, rows, missing, report });
  }

  // The table: server x suite -> passed/failed/skipped.
  const lines = results.map((r) => [
    r.name,
    ...usedSuites.map((s) => {
      const x = r.rows.get(s);
      return x ? `${x.passed}/${x.failed}/${x.skipped}` : r.missing ? 'no report' : '-';
    }),
    `${Math.round(r.seconds)} s`,
  ]);
  process.stdout.write(`\npassed/failed/skipped per server and suite\n${table(['server', ...usedSuites, 'time'], lines)}\n`);
  let bad = false;
  for (const r of results) {
    const notes = [];
    if (r.missing) notes.push(`  no JSON report (vitest exited ${r.code}): counted as failed`);
    for (const [suite, x] of r.rows) {
      for (const f of x.failures) notes.push(`  FAILED [${suite}] ${f}`);
      for (const [reason, n] of x.reasons) notes.push(`  skipped [${suite}] ${n} x ${reason}`);
    }
    const failed = r.missing || r.code !== 0 || [...r.rows.values()].some((x) => x.failed > 0);
    bad ||= failed;
    process.stdout.write(`\n${r.name} (${r.version}): ${failed ? 'FAILED' : 'passed'} in ${r.seconds.toFixed(0)} s; report ${r.report}\n${notes.join('\n')}${notes.length ? '\n' : ''}`);
  }
  return bad ? 1 : 0;
}

process.exitCode = await main();
