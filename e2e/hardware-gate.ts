// The hardware lane's gate: what makes an adapter a real GPU. A fallback adapter (WebGPU's own flag) or
// SwiftShader (Chromium's software Vulkan, which does not always set the flag) is not one. Shared by the
// hardware lane (which fails when the gate refuses) and the e2e lane (which checks that the gate refuses
// the software adapter it runs on).
import type { Page } from '@playwright/test';

export interface AdapterFacts {
  readonly present: boolean;
  readonly vendor?: string;
  readonly architecture?: string;
  readonly device?: string;
  readonly description?: string;
  readonly isFallbackAdapter?: boolean;
}

/** Why `a` is not a real GPU, or undefined when it is one. */
export function hardwareProblem(a: AdapterFacts): string | undefined {
  if (!a.present) return 'no WebGPU adapter at all';
  if (a.isFallbackAdapter === true) return `a fallback adapter (${a.vendor} ${a.architecture})`;
  if ((a.architecture ?? '').toLowerCase().includes('swiftshader') || (a.description ?? '').toLowerCase().includes('swiftshader')) {
    return `SwiftShader, a software adapter (${a.vendor} ${a.architecture})`;
  }
  return undefined;
}

/** The adapter a page of this server gets from navigator.gpu.requestAdapter(). */
export async function adapterFacts(page: Page): Promise<AdapterFacts> {
  await page.goto('/e2e/pages/dataplane.html');
  return page.evaluate(async () => {
    const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
    const adapter = gpu === undefined ? null : await gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (adapter === null) return { present: false };
    const info = adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
    return {
      present: true,
      vendor: info.vendor,
      architecture: info.architecture,
      device: info.device,
      description: info.description,
      ...(info.isFallbackAdapter === undefined ? {} : { isFallbackAdapter: info.isFallbackAdapter }),
    };
  });
}
