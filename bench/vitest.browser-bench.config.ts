// The Chromium part of `npm run bench:submit` (bench/*.browser.bench.ts): vitest browser mode in the
// same headless Chromium and flags as the browser test lane (scripts/chromium.config.js), pages served
// cross-origin isolated. Benchmarks measure and write their records through the browser `commands`
// API (bench/results/); they assert nothing about time. Never part of `npm test`.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { playwright } from '@vitest/browser-playwright';
import { crossOriginIsolationHeaders, chromiumArgs, chromiumPath } from '../scripts/chromium.config.js';
import { watKernels } from '../scripts/wat.js';
import { weslShaders } from '../scripts/wesl.js';

export default defineConfig({
  plugins: [watKernels(), weslShaders()],
  root: fileURLToPath(new URL('..', import.meta.url)),
  server: { headers: crossOriginIsolationHeaders },
  // Pre-bundled up front so a cold run does not reload the page mid-benchmark. onnxruntime-web stays
  // out: its bundle finds its .wasm next to itself (import.meta.url), which pre-bundling would move.
  optimizeDeps: { include: ['@tensorflow/tfjs-core', '@tensorflow/tfjs-backend-webgpu'], exclude: ['onnxruntime-web'] },
  test: {
    include: ['bench/**/*.browser.bench.ts'],
    testTimeout: 900_000,
    hookTimeout: 120_000,
    browser: {
      enabled: true,
      headless: true,
      screenshotFailures: false,
      provider: playwright({ launchOptions: { executablePath: chromiumPath(), args: chromiumArgs } }),
      instances: [{ browser: 'chromium' }],
    },
  },
});
