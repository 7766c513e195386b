// Layer residency benchmark (issue 13, acceptance point 4): `npm run bench:residency`, one Node process,
// host provider and WebGPU through Dawn. For stories260K (5 layers, F32) and tiny-llama Q4_K_M (4
// layers), greedy decode tokens/s of the resident forward against bounded windows of every layer (the
// window holds the model: each layer is uploaded once, a step costs only the extra submissions), half the
// layers in the serial schedule (overlap: false: each window's uploads after the proof of the one before)
// and in the overlapped one (TS-residency-overlap: windows of floor(slots / 2) layers chained, the next
// window staged while the current one computes), and one layer (serial: its only slot is the one the
// in-flight submission reads), measured in interleaved rounds. Per row: bytes uploaded per token, host
// milliseconds per token (step time) and spent issuing uploads, the share of that upload time issued
// while a submission was in flight, host waits per token (runtime.stats().hostAwaits), and "hidden": for
// the overlapped row, (serial step ms - overlapped step ms) / serial upload ms, clamped to 0..1 (the raw
// difference is in the JSON: the overlapped schedule also pays for twice the submissions, so the net can
// be negative where submissions cost more than uploads). Rows on Dawn are labelled "software adapter" (SwiftShader): they
// describe that emulation, not a GPU. Writes bench/results/residency.json and prints a table. Nothing here
// asserts anything about time; a bounded side whose ids differ from the resident side throws.
import os from 'node:os';
import { it } from 'vitest';
import { create, globals } from 'webgpu';
import { LlamaForward, createHostProvider, createRuntime, createWebGPUProvider, loadModel } from '../src/index.js';
import type { HostProvider, LoadedModel, ResidencyPolicy, ResidencyReport, WebGPUProvider } from '../src/index.js';
import { readGgufFixture } from '../contracts/support/gguf-fixtures.js';
import { readModelFixture } from '../contracts/support/models.js';
import { SOFTWARE_ADAPTER_NOTE, describeAdapter, hardwareColumn, hardwareLabel, machineInfo, median } from './report.js';
import type { HardwareLabel, Where } from './report.js';

const PROMPT = [1, 403, 407, 261];
const MAX_SEQ = 64;
const ROUNDS = 3;
/** Decode steps per round (host; the software adapter gets fewer). */
const HOST_STEPS = 32;
const DAWN_STEPS = 8;

/** Dawn's entry point stays reachable for the whole run (see bench/session.bench.ts). */
let dawn: GPU | undefined;

interface Row extends HardwareLabel {
  readonly model: string;
  readonly provider: string;
  readonly policy: string;
  readonly budgetBytes: number;
  readonly slots: number;
  readonly windowBytes: number;
  readonly submissionsPerStep: number;
  readonly tokensPerSecond: number;
  readonly bytesUploadedPerToken: number;
  /** Bytes read from the model's range source per token (bounded windows read each fill by range). */
  readonly sourceBytesPerToken: number;
  /** Host bytes the window keeps for layer weights (its staging buffer). */
  readonly hostStagingBytes: number;
  readonly uploadMsPerToken: number;
  readonly uploadHiddenFraction: number;
  /** Host milliseconds per decode token (median round). */
  readonly stepMsPerToken: number;
  /** Overlapped rows: serial step ms - overlapped step ms per token (the same budget, the same run). */
  readonly stepMsSavedVsSerial?: number;
  /** Share of the upload host time issued while an earlier submission of the step was in flight. */
  readonly uploadIssuedInFlightFraction: number;
  /** Host waits on the GPU per decode token (fence and readback maps of the runtime). */
  readonly hostWaitsPerToken: number;
  /** Expert cache rows: misses and hits per token, and expert bytes fetched per token. */
  readonly expertMissesPerToken?: number;
  readonly expertHitsPerToken?: number;
  readonly expertBytesPerToken?: number;
}

interface Side {
  readonly label: string;
  readonly forward: LlamaForward;
  readonly times: number[];
  ids: number[] | undefined;
  hostAwaits: number;
}

