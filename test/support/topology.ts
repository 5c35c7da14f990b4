/**
 * Real-server topologies for integration tests: standalone, Sentinel and
 * Cluster.
 *
 * By default every node is a `redis-server` / `redis-sentinel` child process
 * bound to 127.0.0.1 on a free port, with its config, log and data in a
 * fresh temp dir (removed on `stop()`). Processes are stopped by PID only;
 * a process-wide reaper SIGKILLs any still alive when the test process exits
 * or gets SIGINT/SIGTERM.
 *
 * With `tls: { certs }` (certificates from `makeTestCerts()`) every node is
 * TLS-only (`port 0`, `tls-port`, `tls-replication yes`, `tls-cluster yes` for a
 * cluster); the harness's own checks, `cli()` and the mini-client then use TLS too.
 *
 * With `REDIS_TOPOLOGY=containers` (and a reachable Docker engine on this
 * machine) the same functions run every node in its own container, started with
 * testcontainers' GenericContainer on the host network, with the same config
 * (`node-config.ts`); see `container-backend.ts` and `npm run test:containers`.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { registerTlsAddress, unregisterTlsAddress } from './mini-client.js';
import { freeClusterPort, freePort } from './ports.js';
import { dataNodeConfig, harnessTls, sentinelConfigs } from './node-config.js';
import { confQuote, PortInUseError, ProcessNode } from './process-node.js';
import { trackDir, untrackDir } from './reaper.js';
import { redisBinaries, type RedisBinaries } from './redis-binaries.js';
import {
  CLUSTER_DEFAULTS,
  defaultUserPassword,
  makeClusterTopology,
  makeSentinelTopology,
  makeStandaloneTopology,
  SENTINEL_DEFAULTS,
  stripUndefined,
  waitAllReady,
  waitClusterFormed,
  waitReplicasLinked,
  waitSentinelsReady,
  withLogs,
} from './topology-ops.js';
import type {
  ClusterOptions,
  ClusterTopology,
  SentinelOptions,
  SentinelTopology,
  StandaloneOptions,
  StandaloneTopology,
  TopologyTls,
} from './topology-types.js';

export type {
  ClusterOptions,
  ClusterTopology,
  NodeAddress,
  SentinelOptions,
  SentinelTopology,
  ServerHandle,
  StandaloneOptions,
  StandaloneTopology,
  TopologyTls,
} from './topology-types.js';
export { freePort } from './ports.js';
export { makeTestCerts, type CertFiles, type TestCerts } from './tls-certs.js';
export { waitFor } from './wait.js';

/** 'process' (default) or 'containers' (REDIS_TOPOLOGY=containers). */
export function topologyBackend(): 'process' | 'containers' {
  const v = (process.env.REDIS_TOPOLOGY ?? 'process').toLowerCase();
  if (v === 'containers' || v === 'container' || v === 'docker') return 'containers';
  if (v === 'process' || v === 'processes' || v === '') return 'process';
  throw new Error(`REDIS_TOPOLOGY=${process.env.REDIS_TOPOLOGY}: expected 'process' or 'containers'`);
}

// The container backend pulls in testcontainers, so it is only ever loaded here, on demand.
const containerBackend = () => import('./container-backend.js');

export async function startStandalone(options: StandaloneOptions = {}): Promise<StandaloneTopology> {
  if (topologyBackend() === 'containers') return (await containerBackend()).startStandaloneContainers(options);
  const bins = await redisBinaries();
  return withPortRetry(async () => {
    const group = new ProcessGroup('standalone', bins);
    try {
      const password = defaultUserPassword(options.acl, options.password);
      const server = group.add('server', await freePort(), password, (dir, port) =>
        dataNodeConfig({ port, dir, password: options.password, acl: options.acl, extra: options.config, tls: options.tls }),
        options.tls,
      );
      server.spawn();
      await server.waitReady();
      return makeStandaloneTopology(server, password, () => group.stop(), options.tls !== undefined);
    } catch (err) {
      await group.stop();
      throw err;
    }
  });
}

