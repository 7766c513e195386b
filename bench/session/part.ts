// What the Chromium part of `npm run bench:session` leaves in bench/results/session.chromium.json for the
// Node part to merge (type-only).
import type { AdapterSummary } from '../submit/adapter.js';
import type { SessionRecord } from './cases.js';

export interface SessionBrowserPart {
  readonly date: string;
  readonly browser: { readonly userAgent: string; readonly hardwareConcurrency: number; readonly crossOriginIsolated: boolean };
  readonly adapter: AdapterSummary;
  readonly records: readonly SessionRecord[];
}
