/**
 * The redis.conf / sentinel.conf the harness gives its nodes, and how the harness itself
 * reaches a TLS-only node. Shared by the process backend (`topology.ts`, paths on the host)
 * and the container backend (`container-backend.ts`, the same files under `/data` in the
 * container), so both backends run identically configured servers.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { confQuote, renderConfig, type HarnessTls } from './process-node.js';
import type { TopologyTls } from './topology-types.js';
import { serverUnderTest } from './server-features.js';

export interface DataNodeConfig {
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

export function dataNodeConfig(c: DataNodeConfig): string {
  const lines: (readonly [string, string] | string)[] = [
    ...portLines(c.port, c.tls),
    ...(c.tls && c.cluster ? [['tls-cluster', 'yes'] as const] : []),
    ['bind', '127.0.0.1'],
    ['daemonize', 'no'],
    ['dir', confQuote(c.dir)],
    ['logfile', confQuote(path.join(c.dir, 'server.log'))],
    ['save', '""'],
    ['appendonly', 'no'],
    // 6.2 refuses to start on a config line it does not know, and allows DEBUG anyway.
    ...(serverUnderTest().has('enable-debug-command') ? [['enable-debug-command', 'local'] as const] : []),
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

export interface SentinelConfig {
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

export function sentinelConfig(c: SentinelConfig): string {
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

/** What the sentinels of one topology share. */
export interface SentinelSet {
  masterName: string;
  quorum: number;
  downAfterMs: number;
  failoverTimeoutMs: number;
  masterPassword?: string | undefined;
  acl?: readonly string[] | undefined;
  sentinelPassword?: string | undefined;
  tls?: TopologyTls | undefined;
}

/**
 * One config builder (by the node's directory) per sentinel of a topology, for either backend.
 * Pre-assigned sentinel ids let every sentinel list the others (and the replicas) as known from
 * the start, instead of discovering them through hello messages (2 s rounds) and master INFO
 * (10 s rounds).
 */
export function sentinelConfigs(set: SentinelSet, masterPort: number, replicaPorts: readonly number[], sentinelPorts: readonly number[]): Array<(dir: string) => string> {
  const ids = sentinelPorts.map(() => randomBytes(20).toString('hex'));
  return sentinelPorts.map((port, i) => (dir: string) =>
    sentinelConfig({
      ...set,
      port,
      dir,
      myid: ids[i]!,
      masterPort,
      replicaPorts,
      otherSentinels: sentinelPorts.map((p, j) => ({ port: p, id: ids[j]! })).filter((_, j) => j !== i),
    }),
  );
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
export function harnessTls(t: TopologyTls): HarnessTls {
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
