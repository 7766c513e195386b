// Host-provider benchmark (issue 12, acceptance point 1): `npm run bench:host`. The measurement runs in
// TENON_BENCH_PROCESSES fresh Node processes (default 3, one after another; this file's test spawns them as
// plain vitest runs of itself with TENON_BENCH_CHILD_OUT set, and each writes its figures back). Each
// process measures every row with every comparison side by side in interleaved rounds (so drift and other
// processes' load hit both sides). Why several processes: this 2-vCPU VM runs a whole process in one of
// two speed states about 1.5-2x apart (a fixed JS loop takes 7.7-8.3 ms in some fresh processes and 14-16
// ms in others), so one process's figures flipped aims between met and missed from run to run. The tables
// show per row the median across processes with (min..max), then every process's own figure and its
// speed-state reading (the calibration loop's CPU ms at its start and end); the JSON keeps every
// process's rows (runs[]). No process is dropped or chosen. Within a process, decode figures are a side's
// median timed round (tokens over the round's time, GC and every slow step included, as llama-bench's tg
// figure); the median single step is shown beside it (robust to a transient preemption). What is measured:
//   (a) 1024^3 (and 256^3) f32 matmul, a host-provider submission of the `matmul` op: WebAssembly SIMD
//       kernels vs the scalar twins vs onnxruntime-web's wasm CPU provider on one thread;
//   (b) qmatmul per lowering kind, matrix-vector at tiny-llama's sizes (the four linear shapes of a layer
//       and the classifier, each dispatch repeated in one submission): WebAssembly vs scalar;
//   (c) greedy decode tokens/s through TextSession (decode steps only; the prompt's prefill is untimed):
//       stories260K (llama2.c checkpoint) and tiny-llama per lowering kind (f32, F16, Q8_0, Q4_0,
//       Q4_K_M, Q6_K), WebAssembly vs scalar; a third side runs the WebAssembly kernels with every
//       dispatch bound on every replay (the path before the prepared host step, G5-prepared-host-step),
//       so the prepared step's gain is measured in the same interleaved rounds.
// Every row is host CPU (bench/report.ts: HOST_CPU label, ratio table, bench/results/host.json with the
// machine and its load). The JSON also holds the issue's reference figures (llama2.c and llama.cpp
// measured on this machine kind, not in this run) and which aims were met, with the note printed below
// the tables. Nothing here asserts anything about time; a side that computes differently throws, and each
// side's kernel counters (runtime.hostKernels()) prove which path ran.
// Kernel sets: this process turns on V8's relaxed SIMD (--experimental-wasm-relaxed-simd, set at load,
// before any kernel module is compiled; Chromium has it by default), so the `wasm` side runs whatever
// feature detection selects (the relaxed-SIMD set where the flag took) and a `simd` side runs the plain
// SIMD set (hostKernelFaults.noRelaxedSimd while its runtime is made: an engine without the proposal) in
// the same interleaved rounds. Every row records the kernel set each side ran (hostKernels().kernelSet).
// Measurement (stop 22's question: were the lower f32 / Q4_0 rows of stop 21 real?). In one process, the
// previous tree's kernels (8424745) and this tree's plain-SIMD kernels decoded tiny-llama f32 and Q4_0
// (wasm-q8) at the same speed, interleaved; the relaxed flag, the count of memories (130 tried) and the
// other sides' garbage (GC inside a fast side's timed rounds: about 2.5% of them) changed nothing
// measurable. What differed was the spread: on a shared 2-core machine one 200-token round varies by
// 1.5-2x, so a median of 3 rounds could not tell 25% apart. So decode rows now run more rounds after two
// warm-up rounds per side (V8 tiers kernels up in the background: a loaded machine delays that), and
// record per side the round median (the headline: everything a user waits for, GC included), besides
// the median of single decode steps (robust to bursts of other processes' load), the spread of the rounds, and the GC milliseconds inside its timed rounds (a side penalised
// by another's garbage would show there).
// TENON_BENCH_HOST_ONLY (a regular expression over row names, e.g. 'tiny-llama f32') runs only those rows
// (in every process) and writes no JSON (a probe, not a result).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';
import * as ort from 'onnxruntime-web';
import { it } from 'vitest';
import { LOWERING_KINDS } from '../src/model/index.js';
import {
  OPS,
  QMATMUL,
  TextSession,
  createAllocationGroup,
  createHostProvider,
  createRuntime,
  fromArray,
  hostKernelFaults,
  loadModel,
  packedRowLayout,
  parseLlamaModel,
  parseTokenizer,
  zeros,
} from '../src/index.js';
import type { AllocationGroup, CompiledGraph, DescriptorSlot, HostKernelChoice, HostKernelStats, HostProvider, PackedKind, Runtime } from '../src/index.js';
import { readGgufFixture } from '../contracts/support/gguf-fixtures.js';
import { readModelFixture } from '../contracts/support/models.js';
import { randomGgufRows } from '../contracts/ops/qmatmul-blocks.js';
import { HOST_CPU, formatPairTable, machineInfo, median, pairResult, writeResults } from './report.js';
import type { PairResult } from './report.js';
import { matmulModel } from './submit/onnx.js';
import { perDispatchHostRuntimes } from '../src/submit/graph.js';

v8.setFlagsFromString('--experimental-wasm-relaxed-simd');

/** The issue's reference figures, one thread on this machine kind (issue 12). */
const REFERENCE = {
  llama2cRunO3StoriesTokS: 5000,
  llamaCppStoriesTokS: 8000,
  llamaCppTinyLlamaTokS: { f32: 2840, F16: 2540, Q8_0: 3290, Q4_0: 4100, Q4_K_M: 3290, Q6_K: 3220 } as Record<string, number>,
  scalarStoriesTokS: '1190-1250 (tenon generate --provider host, before this work)',
};
const AIMS = { matmulVsOrtAtMost: 1.5, tinyLlamaVsLlamaCppAtLeast: 0.7, q4q8SpeedupAtLeast: 3 };

/** tiny-llama's linear shapes [N, K]: q/o (and k/v at 128 rows), FFN gate/up, FFN down, classifier. */
const TINY_LLAMA_SHAPES: readonly (readonly [number, number])[] = [[256, 256], [128, 256], [768, 256], [256, 768], [512, 256]];
const QMATMUL_REPEATS = 8;
/** Interleaved rounds per qmatmul row (each a submission of QMATMUL_REPEATS x 5 dispatches; cheap). */
const QMATMUL_ROUNDS = 15;
const DECODE_STEPS = 200;
/** Untimed rounds per side before a decode row's timed ones (each kernel set's modules tier up). */
const DECODE_WARMUP = 2;
/** Timed rounds per decode row: stories260K, tiny-llama. */
const STORIES_ROUNDS = 7;
const TINY_LLAMA_ROUNDS = 5;
/**
 * The scalar side of a decode row (10-100x slower than the others: most of a process's time before this)
 * takes part in the first SCALAR_DECODE_ROUNDS timed rounds after SCALAR_DECODE_WARMUP untimed ones; its
 * figure is the median of that round's 200 single steps (the same positions as the other sides'). The
 * untimed round stays: without it, on a loaded machine (V8's background compiles starved) most of the
 * timed steps could still run before the scalar loops tier up (tiny-llama f32 scalar 30-87 tok/s so).
 */