export async function startSentinel(options: SentinelOptions = {}): Promise<SentinelTopology> {
  if (topologyBackend() === 'containers') return (await containerBackend()).startSentinelContainers(options);
  const o = { ...SENTINEL_DEFAULTS, ...stripUndefined(options) };
  const bins = await redisBinaries();
  return withPortRetry(async () => {
    const group = new ProcessGroup('sentinel', bins);
    try {
      const [masterPort, ...replicaPorts] = await Promise.all(Array.from({ length: o.replicas + 1 }, () => freePort()));
      const sentinelPorts = await Promise.all(Array.from({ length: o.sentinels }, () => freePort()));
      const dataConfig = (replicaOf: number | undefined) => (dir: string, port: number) =>
        dataNodeConfig({ port, dir, password: o.masterPassword, replicaOf, tls: o.tls });
      const master = group.add('server', masterPort!, o.masterPassword, dataConfig(undefined), o.tls);
      const replicas = replicaPorts.map((p) => group.add('server', p, o.masterPassword, dataConfig(masterPort), o.tls));
      const sentinelPassword = defaultUserPassword(o.sentinelAcl, undefined);
      const configs = sentinelConfigs({ ...o, acl: o.sentinelAcl, sentinelPassword }, masterPort!, replicaPorts, sentinelPorts);
      const sentinels = sentinelPorts.map((port, i) => group.add('sentinel', port, sentinelPassword, configs[i]!, o.tls));
      const dataNodes = [master, ...replicas];
      for (const n of dataNodes) n.spawn();
      await withLogs(group.nodes, (async () => {
        await waitAllReady(dataNodes);
        await waitReplicasLinked(replicas);
      })());
      // Sentinels start once the replicas are linked, so their first INFO of
      // each replica already shows master-link-status ok.
      for (const s of sentinels) s.spawn();
      await withLogs(group.nodes, (async () => {
        await waitAllReady(sentinels);
        await waitSentinelsReady(sentinels, o.masterName, master.address, replicas.length);
      })());
      return makeSentinelTopology({ masterName: o.masterName, master, replicas, sentinels, stop: () => group.stop() });
    } catch (err) {
      await group.stop();
      throw err;
    }
  });
}

export async function startCluster(options: ClusterOptions = {}): Promise<ClusterTopology> {
  if (topologyBackend() === 'containers') return (await containerBackend()).startClusterContainers(options);
  const o = { ...CLUSTER_DEFAULTS, ...stripUndefined(options) };
  if (o.masters < 3) throw new Error('redis-cli --cluster create needs at least 3 masters');
  const bins = await redisBinaries();
  const total = o.masters * (1 + o.replicasPerMaster);
  return withPortRetry(async () => {
    const group = new ProcessGroup('cluster', bins);
    try {
      const ports: number[] = [];
      for (let i = 0; i < total; i++) ports.push(await freeClusterPort());
      const password = o.config?.requirepass;
      const nodes = ports.map((port) =>
        group.add('server', port, password, (dir) =>
          dataNodeConfig({
            port,
            dir,
            acl: o.acl,
            tls: o.tls,
            cluster: true,
            extra: {
              'cluster-enabled': 'yes',
              'cluster-config-file': confQuote(path.join(dir, 'nodes.conf')),
              'cluster-node-timeout': String(o.nodeTimeoutMs),
              ...(password !== undefined ? { masterauth: password } : {}),
              ...o.config,
            },
          }),
          o.tls,
        ),
      );
      for (const n of nodes) n.spawn();
      await withLogs(nodes, waitAllReady(nodes));
      await withLogs(
        nodes,
        runCli(bins, password, [
          ...(o.tls ? harnessTls(o.tls).cliArgs : []),
          '--cluster', 'create', ...nodes.map((n) => `${n.host}:${n.port}`),
          '--cluster-replicas', String(o.replicasPerMaster), '--cluster-yes',
        ]),
      );
      await withLogs(nodes, waitClusterFormed(nodes, o.masters));
      return await makeClusterTopology(nodes, () => group.stop());
    } catch (err) {
      await group.stop();
      throw err;
    }
  });
}

