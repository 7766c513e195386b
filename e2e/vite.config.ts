// Dev server for the e2e lane: serves the repository root (so e2e pages import src/ and workers/
// directly) cross-origin isolated, as every tenon page must be (TOOLCHAIN.md). Built files are served
// as they ship, untransformed: /static/<path> is <repository>/<path> byte for byte (dist/, examples/),
// and /models/ is the real model fixtures in ../shared/models (never copied into the repository); a
// gzip-stored GGUF fixture is also served decompressed under its .gguf name (/models/gguf/NAME.gguf).
import { defineConfig } from 'vite';
import { crossOriginIsolationHeaders } from '../scripts/chromium.config.js';
import { gunzippedFiles } from '../scripts/gunzip-files.js';
import { staticFiles } from '../scripts/static-files.js';
import { watKernels } from '../scripts/wat.js';
import { weslShaders } from '../scripts/wesl.js';

/** TENON_E2E_PORT moves the lane's server, so two checkouts can run their e2e lanes at once. */
export const E2E_PORT = Number(process.env['TENON_E2E_PORT'] ?? 5199);

export default defineConfig({
  root: '.',
  server: { host: '127.0.0.1', port: E2E_PORT, strictPort: true, headers: crossOriginIsolationHeaders },
  optimizeDeps: { include: ['comlink', 'idb-keyval'] },
  logLevel: 'error',
  plugins: [watKernels(), weslShaders(), staticFiles([{ prefix: '/static/', dir: '.' }, { prefix: '/models/', dir: '../shared/models' }]), gunzippedFiles({ prefix: '/models/', dir: '../shared/models' })],
});
