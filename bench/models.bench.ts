// Model benchmark, Node part (issue 10, acceptance point 6), and the report of the whole run. For every
// tiny-llama GGUF fixture (../shared/models/gguf: f32, F16, Q8_0, Q4_0, Q4_K_M, Q6_K), through the public
// API only (bench/models/cases.ts):
//   - greedy decode tokens/s on the host provider (its default kernels: WebAssembly SIMD) and on WebGPU
//     through Dawn, every (file, provider) side interleaved round by round;
//   - weight bytes one decode step reads, per lowering kind, from the materialised weights' packed sizes.
// The Chromium part (bench/models.browser.bench.ts: decode on Chromium's WebGPU, and the load of the
// ~39 MB tiny-qwen2 fixture from OPFS) runs first in the same `npm run bench:models` and leaves its
// records in bench/results/models.chromium.json; this file merges them, checks that all three providers
// computed the same greedy ids for each file (a side that differs throws), prints the tables and writes
// bench/results/models.json. Rows measured on a software adapter say so (bench/report.ts). It measures
// and reports; it asserts nothing about time.
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { it } from 'vitest';
import { create, globals } from 'webgpu';
import { createHostProvider, createWebGPUProvider } from '../src/index.js';
import { GGUF_FIXTURE_NAMES } from '../contracts/support/gguf-fixtures.js';
import { SETTINGS, TINY_LLAMA_FILES, checkSameIds, decodeCase, formatDecodeTable, formatLoadTable, formatWeightTable, loadTinyLlamas, makeTarget } from './models/cases.js';
import type { DecodeRecord } from './models/cases.js';
import type { ModelsBrowserPart } from './models/part.js';
import { describeAdapter, machineInfo, softwareFields } from './report.js';

const CHROMIUM_PART = 'bench/results/models.chromium.json';
const GGUF_DIR = fileURLToPath(new URL('../../shared/models/gguf/', import.meta.url));
const TINY_LLAMA_FILE = /^(tiny-llama-.+\.gguf)(\.gz)?$/;

/**
 * Dawn's entry point stays reachable for the whole run: when the object `create([])` returned is
 * garbage-collected while its device is in use, the process aborts (measured with webgpu 0.6.2; see
 * bench/submit.bench.ts).
 */
let dawn: GPU | undefined;

/** Every tiny-llama file on disk must be one the benchmark runs (a new fixture is never skipped silently). */
function checkFixtureList(): void {
  const onDisk = readdirSync(GGUF_DIR)
    .map((f) => TINY_LLAMA_FILE.exec(f)?.[1])
    .filter((f): f is string => f !== undefined);
  const unknown = onDisk.filter((f) => !(GGUF_FIXTURE_NAMES as readonly string[]).includes(f));
  if (unknown.length > 0) throw new Error(`${unknown.join(', ')} in ${GGUF_DIR} missing from contracts/support/gguf-fixtures.ts: add its length and SHA-256 there`);
  const absent = TINY_LLAMA_FILES.filter((f) => !onDisk.includes(f));
  if (absent.length > 0) throw new Error(`the model benchmark needs ${absent.join(', ')} in ${GGUF_DIR}`);
}

