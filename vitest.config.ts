import { defineConfig } from 'vitest/config';

// Integration tests start real redis-server / redis-sentinel processes: run files in separate
// forks, a couple at a time (the CI machine has 2 cores), with generous hook timeouts.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Installs what the tests need (Redis binaries, openssl) once, before any worker starts.
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    teardownTimeout: 30_000,
    // CI sets VITEST_JSON to a path: the JSON report feeds its "N passed, N failed" line.
    reporters: process.env.VITEST_JSON ? ['default', 'json'] : ['default'],
    ...(process.env.VITEST_JSON ? { outputFile: { json: process.env.VITEST_JSON } } : {}),
  },
});
