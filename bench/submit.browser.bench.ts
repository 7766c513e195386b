// Execution-layer benchmark, Chromium part (issue 3, acceptance point 6); run by `npm run bench:submit`
// before the Node part, which merges these records into bench/results/submit.json and prints the table.
//   (a) matmul 1024^3 f32 on WebGPU: tenon (a compiled graph with the `matmul` op, replayed) against
//       TF.js 4.22.0 (`tf.matMul`) on the SAME GPUDevice: TF.js's WebGPUBackend is constructed over the
//       device of tenon's provider, so both run on one adapter, one device, one queue in one page.
//       Headline: submit -> proven completion -> readback vs tf.matMul + await data(). Detail: to proven
//       completion (no readback) vs tf.matMul + submitQueue() + onSubmittedWorkDone().
//   (b), (c) as in the Node part, on Chromium's WebGPU.
//   (d) host matmul vs onnxruntime-web wasm (1 thread) in the page, as a second lane.
//   (e) chained steps on a live group vs submit-and-wait, as in the Node part, on Chromium's WebGPU.
import * as tf from '@tensorflow/tfjs-core';
import { WebGPUBackend } from '@tensorflow/tfjs-backend-webgpu';
import * as ort from 'onnxruntime-web';
import { it } from 'vitest';
import { commands } from 'vitest/browser';
import { createHostProvider, createRuntime, createWebGPUProvider } from '../src/index.js';
import type { WebGPUProvider } from '../src/index.js';
import { MATMUL_AIM, chainCases, hostMatmulCases, matmulGraph, maxRelDiff, overheadCases, readSlot, submitToCompletion } from './submit/cases.js';
import type { PhaseBreakdown } from './submit/cases.js';
import { formatTable, record, sideBySide } from './submit/measure.js';
import type { CaseRecord } from './submit/measure.js';
import { adapterSummary, laneWhere } from './submit/adapter.js';
import { labelRows } from './report.js';
import type { BrowserPart } from './submit/adapter.js';
import { decodeGraph, pseudoRandom, smallGraph } from './submit/workloads.js';

const PART = 'bench/results/submit.chromium.json';
const N = 1024;
/**
 * TF.js registers its WebGPU kernels under the backend name 'webgpu', so its own factory (which requests
 * a second adapter and device) is replaced by one over tenon's device under the same name.
 */
const TF_BACKEND = 'webgpu';

async function matmulVsTfjs(provider: WebGPUProvider): Promise<CaseRecord[]> {
  tf.removeBackend(TF_BACKEND);
  tf.registerBackend(TF_BACKEND, () => new WebGPUBackend(provider.device, provider.adapterInfo));
  if (!(await tf.setBackend(TF_BACKEND))) throw new Error('TF.js WebGPU backend did not initialize');
  await tf.ready();
  const backend = tf.backend() as WebGPUBackend;
  const a = pseudoRandom(N * N, 21, 1);
  const b = pseudoRandom(N * N, 22, 1);
  const runtime = createRuntime(provider);
  const mm = await matmulGraph(runtime, provider, N, N, N, a, b);
  const ta = tf.tensor2d(a, [N, N]);
  const tb = tf.tensor2d(b, [N, N]);

  // Agreement (outside timing).
  mm.group = await submitToCompletion(runtime, mm.graph, mm.group);
  const ours = await readSlot(mm.group, mm.out);
  const tc = tf.matMul(ta, tb);
  const theirs = (await tc.data()) as Float32Array;
  tc.dispose();
  const diff = maxRelDiff(ours, theirs);
  if (!(diff <= 1e-3)) throw new Error(`matmul ${N}: tenon and TF.js differ (${diff})`);

  const [tenonRead, tenonDone, tfRead, tfDone] = await sideBySide(
    [
      {
        name: 'tenon matmul: submit -> completed -> readback',
        run: async () => {
          mm.group = await submitToCompletion(runtime, mm.graph, mm.group);
          await readSlot(mm.group, mm.out);
        },
      },
      { name: 'tenon matmul: submit -> proven completion', run: async () => void (mm.group = await submitToCompletion(runtime, mm.graph, mm.group)) },
      {
        name: 'tf.matMul + await data()',
        run: async () => {
          const c = tf.matMul(ta, tb);
          await c.data();
          c.dispose();
        },
      },
      {
        name: 'tf.matMul + flush + onSubmittedWorkDone',
        run: async () => {
          const c = tf.matMul(ta, tb);
          // TF.js defers commands in an open compute pass: end it and submit, exactly as its own
          // getBufferData() does before a readback (submitQueue() alone leaves the pass open and makes
          // every later command buffer invalid, which then silently returns stale pool buffers).
          backend.ensureCommandEncoderReady();
          backend.endComputePassEncoder();
          backend.submitQueue();
          await provider.device.queue.onSubmittedWorkDone();
          c.dispose();
        },
      },
    ],
    { rounds: 5, iterations: 1, warmupRounds: 1 },
  );
  // Still agreeing after the timed calls (a failed TF.js dispatch would leave a stale pool buffer).
  const after = tf.matMul(ta, tb);
  const diffAfter = maxRelDiff(await readSlot(mm.group, mm.out), (await after.data()) as Float32Array);
  after.dispose();
  if (!(diffAfter <= 1e-3)) throw new Error(`matmul ${N}: tenon and TF.js differ after timing (${diffAfter})`);
  ta.dispose();
  tb.dispose();
  mm.group.dispose();
  mm.graph.dispose();
  const flops = [N, N, N] as const;
  return [
    record({ point: 'a', lane: 'chromium', case: `matmul ${N}^3 f32, incl. readback`, tenon: tenonRead!, peer: tfRead!, flops, aim: MATMUL_AIM, note: `max rel diff vs TF.js ${diff.toExponential(1)}` }),
    record({ point: 'a', lane: 'chromium', case: `matmul ${N}^3 f32, to proven completion`, tenon: tenonDone!, peer: tfDone!, flops }),
  ];
}

