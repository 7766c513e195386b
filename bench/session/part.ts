// What the Chromium part of `npm run bench:session` leaves in bench/results/session.chromium.json for the
// Node part to merge (type-only).
import type { AdapterRecord } from '../report.js';
import type { SessionRecord } from './cases.js';

export interface SessionBrowserPart {
  readonly date: string;
  readonly browser: { readonly userAgent: string; readonly hardwareConcurrency: number; readonly crossOriginIsolated: boolean };
  readonly adapter: AdapterRecord;
  readonly records: readonly SessionRecord[];
}
