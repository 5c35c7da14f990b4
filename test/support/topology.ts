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
 * With `REDIS_TOPOLOGY=containers` (and a reachable Docker engine) the same
 * functions bring the topologies up from `compose/*.yml` with testcontainers
 * instead; see `container-backend.ts` and `compose/README.md`.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { registerTlsAddress, unregisterTlsAddress } from './mini-client.js';
import { freeClusterPort, freePort } from './ports.js';
import { confQuote, PortInUseError, ProcessNode, renderConfig, type HarnessTls } from './process-node.js';
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
      // Pre-assigned sentinel ids let every sentinel list the others (and the
      // replicas) as known from the start, instead of discovering them through
      // hello messages (2 s rounds) and master INFO (10 s rounds).
      const ids = sentinelPorts.map(() => randomBytes(20).toString('hex'));
      const sentinelPassword = defaultUserPassword(o.sentinelAcl, undefined);
      const sentinels = sentinelPorts.map((port, i) =>
        group.add('sentinel', port, sentinelPassword, (dir) =>
          sentinelConfig({
            port,
            dir,
            myid: ids[i]!,
            masterName: o.masterName,
            masterPort: masterPort!,
            quorum: o.quorum,
            downAfterMs: o.downAfterMs,
            failoverTimeoutMs: o.failoverTimeoutMs,
            masterPassword: o.masterPassword,
            replicaPorts,
            otherSentinels: sentinelPorts.map((p, j) => ({ port: p, id: ids[j]! })).filter((_, j) => j !== i),
            acl: o.sentinelAcl,
            sentinelPassword,
            tls: o.tls,
          }),
          o.tls,
        ),
      );
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

interface DataNodeConfig {
  port: number;
  dir: string;
  password?: string | undefined;
  replicaOf?: number | undefined;
  acl?: readonly string[] | undefined;
  extra?: Record<string, string> | undefined;
  /** TLS-only: `port 0` and `tls-port <port>`. */
  tls?: TopologyTls | undefined;
  /** A cluster node: with `tls`, the cluster bus uses TLS too. */
  cluster?: boolean;
}

function dataNodeConfig(c: DataNodeConfig): string {
  const lines: (readonly [string, string] | string)[] = [
    ...portLines(c.port, c.tls),
    ...(c.tls && c.cluster ? [['tls-cluster', 'yes'] as const] : []),
    ['bind', '127.0.0.1'],
    ['daemonize', 'no'],
    ['dir', confQuote(c.dir)],
    ['logfile', confQuote(path.join(c.dir, 'server.log'))],
    ['save', '""'],
    ['appendonly', 'no'],
    ['enable-debug-command', 'local'],
    // Fast (re)syncs, so replicas are linked quickly after start and failover.
    ['repl-diskless-sync', 'yes'],
    ['repl-diskless-sync-delay', '0'],
  ];
  if (c.password !== undefined) lines.push(['requirepass', confQuote(c.password)], ['masterauth', confQuote(c.password)]);
  if (c.replicaOf !== undefined) lines.push(['replicaof', `127.0.0.1 ${c.replicaOf}`]);
  for (const [k, v] of Object.entries(c.extra ?? {})) lines.push([k, v]);
  lines.push(...(c.acl ?? []));
  return renderConfig(lines);
}

interface SentinelConfig {
  port: number;
  dir: string;
  myid: string;
  masterName: string;
  masterPort: number;
  quorum: number;
  downAfterMs: number;
  failoverTimeoutMs: number;
  masterPassword?: string | undefined;
  replicaPorts: readonly number[];
  otherSentinels: readonly { port: number; id: string }[];
  acl?: readonly string[] | undefined;
  /** The sentinels' own default-user password (from `acl`): the others need it to talk to each other. */
  sentinelPassword?: string | undefined;
  /** TLS-only sentinel, talking TLS to the data nodes and the other sentinels (`tls-replication yes`). */
  tls?: TopologyTls | undefined;
}

