#!/usr/bin/env node
// Generates src/commands/command-table.generated.ts and the COMMAND reply fixtures from a
// real redis-server, so the built-in command table (used when COMMAND is denied by ACL)
// says exactly what the server would say instead of what someone remembered.
//
//   node scripts/generate-command-table.mjs             # command table + COMMAND fixtures
//   node scripts/generate-command-table.mjs --cluster   # also CLUSTER SHARDS/SLOTS fixtures
//
// Environment: REDIS_SERVER (default redis-server), REDIS_CLI (default redis-cli).
// Every server is started in a temp dir with `--save ''` and killed by its own PID.
//
// No library code is imported: this script must run before src/ compiles, so it carries
// its own tiny RESP2/RESP3 client.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const REDIS_SERVER = process.env.REDIS_SERVER ?? 'redis-server';
const REDIS_CLI = process.env.REDIS_CLI ?? 'redis-cli';
const withCluster = process.argv.includes('--cluster');

// ---------------------------------------------------------------------------------------
// Minimal RESP client
// ---------------------------------------------------------------------------------------

class Incomplete extends Error {}

/** Parses one value at `pos`; throws Incomplete when the buffer ends mid-value. */
function parse(buf, pos) {
  const lineEnd = (p) => {
    const i = buf.indexOf('\r\n', p, 'latin1');
    if (i === -1) throw new Incomplete();
    return i;
  };
  const type = String.fromCharCode(buf[pos]);
  const e = lineEnd(pos + 1);
  const line = buf.toString('utf8', pos + 1, e);
  let p = e + 2;
  const aggregate = (n, make) => {
    const items = [];
    for (let i = 0; i < n; i++) {
      const [v, np] = parse(buf, p);
      items.push(v);
      p = np;
    }
    return [make(items), p];
  };
  switch (type) {
    case '+': return [line, p];
    case '-': return [{ error: line }, p];
    case ':': return [Number(line), p];
    case ',': return [Number(line), p];
    case '(': return [BigInt(line), p];
    case '#': return [line === 't', p];
    case '_': return [null, p];
    case '$': case '=': case '!': {
      const n = Number(line);
      if (n < 0) return [null, p];
      if (buf.length < p + n + 2) throw new Incomplete();
      let s = buf.toString('utf8', p, p + n);
      if (type === '=') s = s.slice(4);
      return [type === '!' ? { error: s } : s, p + n + 2];
    }
    case '*': case '>': {
      const n = Number(line);
      if (n < 0) return [null, p];
      return aggregate(n, (xs) => xs);
    }
    case '~': return aggregate(Number(line), (xs) => new Set(xs));
    case '%': return aggregate(Number(line) * 2, (xs) => {
      const m = new Map();
      for (let i = 0; i < xs.length; i += 2) m.set(xs[i], xs[i + 1]);
      return m;
    });
    case '|': { // attribute: skip it and return the value that follows
      const [, np] = aggregate(Number(line) * 2, (xs) => xs);
      return parse(buf, np);
    }
    default: throw new Error(`unknown RESP type ${JSON.stringify(type)}`);
  }
}

function encode(args) {
  let out = `*${args.length}\r\n`;
  for (const a of args) out += `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`;
  return out;
}

async function client(port) {
  const sock = connect({ host: '127.0.0.1', port });
  await new Promise((res, rej) => { sock.once('connect', res); sock.once('error', rej); });
  let buf = Buffer.alloc(0);
  const waiters = [];
  sock.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    while (waiters.length && buf.length) {
      let v, p;
      try { [v, p] = parse(buf, 0); } catch (e) { if (e instanceof Incomplete) return; throw e; }
      buf = buf.subarray(p);
      waiters.shift()(v);
    }
  });
  return {
    call: (...args) => new Promise((res) => { waiters.push(res); sock.write(encode(args)); }),
    close: () => sock.destroy(),
  };
}

// ---------------------------------------------------------------------------------------
// Server lifecycle
// ---------------------------------------------------------------------------------------

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)); });
  });
}

const started = [];

