// Adapter and machine description recorded with the results (absolute figures on a software adapter
// mean little; the ratios measured in one run are what count), and the shape of the Chromium part file.
import type { PhaseBreakdown } from './cases.js';
import type { CaseRecord } from './measure.js';

export interface AdapterSummary {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
  readonly isFallbackAdapter: boolean | undefined;
  readonly limits: { readonly maxBufferSize: number; readonly maxComputeInvocationsPerWorkgroup: number; readonly maxStorageBufferBindingSize: number };
}

export function adapterSummary(info: GPUAdapterInfo, device: GPUDevice): AdapterSummary {
  const fallback = (info as GPUAdapterInfo & { isFallbackAdapter?: boolean }).isFallbackAdapter;
  return {
    vendor: info.vendor,
    architecture: info.architecture,
    device: info.device,
    description: info.description,
    isFallbackAdapter: fallback ?? (info.architecture === 'swiftshader' ? true : undefined),
    limits: {
      maxBufferSize: device.limits.maxBufferSize,
      maxComputeInvocationsPerWorkgroup: device.limits.maxComputeInvocationsPerWorkgroup,
      maxStorageBufferBindingSize: device.limits.maxStorageBufferBindingSize,
    },
  };
}

/** What the Chromium part of the run leaves in bench/results/submit.chromium.json. */
export interface BrowserPart {
  readonly date: string;
  readonly browser: { readonly userAgent: string; readonly hardwareConcurrency: number; readonly crossOriginIsolated: boolean };
  readonly adapter: AdapterSummary;
  readonly peers: Readonly<Record<string, string>>;
  readonly records: readonly CaseRecord[];
  readonly phases: readonly PhaseBreakdown[];
}
