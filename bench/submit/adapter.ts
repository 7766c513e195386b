// Adapter and machine description recorded with the results (bench/report.ts's adapter record: a software
// adapter such as SwiftShader is marked `software: true`, and so is every row measured on it), which lanes
// of this benchmark run on the adapter, and the shape of the Chromium part file.
import { describeAdapter } from '../report.js';
import type { AdapterRecord, Where } from '../report.js';
import type { PhaseBreakdown } from './cases.js';
import type { CaseRecord } from './measure.js';

export type AdapterSummary = AdapterRecord;

export function adapterSummary(info: GPUAdapterInfo, device: GPUDevice): AdapterSummary {
  return describeAdapter(info, device);
}

/** Where a row of `lane` ran: the WebGPU lanes on `adapter`, the host and wasm lanes on the CPU. */
export function laneWhere(lane: CaseRecord['lane'], adapter: AdapterRecord): Where[] {
  return lane === 'chromium' || lane === 'node-dawn' ? [adapter] : ['host'];
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
