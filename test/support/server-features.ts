/**
 * Which server the tests run against (`redis-server --version` of the binary REDIS_BIN_DIR or
 * PATH gives), read once per process, and what it can do. The topologies gate config lines on
 * it (6.2 refuses to start on a line it does not know), and tests that need a feature the
 * server lacks skip by name with the reason:
 *
 * ```ts
 * it.skipIf(!server.has('sharded-pubsub'))(`SSUBSCRIBE ... ${server.needs('sharded-pubsub')}`, ...)
 * ```
 *
 * Synchronous on purpose: `it.skipIf` is decided while the file is collected, before any hook.
 */
import { execFileSync } from 'node:child_process';
import { locateTool } from './prepare.js';

export type ServerFlavor = 'redis' | 'valkey';

/** A feature some servers lack; `since` says from which version each flavor has it (absent: never). */
const FEATURES = {
  /** `enable-debug-command` config line (before 7.0, DEBUG is always allowed). */
  'enable-debug-command': { redis: [7, 0], valkey: [7, 2] },
  /** `cluster-port` config line (before 7.0, the bus is port + 10000). */
  'cluster-port': { redis: [7, 0], valkey: [7, 2] },
  'cluster-shards': { redis: [7, 0], valkey: [7, 2] },
  /** SSUBSCRIBE / SPUBLISH. */
  'sharded-pubsub': { redis: [7, 0], valkey: [7, 2] },
  'client-no-evict': { redis: [7, 0], valkey: [7, 2] },
  /** FUNCTION LOAD / FCALL. */
  functions: { redis: [7, 0], valkey: [7, 2] },
  /** ACL selectors, `%R~`/`%W~` key permissions. */
  'acl-selectors': { redis: [7, 0], valkey: [7, 2] },
  /** EXPIRE ... NX|XX|GT|LT, EXPIRETIME. */
  'expire-options': { redis: [7, 0], valkey: [7, 2] },
  'client-setinfo': { redis: [7, 2], valkey: [7, 2] },
  'client-no-touch': { redis: [7, 2], valkey: [7, 2] },
  waitaof: { redis: [7, 2], valkey: [7, 2] },
  /** HEXPIRE, HTTL, HPERSIST, ... (Redis only; Valkey 8.0 has none). */
  'hash-field-expiry': { redis: [7, 4] },
  /** `availability-zone` config, `availability_zone` in INFO server. */
  'availability-zone': { valkey: [8, 0] },
} as const satisfies Record<string, Partial<Record<ServerFlavor, readonly [number, number]>>>;

export type ServerFeature = keyof typeof FEATURES;

export interface ServerUnderTest {
  flavor: ServerFlavor;
  /** As the server reports it: `6.2.16`, `7.9.224` (Redis 8.0-M01), `8.0.1` (Valkey). */
  version: string;
  major: number;
  minor: number;
  /** `Redis 6.2.16`, `Valkey 8.0.1`: for skip reasons and messages. */
  label: string;
  has(feature: ServerFeature): boolean;
  /** The skip reason for a test that needs `feature`: `(skipped: needs X; Redis 6.2.16 lacks it)`, or '' when present. */
  needs(feature: ServerFeature): string;
  /** At least this (major, minor) of the same flavor. */
  atLeast(major: number, minor?: number): boolean;
}

/** Parses `redis-server --version` output (`Redis server v=7.2.6 ...`, `Valkey server v=8.0.1 ...`, Valkey 7.2: `Server v=7.2.7`). */
export function parseServerVersion(output: string): { flavor: ServerFlavor; version: string; major: number; minor: number } {
  const m = /v=(\d+)\.(\d+)\.(\d+)/.exec(output);
  if (!m) throw new Error(`could not read a server version from \`redis-server --version\`: ${output.trim()}`);
  // Valkey 7.2 prints "Server v=..." (no name); Redis always prints "Redis server".
  const flavor: ServerFlavor = /^Redis server/i.test(output.trim()) ? 'redis' : 'valkey';
  return { flavor, version: `${m[1]}.${m[2]}.${m[3]}`, major: Number(m[1]), minor: Number(m[2]) };
}

export function describeServer(p: ReturnType<typeof parseServerVersion>): ServerUnderTest {
  const label = `${p.flavor === 'redis' ? 'Redis' : 'Valkey'} ${p.version}`;
  const atLeast = (major: number, minor = 0) => p.major > major || (p.major === major && p.minor >= minor);
  const has = (feature: ServerFeature): boolean => {
    const since = (FEATURES[feature] as Partial<Record<ServerFlavor, readonly [number, number]>>)[p.flavor];
    return since !== undefined && atLeast(since[0], since[1]);
  };
  return {
    ...p,
    label,
    has,
    atLeast,
    needs: (feature) => (has(feature) ? '' : `(skipped: needs ${feature}; ${label} lacks it)`),
  };
}

let cached: ServerUnderTest | undefined;

/** The server the tests run against; throws when no redis-server is found. */
export function serverUnderTest(): ServerUnderTest {
  if (cached) return cached;
  const bin = locateTool('redis-server', process.env, true);
  if (!bin) throw new Error('server-features: no redis-server found (REDIS_BIN_DIR or PATH); the global setup installs it');
  const out = execFileSync(bin, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  cached = describeServer(parseServerVersion(out));
  return cached;
}

/** Shorthand for test files: `server.has(...)`, `server.needs(...)`, `server.label`. Resolved on first use. */
export const server: ServerUnderTest = new Proxy({} as ServerUnderTest, {
  get: (_t, key) => serverUnderTest()[key as keyof ServerUnderTest],
});
