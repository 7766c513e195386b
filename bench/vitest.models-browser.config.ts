// The Chromium part of `npm run bench:models` (bench/models.browser.bench.ts): vitest browser mode in the
// same headless Chromium and flags as the browser test lane (scripts/chromium.config.js), pages served
// cross-origin isolated (the data plane needs SharedArrayBuffer), and ../shared/models readable through
// the dev server (/@fs), as in the browser test lane. It measures and writes its records through the
// browser `commands` API; it asserts nothing about time. Never part of `npm test`.
import { fileURLToPath } from 'node:url';
import { searchForWorkspaceRoot } from 'vite';
import { defineConfig } from 'vitest/config';
import { playwright } from '@vitest/browser-playwright';
import { crossOriginIsolationHeaders, chromiumArgs, chromiumPath } from '../scripts/chromium.config.js';
import { watKernels } from '../scripts/wat.js';
import { weslShaders } from '../scripts/wesl.js';

const root = fileURLToPath(new URL('..', import.meta.url));

export default defineConfig({
  plugins: [watKernels(), weslShaders()],
  root,
  server: { headers: crossOriginIsolationHeaders, fs: { allow: [searchForWorkspaceRoot(root), '../shared/models'] } },
  // Its own dependency cache: the other configs pre-bundle other sets, and a shared cache re-optimized
  // under a running page makes the test file's import fail.
  cacheDir: 'node_modules/.vite/bench-models',
  // Pre-bundled up front so a cold run does not reload the page mid-benchmark.
  optimizeDeps: { include: ['comlink', 'idb-keyval', '@huggingface/jinja'] },
  test: {
    include: ['bench/models.browser.bench.ts'],
    // A safety limit, not a budget: the part takes a minute or two on a software adapter.
    testTimeout: 1_800_000,
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
