/**
 * What the ioredis facade (`redis-ha-pool/ioredis`) costs per call, beside calling the pool
 * directly, against one redis-server this script starts and stops itself:
 *
 *   npx tsx test/bench/ioredis-facade.ts            # BENCH_OPS=100000, BENCH_ROUNDS=3
 *
 * Cells: GET at concurrency 1 and 100 (pool.get, pool.call('GET'), facade.get, facade.get with a
 * callback), a 10-command pipeline (pool batch vs facade tuples), and a defined script
 * (pool.script vs defineCommand). Each round runs every cell in rotated order; the report gives
 * the median client CPU time per operation (this process's user + system time, which a busy
 * shared machine disturbs far less than wall time), the facade's difference to the pool, and
 * the median wall time for reference.
 */
import { StandalonePool } from '../../src/index.js';
import { asIoredis } from '../../src/integrations/ioredis.js';
import { startStandalone } from '../support/topology.js';

const OPS = Number(process.env.BENCH_OPS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const topo = await startStandalone();
const pool = await StandalonePool.create(topo.url);
const facade = asIoredis(pool);
await pool.set('bench:k', 'value');
const LUA = 'return redis.call("GET", KEYS[1])';
const script = pool.script(LUA, { keys: 1 });
facade.defineCommand('benchGet', { numberOfKeys: 1, lua: LUA });
const defined = (facade as unknown as Record<string, (k: string) => Promise<unknown>>).benchGet!;

type Cell = { name: string; ops: number; run: () => Promise<unknown> };

async function times(ops: number, concurrency: number, one: () => Promise<unknown>): Promise<void> {
  if (concurrency === 1) {
    for (let i = 0; i < ops; i++) await one();
    return;
  }
  for (let i = 0; i < ops; i += concurrency) await Promise.all(Array.from({ length: concurrency }, one));
}

const cb = () => new Promise<unknown>((resolve, reject) => void facade.get('bench:k', (e, v) => (e ? reject(e) : resolve(v))));
const cells: Cell[] = [];
for (const c of [1, 100]) {
  const ops = c === 1 ? OPS / 10 : OPS;
  cells.push(
    { name: `GET c=${c}: pool.get`, ops, run: () => times(ops, c, () => pool.get('bench:k')) },
    { name: `GET c=${c}: pool.call`, ops, run: () => times(ops, c, () => pool.call('GET', 'bench:k')) },
    { name: `GET c=${c}: facade.get`, ops, run: () => times(ops, c, () => facade.get('bench:k')) },
    { name: `GET c=${c}: facade.get(cb)`, ops, run: () => times(ops, c, cb) },
  );
}
const batches = OPS / 10;
cells.push(
  { name: 'pipeline x10 c=10: pool', ops: batches, run: () => times(batches, 10, () => { const p = pool.pipeline(); for (let i = 0; i < 10; i++) p.get('bench:k'); return p.exec(); }) },
  { name: 'pipeline x10 c=10: facade', ops: batches, run: () => times(batches, 10, () => { const p = facade.pipeline(); for (let i = 0; i < 10; i++) p.get('bench:k'); return p.exec(); }) },
  { name: 'script c=100: pool.script', ops: OPS, run: () => times(OPS, 100, () => script('bench:k')) },
  { name: 'script c=100: defineCommand', ops: OPS, run: () => times(OPS, 100, () => defined('bench:k')) },
);

const cpu = new Map<string, number[]>();
const wall = new Map<string, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  const order = cells.map((_, i) => cells[(i + round) % cells.length]!);
  for (const cell of order) {
    const t = performance.now();
    const c = process.cpuUsage();
    await cell.run();
    const used = process.cpuUsage(c);
    cpu.set(cell.name, [...(cpu.get(cell.name) ?? []), (used.user + used.system) / cell.ops]);
    wall.set(cell.name, [...(wall.get(cell.name) ?? []), ((performance.now() - t) * 1000) / cell.ops]);
  }
}
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
console.log(`ioredis facade vs pool, ${OPS} ops (c=1: ${OPS / 10}), median of ${ROUNDS} rounds, µs per op (per batch for pipelines)`);
console.log(`${'cell'.padEnd(34)} ${'CPU'.padStart(8)}  ${'vs pool'.padEnd(20)} ${'wall'.padStart(8)}`);
let base = 0;
for (const cell of cells) {
  const m = median(cpu.get(cell.name)!);
  const isBase = cell.name.endsWith('pool.get') || cell.name.endsWith(': pool') || cell.name.endsWith('pool.script');
  if (isBase) base = m;
  const diff = isBase ? '' : `${m - base >= 0 ? '+' : ''}${(m - base).toFixed(2)} (${(((m - base) / base) * 100).toFixed(0)}%)`;
  console.log(`${cell.name.padEnd(34)} ${m.toFixed(2).padStart(8)}  ${diff.padEnd(20)} ${median(wall.get(cell.name)!).toFixed(2).padStart(8)}`);
}
await facade.quit();
await pool.close();
await topo.stop();
