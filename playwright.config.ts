// The e2e lane (DESIGN.md "Testing lanes"): real pages in Chromium, driven by @playwright/test, for what
// only a whole page can show (e.g. a reload in the middle of a publication). Chromium path and flags come
// from scripts/chromium.config.js; --expose-gc lets a spec force collection for leak diagnostics.
// The JSON report goes where `npm test` collects lane reports (scripts/summary.mjs reads it).
// The hardware lane (npm run test:hardware sets TENON_HARDWARE=1) swaps the projects: `hardware-adapter`
// fails unless the adapter is a real GPU, and `hardware` (which depends on it) runs the same specs plus
// the demo benchmark. Without TENON_HARDWARE the hardware projects do not exist, so `npm test` never runs them.
import { defineConfig } from '@playwright/test';
import type { PlaywrightTestConfig } from '@playwright/test';
import { chromiumArgs, chromiumPath, hardwareChromiumArgs } from './scripts/chromium.config.js';
import { E2E_PORT } from './e2e/vite.config.js';

const reports = process.env['TENON_REPORT_DIR'] ?? '.vitest-reports';
const hardware = process.env['TENON_HARDWARE'] === '1';
/** Specs only the hardware lane runs, and the e2e-lane check of the hardware gate. */
const HARDWARE_ONLY = ['**/hardware.spec.ts', '**/hardware-bench.spec.ts'];
const onGpu = { browserName: 'chromium' as const, launchOptions: { executablePath: chromiumPath(), args: [...hardwareChromiumArgs, '--js-flags=--expose-gc'] } };
const projects: PlaywrightTestConfig['projects'] = hardware
  ? [
      { name: 'hardware-adapter', testMatch: '**/hardware.spec.ts', use: onGpu },
      { name: 'hardware', dependencies: ['hardware-adapter'], testIgnore: ['**/hardware.spec.ts', '**/hardware-gate.spec.ts'], use: onGpu },
    ]
  : [{ name: 'e2e', testIgnore: HARDWARE_ONLY, use: { browserName: 'chromium' } }];

export default defineConfig({
  testDir: 'e2e',
  testMatch: '**/*.spec.ts',
  globalSetup: './e2e/global-setup.ts',
  timeout: 60_000,
  workers: 1,
  reporter: [['list'], ['json', { outputFile: `${reports}/${hardware ? 'hardware' : 'e2e'}.json` }]],
  use: {
    baseURL: `http://127.0.0.1:${E2E_PORT}`,
    launchOptions: { executablePath: chromiumPath(), args: [...chromiumArgs, '--js-flags=--expose-gc'] },
  },
  projects,
  webServer: {
    command: 'npx vite --config e2e/vite.config.ts',
    url: `http://127.0.0.1:${E2E_PORT}/e2e/pages/dataplane.html`,
    reuseExistingServer: false,
    timeout: 60_000,
  },
});