const SCALAR_DECODE_ROUNDS = 1;
const SCALAR_DECODE_WARMUP = 1;
const warmupOf = (side: string) => (side === 'scalar' ? SCALAR_DECODE_WARMUP : DECODE_WARMUP);
/** Rows to run (TENON_BENCH_HOST_ONLY, a regular expression over row names); every row when unset. */
const ONLY = process.env['TENON_BENCH_HOST_ONLY'] === undefined ? undefined : new RegExp(process.env['TENON_BENCH_HOST_ONLY']);
const selected = (name: string): boolean => ONLY === undefined || ONLY.test(name);
const DECODE_PROMPT = 'Once upon a time';
const TINY_LLAMA: readonly (readonly [string, string])[] = [
  ['f32', 'tiny-llama-f32.gguf'],
  ['F16', 'tiny-llama-F16.gguf'],
  ['Q8_0', 'tiny-llama-Q8_0.gguf'],
  ['Q4_0', 'tiny-llama-Q4_0.gguf'],
  ['Q4_K_M', 'tiny-llama-Q4_K_M.gguf'],
  ['Q6_K', 'tiny-llama-Q6_K.gguf'],
];

interface Side {
  readonly name: string;
  /** Timed rounds of this side when fewer than the row's (a slow side: it takes part in the first ones). */
  readonly rounds?: number;
  /** Untimed rounds of this side when fewer than the row's. */
  readonly warmup?: number;
  /** One round; returns the milliseconds of its timed part, or nothing when the whole round is timed. */
  run(): Promise<number | void>;
}

interface Timing {
  median: number;
  min: number;
  max: number;
  rounds: number;
  /** Milliseconds of garbage collection that began inside this side's timed rounds, per round. */
  gcMsPerRound: number;
}

/** Every garbage collection of this process (start and duration, ms on performance.now()'s clock). */
const gcLog: { start: number; duration: number }[] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcLog.push({ start: e.startTime, duration: e.duration });
}).observe({ entryTypes: ['gc'] });

/**
 * Interleaved rounds (order alternating) after `warmup` untimed ones; median, min and max ms per side,
 * and the GC time that fell inside each side's rounds.
 */
async function interleaved(sides: readonly Side[], rounds: number, warmup = 1): Promise<Timing[]> {
  for (let w = 0; w < warmup; w++) for (const s of sides) if (w < (s.warmup ?? warmup)) await s.run();
  const times = sides.map(() => [] as number[]);
  const windows = sides.map(() => [] as [number, number][]);
  for (let r = 0; r < rounds; r++) {
    const order = sides.map((_, i) => i);
    if (r % 2 === 1) order.reverse();
    for (const i of order) {
      if (r >= (sides[i]!.rounds ?? rounds)) continue;
      const t0 = performance.now();
      const timed = await sides[i]!.run();
      const t1 = performance.now();
      times[i]!.push(typeof timed === 'number' ? timed : t1 - t0);
      windows[i]!.push([t0, t1]);
    }
  }
  // GC entries arrive on a later turn of the event loop.
  await new Promise((resolve) => setTimeout(resolve, 0));
  const gcIn = (w: readonly [number, number][]) => gcLog.filter((g) => w.some(([a, b]) => g.start >= a && g.start < b)).reduce((sum, g) => sum + g.duration, 0);
  return times.map((t, i) => ({ median: median(t), min: Math.min(...t), max: Math.max(...t), rounds: t.length, gcMsPerRound: gcIn(windows[i]!) / t.length }));
}

/**
 * A runtime's kernel counters, checked: the `wasm` and `simd` sides ran WebAssembly kernels (`simd` the
 * plain SIMD set), the `scalar` side none.
 */
function kernelCounts(name: string, runtime: Runtime, label: string): HostKernelStats {
  const stats = runtime.hostKernels()!;
  const ran = stats.kind === 'wasm-simd' && stats.wasmDispatches > 0;
  const ok = name === 'wasm' ? ran : name === 'simd' ? ran && stats.kernelSet === 'simd' : stats.kind === 'scalar' && stats.wasmDispatches === 0;
  if (!ok) throw new Error(`${label}: the ${name} side ran ${JSON.stringify(stats)}`);
  return stats;
}

/** One submission of `graph` over `group`, waited; returns the group for the next one. */
async function submit(runtime: Runtime, graph: CompiledGraph, group: AllocationGroup): Promise<AllocationGroup> {
  const outcome = await (await runtime.submit(graph, group)).wait();
  if (outcome.kind !== 'completed') throw new Error(`${graph.name}: ${outcome.kind}`);
  return outcome.bundle.intoGroup().group;
}

async function readF32(group: AllocationGroup, slot: DescriptorSlot): Promise<Float32Array> {
  using v = group.view<'f32'>(slot);
  return await v.toArray();
}

type HostSide = { provider: HostProvider; runtime: Runtime };

/**
 * A host runtime per kernel choice over its own provider: `wasm` (the detected kernel set), `simd` (the
 * plain SIMD set), `scalar`; with `perDispatch`, also the unprepared wasm side; with `q8`, also the
 * q8-activation side (hostKernels 'wasm-q8').
 */
function runtimes(perDispatch = false, q8 = false): Record<'wasm' | 'simd' | 'scalar', HostSide> & { perDispatch?: HostSide; q8?: HostSide } {
  const make = (choice: HostKernelChoice, plainSimd = false) => {
    const provider = createHostProvider();
    hostKernelFaults.noRelaxedSimd = plainSimd;
    try {
      return { provider, runtime: createRuntime(provider, { hostKernels: choice }) };
    } finally {
      hostKernelFaults.noRelaxedSimd = false;
    }
  };
  const sides = { wasm: make('wasm'), simd: make('wasm', true), scalar: make('scalar'), ...(q8 ? { q8: make('wasm-q8') } : {}) };
  if (!perDispatch) return sides;
  const unprepared = make('wasm');
  perDispatchHostRuntimes.add(unprepared.runtime);
  return { ...sides, perDispatch: unprepared };
}

function pseudoRandom(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 32 - 0.5;
  }
  return out;
}

interface MatmulRow {
  size: number;
  rounds: number;
  wasmMs: number;
  scalarMs: number;
  ortMs: number;
  /** The kernel set of the `wasm` side (the `simd` side always runs plain SIMD). */
  kernelSet: string;
  simdMs: number;
  wasmGflops: number;
  ortGflops: number;
  wasmVsOrt: number;
  scalarVsWasm: number;
  maxRelDiffVsOrt: number;
}

