// Config of bench/host-quant-probe.ts (a probe run by hand, kept out of the bench and test globs).
import { defineConfig } from 'vitest/config';
import { watKernels } from '../scripts/wat.js';
import { weslShaders } from '../scripts/wesl.js';

export default defineConfig({
  plugins: [watKernels(), weslShaders()],
  test: {
    include: ['bench/host-quant-probe.ts'],
    environment: 'node',
    pool: 'forks',
    testTimeout: 1_800_000,
  },
});
