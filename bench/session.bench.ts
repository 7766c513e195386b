// Inference-session benchmark, Node part (issue 5, acceptance point 6; issue 9 point 7), and the report
// of the whole run. With stories260K + tok512 (../shared/models), on the host provider and on WebGPU
// through Dawn, through TextSession's public API only (bench/session/cases.ts):
//   1 greedy decode tokens/s, host vs Dawn;
//   3 speculative (prompt lookup) vs plain greedy generation on a repetitive and on ordinary prompts,
//     identical outputs, with acceptance figures;
//   4 rollback of k tokens at 16 and at 400 committed tokens, against reset + re-prefill; checkpoint();
//   5 (issue 11), in a test of its own (`npm run bench:session -- -t "issue 11"` runs it alone in both
//     parts): on Dawn, plain steps (decode: 'plain') vs chained, pipelined steps: decode tokens/s, time to
//     first token of a 400-token prompt, and the per-token counters of both; merged with the Chromium
//     part's rows (bench/results/session-decode.chromium.json, consumed: a stale part never merges twice)
//     into bench/results/session-decode.json.
// Point 2 (time to first token with a prompt cache) needs the data plane (OPFS), so it runs only in the
// Chromium part (bench/session.browser.bench.ts), which runs first in the same `npm run bench:session`
// and leaves its records in bench/results/session.chromium.json; this file merges them, prints one ratio
// table and writes bench/results/session.json. Rows measured on a software adapter (SwiftShader) say so
// (bench/report.ts). It measures and reports; it asserts nothing about time.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { it } from 'vitest';
import { create, globals } from 'webgpu';
import { createHostProvider, createWebGPUProvider } from '../src/index.js';
import { readModelFixture } from '../contracts/support/models.js';
import { SETTINGS, SPECULATIVE_PROMPTS, decodeCase, decodeModesCase, formatTable, makeTarget, rollbackCase, speculativeCase } from './session/cases.js';
import type { SessionRecord } from './session/cases.js';
import type { SessionBrowserPart } from './session/part.js';
import { describeAdapter, machineInfo, softwareFields } from './report.js';

const CHROMIUM_PART = 'bench/results/session.chromium.json';
const CHROMIUM_DECODE_PART = 'bench/results/session-decode.chromium.json';
/** A safety limit, not a budget: point 5 on a software adapter of a busy machine takes many minutes. */
const DECODE_TIMEOUT_MS = 3_600_000;

/**
 * Dawn's entry point stays reachable for the whole run: when the object `create([])` returned is
 * garbage-collected while its device is in use, the process aborts (measured with webgpu 0.6.2; see
 * bench/submit.bench.ts).
 */
let dawn: GPU | undefined;

it('inference session: decode, speculative, checkpoint/rollback on host and Dawn; report', async () => {
  const loadAtStart = os.loadavg();
  const modelBytes = await readModelFixture('stories260K.bin');
  const tokBytes = await readModelFixture('tok512.bin');
  if (modelBytes === undefined || tokBytes === undefined) throw new Error('the session benchmark needs ../shared/models/stories260K.bin and tok512.bin');
  Object.assign(globalThis, globals);
  dawn ??= create([]);
  const gpuProvider = await createWebGPUProvider({ gpu: dawn });
  const uncaptured: string[] = [];
  gpuProvider.device.onuncapturederror = (e) => uncaptured.push(e.error.message);
  const host = makeTarget('node', 'host', createHostProvider(), modelBytes, tokBytes);
  const gpu = makeTarget('node', 'webgpu-dawn', gpuProvider, modelBytes, tokBytes);

  const records: SessionRecord[] = [];
  records.push(await decodeCase(host, gpu));
  for (const prompt of SPECULATIVE_PROMPTS) for (const t of [host, gpu]) records.push(await speculativeCase(t, prompt));
  for (const t of [host, gpu]) records.push(...(await rollbackCase(t)));
  if (uncaptured.length > 0) throw new Error(`uncaptured WebGPU errors during the run: ${uncaptured.slice(0, 3).join(' | ')}`);
  const dawnAdapter = describeAdapter(gpuProvider.adapterInfo, gpuProvider.device);
  gpuProvider.destroy();

  // The Chromium part of this run, if it ran (scripts/lane.sh bench-session removes it first).
  let chromium: SessionBrowserPart | { missing: string } = { missing: `${CHROMIUM_PART} not found: run npm run bench:session for the browser part` };
  if (existsSync(CHROMIUM_PART)) {
    const part = JSON.parse(readFileSync(CHROMIUM_PART, 'utf8')) as SessionBrowserPart;
    chromium = part;
    records.push(...part.records);
  }
  const laneOrder = ['node', 'chromium'];
  records.sort((x, y) => x.point - y.point || laneOrder.indexOf(x.lane) - laneOrder.indexOf(y.lane));

  console.log(`\n${formatTable('tenon inference session (stories260K; cand/base = candidate / baseline median time, below 1: the candidate is faster)', records)}`);
  const result = {
    benchmark: 'session',
    date: new Date().toISOString(),
    machine: machineInfo(loadAtStart),
    model: { file: 'stories260K.bin', tokenizer: 'tok512.bin', config: host.model.config },
    settings: SETTINGS,
    note:
      'ratio = candidate median time / baseline median time (below 1: the candidate is faster). Sides of a case run interleaved in one process (Node) or one page (Chromium), their order rotating each round; untimed setup (reset, prefill, the step to roll back) precedes every timed call. Every case uses the public TextSession API only. Point 2 runs only in Chromium: prompt caches live on the data plane (OPFS). Point 5 (issue 11) is in bench/results/session-decode.json. Each row carries measuredOn and softwareAdapter.',
    ...softwareFields(records),
    adapters: { 'node-dawn': dawnAdapter, chromium: 'adapter' in chromium ? chromium.adapter : chromium },
    browser: 'browser' in chromium ? chromium.browser : undefined,
    cases: records,
  };
  mkdirSync('bench/results', { recursive: true });
  const file = 'bench/results/session.json';
  writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  console.log(`\nwrote ${file}`);
});

