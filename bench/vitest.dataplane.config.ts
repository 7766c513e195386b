// `npm run bench:dataplane`: the data-plane benchmark in real Chromium (workers, OPFS, SharedArrayBuffer),
// apart from the test lanes. Extra flags only for measuring: --expose-gc and precise heap numbers let the
// page count bytes allocated per call; nothing here is a correctness check.
import { defineConfig } from 'vitest/config';
import { playwright } from '@vitest/browser-playwright';
import { chromiumArgs, chromiumPath, crossOriginIsolationHeaders } from '../scripts/chromium.config.js';
import { watKernels } from '../scripts/wat.js';
import { weslShaders } from '../scripts/wesl.js';

export default defineConfig({
  plugins: [watKernels(), weslShaders()],
  server: { headers: crossOriginIsolationHeaders },
  optimizeDeps: { include: ['comlink', 'ringbuf.js', 'idb-keyval'] },
  test: {
    include: ['bench/dataplane.browser-bench.ts'],
    testTimeout: 600_000,
    browser: {
      enabled: true,
      headless: true,
      screenshotFailures: false,
      provider: playwright({
        launchOptions: { executablePath: chromiumPath(), args: [...chromiumArgs, '--js-flags=--expose-gc', '--enable-precise-memory-info'] },
      }),
      instances: [{ browser: 'chromium' }],
    },
  },
});
