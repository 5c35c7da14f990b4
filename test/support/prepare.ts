/**
 * Prepares what the tests need on this machine (the Redis binaries and `openssl`) once,
 * before any test worker starts: `global-setup.ts` runs it from vitest's main process.
 *
 * Every worker used to install missing binaries for itself, so on a fresh machine N workers
 * ran `apt-get install` at once and apt's own lock failed all but one. Here one process
 * installs while every other waits: a lock directory (mkdir is atomic) serialises
 * preparations across processes, so two `npm test` runs on one machine (or a test run beside
 * `npm run topology`) also install once. The outcome of an install is written next to the
 * lock, so a process that waited for a failed install reports that same failure instead of
 * trying again.
 *
 * The installer is injectable so that `test/unit/prepare.test.ts` can prove the lock with a
 * fake one (the thing under test is the once-only logic, not apt).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A tool the tests run, and the Debian package that provides it. */
export interface Tool {
  name: string;
  debianPackage: string;
  /** Looked up in REDIS_BIN_DIR when that is set (the Redis binaries), else on PATH. */
  redis: boolean;
}

const TOOLS: readonly Tool[] = [
  { name: 'redis-server', debianPackage: 'redis-server', redis: true },
  { name: 'redis-sentinel', debianPackage: 'redis-sentinel', redis: true },
  { name: 'redis-cli', debianPackage: 'redis-tools', redis: true },
  { name: 'openssl', debianPackage: 'openssl', redis: false },
];

/** How to install Debian packages: `command` followed by the package names. */
export interface Installer {
  /** Shown in the announcement, e.g. `apt-get install`. */
  describe: string;
  command: readonly string[];
}

export interface PrepareOptions {
  /** Where tools are looked up (PATH, REDIS_BIN_DIR). Default: process.env. */
  env?: NodeJS.ProcessEnv;
  /** Default: apt-get on Debian/Ubuntu as root (without REDIS_BIN_DIR), else none (`null`). */
  installer?: Installer | null;
  /** The lock directory. Default: `<tmpdir>/redis-ha-pool-prepare.lock`, one per machine. */
  lockPath?: string;
  /** Where the announcements go. Default: stderr. */
  log?: (line: string) => void;
  /** How often a waiting process looks at the lock (ms). */
  pollMs?: number;
  /** Prepare only these tools (names); default: everything the tests need. */
  only?: readonly string[];
}

export interface PrepareResult {
  /** The packages this process installed (empty when nothing was missing or another process installed them). */
  installed: string[];
  /** True when this process waited for another one's preparation. */
  waited: boolean;
}

