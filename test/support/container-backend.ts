/**
 * The container backend (REDIS_TOPOLOGY=containers): the same topologies,
 * brought up with testcontainers' DockerComposeEnvironment from
 * `compose/*.yml`. Loaded only through a dynamic import from `topology.ts`,
 * and it loads testcontainers itself only through a dynamic import, so the
 * process backend never touches either.
 *
 * Networking: every container uses the host network and binds 127.0.0.1 on
 * a port chosen here with `freePort()`, so what sentinels and cluster nodes
 * announce is exactly what the host reaches, and all readiness checks and
 * topology queries are the shared ones from `topology-ops.ts`.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Container as DockerodeContainer } from 'dockerode';
import type { StartedDockerComposeEnvironment, StartedTestContainer } from 'testcontainers';
import type { NodeAddress } from '../../src/types.js';
import { sendCommand, sendCommands } from './mini-client.js';
import { freeClusterPort, freePort } from './ports.js';
import { trackDir, untrackDir } from './reaper.js';
import {
  CLUSTER_DEFAULTS,
  defaultUserPassword,
  makeClusterTopology,
  makeSentinelTopology,
  makeStandaloneTopology,
  SENTINEL_DEFAULTS,
  stripUndefined,
  waitClusterFormed,
  waitReplicasLinked,
  waitSentinelsReady,
  withLogs,
  type HarnessNode,
} from './topology-ops.js';
import type {
  ClusterOptions,
  ClusterTopology,
  SentinelOptions,
  SentinelTopology,
  StandaloneOptions,
  StandaloneTopology,
} from './topology-types.js';
import { waitFor } from './wait.js';

const COMPOSE_DIR = fileURLToPath(new URL('../../compose/', import.meta.url));
const LOG_LINES_KEPT = 500;

async function loadTestcontainers() {
  const tc = await import('testcontainers');
  try {
    await tc.getContainerRuntimeClient();
  } catch (err) {
    throw new Error(
      'REDIS_TOPOLOGY=containers, but no container runtime is reachable (testcontainers: ' +
        `${err instanceof Error ? err.message : String(err)}). Start Docker, or unset REDIS_TOPOLOGY to use local processes.`,
      { cause: err },
    );
  }
  return tc;
}

class ContainerNode implements HarnessNode {
  readonly host = '127.0.0.1';
  readonly address: NodeAddress;
  readonly pid = undefined;
  private alive = true;
  private paused = false;
  private readonly log: string[] = [];

  constructor(
    readonly kind: 'server' | 'sentinel',
    readonly port: number,
    readonly dir: string,
    private readonly password: string | undefined,
    private readonly container: StartedTestContainer,
    private readonly docker: DockerodeContainer,
  ) {
    this.address = { host: this.host, port };
  }

  toString(): string {
    return `${this.kind} 127.0.0.1:${this.port} (container ${this.container.getName()})`;
  }

  /** Follows the container's output into an in-memory ring buffer for `logTail()`. */
  async followLogs(since?: number): Promise<void> {
    const stream = await this.container.logs(since !== undefined ? { since } : {});
    stream.on('data', (chunk: Buffer | string) => {
      for (const line of chunk.toString().split('\n')) if (line) this.log.push(line);
      if (this.log.length > LOG_LINES_KEPT) this.log.splice(0, this.log.length - LOG_LINES_KEPT);
    });
    stream.on('error', () => undefined);
  }

  isAlive(): boolean {
    return this.alive;
  }

  isPaused(): boolean {
    return this.alive && this.paused;
  }

  query(args: readonly (string | number)[], timeoutMs = 1000) {
    return sendCommand(this.address, args, { password: this.password, timeoutMs });
  }

  queryAll(commands: readonly (readonly (string | number)[])[], timeoutMs = 1000) {
    return sendCommands(this.address, commands, { password: this.password, timeoutMs });
  }

  async waitReady(timeoutMs = 30_000): Promise<void> {
    try {
      await waitFor(async () => (await this.query(['PING'], 500)) === 'PONG', `${this} to answer PING`, timeoutMs);
    } catch (err) {
      throw this.withLog(err);
    }
  }

  withLog(err: unknown): Error {
    const message = err instanceof Error ? err.message : String(err);
    return new Error(`${message}\n--- ${this} log tail ---\n${this.logTail(30)}\n---`, { cause: err });
  }

  /** Runs a command inside the container (REDISCLI_AUTH set when the node has a password); rejects on non-zero exit. */
  async exec(argv: string[]): Promise<string> {
    const env: Record<string, string> = this.password !== undefined ? { REDISCLI_AUTH: this.password } : {};
    const r = await this.container.exec(argv, { env });
    if (r.exitCode !== 0) throw new Error(`${argv.join(' ')} in ${this} failed: ${(r.stdout + r.stderr).trim()}`);
    return r.stdout;
  }

  async cli(...args: string[]): Promise<string> {
    return (await this.exec(['redis-cli', '-h', this.host, '-p', String(this.port), '-e', ...args])).trim();
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.alive) return;
    if (this.paused && signal !== 'SIGKILL') this.resume();
    // PID 1 is tini (init: true): it forwards catchable signals to redis, and
    // SIGKILL ends the whole container. Either way we wait for the exit.
    await this.docker.kill({ signal });
    await this.docker.wait();
    this.alive = false;
    this.paused = false;
  }

  /** Signals redis inside the container by the pid in its pidfile (synchronously, via the docker CLI). */
  private signalInside(signal: 'STOP' | 'CONT'): void {
    if (!this.alive) throw new Error(`${this} is not running`);
    execFileSync('docker', ['exec', this.container.getId(), 'sh', '-c', `kill -${signal} "$(cat /data/redis.pid)"`], {
      stdio: 'ignore',
      timeout: 30_000,
    });
  }

  pause(): void {
    this.signalInside('STOP');
    this.paused = true;
  }

  resume(): void {
    this.signalInside('CONT');
    this.paused = false;
  }

  async restart(): Promise<void> {
    await this.kill('SIGKILL');
    // Plain docker start: the config in /data survives, and unlike
    // StartedTestContainer.restart() it does not wait on the compose health
    // check (a replica of a dead master would never be "healthy").
    const since = Math.floor(Date.now() / 1000);
    await this.docker.start();
    this.alive = true;
    await this.followLogs(since);
    await this.waitReady();
  }

  logTail(lines = 40): string {
    return this.log.slice(-lines).join('\n');
  }
}

