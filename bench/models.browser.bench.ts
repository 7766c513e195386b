// Model benchmark, Chromium part (issue 10, acceptance point 6); run by `npm run bench:models` before the
// Node part, which merges these records into bench/results/models.json and prints the tables. In the page,
// with the GGUF fixtures fetched through the dev server (/@fs ../shared/models) and gunzipped there, on
// WebGPU (SwiftShader here: rows say `software adapter`):
//   - greedy decode tokens/s of every tiny-llama file (bench/models/cases.ts decodeCase), the files'
//     rounds interleaved; the Node part checks these greedy ids against the host provider's and Dawn's;
//   - load time of the ~39 MB tiny-qwen2 fixture from OPFS: written into a fresh data plane's OPFS folder
//     through the data plane, then loadModel + materializeWeights through descriptorSource as the demo's
//     worker does, against the same from the bytes in memory (loadCase).
// It measures and writes its records through the browser `commands` API; it asserts nothing about time.
import { it } from 'vitest';
import { commands } from 'vitest/browser';
import { connectSession, createDataPlane, createWebGPUProvider } from '../src/index.js';
import { describeAdapter } from './report.js';
import { decodeCase, formatDecodeTable, formatLoadTable, loadCase, loadTinyLlamas, makeTarget } from './models/cases.js';
import type { ModelsBrowserPart } from './models/part.js';

const PART = 'bench/results/models.chromium.json';

it('models in Chromium: decode tokens/s per lowering kind on WebGPU, load from OPFS', async () => {
  const entries = await loadTinyLlamas();
  const gpuProvider = await createWebGPUProvider();
  const uncaptured: string[] = [];
  gpuProvider.device.addEventListener('uncapturederror', (e) => uncaptured.push((e as GPUUncapturedErrorEvent).error.message));
  const gpu = makeTarget('chromium', 'webgpu-chromium', gpuProvider);
  const decode = await decodeCase([gpu], entries);
  // A fresh plane per run: its own OPFS folder, IndexedDB store and locks.
  const plane = await createDataPlane({ name: `bench-models-${Date.now().toString(36)}` });
  const store = await connectSession(plane.createSessionPort({ read: ['/'], write: ['/'] }));
  let load;
  try {
    load = [await loadCase(gpu, store)];
  } finally {
    await store.close();
    await plane.close();
  }
  if (uncaptured.length > 0) throw new Error(`uncaptured WebGPU errors during the run: ${uncaptured.slice(0, 3).join(' | ')}`);
  const part: ModelsBrowserPart = {
    date: new Date().toISOString(),
    browser: { userAgent: navigator.userAgent, hardwareConcurrency: navigator.hardwareConcurrency, crossOriginIsolated },
    adapter: describeAdapter(gpuProvider.adapterInfo, gpuProvider.device),
    decode,
    load,
  };
  console.log(['Chromium part', ...formatDecodeTable(decode), '', ...formatLoadTable(load)].join('\n'));
  await commands.writeFile(PART, JSON.stringify(part, null, 2));
  gpuProvider.destroy();
});