async function matmulCase(size: number, rounds: number): Promise<MatmulRow> {
  ort.env.wasm.numThreads = 1;
  const [m, n, k] = [size, size, size];
  const a = pseudoRandom(m * k, 11);
  const b = pseudoRandom(k * n, 12);
  const session = await ort.InferenceSession.create(matmulModel(m, k, n), { executionProviders: ['wasm'] });
  const feeds = { A: new ort.Tensor('float32', a, [m, k]), B: new ort.Tensor('float32', b, [k, n]) };
  const rts = runtimes();
  const sides: Record<string, { graph: CompiledGraph; group: AllocationGroup; out: DescriptorSlot; runtime: Runtime }> = {};
  for (const [name, { provider, runtime }] of Object.entries(rts)) {
    const group = createAllocationGroup();
    const sa = group.insert(await fromArray(provider, 'f32', a, [m, k])).descriptor;
    const sb = group.insert(await fromArray(provider, 'f32', b, [k, n])).descriptor;
    const so = group.insert(await zeros(provider, 'f32', [m, n])).descriptor;
    const graph = runtime.compile({
      name: `matmul${size}`,
      inputs: { a: { slot: sa, dtype: 'f32', shape: [m, k] }, b: { slot: sb, dtype: 'f32', shape: [k, n] }, out: { slot: so, dtype: 'f32', shape: [m, n] } },
      dispatches: [{ kernel: OPS.matmul, bind: ['a', 'b', 'out'], params: { m, n, k } }],
      outputs: ['out'],
    });
    sides[name] = { graph, group, out: so, runtime };
  }
  const theirs = (await session.run(feeds))['C']!.data as Float32Array;
  let diff = 0;
  for (const s of Object.values(sides)) {
    s.group = await submit(s.runtime, s.graph, s.group);
    const ours = await readF32(s.group, s.out);
    for (let i = 0; i < ours.length; i++) diff = Math.max(diff, Math.abs(ours[i]! - theirs[i]!) / (1 + Math.abs(theirs[i]!)));
  }
  if (!(diff <= 1e-3)) throw new Error(`matmul ${size}: tenon and onnxruntime-web differ (${diff})`);
  const step = (s: (typeof sides)[string]) => async () => void (s.group = await submit(s.runtime, s.graph, s.group));
  const [w, sc, o, ps] = await interleaved(
    [
      { name: 'wasm', run: step(sides['wasm']!) },
      // At 1024^3 the scalar side (seconds a round) times one round, after the checked run above.
      { name: 'scalar', run: step(sides['scalar']!), ...(size >= 1024 ? { rounds: 1, warmup: 0 } : {}) },
      { name: 'ort', run: async () => void (await session.run(feeds)) },
      { name: 'simd', run: step(sides['simd']!) },
    ],
    rounds,
  );
  await session.release();
  const kernelSet = sides['wasm']!.runtime.hostKernels()!.kernelSet;
  for (const [name, s] of Object.entries(sides)) {
    kernelCounts(name, s.runtime, `matmul ${size}`);
    s.group.dispose();
    s.graph.dispose();
  }
  const gflops = (ms: number) => (2 * m * n * k) / (ms * 1e6);
  return {
    size,
    rounds,
    kernelSet,
    wasmMs: w!.median,
    simdMs: ps!.median,
    scalarMs: sc!.median,
    ortMs: o!.median,
    wasmGflops: gflops(w!.median),
    ortGflops: gflops(o!.median),
    wasmVsOrt: w!.median / o!.median,
    scalarVsWasm: sc!.median / w!.median,
    maxRelDiffVsOrt: diff,
  };
}

interface QmatmulRow {
  kind: PackedKind;
  rounds: number;
  /** The kernel set of the `wasm` side (the `simd` side always runs plain SIMD). */
  kernelSet: string;
  wasmUsPerLayer: number;
  simdUsPerLayer: number;
  scalarUsPerLayer: number;
  speedup: number;
  wasmGBs: number;
}

/** Matrix-vector qmatmul of one kind over tiny-llama's shapes, QMATMUL_REPEATS times per submission. */
async function qmatmulCase(kind: PackedKind, rounds: number): Promise<QmatmulRow> {
  const rts = runtimes();
  const results: Record<string, { graph: CompiledGraph; group: AllocationGroup; outs: DescriptorSlot[]; runtime: Runtime }> = {};
  let weightBytes = 0;
  for (const [name, { provider, runtime }] of Object.entries(rts)) {
    const group = createAllocationGroup();
    const inputs: Record<string, { slot: DescriptorSlot; dtype: 'f32' | 'u32'; shape: number[] }> = {};
    const dispatches = [];
    const outs: DescriptorSlot[] = [];
    weightBytes = 0;
    for (const [i, [n, k]] of TINY_LLAMA_SHAPES.entries()) {
      const layout = packedRowLayout(kind, k);
      const packed = LOWERING_KINDS[kind].repack(randomGgufRows(kind, n, k, 100 + i), k);
      weightBytes += packed.byteLength;
      const dtype = kind === 'F32' ? 'f32' : 'u32';
      const sx = group.insert(await fromArray(provider, 'f32', pseudoRandom(k, 200 + i), [1, k])).descriptor;
      const sw = group.insert(dtype === 'f32' ? await fromArray(provider, 'f32', new Float32Array(packed.buffer), [n, k]) : await fromArray(provider, 'u32', packed, [n, layout.rowWords])).descriptor;
      const so = group.insert(await zeros(provider, 'f32', [1, n])).descriptor;
      inputs[`x${i}`] = { slot: sx, dtype: 'f32', shape: [1, k] };
      inputs[`w${i}`] = { slot: sw, dtype, shape: [n, layout.rowWords] };
      inputs[`o${i}`] = { slot: so, dtype: 'f32', shape: [1, n] };
      outs.push(so);
      for (let r = 0; r < QMATMUL_REPEATS; r++) dispatches.push({ kernel: QMATMUL[kind].plain, bind: [`x${i}`, `w${i}`, `o${i}`], params: { m: 1, n, k } });
    }
    const graph = runtime.compile({ name: `qmatmul ${kind}`, inputs, dispatches, outputs: [] });
    results[name] = { graph, group, outs, runtime };
  }
  for (const s of Object.values(results)) s.group = await submit(s.runtime, s.graph, s.group);
  for (const [i] of TINY_LLAMA_SHAPES.entries()) {
    const sc = await readF32(results['scalar']!.group, results['scalar']!.outs[i]!);
    for (const name of ['wasm', 'simd']) {
      const w = await readF32(results[name]!.group, results[name]!.outs[i]!);
      for (let j = 0; j < w.length; j++) if (!(Math.abs(w[j]! - sc[j]!) <= 1e-3 * (1 + Math.abs(sc[j]!)))) throw new Error(`qmatmul ${kind}: ${name} and scalar differ at ${j}: ${w[j]} vs ${sc[j]}`);
    }
  }
  const step = (s: (typeof results)[string]) => async () => void (s.group = await submit(s.runtime, s.graph, s.group));
  const [w, sc, ps] = await interleaved(
    [{ name: 'wasm', run: step(results['wasm']!) }, { name: 'scalar', run: step(results['scalar']!) }, { name: 'simd', run: step(results['simd']!) }],
    rounds,
  );
  const kernelSet = results['wasm']!.runtime.hostKernels()!.kernelSet;
  for (const [name, s] of Object.entries(results)) {
    kernelCounts(name, s.runtime, `qmatmul ${kind}`);
    s.group.dispose();
    s.graph.dispose();
  }
  const perLayer = (ms: number) => (ms * 1000) / QMATMUL_REPEATS;
  return {
    kind,
    rounds,
    kernelSet,
    wasmUsPerLayer: perLayer(w!.median),
    simdUsPerLayer: perLayer(ps!.median),
    scalarUsPerLayer: perLayer(sc!.median),
    speedup: sc!.median / w!.median,
    wasmGBs: (weightBytes * QMATMUL_REPEATS) / (w!.median * 1e6),
  };
}