async function decodeRound(forward: LlamaForward, steps: number): Promise<{ ms: number; ids: number[] }> {
  let r = await forward.run(PROMPT, 0, { logits: true });
  const ids: number[] = [];
  const started = performance.now();
  for (let s = 0; s < steps; s++) {
    ids.push(r.argmax);
    r = await forward.run([r.argmax], PROMPT.length + s);
  }
  return { ms: performance.now() - started, ids };
}

/** The budget of one layer slot plus `experts` cache slots per layer (the numbers of a refused 1-byte budget). */
async function expertBudget(runtime: ReturnType<typeof createRuntime>, model: LoadedModel, options: object, experts: number): Promise<number> {
  try {
    (await LlamaForward.create(runtime, model, { ...options, residency: { kind: 'bounded', bytes: 1, experts } })).dispose();
  } catch (err) {
    const ids = (err as { ids?: { largestLayer?: number; expertCache?: number } }).ids;
    if (ids?.largestLayer !== undefined && ids.expertCache !== undefined) return ids.largestLayer + ids.expertCache;
    throw err;
  }
  throw new Error('a 1-byte budget was accepted');
}

async function measure(name: string, model: LoadedModel, provider: HostProvider | WebGPUProvider, where: Where, steps: number): Promise<Row[]> {
  const runtime = createRuntime(provider);
  const options = { maxSeq: MAX_SEQ, maxBatch: PROMPT.length, decode: 'plain' as const };
  const resident = await LlamaForward.create(runtime, model, options);
  const largest = resident.residency().largestLayerBytes;
  // The slot of the largest layer, aligned: the plan's own figure, from a refused 1-byte budget.
  const slot = await LlamaForward.create(runtime, model, { ...options, residency: { kind: 'bounded', bytes: 1 } }).then(
    () => largest,
    (err: { ids?: { largestLayer?: number } }) => err.ids?.largestLayer ?? largest,
  );
  const layers = model.config.layers;
  const routed = model.architecture.ffn === 'routed';
  const experts = model.config.experts;
  const policies: [string, ResidencyPolicy][] = routed
    ? [
        ['resident', { kind: 'resident' }],
        ['bounded: one layer, experts in the window', { kind: 'bounded', bytes: slot }],
        [`bounded: one layer, expert cache ${experts}`, { kind: 'bounded', bytes: await expertBudget(runtime, model, options, experts), experts }],
        ['bounded: one layer, expert cache 1', { kind: 'bounded', bytes: await expertBudget(runtime, model, options, 1), experts: 1 }],
      ]
    : [
        ['resident', { kind: 'resident' }],
        ['bounded: every layer', { kind: 'bounded', bytes: slot * layers }],
        ['bounded: half, serial', { kind: 'bounded', bytes: slot * Math.max(1, Math.floor(layers / 2)), overlap: false }],
        ['bounded: half, overlapped', { kind: 'bounded', bytes: slot * Math.max(1, Math.floor(layers / 2)) }],
        ['bounded: one layer', { kind: 'bounded', bytes: slot }],
      ];
  const sides: Side[] = [{ label: 'resident', forward: resident, times: [], ids: undefined, hostAwaits: 0 }];
  for (const [label, policy] of policies.slice(1)) sides.push({ label, forward: await LlamaForward.create(runtime, model, { ...options, residency: policy }), times: [], ids: undefined, hostAwaits: 0 });
  const before = new Map(sides.map((s) => [s, s.forward.residency()]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of sides) {
      const awaits = runtime.stats().hostAwaits;
      const { ms, ids } = await decodeRound(side.forward, steps);
      side.hostAwaits += runtime.stats().hostAwaits - awaits;
      side.times.push(ms);
      if (side.ids === undefined) side.ids = ids;
      else if (side.ids.join() !== ids.join()) throw new Error(`${side.label}: greedy ids changed between rounds`);
      if (sides[0]!.ids !== undefined && side.ids.join() !== sides[0]!.ids.join()) throw new Error(`${side.label}: greedy ids differ from the resident forward`);
    }
  }
  const label = hardwareLabel(where);
  const perToken = (side: Side): { step: number; upload: number } => {
    const r = side.forward.residency();
    const b = before.get(side)!;
    const tokens = r.tokens - b.tokens;
    return { step: median(side.times) / steps, upload: tokens === 0 ? 0 : (r.uploadMilliseconds - b.uploadMilliseconds) / tokens };
  };
  const serial = sides.find((s) => s.label === 'bounded: half, serial');
  const rows = sides.map((side, i): Row => {
    const r: ResidencyReport = side.forward.residency();
    const b = before.get(side)!;
    const tokens = r.tokens - b.tokens;
    const upload = r.uploadMilliseconds - b.uploadMilliseconds;
    const overlapped = r.overlappedUploadMilliseconds - b.overlappedUploadMilliseconds;
    const mine = perToken(side);
    const vsSerial = r.overlap && serial !== undefined ? perToken(serial) : undefined;
    const saved = vsSerial === undefined ? undefined : vsSerial.step - mine.step;
    return {
      model: name,
      provider: provider.id,
      policy: policies[i]![0],
      budgetBytes: r.budgetBytes,
      slots: r.slots,
      windowBytes: r.windowBytes,
      submissionsPerStep: r.submissionsPerStep,
      tokensPerSecond: (steps * 1000) / median(side.times),
      bytesUploadedPerToken: tokens === 0 ? 0 : (r.bytesUploaded - b.bytesUploaded) / tokens,
      sourceBytesPerToken: tokens === 0 ? 0 : (r.sourceBytesRead - b.sourceBytesRead) / tokens,
      hostStagingBytes: r.hostStagingBytes,
      uploadMsPerToken: tokens === 0 ? 0 : upload / tokens,
      uploadHiddenFraction: saved === undefined || vsSerial!.upload === 0 ? 0 : Math.min(1, Math.max(0, saved / vsSerial!.upload)),
      stepMsPerToken: mine.step,
      ...(saved === undefined ? {} : { stepMsSavedVsSerial: saved }),
      uploadIssuedInFlightFraction: upload === 0 ? 0 : overlapped / upload,
      hostWaitsPerToken: side.hostAwaits / (ROUNDS * (steps + 1)),
      ...(r.experts === undefined || tokens === 0
        ? {}
        : {
            expertMissesPerToken: (r.experts.misses - (b.experts?.misses ?? 0)) / tokens,
            expertHitsPerToken: (r.experts.hits - (b.experts?.hits ?? 0)) / tokens,
            expertBytesPerToken: (r.experts.bytesFetched - (b.experts?.bytesFetched ?? 0)) / tokens,
          }),
      ...label,
    };
  });
  for (const side of sides) side.forward.dispose();
  return rows;
}