function sentinelConfig(c: SentinelConfig): string {
  const m = c.masterName;
  const lines: (readonly [string, string] | string)[] = [
    ...portLines(c.port, c.tls),
    ['bind', '127.0.0.1'],
    ['daemonize', 'no'],
    ['dir', confQuote(c.dir)],
    ['logfile', confQuote(path.join(c.dir, 'sentinel.log'))],
    ['sentinel myid', c.myid],
    ['sentinel resolve-hostnames', 'no'],
    ['sentinel announce-ip', '127.0.0.1'],
    ['sentinel monitor', `${m} 127.0.0.1 ${c.masterPort} ${c.quorum}`],
    ['sentinel down-after-milliseconds', `${m} ${c.downAfterMs}`],
    ['sentinel failover-timeout', `${m} ${c.failoverTimeoutMs}`],
    ['sentinel parallel-syncs', `${m} 1`],
  ];
  if (c.masterPassword !== undefined) lines.push(['sentinel auth-pass', `${m} ${confQuote(c.masterPassword)}`]);
  for (const p of c.replicaPorts) lines.push(['sentinel known-replica', `${m} 127.0.0.1 ${p}`]);
  for (const s of c.otherSentinels) lines.push(['sentinel known-sentinel', `${m} 127.0.0.1 ${s.port} ${s.id}`]);
  if (c.sentinelPassword !== undefined) lines.push(['sentinel sentinel-pass', confQuote(c.sentinelPassword)]);
  lines.push(...(c.acl ?? []));
  return renderConfig(lines);
}

/** The certificate the nodes present for `serverCert`. */
function serverCertOf(t: TopologyTls) {
  switch (t.serverCert ?? 'good') {
    case 'good': return t.certs.server;
    case 'expired': return t.certs.expired;
    case 'wrong-host': return t.certs.wrongHost;
    default: throw new Error(`tls.serverCert must be 'good', 'expired' or 'wrong-host' (got ${String(t.serverCert)})`);
  }
}

/**
 * `port <port>`, or for a TLS-only node `port 0` plus `tls-port <port>`, its certificate,
 * the CA, `tls-auth-clients` and `tls-replication yes`: the node's outgoing links (replica to
 * master, sentinel to nodes and to other sentinels) use TLS too and present the same
 * certificate as their client certificate.
 */
function portLines(port: number, t: TopologyTls | undefined): (readonly [string, string])[] {
  if (!t) return [['port', String(port)]];
  const cert = serverCertOf(t);
  return [
    ['port', '0'],
    ['tls-port', String(port)],
    ['tls-cert-file', confQuote(cert.certFile)],
    ['tls-key-file', confQuote(cert.keyFile)],
    ['tls-ca-cert-file', confQuote(t.certs.ca.certFile)],
    ['tls-auth-clients', t.authClients ? 'yes' : 'no'],
    ['tls-replication', 'yes'],
  ];
}

/**
 * How the harness reaches a TLS-only node: trusting the CA and presenting the client
 * certificate (works with and without `tls-auth-clients`). The harness checks nothing about
 * the server's name (it connects to 127.0.0.1 whatever the certificate says) and, for a
 * deliberately expired certificate, not the chain either: verification is the library's test.
 */
function harnessTls(t: TopologyTls): HarnessTls {
  const verify = (t.serverCert ?? 'good') !== 'expired';
  return {
    client: {
      ca: t.certs.ca.cert,
      cert: t.certs.client.cert,
      key: t.certs.client.key,
      rejectUnauthorized: verify,
      checkServerIdentity: () => undefined,
    },
    cliArgs: [
      '--tls', '--cacert', t.certs.ca.certFile, '--cert', t.certs.client.certFile, '--key', t.certs.client.keyFile,
      ...(verify ? [] : ['--insecure']),
    ],
  };
}

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

