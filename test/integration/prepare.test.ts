/**
 * The once-only preparation behind vitest's globalSetup (test/support/prepare.ts): several
 * processes that find the Redis binaries missing at the same moment install them exactly
 * once, the others wait for that install; a failed install gives every one of them the same
 * clear error naming the packages. The installer is a fake script (apt is not what is under
 * test: the lock and the shared outcome are) that records each invocation and blocks until the
 * test has seen every other process waiting, so the race is forced, not timed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../support/wait.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WORKER = path.join(ROOT, 'test', 'fixtures', 'prepare-worker.ts');
const N = 6;

// Records its invocation, waits for the test's go-ahead, then fails (when `fail` exists) the
// way apt does or puts executable stand-ins for the three binaries into bin/.
const FAKE_INSTALLER = `#!/bin/sh
dir=$(dirname "$0")
echo "$$ $*" >> "$dir/invocations"
i=0
while [ ! -f "$dir/go" ]; do i=$((i+1)); [ $i -gt 2400 ] && exit 3; sleep 0.05; done
if [ -f "$dir/fail" ]; then echo "Reading package lists..."; echo "E: Unable to locate package redis-sentinel" >&2; exit 100; fi
for b in redis-server redis-sentinel redis-cli; do printf '#!/bin/sh\\n' > "$dir/bin/$b"; chmod +x "$dir/bin/$b"; done
`;

interface Worker {
  child: ChildProcess;
  stderr: string;
  stdout: string;
  exit: Promise<{ ok: boolean; message?: string; installed?: string[]; waited?: boolean }>;
}

describe('preparing the test tools once (globalSetup)', () => {
  let dir: string;
  const started: ChildProcess[] = [];

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'redis-ha-pool-prepare-'));
    mkdirSync(path.join(dir, 'bin'));
    writeFileSync(path.join(dir, 'install.sh'), FAKE_INSTALLER);
  });

  afterEach(() => {
    // Every worker and fake installer this test started, by PID.
    for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const pid of installerPids()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const invocations = (): string[] => {
    const file = path.join(dir, 'invocations');
    return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];
  };
  const installerPids = (): number[] => (dir && existsSync(dir) ? invocations().map((l) => Number(l.split(' ')[0])) : []);

  function startWorker(): Worker {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
      cwd: ROOT,
      env: { ...process.env, PREP_BIN_DIR: path.join(dir, 'bin'), PREP_LOCK: path.join(dir, 'lock'), PREP_INSTALLER: path.join(dir, 'install.sh') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.push(child);
    const w: Worker = {
      child,
      stderr: '',
      stdout: '',
      exit: new Promise((resolve, reject) => {
        child.on('error', reject);
        child.on('close', () => {
          const line = w.stdout.trim().split('\n').at(-1);
          if (!line) return reject(new Error(`worker printed no result; stderr: ${w.stderr}`));
          resolve(JSON.parse(line));
        });
      }),
    };
    child.stdout!.on('data', (d: Buffer) => (w.stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (w.stderr += d.toString()));
    return w;
  }

  /** Starts N workers at once and lets the install go ahead only when N-1 of them wait for the one installing. */
  async function race(): Promise<Worker[]> {
    const workers = Array.from({ length: N }, () => startWorker());
    await waitFor(
      () => workers.filter((w) => w.stderr.includes('waiting for process')).length === N - 1 && workers.some((w) => w.stderr.includes('not found: installing')),
      `one worker installing and ${N - 1} waiting`,
      60_000,
    );
    writeFileSync(path.join(dir, 'go'), '');
    return workers;
  }

  it(`${N} workers finding the binaries missing at once: exactly one install, every worker waits for it and goes on`, async () => {
    const workers = await race();
    const results = await Promise.all(workers.map((w) => w.exit));

    expect(invocations()).toHaveLength(1);
    expect(invocations()[0]).toContain('redis-server redis-sentinel redis-tools');
    expect(results.every((r) => r.ok)).toBe(true);
    expect(results.filter((r) => r.installed?.length)).toHaveLength(1);
    expect(results.filter((r) => r.waited)).toHaveLength(N - 1);
    // One clear message from the installer, naming what it installs and how.
    const announcements = workers.filter((w) => /redis-server, redis-sentinel, redis-cli not found: installing redis-server redis-sentinel redis-tools with fake-apt install/.test(w.stderr));
    expect(announcements).toHaveLength(1);
    expect(existsSync(path.join(dir, 'bin', 'redis-sentinel'))).toBe(true);
    expect(existsSync(path.join(dir, 'lock'))).toBe(false);
  }, 120_000);

  it('a failed install: every worker gets the same clear error naming the packages, and none installs again', async () => {
    writeFileSync(path.join(dir, 'fail'), '');
    const workers = await race();
    const results = await Promise.all(workers.map((w) => w.exit));

    expect(invocations()).toHaveLength(1);
    expect(results.every((r) => !r.ok)).toBe(true);
    const messages = new Set(results.map((r) => r.message));
    expect(messages.size).toBe(1);
    const [message] = messages;
    expect(message).toContain('The tests need redis-server, redis-sentinel, redis-cli, which are not installed');
    expect(message).toContain('fake-apt install redis-server redis-sentinel redis-tools failed (exit code 100): E: Unable to locate package redis-sentinel');
    expect(message).toContain('sudo apt-get install -y redis-server redis-sentinel redis-tools');
    expect(existsSync(path.join(dir, 'lock'))).toBe(false);

    // The failure is not remembered for ever: the next run tries again (and here succeeds).
    rmSync(path.join(dir, 'fail'));
    const retry = await startWorker().exit;
    expect(retry).toMatchObject({ ok: true, installed: ['redis-server', 'redis-sentinel', 'redis-tools'] });
    expect(invocations()).toHaveLength(2);
  }, 120_000);

  it('binaries already there: nothing is installed and nothing is said', async () => {
    for (const b of ['redis-server', 'redis-sentinel', 'redis-cli']) writeFileSync(path.join(dir, 'bin', b), '#!/bin/sh\n', { mode: 0o755 });
    const w = startWorker();
    expect(await w.exit).toEqual({ ok: true, installed: [], waited: false });
    expect(invocations()).toHaveLength(0);
    expect(w.stderr).toBe('');
  }, 60_000);

  it('a worker killed while installing leaves no lock behind that blocks the next one', async () => {
    const first = startWorker();
    await waitFor(() => first.stderr.includes('not found: installing') && invocations().length === 1, 'the first worker installing', 60_000);
    first.child.kill('SIGKILL');
    process.kill(installerPids()[0]!, 'SIGKILL');
    await first.exit.catch(() => undefined);
    expect(existsSync(path.join(dir, 'lock'))).toBe(true);

    writeFileSync(path.join(dir, 'go'), '');
    const second = await startWorker().exit;
    expect(second).toMatchObject({ ok: true, installed: ['redis-server', 'redis-sentinel', 'redis-tools'] });
    expect(invocations()).toHaveLength(2);
  }, 120_000);
});

describe('npm test on a machine where the binaries cannot be installed', () => {
  it('stops before any test file runs, with one error naming the packages', async () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), 'redis-ha-pool-nobin-'));
    try {
      // REDIS_BIN_DIR pointing at an empty directory: the binaries are "missing" and apt is not
      // the way to put them there, so the global setup must refuse with the install hint.
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST')));
      const child = spawn(process.execPath, [path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', 'test/unit/slot.test.ts'], {
        cwd: ROOT,
        env: { ...env, REDIS_BIN_DIR: empty, NO_COLOR: '1', FORCE_COLOR: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(code).not.toBe(0);
      expect(output).toContain(`The tests need redis-server, redis-sentinel, redis-cli, which are not installed: REDIS_BIN_DIR is set (${empty})`);
      expect(output).toContain('sudo apt-get install -y redis-server redis-sentinel redis-tools');
      // Said once, and no test file ran.
      expect(output.split('The tests need').length - 1).toBe(1);
      expect(output).not.toMatch(/Test Files|passed/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  }, 120_000);
});
