/**
 * The public shapes of the topology harness. `topology.ts` re-exports them;
 * they live here so the process and container backends can share them
 * without importing each other.
 */
import type { NodeAddress } from '../../src/types.js';
import type { TestCerts } from './tls-certs.js';

export type { NodeAddress };

/**
 * Makes every node of a topology TLS-only: `port 0`, `tls-port <port>` (the node's `port`
 * is then its TLS port), the server certificate, the CA, `tls-replication yes` (replicas and
 * sentinels talk TLS to the nodes) and, for a cluster, `tls-cluster yes` (the bus too).
 * The harness's own checks and `cli()` go over TLS as well, with the client certificate.
 */
export interface TopologyTls {
  /** From `makeTestCerts()`. */
  certs: TestCerts;
  /** `tls-auth-clients yes` (mutual TLS: clients must present a certificate the CA signed). Default false. */
  authClients?: boolean;
  /**
   * The certificate every node presents. Default 'good' (`IP:127.0.0.1, DNS:localhost`).
   * 'expired' and 'wrong-host' are for testing client verification against a standalone
   * server (nodes verify each other's certificate against the CA, so an expired one breaks
   * replication).
   */
  serverCert?: 'good' | 'expired' | 'wrong-host';
}

export interface ServerHandle {
  readonly host: string;
  readonly port: number;
  readonly address: NodeAddress;
  /**
   * OS pid of the redis process (the last one started). For a container: the host pid of
   * redis in it (the engine's `State.Pid`), so `process.kill(pid, 0)` tells whether it runs.
   */
  readonly pid: number | undefined;
  /** The node's own directory (config, logs, cluster config); for a container, the host directory mounted at `/data`. */
  readonly dir: string;
  readonly kind: 'server' | 'sentinel';
  /**
   * Runs `redis-cli -h <host> -p <port> -e <args...>` (authenticated when the
   * node has a password) and returns its trimmed stdout. Rejects when
   * redis-cli exits non-zero: connection failure, or an error reply (`-e`).
   */
  cli(...args: string[]): Promise<string>;
  /** Sends `signal` (default SIGKILL; `docker kill --signal` for a container) and resolves when the process has exited. No-op if not alive. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGSTOP (`docker pause` for a container): the process stays alive but stops answering. */
  pause(): void;
  /** SIGCONT (`docker unpause`) after `pause()`. */
  resume(): void;
  /**
   * Starts the node again on the same port with the same (possibly
   * server-rewritten) config file and waits until it answers PING.
   * A node still alive is SIGKILLed first. A container is started again (`docker start`).
   */
  restart(): Promise<void>;
  /** Started and not exited (a paused node is alive). */
  isAlive(): boolean;
  /** True between `pause()` and `resume()`. */
  isPaused(): boolean;
  /** The last `lines` lines (default 40) of the node's log and captured stdout/stderr. */
  logTail(lines?: number): string;
}

export interface StandaloneOptions {
  /** `requirepass` for the default user. */
  password?: string;
  /** Extra ACL lines like `user alice on >secret ~* +@all`. */
  acl?: string[];
  /** Extra redis.conf directives. */
  config?: Record<string, string>;
  /** TLS-only server (see `TopologyTls`). */
  tls?: TopologyTls;
}

export interface StandaloneTopology {
  server: ServerHandle;
  address: NodeAddress;
  /** `redis://[:password@]127.0.0.1:<port>` (`rediss://` for a TLS server) */
  url: string;
  stop(): Promise<void>;
}

export interface SentinelOptions {
  /** Default 'mymaster'. */
  masterName?: string;
  /** Default 2. */
  replicas?: number;
  /** Default 3. */
  sentinels?: number;
  /** Default 2. */
  quorum?: number;
  /** `sentinel down-after-milliseconds`, default 1000. */
  downAfterMs?: number;
  /** `sentinel failover-timeout`, default 5000. */
  failoverTimeoutMs?: number;
  /** Extra ACL lines for the sentinels, e.g. a user without SUBSCRIBE. */
  sentinelAcl?: string[];
  /** requirepass + masterauth on the data nodes, `sentinel auth-pass` on the sentinels. */
  masterPassword?: string;
  /** Data nodes and sentinels TLS-only (see `TopologyTls`); sentinels reach the nodes and each other over TLS. */
  tls?: TopologyTls;
}

export interface SentinelTopology {
  masterName: string;
  /** The INITIAL master. */
  master: ServerHandle;
  replicas: ServerHandle[];
  sentinels: ServerHandle[];
  sentinelAddresses: NodeAddress[];
  /** master + replicas */
  dataNodes: ServerHandle[];
  /** Asks the first alive, unpaused sentinel for the current master address. */
  currentMaster(): Promise<NodeAddress>;
  /** The handle of the node (data node or sentinel) at this address. */
  handleFor(a: NodeAddress): ServerHandle | undefined;
  /**
   * Waits until all alive, unpaused sentinels agree on a master other than
   * `from`, and that node reports role master. Returns its address.
   */
  waitForNewMaster(from: NodeAddress, timeoutMs?: number): Promise<NodeAddress>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** Default 3. */
  masters?: number;
  /** Default 1. */
  replicasPerMaster?: number;
  /** Extra redis.conf directives for every node. */
  config?: Record<string, string>;
  /** `cluster-node-timeout`, default 2000. */
  nodeTimeoutMs?: number;
  /** Extra ACL lines for every node, like `user app on >pw ~* &* +@all -cluster|shards`. */
  acl?: string[];
  /** Every node TLS-only with `tls-cluster yes` (see `TopologyTls`). */
  tls?: TopologyTls;
}

export interface ClusterTopology {
  nodes: ServerHandle[];
  seeds: NodeAddress[];
  /** Alive, unpaused nodes whose ROLE is master, asked now. */
  masters(): Promise<ServerHandle[]>;
  /** Alive, unpaused nodes whose ROLE is slave, asked now. */
  replicas(): Promise<ServerHandle[]>;
  /** The current master owning `slot` (by majority of the alive nodes' CLUSTER SLOTS). */
  nodeForSlot(slot: number): Promise<ServerHandle>;
  handleFor(a: NodeAddress): ServerHandle | undefined;
  /**
   * Every alive, unpaused node says cluster_state:ok, all of them report the
   * same owner for every one of the 16384 slots, and every owner is alive and
   * unpaused (so after killing a master this waits for its replica to take over).
   */
  waitForClusterOk(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}
