// Node builds (Node 20 cannot run TypeScript): the pool worker dist/workers/pool.worker.js, the `tenon`
// CLI dist/workers/tenon.js, and the suites' kernel module dist/workers/test-kernels.js. Dependencies
// (comlink, webgpu) stay external and resolve from node_modules at run time. Browsers load the
// TypeScript worker through Vite.
import { defineConfig } from 'vite';

export default defineConfig({
  logLevel: 'warn',
  build: {
    ssr: true,
    target: 'node20',
    outDir: 'dist/workers',
    emptyOutDir: true,
    minify: false,
    rollupOptions: {
      input: {
        'pool.worker': 'workers/pool.worker.ts',
        tenon: 'src/cli/bin.ts',
        'test-kernels': 'contracts/support/kernels/index.ts',
      },
      output: { format: 'es', entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js' },
    },
  },
});
