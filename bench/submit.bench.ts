// Execution-layer benchmark, Node part (issue 3, acceptance point 6), and the report of the whole run.
//   (b) submit + retire of a 3-dispatch graph vs a hand-written queue.submit + onSubmittedWorkDone loop,
//       on Dawn (SwiftShader here);
//   (c) a 5-layer stories260K decode step (85 dispatches) replayed vs the same dispatches encoded by hand;
//   (d) host-provider matmul 256^3 and 1024^3 vs onnxruntime-web's single-thread wasm CPU provider;
//   (e) 16 decode-shaped steps chained on a live group vs 16 x submit-and-wait (4 bytes read back per step).
// The Chromium part (bench/submit.browser.bench.ts: (a) matmul vs TF.js WebGPU on one device, and (b),
// (c) in the page) runs first in the same `npm run bench:submit` and leaves its records in
// bench/results/submit.chromium.json; this file merges them, prints one ratio table and writes
// bench/results/submit.json. It measures and reports; it asserts nothing about time.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { it } from 'vitest';
import { create, globals } from 'webgpu';
import { createHostProvider, createWebGPUProvider } from '../src/index.js';
import { chainCases, hostMatmulCases, overheadCases } from './submit/cases.js';
import type { PhaseBreakdown } from './submit/cases.js';
import { formatTable } from './submit/measure.js';
import type { CaseRecord } from './submit/measure.js';
import { adapterSummary, laneWhere } from './submit/adapter.js';
import type { BrowserPart } from './submit/adapter.js';
import { decodeGraph, smallGraph } from './submit/workloads.js';
import { labelRows, machineInfo, softwareFields } from './report.js';

const CHROMIUM_PART = 'bench/results/submit.chromium.json';

/**
 * Dawn's entry point stays reachable for the whole run: measured here (webgpu 0.6.2), when the object
 * `create([])` returned is garbage-collected while its device is in use, the process aborts
 * (`std::system_error: Invalid argument`) in about half the runs.
 */
let dawn: GPU | undefined;

it('execution layer: tenon vs peers, side by side', async () => {
  const loadAtStart = os.loadavg();
  Object.assign(globalThis, globals);
  dawn ??= create([]);
  const provider = await createWebGPUProvider({ gpu: dawn });
  // Any error outside an error scope invalidates the run.
  const uncaptured: string[] = [];
  provider.device.onuncapturederror = (e) => uncaptured.push(e.error.message);
  let records: CaseRecord[] = [];
  const phases: PhaseBreakdown[] = [];
  const lane = 'node-dawn';
  const small = await overheadCases(provider, smallGraph(), 'b', lane, 'submit+retire, 3 small dispatches', { rounds: 21, iterations: 40, warmupRounds: 1 });
  const decode = await overheadCases(provider, decodeGraph(), 'c', lane, 'decode step, 5 layers stories260K', { rounds: 21, iterations: 10, warmupRounds: 1 });
  records.push(...small.records, ...decode.records);
  phases.push(small.phases, decode.phases);
  records.push(...(await chainCases(provider, smallGraph(), lane, 'small3', { rounds: 11, iterations: 4, warmupRounds: 1 })));
  records.push(...(await chainCases(provider, decodeGraph(), lane, 'decode step, 5 layers stories260K', { rounds: 11, iterations: 2, warmupRounds: 1 })));
  records.push(...(await hostMatmulCases(createHostProvider(), 'node')));
  if (uncaptured.length > 0) throw new Error(`uncaptured WebGPU errors during the run: ${uncaptured.slice(0, 3).join(' | ')}`);
  const dawnAdapter = adapterSummary(provider.adapterInfo, provider.device);
  records = labelRows(records, (r) => laneWhere(r.lane, dawnAdapter));
  provider.destroy();

  // The Chromium part of this run, if it ran (scripts/lane.sh bench-submit removes it first).
  let chromium: BrowserPart | { missing: string } = { missing: `${CHROMIUM_PART} not found: run npm run bench:submit for the browser part` };
  if (existsSync(CHROMIUM_PART)) {
    const part = JSON.parse(readFileSync(CHROMIUM_PART, 'utf8')) as BrowserPart;
    chromium = part;
    records.unshift(...part.records);
    phases.unshift(...part.phases);
  }
  const order = ['a', 'b', 'c', 'd', 'e'];
  records.sort((x, y) => order.indexOf(x.point) - order.indexOf(y.point));

  console.log(`\n${formatTable('tenon execution layer vs peers (t/peer = tenon / peer median round time, below 1 is faster; p50 t/peer = the same over single-call medians)', records)}`);
  console.log('\ntenon phases per call, medians (ms): submit / wait / intoGroup');
  for (const p of phases) console.log(`  ${p.lane.padEnd(10)} ${p.case.padEnd(48)} ${p.submitMs.toFixed(4)} / ${p.waitMs.toFixed(4)} / ${p.intoGroupMs.toFixed(4)}`);
  const headlines = records.filter((r) => r.aim !== undefined);
  const result = {
    benchmark: 'submit',
    date: new Date().toISOString(),
    machine: machineInfo(loadAtStart),
    note: 'timeRatio = tenon median time / peer median time (below 1: tenon faster); speedup = 1 / timeRatio. Candidates of a case run interleaved in one process (Node) or one page (Chromium); each sample is the mean call of one round (stalls included), each figure the median sample; callMedianRatio compares medians of single calls (stalls left out). phases: medians of tenon calls split at submit / wait / intoGroup.',
    ...softwareFields(records),
    aims: { matmul: 'tenon >= 1.2x the peer speed (speedup >= 1.2)', overheads: 'tenon time <= 1.1x the hand-written loop (timeRatio <= 1.1)', chaining: 'reported, no aim: chained time / submit-and-wait time for the same steps (below 1: chaining faster)' },
    adapters: { 'node-dawn': dawnAdapter, chromium: 'adapter' in chromium ? chromium.adapter : chromium },
    browser: 'browser' in chromium ? chromium.browser : undefined,
    peers: { ...('peers' in chromium ? chromium.peers : {}), d: 'onnxruntime-web 1.30.0 wasm, numThreads 1 (Node)' },
    aimsMet: Object.fromEntries(headlines.map((r) => [`${r.point} ${r.lane} ${r.case}`, r.meetsAim])),
    cases: records,
    phases,
  };
  mkdirSync('bench/results', { recursive: true });
  const file = 'bench/results/submit.json';
  writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  console.log(`\nwrote ${file}`);
});
