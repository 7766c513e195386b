// Node builds (Node 20 cannot run TypeScript): the pool worker dist/workers/pool.worker.js, the `tenon`
// CLI dist/workers/tenon.js, and the suites' kernel module dist/workers/test-kernels.js. Dependencies
// (comlink, webgpu) stay external and resolve from node_modules at run time. Browsers load the
// TypeScript worker through Vite. The CLI is package.json's `bin`: its file starts with a `#!` line for
// Node and is executable, so `npx tenon`, an installed `tenon` command and `./dist/workers/tenon.js`
// all run it (npm also marks bin targets executable when it installs them).
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig } from 'vite';
import type { Plugin } from 'vite';
import { watKernels } from './scripts/wat.js';
import { weslShaders } from './scripts/wesl.js';

const OUT_DIR = 'dist/workers';
/** The entry chunk package.json `bin` names (dist/workers/tenon.js). */
const CLI_ENTRY = 'tenon';
const HASHBANG = '#!/usr/bin/env node';
/** rwxr-xr-x: what npm gives a bin target on install. */
const EXECUTABLE_MODE = 0o755;

/** Keeps the CLI's `#!` line first in its chunk and makes the written file executable. */
function cliExecutable(): Plugin {
  return {
    name: 'tenon-cli-executable',
    renderChunk(code, chunk) {
      if (!chunk.isEntry || chunk.name !== CLI_ENTRY || code.startsWith('#!')) return null;
      return { code: `${HASHBANG}\n${code}`, map: null };
    },
    writeBundle(options) {
      chmodSync(join(options.dir ?? OUT_DIR, `${CLI_ENTRY}.js`), EXECUTABLE_MODE);
    },
  };
}

export default defineConfig({
  logLevel: 'warn',
  plugins: [cliExecutable(), watKernels(), weslShaders()],
  build: {
    ssr: true,
    target: 'node20',
    outDir: OUT_DIR,
    emptyOutDir: true,
    minify: false,
    rollupOptions: {
      input: {
        'pool.worker': 'workers/pool.worker.ts',
        'rank.worker': 'workers/rank.worker.ts',
        [CLI_ENTRY]: 'src/cli/bin.ts',
        'test-kernels': 'contracts/support/kernels/index.ts',
      },
      output: { format: 'es', entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js' },
    },
  },
});