it('execution layer in Chromium: tenon vs TF.js WebGPU and hand-written WebGPU', async () => {
  const provider = await createWebGPUProvider();
  // Any error outside an error scope (a peer's invalid command buffer, say) invalidates the run.
  const uncaptured: string[] = [];
  provider.device.addEventListener('uncapturederror', (e) => uncaptured.push((e as GPUUncapturedErrorEvent).error.message));
  const records: CaseRecord[] = [];
  const phases: PhaseBreakdown[] = [];
  records.push(...(await matmulVsTfjs(provider)));
  const lane = 'chromium';
  const small = await overheadCases(provider, smallGraph(), 'b', lane, 'submit+retire, 3 small dispatches', { rounds: 21, iterations: 40, warmupRounds: 1 });
  const decode = await overheadCases(provider, decodeGraph(), 'c', lane, 'decode step, 5 layers stories260K', { rounds: 21, iterations: 10, warmupRounds: 1 });
  records.push(...small.records, ...decode.records);
  phases.push(small.phases, decode.phases);
  records.push(...(await chainCases(provider, smallGraph(), lane, 'small3', { rounds: 11, iterations: 4, warmupRounds: 1 })));
  records.push(...(await chainCases(provider, decodeGraph(), lane, 'decode step, 5 layers stories260K', { rounds: 11, iterations: 2, warmupRounds: 1 })));
  records.push(...(await hostMatmulCases(createHostProvider(), 'chromium-host')));
  const adapter = adapterSummary(provider.adapterInfo, provider.device);
  const labelled = labelRows(records, (r) => laneWhere(r.lane, adapter));
  const part: BrowserPart = {
    date: new Date().toISOString(),
    browser: { userAgent: navigator.userAgent, hardwareConcurrency: navigator.hardwareConcurrency, crossOriginIsolated },
    adapter,
    peers: {
      a: `@tensorflow/tfjs-core + tfjs-backend-webgpu ${tf.version_core}, WebGPUBackend over tenon's GPUDevice`,
      'd (chromium-host)': `onnxruntime-web ${ort.env.versions.web ?? '1.30.0'} wasm, numThreads ${ort.env.wasm.numThreads}`,
    },
    records: labelled,
    phases,
  };
  if (uncaptured.length > 0) throw new Error(`uncaptured WebGPU errors during the run: ${uncaptured.slice(0, 3).join(' | ')}`);
  console.log(formatTable('Chromium part', labelled));
  await commands.writeFile(PART, JSON.stringify(part, null, 2));
  provider.destroy();
});