it('layer residency: tokens/s resident vs bounded windows, bytes uploaded per token, upload hidden by overlap (host and Dawn)', async () => {
  const loadAtStart = os.loadavg();
  const stories = await readModelFixture('stories260K.bin');
  const tok = await readModelFixture('tok512.bin');
  const q4 = await readGgufFixture('tiny-llama-Q4_K_M.gguf');
  const moe = await readGgufFixture('tiny-moe-Q4_K_M.gguf');
  if (stories === undefined || tok === undefined || q4 === undefined || moe === undefined) throw new Error('the residency benchmark needs ../shared/models (stories260K.bin, tok512.bin, gguf/tiny-llama-Q4_K_M.gguf.gz)');
  const models: [string, () => Promise<LoadedModel>][] = [
    ['stories260K.bin (F32)', () => loadModel(stories, { tokenizer: tok })],
    ['tiny-llama-Q4_K_M.gguf', () => loadModel(q4)],
    ['tiny-moe-Q4_K_M.gguf', () => loadModel(moe)],
  ];
  Object.assign(globalThis, globals);
  dawn ??= create([]);
  const gpu = await createWebGPUProvider({ gpu: dawn });
  const adapter = describeAdapter(gpu.adapterInfo, gpu.device);
  const rows: Row[] = [];
  for (const [name, load] of models) {
    rows.push(...(await measure(name, await load(), createHostProvider(), 'host', HOST_STEPS)));
    rows.push(...(await measure(name, await load(), gpu, adapter, DAWN_STEPS)));
  }
  const header = ['model', 'measured on', 'policy', 'slots', 'window KiB', 'subm/step', 'tok/s', 'step ms', 'waits/tok', 'upload KiB/tok', 'read KiB/tok', 'staging KiB', 'upload ms/tok', 'in flight', 'hidden', 'expert miss/hit per tok', 'expert KiB/tok'];
  const lines = rows.map((r) => [
    r.model,
    hardwareColumn(r),
    r.policy,
    String(r.slots),
    (r.windowBytes / 1024).toFixed(0),
    String(r.submissionsPerStep),
    r.tokensPerSecond.toFixed(1),
    r.stepMsPerToken.toFixed(2),
    r.hostWaitsPerToken.toFixed(1),
    (r.bytesUploadedPerToken / 1024).toFixed(1),
    (r.sourceBytesPerToken / 1024).toFixed(1),
    (r.hostStagingBytes / 1024).toFixed(1),
    r.uploadMsPerToken.toFixed(3),
    `${(r.uploadIssuedInFlightFraction * 100).toFixed(0)}%`,
    r.stepMsSavedVsSerial === undefined ? '' : `${(r.uploadHiddenFraction * 100).toFixed(0)}% (${r.stepMsSavedVsSerial >= 0 ? '-' : '+'}${Math.abs(r.stepMsSavedVsSerial).toFixed(2)} ms)`,
    r.expertMissesPerToken === undefined ? '' : `${r.expertMissesPerToken.toFixed(2)}/${r.expertHitsPerToken!.toFixed(2)}`,
    r.expertBytesPerToken === undefined ? '' : (r.expertBytesPerToken / 1024).toFixed(1),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  const note =
    "A window holding every layer uploads each layer once (the bytes per token shown are that first upload spread over the run) and then costs nothing but its memory. A smaller window uploads every layer's bytes each token. Every fill reads its tensor parts from the model's range source ('read KiB/tok'; here the bytes are in memory, so a read is a view, then a repack into the window's one staging buffer, 'staging KiB', counted in 'upload ms/tok'); with an OPFS or file source each fill is a real range read. Serial schedule (overlap: false): each window's uploads run after the submission before it was proven, so the GPU idles during the uploads, the next submission and every proof wait. Overlapped schedule (the default with two slots or more: TS-residency-overlap): windows of floor(slots / 2) layers chained on the state group, each later window's layers staged (queue writes ordered before the next submission) while the window before computes: twice the submissions and fence waits, but no idle gap between windows. 'in flight' is the share of the upload host time issued while a submission was in flight; 'hidden' compares the two schedules of the same budget in the same run, (serial step ms - overlapped step ms) / serial upload ms, clamped to 0..100%, with the raw step-time difference beside it: where it saturates the overlap saved more than the uploads themselves (the serial schedule's idle gaps), or the difference is noise of this loaded 2-core machine. On the host provider the kernels run on the runtime's thread: nothing can be hidden there, and the host rows' differences are noise. Slots are sized to the largest layer with 256-byte aligned offsets, so a window of every layer can exceed the resident layer bytes when layers mix kinds (Q4_K_M). Expert caches run serially (the fetch depends on routed ids read back from the submission before) and add, per routed layer and step, one readback of the routed ids and two more submissions (more rounds when the cache is smaller than the distinct experts picked).";
  console.log(['', 'layer residency (greedy decode, median of rounds)', fmt(header), ...lines.map(fmt), '', `note: ${note}`, ...(rows.some((r) => r.softwareAdapter) ? [`note: ${SOFTWARE_ADAPTER_NOTE}`] : [])].join('\n'));
  const fs = process.getBuiltinModule('node:fs');
  fs.mkdirSync('bench/results', { recursive: true });
  fs.writeFileSync(
    'bench/results/residency.json',
    JSON.stringify({ benchmark: 'residency', date: new Date().toISOString(), machine: machineInfo(loadAtStart), adapter, note, ...(rows.some((r) => r.softwareAdapter) ? { softwareAdapterNote: SOFTWARE_ADAPTER_NOTE } : {}), rounds: ROUNDS, steps: { host: HOST_STEPS, dawn: DAWN_STEPS }, rows }, null, 2) + '\n',
  );
});
