/**
 * Locates `redis-server`, `redis-sentinel` and `redis-cli`: in `REDIS_BIN_DIR`
 * when set, otherwise on PATH. Installing missing ones is prepare.ts's job, done
 * once before the test workers start (global-setup.ts).
 */
import { locateTool, missingTools, missingToolsMessage, prepareTestTools } from './prepare.js';

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

function locate(name: string): string | undefined {
  return locateTool(name, process.env, true);
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
      setpriv: process.platform === 'linux' ? locateTool('setpriv', process.env, false) : undefined,
    },
    missing,
  };
}

const REDIS_TOOLS = ['redis-server', 'redis-sentinel', 'redis-cli'];

let pending: Promise<RedisBinaries> | undefined;

/**
 * Finds the Redis binaries; memoised per process. Inside a vitest worker it never installs:
 * the global setup (global-setup.ts) prepared them once before any worker started, so a
 * binary missing here is an error naming the package. A script run outside the tests
 * (`npm run topology`, the demos, the benches) prepares them itself, under the same lock.
 */
export function redisBinaries(): Promise<RedisBinaries> {
  pending ??= (async () => {
    const first = resolveAll();
    if (first.found) return first.found;
    if (process.env.VITEST) {
      throw new Error(missingToolsMessage(missingTools(process.env, REDIS_TOOLS), 'the global setup (test/support/global-setup.ts) should have installed them before the tests started; is globalSetup missing from vitest.config.ts?'));
    }
    await prepareTestTools({ only: REDIS_TOOLS });
    const second = resolveAll();
    if (second.found) return second.found;
    throw new Error(`Missing Redis binaries: ${second.missing.join(', ')}`);
  })();
  pending.catch(() => {
    pending = undefined; // let a later call retry (and report) instead of caching the failure forever
  });
  return pending;
}