const PREFIX = '[test setup]';

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The path of `name` on PATH (or in REDIS_BIN_DIR for the Redis binaries), if it is there. */
export function locateTool(name: string, env: NodeJS.ProcessEnv = process.env, redis = true): string | undefined {
  if (redis && env.REDIS_BIN_DIR) {
    const candidate = path.join(env.REDIS_BIN_DIR, name);
    return isExecutable(candidate) ? candidate : undefined;
  }
  for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** The tools the tests cannot run without (or those of `only`) that are not installed. */
export function missingTools(env: NodeJS.ProcessEnv = process.env, only?: readonly string[]): Tool[] {
  const absent = TOOLS.filter((t) => (!only || only.includes(t.name)) && !locateTool(t.name, env, t.redis));
  // `redis-server --sentinel` stands in for a missing redis-sentinel.
  const serverThere = !absent.some((t) => t.name === 'redis-server');
  return absent.filter((t) => !(t.name === 'redis-sentinel' && serverThere));
}

function packagesFor(missing: readonly Tool[]): string[] {
  const pkgs = new Set(missing.map((t) => t.debianPackage));
  // Without redis-server, take redis-sentinel too: the tests prefer the real binary.
  if (pkgs.has('redis-server')) pkgs.add('redis-sentinel');
  return [...pkgs];
}

/** The one clear error for tools that are missing and that this process will not install. */
export function missingToolsMessage(missing: readonly Tool[], why: string): string {
  const names = missing.map((t) => t.name).join(', ');
  const pkgs = packagesFor(missing).join(' ');
  const redis = missing.some((t) => t.redis);
  return (
    `The tests need ${names}, which ${missing.length === 1 ? 'is' : 'are'} not installed: ${why}. ` +
    `Install the Debian/Ubuntu package${packagesFor(missing).length === 1 ? '' : 's'} ${pkgs} ` +
    `(\`sudo apt-get install -y ${pkgs}\`)` +
    (redis ? '; on macOS `brew install redis`, on Fedora/RHEL `sudo dnf install -y redis`; or put redis-server, redis-sentinel and redis-cli in REDIS_BIN_DIR' : '') +
    '. Then run the tests again.'
  );
}

/** apt-get on Debian/Ubuntu when running as root and the binaries are expected on PATH. */
export function defaultInstaller(env: NodeJS.ProcessEnv = process.env): Installer | null {
  if (!existsSync('/etc/debian_version') || process.getuid?.() !== 0 || env.REDIS_BIN_DIR) return null;
  return {
    describe: 'apt-get install',
    // Lock::Timeout: wait for another apt (unattended upgrades) instead of failing on its lock.
    command: ['sh', '-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 "$@"', 'apt-install'],
  };
}

function whyNoInstaller(env: NodeJS.ProcessEnv): string {
  if (env.REDIS_BIN_DIR) return `REDIS_BIN_DIR is set (${env.REDIS_BIN_DIR}), so they are expected there`;
  if (!existsSync('/etc/debian_version')) return 'the tests install them only on Debian/Ubuntu';
  return 'the tests install them with apt-get only when running as root';
}

interface Owner {
  pid: number;
  token: string;
}

interface Outcome {
  token: string;
  ok: boolean;
  message: string;
}

function readJson<T>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

function writeJsonAtomic(file: string, value: unknown): void {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(tmp, JSON.stringify(value));
  renameSync(tmp, file);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs the installer; resolves with its output, or rejects with an error carrying the output's tail. */
function runInstaller(installer: Installer, packages: string[], log: (line: string) => void): Promise<void> {
  const [cmd, ...args] = installer.command;
  return new Promise((resolve, reject) => {
    const child = spawn(cmd!, [...args, ...packages], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-4000);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', (err) => reject(new Error(`${installer.describe} could not start: ${err.message}`, { cause: err })));
    child.on('close', (code, signal) => {
      if (code === 0) return resolve();
      const tail = output.trim().split('\n').slice(-8).join('\n');
      if (tail) log(tail);
      reject(new Error(`${installer.describe} ${packages.join(' ')} failed (${signal ? `signal ${signal}` : `exit code ${code}`})${tail ? `: ${tail.split('\n').at(-1)}` : ''}`));
    });
  });
}

/**
 * Makes sure the tools the tests need are installed, installing them at most once per
 * machine at a time. Resolves when they are there; rejects with one clear error that names
 * the packages when they cannot be installed (the same error in every process that waited).
 */
export async function prepareTestTools(options: PrepareOptions = {}): Promise<PrepareResult> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const lockPath = options.lockPath ?? path.join(os.tmpdir(), 'redis-ha-pool-prepare.lock');
  const outcomePath = `${lockPath}.outcome.json`;
  const pollMs = options.pollMs ?? 100;
  const installer = options.installer === undefined ? defaultInstaller(env) : options.installer;
  // Tokens of the preparations this process waited for: their outcome is its outcome.
  const waitedFor = new Set<string>();
  let announcedWait = false;

  for (;;) {
    const missing = missingTools(env, options.only);
    if (missing.length === 0) return { installed: [], waited: waitedFor.size > 0 };
    if (!installer) throw new Error(missingToolsMessage(missing, whyNoInstaller(env)));

    const token = `${process.pid}-${randomBytes(6).toString('hex')}`;
    let locked = false;
    try {
      mkdirSync(lockPath);
      locked = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }

    if (locked) {
      writeJsonAtomic(path.join(lockPath, 'owner.json'), { pid: process.pid, token } satisfies Owner);
      let outcome: Outcome = { token, ok: false, message: '' };
      try {
        // Someone may have finished installing between our probe and our lock.
        const still = missingTools(env, options.only);
        if (still.length === 0) {
          outcome = { token, ok: true, message: '' };
          return { installed: [], waited: waitedFor.size > 0 };
        }
        const packages = packagesFor(still);
        log(`${PREFIX} ${still.map((t) => t.name).join(', ')} not found: installing ${packages.join(' ')} with ${installer.describe} (once, before the tests start)`);
        const started = Date.now();
        try {
          await runInstaller(installer, packages, log);
        } catch (err) {
          outcome.message = missingToolsMessage(still, (err as Error).message);
          throw new Error(outcome.message, { cause: err });
        }
        const after = missingTools(env, options.only);
        if (after.length > 0) {
          outcome.message = missingToolsMessage(after, `${installer.describe} ${packages.join(' ')} succeeded but did not provide ${after.length === 1 ? 'it' : 'them'}`);
          throw new Error(outcome.message);
        }
        log(`${PREFIX} installed ${packages.join(' ')} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
        outcome = { token, ok: true, message: '' };
        return { installed: packages, waited: waitedFor.size > 0 };
      } finally {
        // The outcome goes down before the lock is released, so every waiter finds it.
        writeJsonAtomic(outcomePath, outcome);
        rmSync(lockPath, { recursive: true, force: true });
      }
    }

    // Another process holds the lock: note whose preparation this is, then wait for it.
    const ownerFile = path.join(lockPath, 'owner.json');
    const owner = readJson<Owner>(ownerFile);
    if (owner) {
      if (!alive(owner.pid)) {
        // Its holder died mid-install: take the lock over (only if it is still that holder's).
        if (readJson<Owner>(ownerFile)?.token === owner.token) rmSync(lockPath, { recursive: true, force: true });
        continue;
      }
      waitedFor.add(owner.token);
      if (!announcedWait) {
        announcedWait = true;
        log(`${PREFIX} waiting for process ${owner.pid}, which is installing what the tests need`);
      }
    } else {
      // Created but not yet described: give its holder a moment, then call it abandoned.
      const age = Date.now() - (statSafe(lockPath) ?? Date.now());
      if (age > 30_000) rmSync(lockPath, { recursive: true, force: true });
    }
    while (existsSync(lockPath)) {
      const current = readJson<Owner>(ownerFile);
      if (current && !alive(current.pid)) break;
      if (current) waitedFor.add(current.token);
      await sleep(pollMs);
    }
    const outcome = readJson<Outcome>(outcomePath);
    if (outcome && waitedFor.has(outcome.token)) {
      if (!outcome.ok) throw new Error(outcome.message);
      const still = missingTools(env, options.only);
      if (still.length > 0) throw new Error(missingToolsMessage(still, 'another process installed packages for the tests, but these are still not found here'));
      return { installed: [], waited: true };
    }
  }
}

function statSafe(p: string): number | undefined {
  try {
    return statSync(p).mtimeMs;
  } catch {
    return undefined;
  }
}
