// Benchmarks run as plain vitest files in Node (they measure, print a table and write JSON under
// bench/results/; they assert nothing about time). Kept apart from the test lanes' config.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['bench/**/*.bench.ts'],
    environment: 'node',
    pool: 'forks',
    testTimeout: 600_000,
  },
});
