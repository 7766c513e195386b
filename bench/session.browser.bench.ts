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
//   5 (issue 11) on WebGPU: plain vs chained, pipelined steps (tokens/s, time to first token, counters).
import { it } from 'vitest';
import { commands } from 'vitest/browser';
import { connectSession, createDataPlane, createHostProvider, createWebGPUProvider } from '../src/index.js';
import { readModelFixture } from '../contracts/support/models.js';
import { describeAdapter } from './report.js';
import { SPECULATIVE_PROMPTS, decodeCase, decodeModesCase, formatTable, makeTarget, rollbackCase, speculativeCase, ttftCase } from './session/cases.js';
import type { SessionRecord } from './session/cases.js';
import type { SessionBrowserPart } from './session/part.js';

const PART = 'bench/results/session.chromium.json';

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
    records.push(...(await decodeModesCase(gpu)));
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
