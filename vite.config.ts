// Vite config for the demo (demo/) and, later, the library bundles. Every page and worker is served
// cross-origin isolated (COOP/COEP): SharedArrayBuffer and Atomics.waitAsync need it (TOOLCHAIN.md).
import { defineConfig } from 'vite';
import { crossOriginIsolationHeaders } from './scripts/chromium.config.js';

export default defineConfig({
  root: 'demo',
  server: { host: '127.0.0.1', port: 5173, strictPort: false, headers: crossOriginIsolationHeaders },
  preview: { host: '127.0.0.1', port: 4173, headers: crossOriginIsolationHeaders },
  build: { outDir: '../dist/demo', emptyOutDir: true, target: 'es2022' },
});
