// Vite config for the demo (demo/): `npm run demo` serves it, `npm run build` writes dist/demo/.
// Every page and worker is served cross-origin isolated (COOP/COEP): SharedArrayBuffer and
// Atomics.waitAsync need it (TOOLCHAIN.md). The demo is an app like any other: it imports the package
// by name, and `tenon` resolves to the built ES module bundle (dist/tenon.js; scripts/demo.sh builds it
// when it is missing or older than the sources). The dev server also serves, byte for byte, the built
// bundles (/dist/), the examples (/examples/) and, when present, the model fixtures in ../shared/models
// (/models/: open /?model=/models/stories260K.bin&tokenizer=/models/tok512.bin to run offline; the
// gzip-stored GGUF fixtures are served decompressed, e.g. /?model=/models/gguf/tiny-qwen2-Q4_K_M.gguf).
// demo/public/models/ holds the one model that ships inside the demo (stories260K, MIT; see its LICENSE).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { crossOriginIsolationHeaders } from './scripts/chromium.config.js';
import { gunzippedFiles } from './scripts/gunzip-files.js';
import { staticFiles } from './scripts/static-files.js';

export default defineConfig({
  root: 'demo',
  base: './',
  resolve: { alias: { tenon: fileURLToPath(new URL('./dist/tenon.js', import.meta.url)) } },
  server: { host: '127.0.0.1', port: 5173, strictPort: false, headers: crossOriginIsolationHeaders },
  preview: { host: '127.0.0.1', port: 4173, headers: crossOriginIsolationHeaders },
  worker: { format: 'es' },
  plugins: [
    staticFiles([
      { prefix: '/dist/', dir: 'dist' },
      { prefix: '/examples/', dir: 'examples' },
      { prefix: '/models/', dir: '../shared/models' },
    ]),
    gunzippedFiles({ prefix: '/models/', dir: '../shared/models' }),
  ],
  build: { outDir: '../dist/demo', emptyOutDir: true, target: 'es2022' },
});
