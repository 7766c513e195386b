// Inference-session benchmark, Chromium part (issue 5, acceptance point 6; issue 9 point 7); run by
// `npm run bench:session` before the Node part, which merges these records into
// bench/results/session.json and prints the table. In the page, with stories260K + tok512 fetched through
// the dev server (/@fs ../shared/models), on WebGPU (SwiftShader here: rows say `software adapter`) and on
// the host provider over shared memory, through TextSession's public API only:
//   1 greedy decode tokens/s, host-shared vs WebGPU;
//   2 time to first token for a 400-token prompt, fresh prefill vs a prompt cache of its first 390
//     tokens loaded from the data plane (OPFS, through a page-side session of a fresh plane), both
//     sessions prefilling in one pass;
//   3 speculative vs plain greedy generation on a repetitive and on ordinary prompts;
//   4 rollback at 16 and 400 committed tokens against reset + re-prefill, and checkpoint();
//   5 (issue 11) on WebGPU, in a test of its own (`npm run bench:session -- -t "issue 11"` runs it alone in
//     both parts): plain vs chained, pipelined steps (tokens/s, time to first token, counters), written to
//     bench/results/session-decode.chromium.json for the Node part's own test.
import { it } from 'vitest';
import { commands } from 'vitest/browser';
import { connectSession, createDataPlane, createHostProvider, createWebGPUProvider } from '../src/index.js';
import { readModelFixture } from '../contracts/support/models.js';
import { describeAdapter } from './report.js';
import { SPECULATIVE_PROMPTS, decodeCase, decodeModesCase, formatTable, makeTarget, rollbackCase, speculativeCase, ttftCase } from './session/cases.js';
import type { SessionRecord } from './session/cases.js';
import type { SessionBrowserPart } from './session/part.js';

const PART = 'bench/results/session.chromium.json';
const DECODE_PART = 'bench/results/session-decode.chromium.json';
/** A safety limit, not a budget: point 5 on a software adapter of a busy machine takes many minutes. */
const DECODE_TIMEOUT_MS = 3_600_000;

it('inference session in Chromium: decode, time to first token with a prompt cache, speculative, rollback', async () => {
  const modelBytes = await readModelFixture('stories260K.bin');
  const tokBytes = await readModelFixture('tok512.bin');
  if (modelBytes === undefined || tokBytes === undefined) throw new Error('the session benchmark needs ../shared/models/stories260K.bin and tok512.bin');
  const gpuProvider = await createWebGPUProvider();
  const uncaptured: string[] = [];
  gpuProvider.device.addEventListener('uncapturederror', (e) => uncaptured.push((e as GPUUncapturedErrorEvent).error.message));
  const host = makeTarget('chromium', 'host-shared', createHostProvider({ shared: true }), modelBytes, tokBytes);
  const gpu = makeTarget('chromium', 'webgpu-chromium', gpuProvider, modelBytes, tokBytes);
  // A fresh plane per run: its own OPFS folder, IndexedDB store and locks.
  const plane = await createDataPlane({ name: `bench-session-${Date.now().toString(36)}` });
  const store = await connectSession(plane.createSessionPort({ read: ['/'], write: ['/'] }));
  const records: SessionRecord[] = [];
  try {
    records.push(await decodeCase(host, gpu));
    for (const t of [host, gpu]) records.push(...(await ttftCase(t, store)));
    for (const prompt of SPECULATIVE_PROMPTS) for (const t of [host, gpu]) records.push(await speculativeCase(t, prompt));
    for (const t of [host, gpu]) records.push(...(await rollbackCase(t)));
  } finally {
    await store.close();
    await plane.close();
  }
  if (uncaptured.length > 0) throw new Error(`uncaptured WebGPU errors during the run: ${uncaptured.slice(0, 3).join(' | ')}`);
  const part: SessionBrowserPart = {
    date: new Date().toISOString(),
    browser: { userAgent: navigator.userAgent, hardwareConcurrency: navigator.hardwareConcurrency, crossOriginIsolated },
    adapter: describeAdapter(gpuProvider.adapterInfo, gpuProvider.device),
    records,
  };
  console.log(formatTable('Chromium part', records));
  await commands.writeFile(PART, JSON.stringify(part, null, 2));
  gpuProvider.destroy();
});

it('issue 11 decode modes in Chromium: plain vs chained steps on WebGPU', async () => {
  const modelBytes = await readModelFixture('stories260K.bin');
  const tokBytes = await readModelFixture('tok512.bin');
  if (modelBytes === undefined || tokBytes === undefined) throw new Error('the session benchmark needs ../shared/models/stories260K.bin and tok512.bin');
  const gpuProvider = await createWebGPUProvider();
  const uncaptured: string[] = [];
  gpuProvider.device.addEventListener('uncapturederror', (e) => uncaptured.push((e as GPUUncapturedErrorEvent).error.message));
  const gpu = makeTarget('chromium', 'webgpu-chromium', gpuProvider, modelBytes, tokBytes);
  const records = await decodeModesCase(gpu);
  if (uncaptured.length > 0) throw new Error(`uncaptured WebGPU errors during the run: ${uncaptured.slice(0, 3).join(' | ')}`);
  const part: SessionBrowserPart = {
    date: new Date().toISOString(),
    browser: { userAgent: navigator.userAgent, hardwareConcurrency: navigator.hardwareConcurrency, crossOriginIsolated },
    adapter: describeAdapter(gpuProvider.adapterInfo, gpuProvider.device),
    records,
  };
  console.log(formatTable('Chromium part, issue 11 decode modes', records));
  await commands.writeFile(DECODE_PART, JSON.stringify(part, null, 2));
  gpuProvider.destroy();
}, DECODE_TIMEOUT_MS);
