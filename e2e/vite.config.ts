// Dev server for the e2e lane: serves the repository root (so e2e pages import src/ and workers/
// directly) cross-origin isolated, as every tenon page must be (TOOLCHAIN.md).
import { defineConfig } from 'vite';
import { crossOriginIsolationHeaders } from '../scripts/chromium.config.js';

export const E2E_PORT = 5199;

export default defineConfig({
  root: '.',
  server: { host: '127.0.0.1', port: E2E_PORT, strictPort: true, headers: crossOriginIsolationHeaders },
  optimizeDeps: { include: ['comlink', 'idb-keyval'] },
  logLevel: 'error',
});