interface Environment {
  nodes: Map<string, ContainerNode>;
  stop(): Promise<void>;
}

interface ServiceSpec {
  service: string;
  kind: 'server' | 'sentinel';
  port: number;
  password: string | undefined;
}

async function up(composeFile: string, env: Record<string, string>, specs: ServiceSpec[]): Promise<Environment> {
  const tc = await loadTestcontainers();
  const client = await tc.getContainerRuntimeClient();
  const project = `redis-ha-pool-${randomBytes(4).toString('hex')}`;
  const root = mkdtempSync(path.join(os.tmpdir(), `${project}-`));
  trackDir(root);
  let started: StartedDockerComposeEnvironment | undefined;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      try {
        await started?.down({ timeout: 0, removeVolumes: true });
      } finally {
        await rm(root, { recursive: true, force: true });
        untrackDir(root);
      }
    })());
  try {
    started = await new tc.DockerComposeEnvironment(COMPOSE_DIR, composeFile)
      .withProjectName(project)
      .withEnvironment(env)
      .withDefaultWaitStrategy(tc.Wait.forHealthCheck())
      .withStartupTimeout(120_000)
      .up(specs.map((s) => s.service));
    const nodes = new Map<string, ContainerNode>();
    for (const spec of specs) {
      const container = started.getContainer(`${spec.service}-1`);
      const dir = path.join(root, spec.service);
      mkdirSync(dir);
      const node = new ContainerNode(
        spec.kind,
        spec.port,
        dir,
        spec.password,
        container,
        client.container.getById(container.getId()),
      );
      await node.followLogs();
      nodes.set(spec.service, node);
    }
    return { nodes, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** TLS topologies need the test certificates inside the containers; compose/ does not mount them (yet). */
function rejectTls(tls: unknown): void {
  if (tls !== undefined) {
    throw new Error('REDIS_TOPOLOGY=containers does not support TLS topologies (the tls option): compose/*.yml mounts no certificates. Unset REDIS_TOPOLOGY to run them as local processes.');
  }
}

function extraConf(config: Record<string, string> | undefined, acl: readonly string[] | undefined): string {
  return [...Object.entries(config ?? {}).map(([k, v]) => `${k} ${v}`), ...(acl ?? [])].join('\n');
}

export async function startStandaloneContainers(options: StandaloneOptions): Promise<StandaloneTopology> {
  rejectTls(options.tls);
  const port = await freePort();
  const password = defaultUserPassword(options.acl, options.password);
  const env = await up(
    'standalone.yml',
    { REDIS_PORT: String(port), REDIS_PASSWORD: options.password ?? '', REDIS_EXTRA_CONF: extraConf(options.config, options.acl) },
    [{ service: 'redis', kind: 'server', port, password }],
  );
  const server = env.nodes.get('redis')!;
  try {
    await server.waitReady();
  } catch (err) {
    await env.stop();
    throw err;
  }
  return makeStandaloneTopology(server, password, env.stop);
}

export async function startSentinelContainers(options: SentinelOptions): Promise<SentinelTopology> {
  rejectTls(options.tls);
  const o = { ...SENTINEL_DEFAULTS, ...stripUndefined(options) };
  if (o.replicas !== 2 || o.sentinels !== 3) {
    throw new Error('REDIS_TOPOLOGY=containers: compose/sentinel.yml has exactly 2 replicas and 3 sentinels');
  }
  const [masterPort, r1, r2, s1, s2, s3] = await Promise.all(Array.from({ length: 6 }, () => freePort()));
  const sentinelPassword = defaultUserPassword(o.sentinelAcl, undefined);
  const data = (service: string, port: number): ServiceSpec => ({ service, kind: 'server', port, password: o.masterPassword });
  const sentinel = (service: string, port: number): ServiceSpec => ({ service, kind: 'sentinel', port, password: sentinelPassword });
  const specs = [
    data('master', masterPort!),
    data('replica-1', r1!),
    data('replica-2', r2!),
    sentinel('sentinel-1', s1!),
    sentinel('sentinel-2', s2!),
    sentinel('sentinel-3', s3!),
  ];
  const env = await up(
    'sentinel.yml',
    {
      MASTER_PORT: String(masterPort),
      REPLICA_1_PORT: String(r1),
      REPLICA_2_PORT: String(r2),
      SENTINEL_1_PORT: String(s1),
      SENTINEL_2_PORT: String(s2),
      SENTINEL_3_PORT: String(s3),
      MASTER_NAME: o.masterName,
      QUORUM: String(o.quorum),
      DOWN_AFTER_MS: String(o.downAfterMs),
      FAILOVER_TIMEOUT_MS: String(o.failoverTimeoutMs),
      REDIS_PASSWORD: o.masterPassword ?? '',
      SENTINEL_EXTRA_CONF: (o.sentinelAcl ?? []).join('\n'),
      SENTINEL_PASSWORD: sentinelPassword ?? '',
    },
    specs,
  );
  const get = (s: string) => env.nodes.get(s)!;
  const master = get('master');
  const replicas = [get('replica-1'), get('replica-2')];
  const sentinels = [get('sentinel-1'), get('sentinel-2'), get('sentinel-3')];
  try {
    await withLogs([...env.nodes.values()], (async () => {
      await waitReplicasLinked(replicas);
      await waitSentinelsReady(sentinels, o.masterName, master.address, replicas.length, 30_000);
    })());
  } catch (err) {
    await env.stop();
    throw err;
  }
  return makeSentinelTopology({ masterName: o.masterName, master, replicas, sentinels, stop: env.stop });
}

export async function startClusterContainers(options: ClusterOptions): Promise<ClusterTopology> {
  rejectTls(options.tls);
  const o = { ...CLUSTER_DEFAULTS, ...stripUndefined(options) };
  if (o.masters !== 3 || o.replicasPerMaster !== 1) {
    throw new Error('REDIS_TOPOLOGY=containers: compose/cluster.yml has exactly 3 masters with 1 replica each');
  }
  const ports: number[] = [];
  for (let i = 0; i < 6; i++) ports.push(await freeClusterPort());
  const password = o.config?.requirepass;
  const specs: ServiceSpec[] = ports.map((port, i) => ({ service: `node-${i + 1}`, kind: 'server', port, password }));
  const env = await up(
    'cluster.yml',
    {
      ...Object.fromEntries(ports.map((p, i) => [`CLUSTER_PORT_${i + 1}`, String(p)])),
      CLUSTER_NODE_TIMEOUT: String(o.nodeTimeoutMs),
      REDIS_EXTRA_CONF: extraConf(o.config, o.acl),
    },
    specs,
  );
  const nodes = specs.map((s) => env.nodes.get(s.service)!);
  try {
    await nodes[0]!.exec([
      'redis-cli', '--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas', '1', '--cluster-yes',
    ]);
    await withLogs(nodes, waitClusterFormed(nodes, 3));
    return await makeClusterTopology(nodes, env.stop);
  } catch (err) {
    await env.stop();
    throw err;
  }
}
