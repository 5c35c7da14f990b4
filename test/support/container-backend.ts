/**
 * The container backend (REDIS_TOPOLOGY=containers): the same topologies as the process
 * backend, each node a container started with testcontainers' `GenericContainer`. Loaded
 * only through a dynamic import from `topology.ts`, and it loads testcontainers itself only
 * through a dynamic import, so the process backend never touches either.
 *
 * Image: `container-image.ts` builds one locally from this machine's Redis binaries
 * (nothing is pulled), unless `REDIS_CONTAINER_IMAGE` names another.
 *
 * Networking: every container uses the host network and binds 127.0.0.1 on a port chosen
 * here with `freePort()`. So what sentinels and cluster nodes announce (127.0.0.1:<port>,
 * in SENTINEL replies, CLUSTER SLOTS, MOVED/ASK) is exactly what the pool under test, on
 * the host, reaches: no port mapping, no announce-ip/port and no client-side address map.
 * It needs no iptables rules (the engine runs with --iptables=false) and no bridge, and it
 * needs the engine on this machine (a Linux engine; not a remote DOCKER_HOST).
 *
 * Each node gets the very config the process backend writes (`node-config.ts`), with its
 * host directory mounted at `/data`. Compose is not used (Compose v2 is not available where
 * these tests run); `compose/*.yml` stays for people who run `docker compose` themselves.
 *
 * Clean-up: `stop()` removes the containers (`docker rm -f`) and the directories. A test
 * process that exits without `stop()` removes its containers from its exit handler
 * (reaper.ts), and containers left by a SIGKILLed test process (labelled with its pid) are
 * removed by the next one. testcontainers' own reaper (Ryuk) is off by default here: its
 * image would have to be pulled.
 *
 * Run as a script (`tsx test/support/container-backend.ts`) it connects to the engine,
 * builds the image and prints its name: `scripts/test-containers.sh` does that once before
 * the test workers start, so they find the image built.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type Dockerode from 'dockerode';
import { redisImage } from './container-image.js';
import { ContainerNode, DATA_DIR } from './container-node.js';
import { registerTlsAddress, unregisterTlsAddress } from './mini-client.js';
import { dataNodeConfig, harnessTls, sentinelConfigs } from './node-config.js';
import { freeClusterPort, freePort } from './ports.js';
import { confQuote, PortInUseError } from './process-node.js';
import { trackDir, trackExitHook, untrackDir, untrackExitHook } from './reaper.js';
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

type Testcontainers = typeof import('testcontainers');

const OWNER_LABEL = 'redis-ha-pool.owner-pid';
const HOST_LABEL = 'redis-ha-pool.owner-host';
const TOPOLOGY_LABEL = 'redis-ha-pool.topology';

interface Engine {
  tc: Testcontainers;
  docker: Dockerode;
  image: string;
}

let engine: Promise<Engine> | undefined;

function connectEngine(): Promise<Engine> {
  engine ??= (async () => {
    // Ryuk (testcontainers' reaper) is an image to pull; the harness cleans up itself.
    process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
    // The containers listen on this machine's loopback. Without this, testcontainers run
    // inside a container (/.dockerenv) looks for the gateway of a `bridge` network, which an
    // engine started with --bridge=none does not have.
    process.env.TESTCONTAINERS_HOST_OVERRIDE ??= '127.0.0.1';
    const tc = await import('testcontainers');
    let docker: Dockerode;
    try {
      docker = (await tc.getContainerRuntimeClient()).container.dockerode;
    } catch (err) {
      throw new Error(
        `REDIS_TOPOLOGY=containers, but no container engine is reachable (DOCKER_HOST=${process.env.DOCKER_HOST ?? '(unset)'}; ` +
          `testcontainers: ${err instanceof Error ? err.message : String(err)}). ` +
          'Run `npm run test:containers`, which starts an engine of its own, or unset REDIS_TOPOLOGY to use local processes.',
        { cause: err },
      );
    }
    await removeOrphans(docker);
    return { tc, docker, image: await redisImage(docker) };
  })();
  engine.catch(() => (engine = undefined));
  return engine;
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes containers whose owning test process (same host) is gone: it was SIGKILLed before its exit handler ran. */
async function removeOrphans(docker: Dockerode): Promise<void> {
  const mine = await docker.listContainers({ all: true, filters: { label: [OWNER_LABEL, `${HOST_LABEL}=${os.hostname()}`] } });
  await Promise.all(
    mine
      .filter((c) => !isProcessAlive(Number(c.Labels[OWNER_LABEL])))
      .map((c) => docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined)),
  );
}

