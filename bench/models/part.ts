// What the Chromium part of `npm run bench:models` leaves in bench/results/models.chromium.json for the
// Node part to merge (type-only).
import type { AdapterRecord } from '../report.js';
import type { DecodeRecord, LoadRecord } from './cases.js';

export interface ModelsBrowserPart {
  readonly date: string;
  readonly browser: { readonly userAgent: string; readonly hardwareConcurrency: number; readonly crossOriginIsolated: boolean };
  readonly adapter: AdapterRecord;
  readonly decode: readonly DecodeRecord[];
  readonly load: readonly LoadRecord[];
}
