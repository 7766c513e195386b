// The e2e lane (DESIGN.md "Testing lanes"): real pages in Chromium, driven by @playwright/test, for what
// only a whole page can show (e.g. a reload in the middle of a publication). Chromium path and flags come
// from scripts/chromium.config.js; --expose-gc lets a spec force collection for leak diagnostics.
// The JSON report goes where `npm test` collects lane reports (scripts/summary.mjs reads it).
import { defineConfig } from '@playwright/test';
import { chromiumArgs, chromiumPath } from './scripts/chromium.config.js';
import { E2E_PORT } from './e2e/vite.config.js';

const reports = process.env['TENON_REPORT_DIR'] ?? '.vitest-reports';

export default defineConfig({
  testDir: 'e2e',
  testMatch: '**/*.spec.ts',
  globalSetup: './e2e/global-setup.ts',
  timeout: 60_000,
  workers: 1,
  reporter: [['list'], ['json', { outputFile: `${reports}/e2e.json` }]],
  use: {
    baseURL: `http://127.0.0.1:${E2E_PORT}`,
    launchOptions: { executablePath: chromiumPath(), args: [...chromiumArgs, '--js-flags=--expose-gc'] },
  },
  projects: [{ name: 'e2e', use: { browserName: 'chromium' } }],
  webServer: {
    command: 'npx vite --config e2e/vite.config.ts',
    url: `http://127.0.0.1:${E2E_PORT}/e2e/pages/dataplane.html`,
    reuseExistingServer: false,
    timeout: 60_000,
  },
});
