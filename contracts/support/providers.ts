// The provider matrix every storage guarantee suite runs against. The node lane gets the host provider
// and WebGPU through Dawn + SwiftShader; the browser lane gets WebGPU in Chromium and the host provider
// over SharedArrayBuffer. Suites loop over `providerCases()` so the report names each provider.
import { createHostProvider, createWebGPUProvider } from '../../src/index.js';
import type { HostProvider, WebGPUProvider } from '../../src/index.js';

export type ProviderCaseName = 'host' | 'host-shared' | 'webgpu-dawn' | 'webgpu-chromium';

export interface ProviderCase {
  readonly name: ProviderCaseName;
  readonly kind: 'host' | 'webgpu';
  make(): Promise<HostProvider | WebGPUProvider>;
}

/** True in the browser lane (vitest browser mode in Chromium). */
export const inBrowser = typeof window !== 'undefined' && typeof document !== 'undefined';

function nodeGPU(): GPU {
  const gpu = (globalThis as { __tenonNodeGPU?: GPU }).__tenonNodeGPU;
  if (gpu === undefined) throw new Error('node lane setup did not install Dawn (contracts/support/setup-node.ts)');
  return gpu;
}

export function providerCases(): ProviderCase[] {
  if (inBrowser) {
    return [
      { name: 'webgpu-chromium', kind: 'webgpu', make: () => createWebGPUProvider() },
      { name: 'host-shared', kind: 'host', make: async () => createHostProvider({ shared: true }) },
    ];
  }
  return [
    { name: 'host', kind: 'host', make: async () => createHostProvider() },
    { name: 'webgpu-dawn', kind: 'webgpu', make: () => createWebGPUProvider({ gpu: nodeGPU() }) },
  ];
}

/** The WebGPU case of this lane. */
export function webgpuCase(): ProviderCase {
  return providerCases().find((c) => c.kind === 'webgpu')!;
}