interface DecodeRow {
  model: string;
  rounds: number;
  /** The kernel set each side ran (hostKernels().kernelSet). */
  kernelSets: Record<string, string>;
  /** Headline tok/s of each side (wasm, simd, scalar, perDispatch, q8): DECODE_STEPS tokens over its median timed round. */
  wasmTokS: number;
  /** The plain SIMD set (the `simd` side). */
  simdTokS: number;
  /** Leading greedy ids on which the wasm and simd sides agree. */
  simdAgreeingIds: number;
  scalarTokS: number;
  /** WebAssembly kernels, every dispatch bound per replay (no prepared host step). */
  perDispatchTokS: number;
  /** wasm tok/s over perDispatch tok/s: what the prepared host step buys. */
  preparedSpeedup: number;
  speedup: number;
  /** Leading greedy ids on which both sides agree (f32 lanes vs f64 sums can part on near ties). */
  agreeingIds: number;
  wasmDispatchesPerToken: number;
  reference?: number;
  wasmVsReference?: number;
  /** Q8_0 / Q4_0 / Q4_K_M / Q6_K models: the q8-activation side (hostKernels 'wasm-q8'), its speed and its agreement. */
  q8TokS?: number;
  q8AgreeingIds?: number;
  q8VsReference?: number;
  /**
   * Per side: tok/s from the median single decode step of every timed round (robust to bursts of other
   * processes' load; leaves out the rare slow step, a GC's included), from the median round (the headline
   * figure: 200 steps, everything a user waits for), the slowest and fastest round's tok/s, and the GC
   * milliseconds inside its timed rounds, per round.
   */
  sides: Record<string, { stepMedianTokS: number; roundMedianTokS: number; slowestRoundTokS: number; fastestRoundTokS: number; gcMsPerRound: number }>;
}

type SessionSource = { model: Awaited<ReturnType<typeof loadModel>> } | { model: ReturnType<typeof parseLlamaModel>; tokenizer: ReturnType<typeof parseTokenizer> };

async function decodeCase(label: string, source: SessionSource, rounds: number, reference?: number, q8 = false): Promise<DecodeRow> {
  const rts = runtimes(true, q8);
  const sessions: Record<string, TextSession> = {};
  for (const [name, { runtime }] of Object.entries(rts)) {
    sessions[name] = 'tokenizer' in source
      ? await TextSession.create({ runtime, model: source.model, tokenizer: source.tokenizer, maxSeq: 512 })
      : await TextSession.create({ runtime, model: source.model, maxSeq: 512 });
  }
  const tokenizer = sessions['wasm']!.tokenizer;
  const prompt = tokenizer.encode(DECODE_PROMPT, { bos: true });
  const ids: Record<string, number[]> = {};
  /** Per side: the ms of every decode step of the timed rounds (the warm-up rounds' are dropped below). */
  const steps: Record<string, number[]> = {};
  const side = (name: string): Side => ({
    name,
    ...(name === 'scalar' ? { rounds: SCALAR_DECODE_ROUNDS, warmup: SCALAR_DECODE_WARMUP } : {}),
    async run() {
      const s = sessions[name]!;
      await s.reset();
      let next = (await s.prefill(prompt)).argmax;
      const out = [next];
      const times = (steps[name] ??= []);
      const t0 = performance.now();
      let t = t0;
      for (let i = 0; i < DECODE_STEPS; i++) {
        next = (await s.decode(next)).argmax;
        const now = performance.now();
        times.push(now - t);
        t = now;
        out.push(next);
      }
      const ms = t - t0;
      ids[name] = out;
      return ms;
    },
  });
  const before = rts.wasm.runtime.hostKernels()!.wasmDispatches;
  const names = ['wasm', 'scalar', 'perDispatch', 'simd', ...(q8 ? ['q8'] : [])];
  const timings = await interleaved(names.map(side), rounds, DECODE_WARMUP);
  const q = timings[4];
  const wasmDispatches = rts.wasm.runtime.hostKernels()!.wasmDispatches - before;
  for (const name of ['wasm', 'simd', 'scalar'] as const) kernelCounts(name, rts[name].runtime, label);
  const kernelSets = Object.fromEntries(Object.entries(rts).map(([name, s]) => [name, s.runtime.hostKernels()!.kernelSet]));
  let simdAgree = 0;
  while (simdAgree < ids['wasm']!.length && ids['wasm']![simdAgree] === ids['simd']![simdAgree]) simdAgree++;
  kernelCounts('wasm', rts.perDispatch!.runtime, `${label} (per-dispatch)`);
  if (q8 && rts.q8!.runtime.hostKernels()!.activations !== 'q8') throw new Error(`${label}: the q8 side did not run q8 activations`);
  if (ids['perDispatch']!.join() !== ids['wasm']!.join()) throw new Error(`${label}: the per-dispatch side chose other ids`);
  let agree = 0;
  while (agree < ids['wasm']!.length && ids['wasm']![agree] === ids['scalar']![agree]) agree++;
  for (const s of Object.values(sessions)) s.dispose();
  const tokS = (ms: number) => (DECODE_STEPS * 1000) / ms;
  // Headline figures: per side, its median timed round (DECODE_STEPS tokens, everything a user waits for,
  // GC included: what llama-bench's tg figure measures too). The median single step is kept beside it in
  // `sides` (robust to a transient preemption by another process, but it leaves out every slow step).
  const stepMs = Object.fromEntries(names.map((name, i) => [name, timings[i]!.median / DECODE_STEPS]));
  const stepTokS = (name: string) => 1000 / stepMs[name]!;
  const row: DecodeRow = {
    model: label,
    rounds,
    kernelSets,
    wasmTokS: stepTokS('wasm'),
    simdTokS: stepTokS('simd'),
    simdAgreeingIds: simdAgree,
    scalarTokS: stepTokS('scalar'),
    perDispatchTokS: stepTokS('perDispatch'),
    preparedSpeedup: stepMs['perDispatch']! / stepMs['wasm']!,
    speedup: stepMs['scalar']! / stepMs['wasm']!,
    agreeingIds: agree,
    // Warm-up and timed rounds, prefill included: an upper bound per decode step.
    wasmDispatchesPerToken: wasmDispatches / ((rounds + DECODE_WARMUP) * (DECODE_STEPS + 1)),
    sides: Object.fromEntries(
      names.map((name, i) => {
        const t = timings[i]!;
        const timed = steps[name]!.slice(warmupOf(name) * DECODE_STEPS);
        return [name, { stepMedianTokS: 1000 / median(timed), roundMedianTokS: tokS(t.median), slowestRoundTokS: tokS(t.max), fastestRoundTokS: tokS(t.min), gcMsPerRound: t.gcMsPerRound }];
      }),
    ),
  };
  if (agree < 20) console.warn(`${label}: wasm and scalar greedy ids agree for ${agree} tokens only`);
  let q8Row: Partial<DecodeRow> = {};
  if (q !== undefined) {
    let q8Agree = 0;
    while (q8Agree < ids['wasm']!.length && ids['wasm']![q8Agree] === ids['q8']![q8Agree]) q8Agree++;
    const q8TokS = stepTokS('q8');
    q8Row = { q8TokS, q8AgreeingIds: q8Agree, ...(reference === undefined ? {} : { q8VsReference: q8TokS / reference }) };
  }
  return reference === undefined ? { ...row, ...q8Row } : { ...row, ...q8Row, reference, wasmVsReference: row.wasmTokS / reference };
}