async function startServer(extra = []) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'rhp-gen-'));
  const child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra], { stdio: 'ignore' });
  started.push({ child, dir });
  for (let i = 0; i < 100; i++) {
    try {
      const c = await client(port);
      const pong = await c.call('PING');
      c.close();
      if (pong === 'PONG') return { port, pid: child.pid };
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis-server on port ${port} did not start`);
}

function stopAll() {
  for (const { child, dir } of started) {
    try { process.kill(child.pid, 'SIGKILL'); } catch { /* already gone */ }
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------
// JSON fixtures: Map/Set/bigint/error survive as tagged objects, revived by the tests
// ---------------------------------------------------------------------------------------

function toJson(v) {
  if (v instanceof Map) return { $map: [...v].map(([k, x]) => [toJson(k), toJson(x)]) };
  if (v instanceof Set) return { $set: [...v].map(toJson) };
  if (typeof v === 'bigint') return { $bigint: String(v) };
  if (Array.isArray(v)) return v.map(toJson);
  return v;
}

function writeFixture(name, data) {
  mkdirSync(join(root, 'test/fixtures'), { recursive: true });
  writeFileSync(join(root, 'test/fixtures', name), JSON.stringify(data) + '\n');
  console.log(`wrote test/fixtures/${name}`);
}

// ---------------------------------------------------------------------------------------
// Command table
// ---------------------------------------------------------------------------------------

const list = (v) => (v instanceof Set ? [...v] : Array.isArray(v) ? v : []);
const asMap = (v) => {
  if (v instanceof Map) return v;
  const m = new Map();
  for (let i = 0; Array.isArray(v) && i + 1 < v.length; i += 2) m.set(v[i], v[i + 1]);
  return m;
};

/** Normalises a key spec into the plain shape src/commands/command-table.ts uses. */
function keySpec(raw) {
  const m = asMap(raw);
  const bs = asMap(m.get('begin_search'));
  const bsSpec = asMap(bs.get('spec'));
  const fk = asMap(m.get('find_keys'));
  const fkSpec = asMap(fk.get('spec'));
  const beginSearch =
    bs.get('type') === 'index' ? { type: 'index', index: bsSpec.get('index') }
    : bs.get('type') === 'keyword' ? { type: 'keyword', keyword: bsSpec.get('keyword'), startFrom: bsSpec.get('startfrom') }
    : { type: 'unknown' };
  const findKeys =
    fk.get('type') === 'range' ? { type: 'range', lastKey: fkSpec.get('lastkey'), keyStep: fkSpec.get('keystep'), limit: fkSpec.get('limit') }
    : fk.get('type') === 'keynum' ? { type: 'keynum', keyNumIdx: fkSpec.get('keynumidx'), firstKey: fkSpec.get('firstkey'), keyStep: fkSpec.get('keystep') }
    : { type: 'unknown' };
  return { flags: list(m.get('flags')), beginSearch, findKeys };
}

function flatten(entry, out) {
  const [name, arity, flags, first, last, step, , tips, specs, subs] = entry;
  const f = list(flags);
  const row = [String(name).toLowerCase(), arity, f.join(' '), first, last, step, list(tips).join(' ')];
  // Key specs are only needed where first/last/step cannot describe the keys.
  if (f.includes('movablekeys')) row.push(list(specs).map(keySpec));
  out.push(row);
  for (const sub of list(subs)) flatten(sub, out);
}

function renderTable(version, reply) {
  const rows = [];
  for (const entry of reply) flatten(entry, rows);
  rows.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const body = rows.map((r) => `  ${JSON.stringify(r)},`).join('\n');
  return `// GENERATED FILE - do not edit by hand.
// Source: \`COMMAND\` on redis-server ${version}, by scripts/generate-command-table.mjs.
// Regenerate with \`node scripts/generate-command-table.mjs\` against a newer server to update.
//
// One row per command and per subcommand (\`parent|sub\`, as Redis names them):
// [name, arity, flags, firstKey, lastKey, step, tips, keySpecs?]. Flags and tips are
// space-separated to keep the file small; key specs are kept only for movablekeys commands.

/** The redis-server version this table was generated from. */
export const GENERATED_FROM_VERSION = ${JSON.stringify(version)};

/** A key spec in the normalised shape of \`KeySpec\` in command-table.ts. */
export interface RawKeySpec {
  flags: string[];
  beginSearch:
    | { type: 'index'; index: number }
    | { type: 'keyword'; keyword: string; startFrom: number }
    | { type: 'unknown' };
  findKeys:
    | { type: 'range'; lastKey: number; keyStep: number; limit: number }
    | { type: 'keynum'; keyNumIdx: number; firstKey: number; keyStep: number }
    | { type: 'unknown' };
}

/** [name, arity, flags, firstKey, lastKey, step, tips, keySpecs?] */
export type RawCommandRow = readonly [string, number, string, number, number, number, string, RawKeySpec[]?];

/** Every command and subcommand of redis-server ${version}, sorted by name. */
export const RAW_COMMANDS: readonly RawCommandRow[] = [
${body}
];
`;
}

// ---------------------------------------------------------------------------------------
// Cluster fixtures (--cluster): 3 masters + 3 replicas
// ---------------------------------------------------------------------------------------

async function captureCluster() {
  const nodes = [];
  for (let i = 0; i < 6; i++) {
    const extra = ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '1000'];
    // One node announces a hostname so the fixture shows the optional `hostname` field.
    if (i === 0) extra.push('--cluster-announce-hostname', 'node-a.example');
    nodes.push(await startServer(extra));
  }
  execFileSync(REDIS_CLI, ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes'], { stdio: 'ignore' });
  const c2 = await client(nodes[0].port);
  const shardNodes = (shards) => shards.map((s) => asMap(s).get('nodes').map(asMap));
  const waitFor = async (what, pred) => {
    for (let i = 0; !pred(await c2.call('CLUSTER', 'SHARDS'), String(await c2.call('CLUSTER', 'INFO'))); i++) {
      if (i > 300) throw new Error(`cluster did not reach: ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  // Settled: 3 shards of master + replica, every node online (a replica reports
  // `loading` until its first sync gives it a replication offset).
  await waitFor('3 healthy shards', (shards, info) => info.includes('cluster_state:ok') && shards.length === 3 &&
    shardNodes(shards).every((ns) => ns.length === 2 && ns.every((n) => n.get('health') === 'online')));

  // Give the first shard a second, non-contiguous range: slot 16000 moves over from the third shard.
  const shards = (await c2.call('CLUSTER', 'SHARDS')).map(asMap);
  const owner = (slot) => shards.find((s) => { const r = s.get('slots'); for (let i = 0; i < r.length; i += 2) if (slot >= r[i] && slot <= r[i + 1]) return true; return false; });
  const masterOf = (s) => s.get('nodes').map(asMap).find((n) => n.get('role') === 'master');
  const target = masterOf(owner(0));
  for (const n of nodes) {
    const c = await client(n.port);
    await c.call('CLUSTER', 'SETSLOT', '16000', 'NODE', target.get('id'));
    c.close();
  }
  // Kill the replica of the shard that owns slot 6000, so the fixture shows a failed node.
  const victim = owner(6000).get('nodes').map(asMap).find((n) => n.get('role') === 'replica');
  const victimNode = nodes.find((n) => n.port === victim.get('port'));
  process.kill(victimNode.pid, 'SIGKILL');
  await waitFor('failed replica', (sh) => shardNodes(sh).flat().some((n) => n.get('port') === victimNode.port && n.get('health') !== 'online'));

  const c3 = await client(nodes[0].port);
  await c3.call('HELLO', '3');
  const fixture = {
    source: `redis-server ${await version(c2)}: 3 masters + 3 replicas on 127.0.0.1, asked node 127.0.0.1:${nodes[0].port} ` +
      `(announces hostname node-a.example); slot 16000 moved to the shard owning slot 0; replica on port ${victimNode.port} killed`,
    from: { host: '127.0.0.1', port: nodes[0].port },
    failedPort: victimNode.port,
    shards: { resp2: toJson(await c2.call('CLUSTER', 'SHARDS')), resp3: toJson(await c3.call('CLUSTER', 'SHARDS')) },
    slots: { resp2: toJson(await c2.call('CLUSTER', 'SLOTS')), resp3: toJson(await c3.call('CLUSTER', 'SLOTS')) },
  };
  c2.close();
  c3.close();
  writeFixture('cluster-topology.json', fixture);
}

async function version(c) {
  const info = await c.call('INFO', 'server');
  return /redis_version:(\S+)/.exec(info)[1];
}

// ---------------------------------------------------------------------------------------

async function main() {
  const { port } = await startServer();
  const c2 = await client(port);
  const c3 = await client(port);
  await c3.call('HELLO', '3');
  const v = await version(c2);
  const resp2 = await c2.call('COMMAND');
  const resp3 = await c3.call('COMMAND');
  c2.close();
  c3.close();

  writeFileSync(join(root, 'src/commands/command-table.generated.ts'), renderTable(v, resp2));
  console.log(`wrote src/commands/command-table.generated.ts (${resp2.length} top-level commands, redis ${v})`);
  writeFixture('command-reply.json', { source: `COMMAND on redis-server ${v}`, resp2: toJson(resp2), resp3: toJson(resp3) });

  if (withCluster) await captureCluster();
}

main().then(stopAll, (err) => { stopAll(); console.error(err); process.exitCode = 1; });
process.on('SIGINT', () => { stopAll(); process.exit(130); });