it('issue 11 decode modes on Dawn: plain vs chained steps; report with the Chromium part', async () => {
  const loadAtStart = os.loadavg();
  const modelBytes = await readModelFixture('stories260K.bin');
  const tokBytes = await readModelFixture('tok512.bin');
  if (modelBytes === undefined || tokBytes === undefined) throw new Error('the session benchmark needs ../shared/models/stories260K.bin and tok512.bin');
  Object.assign(globalThis, globals);
  dawn ??= create([]);
  const gpuProvider = await createWebGPUProvider({ gpu: dawn });
  const uncaptured: string[] = [];
  gpuProvider.device.onuncapturederror = (e) => uncaptured.push(e.error.message);
  const gpu = makeTarget('node', 'webgpu-dawn', gpuProvider, modelBytes, tokBytes);
  const records: SessionRecord[] = await decodeModesCase(gpu);
  if (uncaptured.length > 0) throw new Error(`uncaptured WebGPU errors during the run: ${uncaptured.slice(0, 3).join(' | ')}`);
  const dawnAdapter = describeAdapter(gpuProvider.adapterInfo, gpuProvider.device);
  gpuProvider.destroy();
  // The Chromium part of this run, consumed so that a later run without one reports it missing.
  let chromium: SessionBrowserPart | { missing: string } = { missing: `${CHROMIUM_DECODE_PART} not found: run npm run bench:session for the browser part` };
  if (existsSync(CHROMIUM_DECODE_PART)) {
    const part = JSON.parse(readFileSync(CHROMIUM_DECODE_PART, 'utf8')) as SessionBrowserPart;
    rmSync(CHROMIUM_DECODE_PART);
    chromium = part;
    records.push(...part.records);
  }
  console.log(`\n${formatTable('tenon issue 11: plain vs chained decode steps (stories260K; cand/base = chained / plain median time, below 1: chained is faster)', records)}`);
  const result = {
    benchmark: 'session-decode',
    date: new Date().toISOString(),
    machine: machineInfo(loadAtStart),
    model: { file: 'stories260K.bin', tokenizer: 'tok512.bin' },
    settings: SETTINGS.decodeModes,
    note:
      'Issue 11, on one WebGPU adapter per lane in one run: the plain step path (decode mode plain: every step written, submitted and waited for, its logits read back, the token chosen on the host) against chained, pipelined steps (the default: steps chained on the live state group, greedy choices on the device, steps kept in flight ahead, 4 bytes read back per token). ratio = chained median time / plain median time. Counters are per decode token from untimed runs (a generation of N tokens minus one of 0); submissions and host waits include one per download of a buffer into host memory. Time to first token = prefill of the 400-token prompt (chunks of maxBatch) until the first id is on the host. Each row carries measuredOn and softwareAdapter.',
    ...softwareFields(records),
    adapters: { 'node-dawn': dawnAdapter, chromium: 'adapter' in chromium ? chromium.adapter : chromium },
    chromiumPartDate: 'date' in chromium ? chromium.date : undefined,
    cases: records,
  };
  mkdirSync('bench/results', { recursive: true });
  const file = 'bench/results/session-decode.json';
  writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  console.log(`\nwrote ${file}`);
}, DECODE_TIMEOUT_MS);