/** Said when other processes kept the cores busy (a load average above the core count at the start). */
function loadWarning(loadAtStart: number[]): string | undefined {
  const cores = os.cpus().length;
  const load = loadAtStart[0]!;
  if (load <= cores) return undefined;
  return `load average ${load.toFixed(1)} on ${cores} cores at the start: every absolute figure is slowed by other processes (both sides of a row shared the load, so ratios hold better than figures)`;
}

/** One aim: met or not (by the median across processes), the measured figure and what it is compared with. */
interface Aim {
  readonly aim: string;
  readonly met: boolean;
  readonly measured: string;
  /** How many processes' own figure met it, of how many. */
  readonly metInProcesses: number;
  readonly processes: number;
}

function aimLines(aims: readonly Aim[]): string[] {
  return aims.map((a) => `  ${a.met ? 'met   ' : 'missed'}  ${a.aim}: ${a.measured}`);
}

/** The median; for an even count, the mean of the two middle values (every process counts alike). */
function medianOf(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const h = s.length >> 1;
  return s.length % 2 === 1 ? s[h]! : (s[h - 1]! + s[h]!) / 2;
}

/** An aim judged on the median across processes, with every process's figure and how many met it. */
function aimOf(aim: string, perProcess: readonly number[], ok: (v: number) => boolean, fmt: (v: number) => string): Aim {
  const m = medianOf(perProcess);
  const metIn = perProcess.filter(ok).length;
  return {
    aim,
    met: ok(m),
    measured: `${fmt(m)}, median of ${perProcess.length} processes (each: ${perProcess.map(fmt).join(', ')}; met in ${metIn} of ${perProcess.length})`,
    metInProcesses: metIn,
    processes: perProcess.length,
  };
}

/**
 * A process's speed state: a fixed JavaScript loop (an LCG over CALIBRATION_ITERATIONS steps), timed
 * CALIBRATION_REPEATS times, the median wall and CPU milliseconds. This 2-vCPU VM runs a whole process in
 * one of two states about 1.5-2x apart (the same loop 7.7-8.3 ms in some fresh processes, 14-16 ms in
 * others); the reading at the start and end of each process says which state its figures came from.
 */
interface Calibration {
  wallMs: number;
  cpuMs: number;
}
const CALIBRATION_ITERATIONS = 4_000_000;
const CALIBRATION_REPEATS = 7;

function calibrate(): Calibration {
  const wall: number[] = [];
  const cpu: number[] = [];
  let check = 0;
  for (let r = 0; r < CALIBRATION_REPEATS; r++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    let x = r + 1;
    for (let i = 0; i < CALIBRATION_ITERATIONS; i++) {
      x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
      check += x & 1023;
    }
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  if (!(check > 0)) throw new Error('calibration loop computed nothing');
  return { wallMs: medianOf(wall), cpuMs: medianOf(cpu) };
}

/** Everything one fresh process measured (every selected row, its sides interleaved in that process). */
interface ProcessRun {
  index: number;
  pid: number;
  seconds: number;
  calibration: { start: Calibration; end: Calibration };
  loadAverage: { atStart: number[]; atEnd: number[] };
  /** Seconds each row took in this process (every side of it). */
  rowSeconds: Record<string, number>;
  matmul: MatmulRow[];
  qmatmul: QmatmulRow[];
  decode: DecodeRow[];
}

async function measureProcess(index: number): Promise<ProcessRun> {
  const t0 = performance.now();
  const atStart = os.loadavg();
  const start = calibrate();
  const rowSeconds: Record<string, number> = {};
  const timed = async <T>(name: string, row: () => Promise<T>): Promise<T> => {
    const r0 = performance.now();
    const got = await row();
    rowSeconds[name] = (performance.now() - r0) / 1000;
    return got;
  };
  const matmul: MatmulRow[] = [];
  for (const [size, rounds] of [[256, 15], [1024, 3]] as const) if (selected(`matmul ${size}`)) matmul.push(await timed(`matmul ${size}`, () => matmulCase(size, rounds)));
  const qmatmul: QmatmulRow[] = [];
  for (const kind of ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q4_K', 'Q6_K'] as const) if (selected(`qmatmul ${kind}`)) qmatmul.push(await timed(`qmatmul ${kind}`, () => qmatmulCase(kind, QMATMUL_ROUNDS)));
  const decode: DecodeRow[] = [];
  const stories = await readModelFixture('stories260K.bin');
  const tok512 = await readModelFixture('tok512.bin');
  if (stories !== undefined && tok512 !== undefined && selected('stories260K')) {
    const model = parseLlamaModel(stories);
    decode.push(await timed('stories260K', () => decodeCase('stories260K (llama2.c .bin)', { model, tokenizer: parseTokenizer(tok512, model.config.vocabSize) }, STORIES_ROUNDS, REFERENCE.llama2cRunO3StoriesTokS)));
  }
  for (const [kind, file] of TINY_LLAMA) {
    if (!selected(`tiny-llama ${kind}`)) continue;
    const bytes = await readGgufFixture(file as never);
    if (bytes === undefined) continue;
    const q8 = kind === 'Q4_0' || kind === 'Q8_0' || kind === 'Q6_K' || kind === 'Q4_K_M';
    decode.push(await timed(`tiny-llama ${kind}`, async () => decodeCase(`tiny-llama ${kind}`, { model: await loadModel(bytes) }, TINY_LLAMA_ROUNDS, REFERENCE.llamaCppTinyLlamaTokS[kind], q8)));
  }
  const end = calibrate();
  return { index, pid: process.pid, seconds: (performance.now() - t0) / 1000, calibration: { start, end }, loadAverage: { atStart, atEnd: os.loadavg() }, rowSeconds, matmul, qmatmul, decode };
}

/** Fresh processes per run (TENON_BENCH_PROCESSES, default 3), run one after another. */
const PROCESSES = Number(process.env['TENON_BENCH_PROCESSES'] ?? 3);
/** Set in a measuring child: where it writes its ProcessRun (the parent spawns children; a child measures). */
const CHILD_OUT = process.env['TENON_BENCH_CHILD_OUT'];

/** Runs this file's measurement in a fresh Node process (vitest, same config) and reads back its figures. */
async function runChild(index: number): Promise<ProcessRun> {
  const out = path.join(os.tmpdir(), `tenon-bench-host-${process.pid}-${index}.json`);
  // The child is a plain vitest run of this file: none of this worker's vitest state goes with it.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST')));
  const log: string[] = [];
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', '--config', 'bench/vitest.bench.config.ts', 'bench/host.bench.ts'], {
      env: { ...env, TENON_BENCH_CHILD_OUT: out, TENON_BENCH_CHILD_INDEX: String(index) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (d) => log.push(String(d)));
    child.stderr.on('data', (d) => log.push(String(d)));
    child.on('error', reject);
    child.on('close', resolve);
  });
  if (code !== 0 || !existsSync(out)) throw new Error(`bench:host process ${index + 1} failed (exit ${code}):\n${log.join('').slice(-6000)}`);
  const run = JSON.parse(readFileSync(out, 'utf8')) as ProcessRun;
  unlinkSync(out);
  for (const line of log.join('').split('\n')) if (/warn|agree for/i.test(line)) console.warn(`process ${index + 1}: ${line}`);
  return run;
}