/** Every host file the TLS config names, to mount at the same path. */
function tlsFiles(t: TopologyTls | undefined): string[] {
  if (!t) return [];
  const c = t.certs;
  return [c.ca, c.server, c.client, c.expired, c.wrongHost].flatMap((f) => [f.certFile, f.keyFile]).filter((f, i, all) => all.indexOf(f) === i);
}

/** The containers of one topology and its host directory; `stop()` removes both. */
class ContainerGroup {
  readonly root: string;
  readonly project = `redis-ha-pool-${randomBytes(4).toString('hex')}`;
  readonly nodes: ContainerNode[] = [];
  private stopping: Promise<void> | undefined;
  private readonly exitHook = (): void => {
    // Synchronous, at process exit: the docker CLI, by container name.
    execFileSync('docker', ['rm', '-f', '-v', ...this.nodes.map((n) => n.name)], { stdio: 'ignore', timeout: 30_000 });
  };

  constructor(
    kind: string,
    private readonly engine: Engine,
  ) {
    this.root = mkdtempSync(path.join(os.tmpdir(), `redis-ha-pool-${kind}-`));
    trackDir(this.root);
    trackExitHook(this.exitHook);
    writeFileSync(path.join(this.root, 'owner.pid'), String(process.pid));
  }

  add(
    kind: 'server' | 'sentinel',
    port: number,
    password: string | undefined,
    config: (dir: string) => string,
    tls: TopologyTls | undefined,
  ): ContainerNode {
    const dir = path.join(this.root, `${kind}-${port}`);
    mkdirSync(dir);
    const harness = tls ? harnessTls(tls) : undefined;
    const node = new ContainerNode({
      kind,
      port,
      dir,
      config: config(DATA_DIR),
      password,
      tls: harness,
      readOnlyFiles: tlsFiles(tls),
      image: this.engine.image,
      name: `${this.project}-${kind}-${port}`,
      labels: { [OWNER_LABEL]: String(process.pid), [HOST_LABEL]: os.hostname(), [TOPOLOGY_LABEL]: this.project },
    });
    if (harness) registerTlsAddress(node.address, harness.client);
    this.nodes.push(node);
    return node;
  }

