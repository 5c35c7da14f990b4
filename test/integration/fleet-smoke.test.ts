/**
 * The fleet benchmark (`npm run bench:fleet`, test/bench/fleet-run.ts) in its smallest form, as
 * a correctness check: 4 client processes, each one ClusterPool with default options under
 * steady load, against 3 masters + 3 replicas; one master killed with SIGKILL. Every process
 * must serve the moved slots again after the promotion, and every acknowledged write must be
 * on the final cluster. Speed is the benchmark's business, not this test's: no figure here
 * depends on how loaded the machine is, only the deadlines (generous) do.
 */
import { describe, expect, it } from 'vitest';
import { runFleet } from '../bench/fleet-run.js';

describe('a fleet of ClusterPool processes through kill -9 of a master', () => {
  it('every process serves the moved slots again and no acknowledged write is lost', async () => {
    const r = await runFleet({ client: 'ha', procs: 4, masters: 3, faults: ['kill'], rate: 100, windowMs: 0, warmupMs: 0, nodeTimeoutMs: 2000, migrateSlots: 0 });
    const kill = r.faults[0]!;
    expect(kill.fault).toBe('kill');
    expect(kill.notServed).toBe(0);
    expect(kill.servedAfterPromotionMs).toBeGreaterThanOrEqual(0);
    // The load ran through the fault and writes were acknowledged (else "0 lost" proves nothing).
    expect(kill.ops).toBeGreaterThan(0);
    expect(r.checked).toBeGreaterThan(100);
    expect(r.lostExamples).toEqual([]);
    expect(r.lost).toBe(0);
  }, 150_000);
});
