/**
 * Memory per pending command (issue 21): with the default bounds (maxPending 100,000,
 * maxPendingBytes 128 MiB), 300,000 SETs of 1 KB fired at a SIGSTOPped real redis-server
 * leave 100,000 pending and refuse the rest at once; the process stays under 400 MB RSS while
 * the server is stopped and while the backlog is flushed after SIGCONT (it peaked at 697 MB,
 * one flattened copy of the whole backlog sat in the socket's buffer). Measured in a child
 * process (test/fixtures/pending-memory-child.ts) so the figure is the pool's alone.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandalone, type StandaloneTopology } from '../support/topology.js';

let topo: StandaloneTopology;

beforeAll(async () => {
  topo = await startStandalone();
});

afterAll(async () => {
  // A child that died mid-run leaves the server stopped: wake it so stop() can end it.
  if (topo?.server.pid !== undefined) {
    try {
      process.kill(topo.server.pid, 'SIGCONT');
    } catch {
      // already gone
    }
  }
  await topo?.stop();
});

interface Figures {
  accepted: number;
  refusedAtOnce: number;
  answered: number;
  otherErrors: number;
  baselineMb: number;
  stoppedPeakMb: number;
  flushPeakMb: number;
  peakMb: number;
}

function runChild(values: 'shared' | 'distinct'): Promise<Figures> {
  const script = fileURLToPath(new URL('../fixtures/pending-memory-child.ts', import.meta.url));
  const args = ['--expose-gc', '--import', 'tsx', script, `${topo.address.host}:${topo.address.port}`, String(topo.server.pid), '300000', '1024', values];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.trim().split('\n').at(-1) ?? '';
      if (code !== 0) return reject(new Error(`child exited with ${code}: ${err.slice(0, 2000)}`));
      try {
        resolve(JSON.parse(line) as Figures);
      } catch {
        reject(new Error(`child printed no figures: ${out.slice(0, 500)} ${err.slice(0, 1000)}`));
      }
    });
  });
}

describe('memory per pending command', () => {
  it('300,000 SETs of 1 KB at a stopped server: 100,000 pending, 200,000 refused at once, all answered after SIGCONT, under 400 MB RSS throughout', async () => {
    const f = await runChild('shared');
    console.log(`pending memory (one 1 KB value for all): baseline ${f.baselineMb} MB, peak while stopped ${f.stoppedPeakMb} MB, while flushing ${f.flushPeakMb} MB`);
    expect(f).toMatchObject({ accepted: 100_000, refusedAtOnce: 200_000, answered: 100_000, otherErrors: 0 });
    expect(f.stoppedPeakMb).toBeLessThan(400);
    expect(f.flushPeakMb).toBeLessThan(400);
  }, 120_000);
});
