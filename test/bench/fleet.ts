/**
 * A fleet on one cluster (issue 29): what many client processes do to a Redis Cluster when a
 * node fails, for this project's ClusterPool, ioredis Cluster and node-redis createCluster,
 * in the same sitting (a fresh cluster for each client, so each starts from the same state).
 *
 *   npm run bench:fleet
 *   FLEET_PROCS=8 FLEET_MASTERS=6 FLEET_CLIENTS=ha npm run bench:fleet
 *
 * Environment: FLEET_PROCS (default 32), FLEET_MASTERS (30; 1 replica each), FLEET_CLIENTS
 * (ha,ioredis,node-redis), FLEET_FAULTS (kill,failover,migrate,blackhole), FLEET_RATE (calls
 * per second per process, 300), FLEET_WINDOW (ms measured after each promotion, 8000),
 * FLEET_NODE_TIMEOUT (cluster-node-timeout, 2000 below 10 masters, else 5000),
 * FLEET_MIGRATE_SLOTS (slots moved by the migration, 32), FLEET_JSON (a path: the results as
 * JSON). See fleet-run.ts for what each figure means.
 */
import { writeFileSync } from 'node:fs';
import { envInt, installCleanupHandlers, markdownTable, systemInfo } from './lib.js';
import { runFleet, type FaultResult, type FleetClient, type FleetFault, type FleetResult } from './fleet-run.js';

installCleanupHandlers();
const masters = envInt('FLEET_MASTERS', 30);
const base = {
  procs: envInt('FLEET_PROCS', 32),
  masters,
  faults: (process.env.FLEET_FAULTS ?? 'kill,failover,migrate,blackhole').split(',') as FleetFault[],
  rate: envInt('FLEET_RATE', 300),
  windowMs: envInt('FLEET_WINDOW', 8000),
  nodeTimeoutMs: envInt('FLEET_NODE_TIMEOUT', masters >= 10 ? 5000 : 2000),
  migrateSlots: envInt('FLEET_MIGRATE_SLOTS', 32),
};
const clients = (process.env.FLEET_CLIENTS ?? 'ha,ioredis,node-redis').split(',') as FleetClient[];
const NAMES: Record<FleetClient, string> = { ha: 'redis-ha-pool', ioredis: 'ioredis', 'node-redis': 'node-redis' };

const runs: FleetResult[] = [];
for (const client of clients) {
  try {
    runs.push(await runFleet({ ...base, client, log: (l) => process.stderr.write(`${l}\n`) }));
  } catch (err) {
    process.stderr.write(`[fleet] ${client} failed: ${(err as Error).stack}\n`);
  }
}

const failures = (f: Record<string, number>) => Object.entries(f).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${v} ${k}`).join(', ') || '0';
const rows: string[][] = [];
for (const run of runs) {
  for (const r of run.faults) rows.push(row(r));
}
function row(r: FaultResult): string[] {
  return [
    NAMES[r.client], r.fault, String(r.promotionMs),
    r.notServed ? `${r.notServed} never` : String(r.servedAfterPromotionMs),
    `${r.slotMap.peakPerNode} (${r.slotMap.peakNodeRole})`, String(r.slotMap.total), String(r.slotMap.maxNodeTotal),
    String(r.conns.peakPerNode), String(r.conns.total),
    failures(r.failures), String(r.p99Ms), String(r.clientsPerNode),
  ];
}

const info = systemInfo();
console.log(`\n## Fleet: ${base.procs} processes x 1 cluster client, ${base.masters} masters + ${base.masters} replicas (cluster-node-timeout ${base.nodeTimeoutMs} ms), ${base.rate} calls/s per process`);
console.log(`${info.cpu} x ${info.cores}, Node ${info.node}, load ${info.loadavg} (machine shared with other test runs); window ${base.windowMs} ms after each promotion\n`);
console.log(markdownTable(
  ['client', 'fault', 'promotion ms', 'all served ms after promotion', 'slot-map req peak /node/s', 'slot-map req total', 'max on one node', 'new conns peak /node/s', 'new conns total', 'failed calls', 'p99 ms', 'clients on busiest node before'],
  rows,
  ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'left', 'right', 'right'],
));
console.log('');
console.log(markdownTable(['client', 'acknowledged writes checked', 'lost'], runs.map((r) => [NAMES[r.config.client], String(r.checked), String(r.lost)]), ['left', 'right', 'right']));
for (const r of runs) if (r.lost) console.log(`${NAMES[r.config.client]} lost examples: ${r.lostExamples.join('; ')}`);
if (process.env.FLEET_JSON) writeFileSync(process.env.FLEET_JSON, JSON.stringify({ system: info, runs }, null, 2));
else console.log(`\n\`\`\`json\n${JSON.stringify(runs.map((r) => ({ client: r.config.client, lost: r.lost, checked: r.checked, faults: r.faults })))}\n\`\`\``);
process.exit(0);
