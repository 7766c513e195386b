// Test lanes (DESIGN.md "Testing lanes"): `node` runs pure logic, the host provider and WebGPU through
// Dawn + SwiftShader; `browser` runs real Chromium with WebGPU, OPFS, SharedArrayBuffer and workers.
// `node-relaxed` runs the WebAssembly suites again in Node with V8's relaxed-SIMD flag (the relaxed kernel
// set, which Chromium selects by default and plain Node never does).
// Both lanes run the same guarantee suites; the provider list each lane exercises comes from
// contracts/support/providers.ts. The Dawn environment (VK_ICD_FILENAMES, XDG_RUNTIME_DIR) is set by
// scripts/lane.sh in the real process environment, because the native addon does not see test.env.
// Whether the model fixtures are required (TENON_REQUIRE_MODELS=1, or CI set) is decided here, where the
// process environment is readable, and handed to both lanes with `provide` (contracts/support/models.ts
// reads it with `inject`): browser test code cannot see process.env.
import { searchForWorkspaceRoot } from 'vite';
import { defineConfig } from 'vitest/config';
import { playwright } from '@vitest/browser-playwright';
import { crossOriginIsolationHeaders, chromiumArgs, chromiumPath } from './scripts/chromium.config.js';
import { watKernels } from './scripts/wat.js';
import { weslShaders } from './scripts/wesl.js';

const ci = process.env['CI'];
const requireModels = process.env['TENON_REQUIRE_MODELS'] === '1' || (ci !== undefined && ci !== '' && ci !== 'false');

declare module 'vitest' {
  export interface ProvidedContext {
    /** True when an absent model fixture must fail the suites that need it instead of skipping them. */
    tenonRequireModels: boolean;
    /**
     * True in the mutant runner's lanes (TENON_FC_END_ON_FAILURE=1): a property that fails stops at its
     * first counterexample instead of shrinking it, since a mutant's verdict needs only the failure.
     */
    tenonFcEndOnFailure: boolean;
    /** True when TENON_RESIDENCY_MATRIX=1: contracts/session/residency-matrix.test.ts runs (opt-in). */
    tenonResidencyMatrix: boolean;
  }
}

export default defineConfig({
  // The host provider's WebAssembly kernels: wasm/*.wat assembled on import (scripts/wat.ts); WESL
  // kernels (shaders/*.wesl) linked on import (scripts/wesl.ts).
  plugins: [watKernels(), weslShaders()],
  // The browser lane reads the real model fixtures from ../shared/models (never copied into the repo).
  server: { headers: crossOriginIsolationHeaders, fs: { allow: [searchForWorkspaceRoot(process.cwd()), '../shared/models'] } },
  // Pre-bundle test dependencies up front so a cold browser run does not reload mid-suite (a reload fails the
  // dynamic imports in flight, e.g. a pool worker's kernel module; `webgpu` was found only mid-run).
  optimizeDeps: { include: ['fast-check', 'webgpu'] },
  test: {
    provide: { tenonRequireModels: requireModels, tenonFcEndOnFailure: process.env['TENON_FC_END_ON_FAILURE'] === '1', tenonResidencyMatrix: process.env['TENON_RESIDENCY_MATRIX'] === '1' },
    projects: [
      {
        extends: true,
        test: {
          name: 'node',
          environment: 'node',
          include: ['contracts/**/*.test.ts', 'src/**/*.test.ts'],
          exclude: ['**/*.browser.test.ts', '**/node_modules/**'],
          setupFiles: ['contracts/support/setup-node.ts'],
          pool: 'forks',
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        // The host's relaxed-SIMD kernel set in Node: V8 (Node 20) has relaxed SIMD only behind a flag, given
        // here to every fork of the project from its start (the `node` project runs the same files on the
        // plain SIMD set). Its suites: those whose kernels differ between the two sets;
        // wasm-quant-relaxed-dot.test.ts turns the flag on itself in the `node` project.
        extends: true,
        test: {
          name: 'node-relaxed',
          environment: 'node',
          include: ['contracts/ops/wasm-kernels.test.ts', 'contracts/ops/wasm-q8-activation.test.ts', 'contracts/ops/wasm-quant-q8-scales.test.ts', 'contracts/ops/wasm-quant-f16-rows.test.ts', 'contracts/ops/wasm-fused-rope-kv.test.ts'],
          setupFiles: ['contracts/support/setup-node.ts'],
          pool: 'forks',
          execArgv: ['--experimental-wasm-relaxed-simd'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'browser',
          include: ['contracts/**/*.test.ts', 'src/**/*.test.ts'],
          exclude: ['**/*.node.test.ts', '**/node_modules/**'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          browser: {
            enabled: true,
            headless: true,
            screenshotFailures: false,
            provider: playwright({ launchOptions: { executablePath: chromiumPath(), args: chromiumArgs } }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
});