/**
 * Numbers: the median across processes; objects: field by field; anything else: the one value, or the
 * distinct values joined by ' | ' (a kernel set that differed between processes shows as both).
 */
function mergeMedian(values: readonly unknown[]): unknown {
  const defined = values.filter((v) => v !== undefined);
  const first = defined[0];
  if (typeof first === 'number') return medianOf(defined as number[]);
  if (first !== null && typeof first === 'object' && !Array.isArray(first)) {
    const keys = [...new Set(defined.flatMap((v) => Object.keys(v as object)))];
    return Object.fromEntries(keys.map((k) => [k, mergeMedian(defined.map((v) => (v as Record<string, unknown>)[k]))]));
  }
  const distinct = [...new Set(defined.map((v) => String(v)))];
  return distinct.length <= 1 ? first : distinct.join(' | ');
}

/** The same row of every process (matched by key): its field-by-field median, and every process's row. */
interface Across<T> {
  merged: T;
  all: T[];
}
function across<T>(runs: readonly ProcessRun[], pick: (r: ProcessRun) => readonly T[], key: (row: T) => string): Across<T>[] {
  const keys = [...new Set(runs.flatMap((r) => pick(r).map(key)))];
  return keys.map((k) => {
    const all = runs.flatMap((r) => pick(r).filter((row) => key(row) === k));
    return { merged: mergeMedian(all) as T, all };
  });
}

/** "median (min..max)" of one figure across processes. */
function spread<T>(a: Across<T>, get: (row: T) => number | undefined, digits: number): string {
  const vals = a.all.map(get).filter((v): v is number => v !== undefined);
  if (vals.length === 0) return '-';
  const m = medianOf(vals).toFixed(digits);
  return vals.length === 1 ? m : `${m} (${Math.min(...vals).toFixed(digits)}..${Math.max(...vals).toFixed(digits)})`;
}

