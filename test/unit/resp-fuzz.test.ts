/**
 * A small seeded slice of `npm run fuzz` (test/fuzz/run.ts): every property of the RESP
 * decoder fuzzer and the connection-level property, with the same fixed seed and a few
 * thousand inputs in all, so that it runs in `npm test` in a few seconds.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { connectionProperty } from '../fuzz/connection-property.js';
import { decoderProperties, runProperty, runsFor } from '../fuzz/decoder-properties.js';

const SEED = 810;
/** Total inputs of the slice, shared out as in the full run (`npm run fuzz` uses 1,000,000). */
const SLICE = 6000;

describe('RESP decoder fuzz (seeded slice of npm run fuzz)', () => {
  for (const p of decoderProperties) {
    const runs = runsFor(p, SLICE);
    it(`${p.name} (${runs} inputs): ${p.what}`, async () => {
      // Named as the fuzzer's first shard, so these are the first inputs of that shard (same seed).
      const r = await runProperty({ ...p, name: `${p.name}#0` }, { seed: SEED, numRuns: runs, fastErrors: true });
      if (r.failure) throw new Error(`${r.failure}\nreplay: npm run fuzz -- --seed ${SEED} --only ${p.name}#0`);
    }, 60_000);
  }
});

describe('Connection fed fuzzed RESP over TCP (seeded slice of npm run fuzz)', () => {
  let teardown: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    teardown = await connectionProperty.setup();
  });
  afterAll(async () => {
    await teardown?.();
  });

  const runs = runsFor(connectionProperty, SLICE);
  it(`${connectionProperty.name} (${runs} inputs): ${connectionProperty.what}`, async () => {
    const r = await runProperty(connectionProperty, { seed: SEED, numRuns: runs });
    if (r.failure) throw new Error(`${r.failure}\nreplay: npm run fuzz -- --seed ${SEED} --only ${connectionProperty.name}`);
  }, 60_000);
});
