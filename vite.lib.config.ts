// The library bundles (`npm run build`, scripts/build.sh runs this config once per --mode):
//   esm               dist/tenon.js          one ES module, every dependency inside
//   iife              dist/tenon.iife.js     the same API as the global `tenon`, for <script src>
//   pool-worker       dist/pool.worker.js    the worker pool's browser worker, self-contained
//   dataplane-worker  dist/dataplane.worker.js  the data-plane agent worker, self-contained
//   rank-worker       dist/rank.worker.js    a partitioned session's rank worker, self-contained
// Types come from tsc (tsconfig.types.json); the Node builds (CLI, Node pool worker) from
// vite.node.config.ts. Browser bundles are for browsers: modules only Node can load (worker_threads,
// Dawn) are replaced by a stub that fails with ENOTSUP if ever reached. The two worker-entry modules
// are swapped for their bundle variants (src/bundle/), which find the worker files beside the bundle.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import type { Plugin, UserConfig } from 'vite';
import { watKernels } from './scripts/wat.js';
import { weslShaders } from './scripts/wesl.js';

const root = fileURLToPath(new URL('.', import.meta.url));
const at = (p: string): string => `${root}${p}`;

/** Source module -> the module the bundles use instead. */
const BUNDLE_VARIANTS = new Map([
  [at('src/submit/pool-entry.ts'), at('src/bundle/pool-entry.ts')],
  [at('src/dataplane/worker-entry.ts'), at('src/bundle/dataplane-entry.ts')],
  [at('src/session/partition/rank-entry.ts'), at('src/bundle/rank-entry.ts')],
]);

/** Imports that only Node can satisfy; the browser bundles get a stub instead. */
const NODE_ONLY = new Set(['node:worker_threads', 'comlink/dist/esm/node-adapter.mjs', 'webgpu']);
const NODE_STUB = '\0tenon-node-only';
const VITE_IGNORE = '/* @vite-ignore */';

function tenonBundle(format: 'es' | 'iife'): Plugin {
  return {
    name: 'tenon-bundle',
    enforce: 'pre',
    async resolveId(source, importer, options) {
      if (NODE_ONLY.has(source)) return NODE_STUB;
      if (importer === undefined || !source.startsWith('.')) return null;
      const resolved = await this.resolve(source, importer, { ...options, skipSelf: true });
      const variant = resolved === null ? undefined : BUNDLE_VARIANTS.get(resolved.id);
      return variant ?? null;
    },
    load(id) {
      if (id !== NODE_STUB) return null;
      const code = [
        `import { TenonError } from ${JSON.stringify(at('src/errors.ts'))};`,
        'function fail() { throw new TenonError("ENOTSUP", "this tenon bundle is for browsers: Node-only modules are left out", { op: "tenon-bundle", reason: "node-only" }); }',
        'export const Worker = fail, parentPort = undefined, create = fail, globals = {};',
        'export default fail;',
      ].join('\n');
      return { code, map: { mappings: '' } };
    },
    // The ES bundle keeps `new Worker(new URL('./x.worker.js', import.meta.url))` literally so apps'
    // bundlers ship the worker files; the vite-ignore marks that kept our own build from doing so go.
    // Blanked to spaces of the same length, so no column moves and the source map stays exact.
    renderChunk(code) {
      if (format !== 'es' || !code.includes(VITE_IGNORE)) return null;
      return { code: code.replaceAll(VITE_IGNORE, ' '.repeat(VITE_IGNORE.length)), map: null };
    },
  };
}

function library(format: 'es' | 'iife'): UserConfig {
  return {
    logLevel: 'warn',
    plugins: [tenonBundle(format), watKernels(), weslShaders()],
    // The script-tag bundle has no import.meta; its worker URLs come from the loading <script>.
    define: format === 'iife' ? { 'import.meta.url': 'undefined' } : {},
    build: {
      outDir: 'dist',
      emptyOutDir: false,
      target: 'es2022',
      minify: false,
      sourcemap: true,
      copyPublicDir: false,
      lib: {
        entry: at('src/index.ts'),
        name: 'tenon',
        formats: [format],
        fileName: () => (format === 'es' ? 'tenon.js' : 'tenon.iife.js'),
      },
      rolldownOptions: { output: { codeSplitting: false } },
    },
  };
}

function worker(name: 'pool' | 'dataplane' | 'rank'): UserConfig {
  return {
    logLevel: 'warn',
    plugins: [tenonBundle('es'), watKernels(), weslShaders()],
    build: {
      outDir: 'dist',
      emptyOutDir: false,
      target: 'es2022',
      minify: false,
      sourcemap: true,
      copyPublicDir: false,
      lib: { entry: at(`workers/${name}.worker.ts`), formats: ['es'], fileName: () => `${name}.worker.js` },
      rolldownOptions: { output: { codeSplitting: false } },
    },
  };
}

export default defineConfig(({ mode }) => {
  switch (mode) {
    case 'esm':
      return library('es');
    case 'iife':
      return library('iife');
    case 'pool-worker':
      return worker('pool');
    case 'dataplane-worker':
      return worker('dataplane');
    case 'rank-worker':
      return worker('rank');
    default:
      throw new Error(`vite.lib.config.ts: unknown --mode ${mode} (esm | iife | pool-worker | dataplane-worker)`);
  }
});
