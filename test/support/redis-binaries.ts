/**
 * Locates `redis-server`, `redis-sentinel` and `redis-cli`: in `REDIS_BIN_DIR`
 * when set, otherwise on PATH. On a Debian/Ubuntu machine running as root the
 * missing packages are installed with apt-get (announced on stderr); anywhere
 * else a missing binary is an error that names the package to install.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import path from 'node:path';

export interface RedisBinaries {
  redisServer: string;
  /** Command line that starts a sentinel, before the config file argument is appended. */
  sentinelCommand: readonly string[];
  /** Extra arguments after the config file for the sentinel command (`--sentinel` when using redis-server). */
  sentinelExtraArgs: readonly string[];
  redisCli: string;
  /** `setpriv` when available: children get SIGKILL if this process dies without cleaning up. */
  setpriv: string | undefined;
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function findOnPath(name: string): string | undefined {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function locate(name: string): string | undefined {
  const binDir = process.env.REDIS_BIN_DIR;
  if (binDir) {
    const candidate = path.join(binDir, name);
    return isExecutable(candidate) ? candidate : undefined;
  }
  return findOnPath(name);
}

function resolveAll(): { found: RedisBinaries | undefined; missing: string[] } {
  const redisServer = locate('redis-server');
  const redisSentinel = locate('redis-sentinel');
  const redisCli = locate('redis-cli');
  const missing: string[] = [];
  if (!redisServer) missing.push('redis-server');
  // `redis-server --sentinel` is an equivalent fallback for a missing redis-sentinel.
  if (!redisSentinel && !redisServer) missing.push('redis-sentinel');
  if (!redisCli) missing.push('redis-cli');
  if (!redisServer || !redisCli) return { found: undefined, missing };
  return {
    found: {
      redisServer,
      sentinelCommand: [redisSentinel ?? redisServer],
      sentinelExtraArgs: redisSentinel ? [] : ['--sentinel'],
      redisCli,
      setpriv: process.platform === 'linux' ? findOnPath('setpriv') : undefined,
    },
    missing,
  };
}

const INSTALL_HINT =
  'Install Redis 7 so that redis-server, redis-sentinel and redis-cli are on PATH (or set REDIS_BIN_DIR): ' +
  'Debian/Ubuntu `sudo apt-get install -y redis-server redis-sentinel redis-tools`, ' +
  'macOS `brew install redis`, Fedora/RHEL `sudo dnf install -y redis`. ' +
  'Or run with REDIS_TOPOLOGY=containers where a Docker engine is available.';

function aptInstall(): Promise<void> {
  const script = 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server redis-sentinel redis-tools';
  process.stderr.write(`[redis-topology] Redis binaries missing; installing them: ${script}\n`);
  return new Promise((resolve, reject) => {
    // apt output goes to our stderr so the install is visible in the test log.
    const child = spawn('sh', ['-c', script], { stdio: ['ignore', process.stderr, process.stderr] });
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`apt-get install failed (code ${code}, signal ${signal})`)),
    );
  });
}

let pending: Promise<RedisBinaries> | undefined;

/** Finds (installing where allowed) the Redis binaries; memoised per process. */
export function redisBinaries(): Promise<RedisBinaries> {
  pending ??= (async () => {
    const first = resolveAll();
    if (first.found) return first.found;
    const canApt = existsSync('/etc/debian_version') && process.getuid?.() === 0 && !process.env.REDIS_BIN_DIR;
    if (!canApt) {
      throw new Error(`Missing Redis binaries: ${first.missing.join(', ')}. ${INSTALL_HINT}`);
    }
    await aptInstall();
    const second = resolveAll();
    if (second.found) return second.found;
    throw new Error(`Still missing after apt-get install: ${second.missing.join(', ')}. ${INSTALL_HINT}`);
  })();
  pending.catch(() => {
    pending = undefined; // let a later call retry (and report) instead of caching the failure forever
  });
  return pending;
}