it('models: decode tokens/s per lowering kind on host, Dawn and Chromium; weight bytes per token; OPFS load; report', async () => {
  const loadAtStart = os.loadavg();
  checkFixtureList();
  const entries = await loadTinyLlamas();
  Object.assign(globalThis, globals);
  dawn ??= create([]);
  const gpuProvider = await createWebGPUProvider({ gpu: dawn });
  const uncaptured: string[] = [];
  gpuProvider.device.onuncapturederror = (e) => uncaptured.push(e.error.message);
  const host = makeTarget('node', 'host', createHostProvider());
  const gpu = makeTarget('node', 'webgpu-dawn', gpuProvider);
  const decode: DecodeRecord[] = await decodeCase([host, gpu], entries);
  if (uncaptured.length > 0) throw new Error(`uncaptured WebGPU errors during the run: ${uncaptured.slice(0, 3).join(' | ')}`);
  const dawnAdapter = describeAdapter(gpuProvider.adapterInfo, gpuProvider.device);
  gpuProvider.destroy();
  const hostKernels = decode.find((r) => r.provider === 'host')?.hostKernels;
  if (hostKernels?.kind !== 'wasm-simd') throw new Error(`the host provider ran ${hostKernels?.kind ?? 'no'} kernels, not its default WebAssembly SIMD ones`);

  // The Chromium part of this run (scripts/lane.sh bench-models removes a stale one first).
  if (!existsSync(CHROMIUM_PART)) throw new Error(`${CHROMIUM_PART} not found: run npm run bench:models, which runs the Chromium part first`);
  const chromium = JSON.parse(readFileSync(CHROMIUM_PART, 'utf8')) as ModelsBrowserPart;
  // Greedy ids of every side of a file against the host provider's, over the ids both produced.
  const idsCompared: Record<string, Record<string, number>> = {};
  for (const e of entries) {
    const theirs = chromium.decode.find((r) => r.file === e.file);
    if (theirs === undefined) throw new Error(`the Chromium part has no decode row for ${e.file}`);
    const ours = decode.filter((r) => r.file === e.file);
    const hostRow = ours.find((r) => r.provider === 'host')!;
    idsCompared[e.file] = Object.fromEntries(
      [...ours.filter((r) => r !== hostRow), theirs].map((r) => [r.provider, checkSameIds(e.file, { provider: hostRow.provider, ids: hostRow.greedyIds }, { provider: r.provider, ids: r.greedyIds })]),
    );
  }
  decode.push(...chromium.decode);
  const order = entries.map((e) => e.file);
  const providers = ['host', 'webgpu-dawn', 'webgpu-chromium'];
  decode.sort((x, y) => order.indexOf(x.file as never) - order.indexOf(y.file as never) || providers.indexOf(x.provider) - providers.indexOf(y.provider));

  const lines = [
    '',
    `tenon models: greedy decode after "${SETTINGS.decode.prompt}" (prefill and one step untimed, then steps x rounds timed, rounds interleaved; tok/s from the median round; ids: greedy ids equal to the host row's over the n both ran)`,
    ...formatDecodeTable(decode, decode.filter((r) => r.provider === 'host')),
    '',
    'weight bytes read per decode token (materialised packed sizes: every layer tensor, output norm, classifier, one embedding row)',
    ...formatWeightTable(entries),
    '',
    `load from OPFS in Chromium (loadModel + materializeWeights through descriptorSource, as the demo's worker), median of ${SETTINGS.load.rounds} interleaved rounds`,
    ...formatLoadTable(chromium.load),
  ];
  console.log(lines.join('\n'));
  const result = {
    benchmark: 'models',
    date: new Date().toISOString(),
    machine: machineInfo(loadAtStart),
    settings: SETTINGS,
    note:
      'Decode: tokens/s = timed decode steps / median time of the timed loop (prefill and one decode step untimed each round); all (file, provider) sides of a lane open at once, rounds interleaved with a rotating order. WebGPU sides on a software adapter run settings.decode.softwareAdapterSchedule (a few steps, one round): SwiftShader takes seconds per quantized decode step. Greedy ids are checked identical across host, Dawn and Chromium for each file over the ids every side produced (models[].idsComparedWithHost: ids compared per provider). weightBytesPerToken: the packed bytes of the materialised weights that one decode step reads (every layer tensor, output norm, classifier whole; one token-embedding row); weightGBps = weightBytesPerToken * tok/s. Load: OPFS blob through descriptorSource vs bytes in memory, loadModel + materializeWeights + the upload queue drained, on Chromium WebGPU. Each row carries measuredOn and softwareAdapter.',
    ...softwareFields([...decode, ...chromium.load]),
    adapters: { 'node-dawn': dawnAdapter, chromium: chromium.adapter },
    browser: chromium.browser,
    hostKernels,
    models: entries.map((e) => ({ kind: e.kind, file: e.file, fileBytes: e.fileBytes, packedBytes: e.packed, weightBytesPerToken: e.perToken, greedyIds: decode.find((r) => r.file === e.file)!.greedyIds, idsComparedWithHost: idsCompared[e.file] })),
    decode,
    load: chromium.load,
  };
  mkdirSync('bench/results', { recursive: true });
  const file = 'bench/results/models.json';
  writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  console.log(`\nwrote ${file}`);
});