// ---------------------------------------------------------------- internals

const DIR_PREFIX = 'redis-ha-pool-';
const OWNER_FILE = 'owner.pid';
let swept = false;

/**
 * Removes temp dirs left behind by test processes that were SIGKILLed (their
 * redis children die with them through setpriv's parent-death signal, but
 * nobody removed the dirs). A dir is stale when its owner pid is gone.
 */
function sweepStaleDirs(): void {
  if (swept) return;
  swept = true;
  const tmp = os.tmpdir();
  for (const name of readdirSync(tmp)) {
    if (!/^redis-ha-pool-(standalone|sentinel|cluster|certs)-/.test(name)) continue;
    const dir = path.join(tmp, name);
    try {
      const owner = Number(readFileSync(path.join(dir, OWNER_FILE), 'utf8'));
      if (!Number.isInteger(owner) || owner <= 0 || isProcessAlive(owner)) continue;
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // no owner file (yet) or already gone: leave it
    }
  }
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The nodes of one topology, in one temp dir; `stop()` kills them by PID and removes the dir. */
class ProcessGroup {
  readonly root: string;
  readonly nodes: ProcessNode[] = [];
  private stopping: Promise<void> | undefined;

  constructor(
    kind: string,
    private readonly binaries: RedisBinaries,
  ) {
    sweepStaleDirs();
    this.root = mkdtempSync(path.join(os.tmpdir(), `${DIR_PREFIX}${kind}-`));
    trackDir(this.root);
    writeFileSync(path.join(this.root, OWNER_FILE), String(process.pid));
  }

  add(
    kind: 'server' | 'sentinel',
    port: number,
    password: string | undefined,
    config: (dir: string, port: number) => string,
    tls?: TopologyTls,
  ): ProcessNode {
    const dir = path.join(this.root, `${kind}-${port}`);
    mkdirSync(dir);
    const harness = tls ? harnessTls(tls) : undefined;
    const node = new ProcessNode({ kind, port, dir, config: config(dir, port), password, binaries: this.binaries, tls: harness });
    // Every harness query to this address (sentinel-helpers included) goes over TLS.
    if (harness) registerTlsAddress(node.address, harness.client);
    this.nodes.push(node);
    return node;
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.all(this.nodes.map((n) => n.kill('SIGKILL')));
      for (const n of this.nodes) if (n.tls) unregisterTlsAddress(n.address);
      if (process.env.REDIS_TOPOLOGY_KEEP_DIR) {
        process.stderr.write(`[redis-topology] keeping ${this.root}\n`);
      } else {
        await rm(this.root, { recursive: true, force: true });
      }
      untrackDir(this.root);
    })();
    return this.stopping;
  }
}

/** Retries a whole start-up when a node lost its port to another process between pick and bind. */
async function withPortRetry<T>(start: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await start();
    } catch (err) {
      if (!causedByPortInUse(err) || i >= attempts) throw err;
    }
  }
}

function causedByPortInUse(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof PortInUseError) return true;
  }
  return false;
}

function runCli(bins: RedisBinaries, password: string | undefined, args: string[]): Promise<string> {
  const env = { ...process.env };
  delete env.REDISCLI_AUTH;
  if (password !== undefined) env.REDISCLI_AUTH = password;
  return new Promise((resolve, reject) => {
    execFile(bins.redisCli, args, { env, timeout: 60_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`redis-cli ${args.join(' ')} failed: ${`${stdout}${stderr}`.trim() || err.message}`));
      else resolve(stdout);
    });
  });
}