it('bench:host', async () => {
  if (CHILD_OUT !== undefined) {
    writeFileSync(CHILD_OUT, JSON.stringify(await measureProcess(Number(process.env['TENON_BENCH_CHILD_INDEX'] ?? 0))));
    return;
  }
  if (!(Number.isInteger(PROCESSES) && PROCESSES >= 1)) throw new Error(`TENON_BENCH_PROCESSES must be a whole number >= 1, not ${process.env['TENON_BENCH_PROCESSES']}`);
  const loadAtStart = os.loadavg();
  const t0 = performance.now();
  const runs: ProcessRun[] = [];
  for (let i = 0; i < PROCESSES; i++) {
    const run = await runChild(i);
    console.log(`bench:host process ${i + 1} of ${PROCESSES}: ${run.seconds.toFixed(0)} s, calibration loop ${run.calibration.start.cpuMs.toFixed(1)} ms CPU at its start, ${run.calibration.end.cpuMs.toFixed(1)} ms at its end, load ${run.loadAverage.atStart[0]!.toFixed(1)}`);
    runs.push(run);
  }
  const totalSeconds = (performance.now() - t0) / 1000;
  const matmulA = across(runs, (r) => r.matmul, (r) => String(r.size));
  const qmatmulA = across(runs, (r) => r.qmatmul, (r) => r.kind);
  const decodeA = across(runs, (r) => r.decode, (r) => r.model);
  const matmul = matmulA.map((a) => a.merged);
  const qmatmul = qmatmulA.map((a) => a.merged);
  const decode = decodeA.map((a) => a.merged);

  const bigA = matmulA.find((a) => a.merged.size === 1024);
  const qA = (k: PackedKind) => qmatmulA.find((a) => a.merged.kind === k);
  const storiesA = decodeA.find((a) => a.merged.model.startsWith('stories'));
  const tinyA = decodeA.filter((a) => a.merged.model.startsWith('tiny-llama'));
  const x = (v: number) => `${v.toFixed(2)}x`;
  const tok = (v: number) => `${v.toFixed(0)} tok/s`;
  const aims: Aim[] = [
    ...(bigA === undefined
      ? []
      : [aimOf(`1024^3 matmul within ${AIMS.matmulVsOrtAtMost}x of onnxruntime-web's single-thread time (wasm ms / ORT ms)`, bigA.all.map((r) => r.wasmVsOrt), (v) => v <= AIMS.matmulVsOrtAtMost, x)]),
    ...(storiesA === undefined
      ? []
      : [
          aimOf(`stories260K decode at or above llama2.c run.c -O3 (${REFERENCE.llama2cRunO3StoriesTokS} tok/s)`, storiesA.all.map((r) => r.wasmTokS), (v) => v >= REFERENCE.llama2cRunO3StoriesTokS, tok),
          aimOf(`stretch: stories260K decode at or above llama.cpp (${REFERENCE.llamaCppStoriesTokS} tok/s)`, storiesA.all.map((r) => r.wasmTokS), (v) => v >= REFERENCE.llamaCppStoriesTokS, tok),
        ]),
    ...tinyA.map((a) =>
      aimOf(`${a.merged.model} decode at or above ${AIMS.tinyLlamaVsLlamaCppAtLeast}x llama.cpp (${a.merged.reference} tok/s; figure: wasm/llama.cpp)`, a.all.map((r) => r.wasmVsReference ?? 0), (v) => v >= AIMS.tinyLlamaVsLlamaCppAtLeast, x),
    ),
    ...tinyA.filter((a) => a.merged.q8TokS !== undefined).map((a) =>
      aimOf(
        `${a.merged.model} decode with hostKernels 'wasm-q8' (8-bit activations, chosen explicitly) at or above ${AIMS.tinyLlamaVsLlamaCppAtLeast}x llama.cpp (${a.merged.reference} tok/s; figure: wasm-q8/llama.cpp)`,
        a.all.map((r) => r.q8VsReference ?? 0),
        (v) => v >= AIMS.tinyLlamaVsLlamaCppAtLeast,
        x,
      ),
    ),
    ...(['Q4_0', 'Q8_0'] as const).flatMap((k) => {
      const a = qA(k);
      return a === undefined ? [] : [aimOf(`${k} qmatmul kernel at least ${AIMS.q4q8SpeedupAtLeast}x the scalar path`, a.all.map((r) => r.speedup), (v) => v >= AIMS.q4q8SpeedupAtLeast, x)];
    }),
    ...tinyA.filter((a) => /Q4_0|Q8_0/.test(a.merged.model)).map((a) =>
      aimOf(`${a.merged.model} decode at least ${AIMS.q4q8SpeedupAtLeast}x the scalar path`, a.all.map((r) => r.speedup), (v) => v >= AIMS.q4q8SpeedupAtLeast, x),
    ),
  ];

  const pairs: PairResult[] = [
    ...matmul.map((r) =>
      pairResult({ case: `matmul ${r.size}^3 f32`, baseline: 'onnxruntime-web wasm, 1 thread', candidate: 'tenon host wasm-simd', baselineMedianMs: r.ortMs, candidateMedianMs: r.wasmMs, rounds: r.rounds }),
    ),
    ...matmul.map((r) =>
      pairResult({ case: `matmul ${r.size}^3 f32`, baseline: 'tenon host scalar', candidate: 'tenon host wasm-simd', baselineMedianMs: r.scalarMs, candidateMedianMs: r.wasmMs, rounds: r.rounds }),
    ),
    ...qmatmul.map((r) =>
      pairResult({ case: `qmatmul ${r.kind} matrix-vector, tiny-llama layer`, baseline: 'tenon host scalar', candidate: 'tenon host wasm-simd', baselineMedianMs: r.scalarUsPerLayer / 1000, candidateMedianMs: r.wasmUsPerLayer / 1000, rounds: r.rounds }),
    ),
    ...decode.map((r) =>
      pairResult({ case: `decode ${r.model}, ms/token`, baseline: 'tenon host scalar', candidate: 'tenon host wasm-simd', baselineMedianMs: 1000 / r.scalarTokS, candidateMedianMs: 1000 / r.wasmTokS, rounds: r.rounds }),
    ),
    ...matmul.map((r) =>
      pairResult({ case: `matmul ${r.size}^3 f32`, baseline: 'tenon host wasm, plain SIMD set', candidate: `tenon host wasm, ${r.kernelSet} set`, baselineMedianMs: r.simdMs, candidateMedianMs: r.wasmMs, rounds: r.rounds }),
    ),
    ...qmatmul.map((r) =>
      pairResult({ case: `qmatmul ${r.kind} matrix-vector, tiny-llama layer`, baseline: 'tenon host wasm, plain SIMD set', candidate: `tenon host wasm, ${r.kernelSet} set`, baselineMedianMs: r.simdUsPerLayer / 1000, candidateMedianMs: r.wasmUsPerLayer / 1000, rounds: r.rounds }),
    ),
    ...decode.map((r) =>
      pairResult({ case: `decode ${r.model}, ms/token`, baseline: 'tenon host wasm, plain SIMD set', candidate: `tenon host wasm, ${r.kernelSets['wasm']} set`, baselineMedianMs: 1000 / r.simdTokS, candidateMedianMs: 1000 / r.wasmTokS, rounds: r.rounds }),
    ),
    ...decode.filter((r) => r.q8TokS !== undefined).map((r) =>
      pairResult({ case: `decode ${r.model}, ms/token`, baseline: 'tenon host wasm-simd (f32 activations)', candidate: 'tenon host wasm-q8 (8-bit activations)', baselineMedianMs: 1000 / r.wasmTokS, candidateMedianMs: 1000 / r.q8TokS!, rounds: r.rounds }),
    ),
    ...decode.map((r) =>
      pairResult({ case: `decode ${r.model}, ms/token`, baseline: 'tenon host wasm-simd, per-dispatch binding', candidate: 'tenon host wasm-simd, prepared step', baselineMedianMs: 1000 / r.perDispatchTokS, candidateMedianMs: 1000 / r.wasmTokS, rounds: r.rounds }),
    ),
  ];

  const n = runs.length;
  const lines: string[] = [];
  lines.push(
    `bench:host: ${n} fresh Node processes in turn (TENON_BENCH_PROCESSES), each running every row with its sides interleaved; every figure below is the median across the processes, with (min..max) where shown; ${totalSeconds.toFixed(0)} s in all`,
    '',
  );
  lines.push(...formatPairTable('bench:host (host provider, Node, one thread; medians across processes; ratio = wasm-simd time / baseline time)', pairs));
  lines.push('', `host matmul (f32, one thread; wasm = the detected set, simd = plain SIMD; ms: median of rounds per process, then across processes)`);
  lines.push(`  ${'size'.padEnd(10)}${'wasm set'.padEnd(14)}${'wasm ms'.padStart(24)}${'simd ms'.padStart(24)}${'scalar ms'.padStart(12)}${'ORT ms'.padStart(24)}  wasm/ORT            scalar/wasm  measured on`);
  for (const a of matmulA) {
    const r = a.merged;
    lines.push(
      `  ${`${r.size}^3`.padEnd(10)}${r.kernelSet.padEnd(14)}${spread(a, (v) => v.wasmMs, 2).padStart(24)}${spread(a, (v) => v.simdMs, 2).padStart(24)}${r.scalarMs.toFixed(1).padStart(12)}${spread(a, (v) => v.ortMs, 2).padStart(24)}  ${spread(a, (v) => v.wasmVsOrt, 2).padEnd(20)}${r.scalarVsWasm.toFixed(1).padStart(11)}  ${HOST_CPU.measuredOn}`,
    );
  }
  lines.push('', `qmatmul matrix-vector, tiny-llama shapes (us per ${TINY_LLAMA_SHAPES.map(([nn, k]) => `${nn}x${k}`).join(' + ')})`, `  ${'kind'.padEnd(10)}${'wasm set'.padEnd(14)}${'wasm us'.padStart(26)}${'simd us'.padStart(26)}${'scalar us'.padStart(11)}  speedup             wasm GB/s  measured on`);
  for (const a of qmatmulA) {
    const r = a.merged;
    lines.push(`  ${r.kind.padEnd(10)}${r.kernelSet.padEnd(14)}${spread(a, (v) => v.wasmUsPerLayer, 1).padStart(26)}${spread(a, (v) => v.simdUsPerLayer, 1).padStart(26)}${r.scalarUsPerLayer.toFixed(1).padStart(11)}  ${spread(a, (v) => v.speedup, 1).padEnd(18)}${r.wasmGBs.toFixed(1).padStart(11)}  ${HOST_CPU.measuredOn}`);
  }
  lines.push(
    '',
    `greedy decode, ${DECODE_STEPS} tokens after "${DECODE_PROMPT}" (TextSession, host provider, decode steps timed; tok/s = tokens over a process's median timed round, then the median across processes)`,
    `  ${'model'.padEnd(31)}${'wasm set'.padEnd(14)}${'wasm tok/s'.padStart(22)}${'simd tok/s'.padStart(22)}  per-dispatch  prepared x  scalar tok/s  speedup  reference  ${'wasm/ref'.padEnd(19)}same ids  measured on`,
  );
  for (const a of decodeA) {
    const r = a.merged;
    if (r.q8TokS !== undefined) {
      lines.push(
        `  ${`${r.model} wasm-q8`.padEnd(31)}${(r.kernelSets['q8'] ?? '-').padEnd(14)}${spread(a, (v) => v.q8TokS, 0).padStart(22)}${'-'.padStart(22)}${'-'.padStart(14)}${'-'.padStart(12)}${'-'.padStart(14)}${'-'.padStart(9)}${(r.reference?.toString() ?? '-').padStart(11)}  ${spread(a, (v) => v.q8VsReference, 2).padEnd(19)}${String(r.q8AgreeingIds).padStart(8)}  ${HOST_CPU.measuredOn} (same ids: vs wasm-simd)`,
      );
    }
    lines.push(
      `  ${r.model.padEnd(31)}${r.kernelSets['wasm']!.padEnd(14)}${spread(a, (v) => v.wasmTokS, 0).padStart(22)}${spread(a, (v) => v.simdTokS, 0).padStart(22)}${r.perDispatchTokS.toFixed(0).padStart(14)}${r.preparedSpeedup.toFixed(2).padStart(12)}${r.scalarTokS.toFixed(0).padStart(14)}${r.speedup.toFixed(1).padStart(9)}${(r.reference?.toString() ?? '-').padStart(11)}  ${spread(a, (v) => v.wasmVsReference, 2).padEnd(19)}${String(r.agreeingIds).padStart(8)}  ${HOST_CPU.measuredOn}`,
    );
  }
  lines.push('', 'decode measurement per side (medians across processes): tok/s of the median single step | of the median round (the headline) | slowest..fastest round; GC ms inside its timed rounds, per round');
  for (const r of decode) {
    lines.push(`  ${r.model}`);
    for (const [name, t] of Object.entries(r.sides)) {
      lines.push(`    ${name.padEnd(12)}${`[${r.kernelSets[name]}]`.padEnd(15)}${t.stepMedianTokS.toFixed(0).padStart(7)} |${t.roundMedianTokS.toFixed(0).padStart(7)} |${t.slowestRoundTokS.toFixed(0).padStart(7)}..${t.fastestRoundTokS.toFixed(0).padEnd(7)} GC ${t.gcMsPerRound.toFixed(1)} ms`);
    }
  }
  // Every process's own figure, so a reader sees the spread and which processes ran in the slow state.
  const fastest = Math.min(...runs.map((r) => r.calibration.start.cpuMs));
  const cell = (v: number | undefined, digits: number) => (v === undefined ? '-' : v.toFixed(digits)).padStart(10);
  const perRow = (label: string, vals: readonly (number | undefined)[], digits: number) => `  ${label.padEnd(50)}${vals.map((v) => cell(v, digits)).join('')}`;
  const byProcess = <T>(a: Across<T>, get: (row: T) => number | undefined) => runs.map((_, i) => (a.all[i] === undefined ? undefined : get(a.all[i]!)));
  lines.push('', `every process's figures (process 1..${n} in the order run; the tables above take the median across them)`);
  lines.push(`  ${'process'.padEnd(50)}${runs.map((r) => String(r.index + 1).padStart(10)).join('')}`);
  lines.push(perRow('calibration loop, CPU ms, at its start', runs.map((r) => r.calibration.start.cpuMs), 1));
  lines.push(perRow('calibration loop, CPU ms, at its end', runs.map((r) => r.calibration.end.cpuMs), 1));
  lines.push(perRow('  start / fastest start (about 1: fast state)', runs.map((r) => r.calibration.start.cpuMs / fastest), 2));
  lines.push(perRow('load average at its start', runs.map((r) => r.loadAverage.atStart[0]), 1));
  lines.push(perRow('seconds', runs.map((r) => r.seconds), 0));
  for (const row of Object.keys(runs[0]!.rowSeconds)) lines.push(perRow(`  seconds: ${row}`, runs.map((r) => r.rowSeconds[row]), 1));
  for (const a of matmulA) {
    lines.push(perRow(`matmul ${a.merged.size}^3 wasm ms`, byProcess(a, (r) => r.wasmMs), 2));
    lines.push(perRow(`matmul ${a.merged.size}^3 simd ms`, byProcess(a, (r) => r.simdMs), 2));
    lines.push(perRow(`matmul ${a.merged.size}^3 ORT ms`, byProcess(a, (r) => r.ortMs), 2));
  }
  for (const a of qmatmulA) {
    lines.push(perRow(`qmatmul ${a.merged.kind} wasm us`, byProcess(a, (r) => r.wasmUsPerLayer), 1));
    lines.push(perRow(`qmatmul ${a.merged.kind} simd us`, byProcess(a, (r) => r.simdUsPerLayer), 1));
  }
  for (const a of decodeA) {
    for (const name of Object.keys(a.merged.sides)) lines.push(perRow(`${a.merged.model} ${name} tok/s`, byProcess(a, (r) => r.sides[name]?.roundMedianTokS), 0));
  }
  const machine = machineInfo(loadAtStart);
  const loadNote = loadWarning(loadAtStart);
  if (loadNote !== undefined) lines.push('', `note: ${loadNote}`);
  lines.push('', `aims of issue 12, acceptance 1, judged on the median across the ${n} processes (references: the issue's figures for llama2.c and llama.cpp on this machine kind, not this run):`, ...aimLines(aims));
  console.log(lines.join('\n'));
  if (ONLY !== undefined) {
    console.log(`\nTENON_BENCH_HOST_ONLY=${ONLY.source}: a partial run, no JSON written`);
    return;
  }

  const file = writeResults('host', pairs, {
    machine,
    ...(loadNote === undefined ? {} : { loadNote }),
    peers: { matmul: 'onnxruntime-web 1.30.0 wasm execution provider, numThreads 1 (Node)' },
    reference: REFERENCE,
    aims,
    aimsMet: `${aims.filter((a) => a.met).length} of ${aims.length}`,
    processes: runs.length,
    seconds: totalSeconds,
    measurement: `${runs.length} fresh Node processes run one after another (TENON_BENCH_PROCESSES), each running every row with all its sides interleaved in that process (this 2-vCPU VM puts a whole process in one of two speed states about 1.5-2x apart, so one process cannot say whether an aim holds). Per process: matmul and qmatmul figures are the median of their rounds; decode figures are tokens over the median round of ${DECODE_WARMUP} untimed then interleaved timed rounds per side (decode[].sides also has the median single step, the slowest and fastest round and the GC ms). Rows here (matmul, qmatmul, decode, and the ratio table) are field-by-field medians across processes (for an even count, the mean of the middle two); runs[] holds every process's own rows, its calibration (a fixed JS loop's median CPU and wall ms at its start and end: a higher figure means that process ran in the slow state) and its load. No process is dropped or chosen. Aims are judged on the median, with each process's figure and how many met it.`,
    kernelSets: 'wasm rows: the set feature detection selected with V8 relaxed SIMD turned on (kernelSet on each row); simd rows: the plain SIMD set (hostKernelFaults.noRelaxedSimd), same process, same rounds.',
    aimsNote: 'Every side of a row ran in the same process, rounds interleaved; each process measured every row. Reference figures come from the issue (llama2.c run.c -O3 and llama.cpp llama-bench tg128, one thread, on this machine kind), not from this run.',
    matmul: matmul.map((r) => ({ ...r, ...HOST_CPU })),
    qmatmul: qmatmul.map((r) => ({ ...r, ...HOST_CPU })),
    decode: decode.map((r) => ({ ...r, ...HOST_CPU })),
    runs,
  });
  console.log(`\nwrote ${file}`);
}, 3_600_000);