  async start(nodes: readonly ContainerNode[]): Promise<void> {
    await Promise.all(nodes.map((n) => n.start(this.engine.tc, this.engine.docker)));
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.all(
        this.nodes.map((n) =>
          this.engine.docker
            .getContainer(n.name)
            .remove({ force: true, v: true })
            .catch((err: { statusCode?: number }) => {
              if (err.statusCode !== 404) throw err; // 404: never created, or already removed
            }),
        ),
      );
      untrackExitHook(this.exitHook);
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

/** Starts a topology; a node that lost its port to another process between pick and bind restarts the whole thing. */
async function startGroup<T>(kind: string, build: (group: ContainerGroup) => Promise<T>): Promise<T> {
  const e = await connectEngine();
  for (let attempt = 1; ; attempt++) {
    const group = new ContainerGroup(kind, e);
    try {
      return await build(group);
    } catch (err) {
      await group.stop();
      if (!(err instanceof PortInUseError || (err as Error)?.cause instanceof PortInUseError) || attempt >= 3) throw err;
    }
  }
}

export function startStandaloneContainers(options: StandaloneOptions): Promise<StandaloneTopology> {
  return startGroup('standalone', async (group) => {
    const password = defaultUserPassword(options.acl, options.password);
    const port = await freePort();
    const server = group.add('server', port, password, (dir) =>
      dataNodeConfig({ port, dir, password: options.password, acl: options.acl, extra: options.config, tls: options.tls }),
      options.tls,
    );
    await group.start([server]);
    await server.waitReady();
    return makeStandaloneTopology(server, password, () => group.stop(), options.tls !== undefined);
  });
}

export function startSentinelContainers(options: SentinelOptions): Promise<SentinelTopology> {
  const o = { ...SENTINEL_DEFAULTS, ...stripUndefined(options) };
  return startGroup('sentinel', async (group) => {
    const [masterPort, ...replicaPorts] = await Promise.all(Array.from({ length: o.replicas + 1 }, () => freePort()));
    const sentinelPorts = await Promise.all(Array.from({ length: o.sentinels }, () => freePort()));
    const dataConfig = (port: number, replicaOf: number | undefined) => (dir: string) =>
      dataNodeConfig({ port, dir, password: o.masterPassword, replicaOf, tls: o.tls });
    const master = group.add('server', masterPort!, o.masterPassword, dataConfig(masterPort!, undefined), o.tls);
    const replicas = replicaPorts.map((p) => group.add('server', p, o.masterPassword, dataConfig(p, masterPort), o.tls));
    const sentinelPassword = defaultUserPassword(o.sentinelAcl, undefined);
    const configs = sentinelConfigs({ ...o, acl: o.sentinelAcl, sentinelPassword }, masterPort!, replicaPorts, sentinelPorts);
    const sentinels = sentinelPorts.map((port, i) => group.add('sentinel', port, sentinelPassword, configs[i]!, o.tls));
    const dataNodes = [master, ...replicas];
    await withLogs(group.nodes, (async () => {
      await group.start(dataNodes);
      await waitAllReady(dataNodes);
      await waitReplicasLinked(replicas);
    })());
    // Sentinels start once the replicas are linked, so their first INFO of each replica shows the link up.
    await withLogs(group.nodes, (async () => {
      await group.start(sentinels);
      await waitAllReady(sentinels);
      await waitSentinelsReady(sentinels, o.masterName, master.address, replicas.length, 30_000);
    })());
    return makeSentinelTopology({ masterName: o.masterName, master, replicas, sentinels, stop: () => group.stop() });
  });
}

export function startClusterContainers(options: ClusterOptions): Promise<ClusterTopology> {
  const o = { ...CLUSTER_DEFAULTS, ...stripUndefined(options) };
  if (o.masters < 3) throw new Error('redis-cli --cluster create needs at least 3 masters');
  const total = o.masters * (1 + o.replicasPerMaster);
  return startGroup('cluster', async (group) => {
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
            'cluster-config-file': confQuote(`${dir}/nodes.conf`),
            'cluster-node-timeout': String(o.nodeTimeoutMs),
            ...(password !== undefined ? { masterauth: password } : {}),
            ...o.config,
          },
        }),
        o.tls,
      ),
    );
    await withLogs(nodes, (async () => {
      await group.start(nodes);
      await waitAllReady(nodes);
    })());
    // `redis-cli --cluster create`, run in the first node's container (its cli() adds -e, which create does not take).
    const first = nodes[0]!;
    await withLogs(nodes, first.exec([
      'redis-cli', ...(first.tls?.cliArgs ?? []),
      '--cluster', 'create', ...nodes.map((n) => `${n.host}:${n.port}`),
      '--cluster-replicas', String(o.replicasPerMaster), '--cluster-yes',
    ]));
    await withLogs(nodes, waitClusterFormed(nodes, o.masters));
    return await makeClusterTopology(nodes, () => group.stop());
  });
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  const { image } = await connectEngine();
  process.stderr.write(`[container-backend] image ${image} ready in ${Date.now() - started} ms\n`);
  process.stdout.write(`${image}\n`);
}
