/**
 * `npm run topology`: as a new user runs it. `up` returns with the topology still running,
 * the `create()` line it prints connects when pasted into a program, `status` reports it, and
 * `down` leaves no process and no temp dir behind.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX = path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');
const TIMEOUT = 120_000;

interface State {
  keeperPid: number;
  dir: string;
  nodes: Array<{ pid: number; port: number }>;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

describe('npm run topology', () => {
  let tmp: string;
  let env: NodeJS.ProcessEnv;
  let stateFile: string;

  const run = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, args, { cwd: ROOT, env, timeout: TIMEOUT }, (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      });
    });
  const topology = (...args: string[]) => run([TSX, path.join(ROOT, 'scripts', 'topology.ts'), ...args]);

  beforeAll(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'redis-ha-pool-topology-cli-'));
    stateFile = path.join(tmp, 'state.json');
    // Its own state file, so a topology the developer has running is left alone.
    env = { ...process.env, REDIS_HA_POOL_TOPOLOGY_STATE: stateFile };
  });

  afterAll(async () => {
    // A failed assertion must not leave servers behind.
    if (existsSync(stateFile)) await topology('down');
    await rm(tmp, { recursive: true, force: true });
  }, TIMEOUT);

  it('up standalone prints a create() line that connects; status reports it; down stops every process by PID', async () => {
    const upResult = await topology('up', 'standalone');
    expect(upResult.stderr).toBe('');
    expect(upResult.code).toBe(0);
    const lines = upResult.stdout.split('\n').map((l) => l.trim());
    const importLine = lines.find((l) => l.startsWith('import { StandalonePool }'));
    const createLine = lines.find((l) => l.startsWith('const pool = await StandalonePool.create('));
    expect(importLine).toBe(`import { StandalonePool } from 'redis-ha-pool';`);
    expect(createLine).toMatch(/^const pool = await StandalonePool\.create\('redis:\/\/127\.0\.0\.1:\d+'\);$/);

    const state = JSON.parse(readFileSync(stateFile, 'utf8')) as State;
    const pids = [state.keeperPid, ...state.nodes.map((n) => n.pid)];
    expect(pids.every(isAlive)).toBe(true); // still running after `up` returned

    // The two lines exactly as printed, in a program of the user's, with the package name
    // pointing at this checkout's sources.
    const program = path.join(tmp, 'paste.mts');
    writeFileSync(
      program,
      [
        importLine!.replace("'redis-ha-pool'", `'${pathToFileURL(path.join(ROOT, 'src', 'index.ts')).href}'`),
        createLine!,
        "await pool.set('topology:cli', 'pasted');",
        "console.log(await pool.get('topology:cli'));",
        'await pool.close();',
      ].join('\n'),
    );
    const pasted = await run([TSX, program]);
    expect(pasted.stderr).toBe('');
    expect(pasted.stdout.trim()).toBe('pasted');

    const st = await topology('status');
    expect(st.code).toBe(0);
    expect(st.stdout).toContain(`127.0.0.1:${state.nodes[0]!.port}`);
    expect(st.stdout).toContain('running');
    expect(st.stdout).not.toContain('NOT RUNNING');

    const second = await topology('up', 'standalone');
    expect(second.code).toBe(1);
    expect(second.stderr).toContain('already running');

    const downResult = await topology('down');
    expect(downResult.code).toBe(0);
    expect(downResult.stdout).toContain('Stopped the standalone topology');
    expect(pids.filter(isAlive)).toEqual([]);
    expect(existsSync(state.dir)).toBe(false);
    expect(existsSync(stateFile)).toBe(false);

    const after = await topology('status');
    expect(after.stdout).toContain('No topology is running');
  }, TIMEOUT);
});
