// Benchmarks run as plain vitest files in Node (they measure, print a table and write JSON under
// bench/results/; they assert nothing about time). Kept apart from the test lanes' config. Browser
// benchmarks (*.browser.bench.ts) run under bench/vitest.browser-bench.config.ts instead.
import { defineConfig } from 'vitest/config';
import { watKernels } from '../scripts/wat.js';
import { weslShaders } from '../scripts/wesl.js';

export default defineConfig({
  plugins: [watKernels(), weslShaders()],
  test: {
    include: ['bench/**/*.bench.ts'],
    exclude: ['bench/**/*.browser.bench.ts', '**/node_modules/**'],
    environment: 'node',
    pool: 'forks',
    // A safety limit, not a budget: bench:session's Node part on a software adapter takes many minutes.
    testTimeout: 1_800_000,
  },
});
