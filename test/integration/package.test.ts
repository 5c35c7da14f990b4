/**
 * The published package: `npm pack` (which builds first), install the tarball into a fresh
 * project, then load it as ESM and as CommonJS (and type-check both entry points) the way a
 * user would, and talk to a real server through each build.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandalone, type StandaloneTopology } from '../support/topology.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TIMEOUT = 120_000;

/** The environment without npm_* variables inherited from `npx` / `npm run`, so npm acts as in a fresh shell. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  return env;
}

interface RunResult {
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], cwd: string, timeout = TIMEOUT): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd, env: cleanEnv(), timeout, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} (in ${cwd}) failed: ${err.message}\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`, { cause: err }));
      else resolve({ stdout, stderr });
    });
  });
}

const npm = (args: string[], cwd: string) => run(process.platform === 'win32' ? 'npm.cmd' : 'npm', args, cwd);
const node = (args: string[], cwd: string) => run(process.execPath, args, cwd);

describe('the npm package', () => {
  let tmp: string;
  let project: string;
  let packed: { filename: string; files: Array<{ path: string }> };
  let server: StandaloneTopology;

  beforeAll(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'redis-ha-pool-pack-'));
    server = await startStandalone();
    // `npm pack` builds first (prepack): any type error anywhere in src/ fails the build, and with it this test.
    const pack = await npm(['pack', '--json', '--pack-destination', tmp], ROOT);
    const info = JSON.parse(pack.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    packed = info[0]!;
    project = path.join(tmp, 'consumer');
    mkdirSync(project);
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }, null, 2));
    // The runtime dependencies (generic-pool, eventemitter3) come from the npm cache.
    await npm(['install', path.join(tmp, packed.filename), '--no-audit', '--no-fund', '--prefer-offline'], project);
  }, TIMEOUT);

  afterAll(async () => {
    await server?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('ships both builds with their typings, and no sources or tests', () => {
    const files = packed.files.map((f) => f.path);
    for (const f of ['package.json', 'dist/esm/index.js', 'dist/esm/index.d.ts', 'dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/cjs/package.json']) {
      expect(files).toContain(f);
    }
    expect(files.filter((f) => /^(src|test|scripts|compose)\//.test(f))).toEqual([]);
    const installed = path.join(project, 'node_modules', 'redis-ha-pool');
    expect(existsSync(path.join(installed, 'dist', 'esm', 'index.d.ts'))).toBe(true);
    expect(JSON.parse(readFileSync(path.join(installed, 'dist', 'cjs', 'package.json'), 'utf8'))).toEqual({ type: 'commonjs' });
    for (const dep of ['generic-pool', 'eventemitter3']) expect(existsSync(path.join(project, 'node_modules', dep, 'package.json'))).toBe(true);
  }, TIMEOUT);

  it('passes publint and Are the Types Wrong (every resolution mode finds the right typings)', async () => {
    // The same check as `npm run check:package`, on the tarball installed above; it exits non-zero on any problem.
    const { stdout } = await node([path.join(ROOT, 'scripts', 'check-package.mjs'), path.join(tmp, packed.filename)], ROOT);
    expect(stdout).toContain('All good!');
    expect(stdout).toContain('No problems found');
  }, TIMEOUT);

  it('loads as ESM (import) and works against a real server', async () => {
    const script = `
      import { StandalonePool, RedisError, PoolClosedError, keySlot } from 'redis-ha-pool';
      const e = new RedisError('WRONGTYPE Operation against a key');
      const pool = await StandalonePool.create(${JSON.stringify(server.url)});
      await pool.set('pkg:esm', 'esm-ok');
      const value = await pool.get('pkg:esm');
      await pool.close();
      console.log(JSON.stringify({
        create: typeof StandalonePool.create,
        ctor: typeof StandalonePool,
        code: e.code,
        isError: e instanceof Error,
        closed: typeof PoolClosedError,
        slot: keySlot('foo'),
        value,
      }));
    `;
    const { stdout } = await node(['--input-type=module', '-e', script], project);
    expect(JSON.parse(stdout.trim())).toEqual({ create: 'function', ctor: 'function', code: 'WRONGTYPE', isError: true, closed: 'function', slot: 12182, value: 'esm-ok' });
  }, TIMEOUT);

  it('loads as CommonJS (require) and works against a real server', async () => {
    const script = `
      const m = require('redis-ha-pool');
      (async () => {
        const pool = await m.StandalonePool.create(${JSON.stringify(server.url)});
        await pool.set('pkg:cjs', 'cjs-ok');
        const value = await pool.get('pkg:cjs');
        await pool.close();
        console.log(JSON.stringify({
          ctor: typeof m.StandalonePool,
          code: new m.RedisError('ERR x').code,
          entry: require.resolve('redis-ha-pool').split(require('path').sep).slice(-3).join('/'),
          value,
        }));
      })().catch((e) => { console.error(e); process.exit(1); });
    `;
    const { stdout } = await node(['-e', script], project);
    expect(JSON.parse(stdout.trim())).toEqual({ ctor: 'function', code: 'ERR', entry: 'dist/cjs/index.js', value: 'cjs-ok' });
  }, TIMEOUT);

  it('type-checks for an ESM and a CommonJS consumer (exports map types)', async () => {
    const src = path.join(project, 'src');
    mkdirSync(src, { recursive: true });
    const body = `
      const options: StandaloneOptions = { protocol: 3, pool: { max: 2 } };
      export async function main(): Promise<string | null> {
        const pool: StandalonePool = await StandalonePool.create('127.0.0.1:6379', options);
        const err: RedisError = new RedisError('ERR x');
        void err.code;
        return pool.get('k');
      }
    `;
    writeFileSync(path.join(src, 'esm.mts'), `import { StandalonePool, RedisError, type StandaloneOptions } from 'redis-ha-pool';\n${body}`);
    writeFileSync(path.join(src, 'cjs.cts'), `import { StandalonePool, RedisError, type StandaloneOptions } from 'redis-ha-pool';\n${body}`);
    writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          typeRoots: [path.join(ROOT, 'node_modules', '@types')],
          types: ['node'],
        },
        include: ['src'],
      }),
    );
    await node([path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project], project);
  }, TIMEOUT);
});
