// The cases of the model benchmark (issue 10, acceptance point 6), shared by the Node part (host provider
// with its WebAssembly kernels, and Dawn) and the Chromium part (WebGPU in the page; OPFS); no node:*
// imports here. Every case goes through tenon's public API (loadModel, materializeWeights, TextSession,
// the data plane and descriptorSource) and returns records carrying the hardware label of bench/report.ts
// (a row measured on a software adapter says so). Cases throw when sides compute differently; nothing
// here asserts anything about time.
//   decodeCase     greedy decode tokens/s per tiny-llama file (one lowering mix per file), every
//                  (file, provider) side of a lane interleaved round by round; 32 timed steps a round,
//                  a few steps in one round on a software adapter (SOFTWARE_SCHEDULE says why)
//   weightTraffic  weight bytes every decode step's dispatches read, per lowering kind, from the
//                  materialised weights' packed sizes
//   loadCase       (Chromium) loadModel + materializeWeights of a file held in OPFS, read through a
//                  descriptor range source as the demo's worker does, against the same from bytes in memory
import { TextSession, bytesSource, createHostProvider, createRuntime, descriptorSource, loadModel, materializeWeights, writeBlob } from '../../src/index.js';
import type { ByteSource, HostKernelStats, HostProvider, LoadedModel, LoweringKindName, MaterializedWeights, Runtime, Session as PlaneSession, WebGPUProvider, WeightTensor } from '../../src/index.js';
import { GGUF_FIXTURE_NAMES, readGgufFixture } from '../../contracts/support/gguf-fixtures.js';
import type { GgufFixture } from '../../contracts/support/gguf-fixtures.js';
import { describeAdapter, hardwareColumn, hardwareLabel, median, softwareNotice } from '../report.js';
import type { HardwareLabel, Where } from '../report.js';

/** The decode prompt (the references' first prompt for every tiny-llama file). */
export const DECODE_PROMPT = 'Once upon a time';
/** A side's decode schedule: timed steps per round, timed rounds, untimed warm-up rounds before them. */
export interface DecodeSchedule {
  readonly steps: number;
  readonly rounds: number;
  readonly warmup: number;
}
/** The schedule of the host provider and of a hardware GPU: the references' own 32 steps, a few rounds. */
export const FULL_SCHEDULE: DecodeSchedule = { steps: 32, rounds: 3, warmup: 1 };
/**
 * The schedule of a WebGPU side on a software adapter. SwiftShader runs the quantized matrix-vector
 * kernels at 0.1-1.5 s per 768x256 dispatch on this shared, loaded machine (Dawn: F16 ~1.3 s, Q8_0 ~0.25 s, Q4_0
 * ~0.03-0.14 s, against milliseconds for the f32 path), so a decode step of a quantized tiny-llama costs
 * seconds and the full schedule would take hours; these rows time a few steps in one round (the
 * decode graph already compiled by the untimed step before them) and say so.
 */
export const SOFTWARE_SCHEDULE: DecodeSchedule = { steps: 3, rounds: 1, warmup: 0 };
/** KV positions per session: the prompt and the decoded tokens fit with room to spare. */
export const MAX_SEQ = 128;
/** The file whose load from OPFS is timed (~39 MB: the largest fixture). */
export const LOAD_FIXTURE: GgufFixture = 'tiny-qwen2-Q4_K_M.gguf';
export const LOAD_ROUNDS = 3;
export const LOAD_WARMUP = 1;
/** Where the load case writes the file in the plane. */
export const LOAD_PATH = `/bench-models/${LOAD_FIXTURE}`;
const TINY_LLAMA_PREFIX = 'tiny-llama-';
const GGUF_SUFFIX = '.gguf';
const WORD_BYTES = 4;

/** Recorded with the results. */
export const SETTINGS = {
  decode: { prompt: DECODE_PROMPT, schedule: FULL_SCHEDULE, softwareAdapterSchedule: SOFTWARE_SCHEDULE, untimedStepsPerRound: 1, maxSeq: MAX_SEQ },
  load: { file: LOAD_FIXTURE, rounds: LOAD_ROUNDS, warmup: LOAD_WARMUP, path: LOAD_PATH },
} as const;

export type Lane = 'node' | 'chromium';
export type ProviderName = 'host' | 'webgpu-dawn' | 'webgpu-chromium';

/** Every tiny-llama fixture the fixture table knows, in its order (f32, F16, Q8_0, Q4_0, Q4_K_M, Q6_K, ...). */
export const TINY_LLAMA_FILES: readonly GgufFixture[] = GGUF_FIXTURE_NAMES.filter((n) => n.startsWith(TINY_LLAMA_PREFIX));

/** The file's quantization label: tiny-llama-Q4_K_M.gguf -> Q4_K_M. */
export function kindLabel(file: string): string {
  return file.slice(TINY_LLAMA_PREFIX.length, file.length - GGUF_SUFFIX.length);
}

/** One provider of a lane, with its runtime and where it computes. */
export interface BenchTarget {
  readonly lane: Lane;
  readonly provider: ProviderName;
  readonly gpuOrHost: HostProvider | WebGPUProvider;
  readonly runtime: Runtime;
  /** 'host' for the host provider, else the WebGPU adapter (software or not). */
  readonly where: Where;
}

export function makeTarget(lane: Lane, provider: ProviderName, gpuOrHost: HostProvider | WebGPUProvider): BenchTarget {
  const where: Where = gpuOrHost.kind === 'webgpu' ? describeAdapter(gpuOrHost.adapterInfo, gpuOrHost.device) : 'host';
  return { lane, provider, gpuOrHost, runtime: createRuntime(gpuOrHost), where };
}

/** Bytes in all and by lowering kind. */
export interface KindBytes {
  readonly total: number;
  readonly byKind: Readonly<Partial<Record<LoweringKindName, number>>>;
}

/** One tiny-llama file: its weights as materialised, and what one decode step reads of them. */
export interface ModelEntry {
  /** The file's quantization (f32, F16, Q8_0, Q4_0, Q4_K_M, Q6_K). */
  readonly kind: string;
  readonly file: GgufFixture;
  readonly fileBytes: number;
  readonly model: LoadedModel;
  /** Packed bytes of every materialised weight. */
  readonly packed: KindBytes;
  /** Weight bytes one decode step reads (weightTraffic). */
  readonly perToken: KindBytes;
}

function addTo(into: Partial<Record<LoweringKindName, number>>, kind: LoweringKindName, bytes: number): void {
  into[kind] = (into[kind] ?? 0) + bytes;
}

/**
 * Weight bytes the dispatches of one decode step (one token) read, from the materialised weights: every
 * tensor of every layer whole (norms, biases, attention and FFN matrices; of a routed FFN's expert
 * tensors only the used experts' share, and the router whole), the output norm whole, the classifier
 * whole (the token embedding when the model ties them), and one packed row of the token embedding (the
 * gather of the token). rope_freqs is read once at session creation (its factors travel as dispatch
 * parameters), so a step reads none of it. KV caches and activations are not weights and are left out.
 */
export function weightTraffic(weights: MaterializedWeights): KindBytes {
  const byKind: Partial<Record<LoweringKindName, number>> = {};
  const c = weights.model.config;
  const whole = (w: WeightTensor): void => addTo(byKind, w.kind, w.packedBytes);
  for (const layer of weights.layers) {
    for (const w of Object.values(layer) as WeightTensor[]) {
      const expertTensor = c.experts > 0 && w.shape.length >= 3;
      addTo(byKind, w.kind, expertTensor ? (w.packedBytes * c.expertsUsed) / c.experts : w.packedBytes);
    }
  }
  whole(weights.globals.outputNorm);
  whole(weights.globals.output);
  const embed = weights.globals.tokenEmbedding;
  addTo(byKind, embed.kind, embed.packedRowWords * WORD_BYTES);
  const total = Object.values(byKind).reduce((n, b) => n + b, 0);
  return { total, byKind };
}

/**
 * Reads and loads every tiny-llama fixture, and measures its weights on a scratch host provider (the host
 * provider's upload is zero-copy, so the packed sizes come from the very code path every provider uses).
 */
export async function loadTinyLlamas(): Promise<ModelEntry[]> {
  if (TINY_LLAMA_FILES.length === 0) throw new Error('the fixture table lists no tiny-llama file');
  const entries: ModelEntry[] = [];
  for (const file of TINY_LLAMA_FILES) {
    const bytes = await readGgufFixture(file);
    if (bytes === undefined) throw new Error(`the model benchmark needs ../shared/models/gguf/${file}.gz`);
    const model = await loadModel(bytes);
    const scratch = createHostProvider();
    const weights = await materializeWeights(model, scratch);
    try {
      entries.push({ kind: kindLabel(file), file, fileBytes: bytes.length, model, packed: { total: weights.packedBytes, byKind: weights.bytesByKind }, perToken: weightTraffic(weights) });
    } finally {
      weights.dispose();
    }
  }
  return entries;
}

/** Timing of one measured side: median, fastest and slowest round, in ms. */
export interface Figure {
  readonly name: string;
  readonly medianMs: number;
  readonly minMs: number;
  readonly maxMs: number;
  readonly rounds: number;
}

function figure(name: string, ms: readonly number[]): Figure {
  return { name, medianMs: median(ms), minMs: Math.min(...ms), maxMs: Math.max(...ms), rounds: ms.length };
}

/** One row of the decode table: a file on a provider. */
export interface DecodeRecord extends HardwareLabel {
  readonly lane: Lane;
  readonly provider: ProviderName;
  readonly kind: string;
  readonly file: string;
  readonly schedule: DecodeSchedule;
  /** Time of `schedule.steps` decode steps per timed round. */
  readonly time: Figure;
  readonly tokPerS: number;
  readonly msPerToken: number;
  /** The fastest round's rate (leaves out stalls from other processes). */
  readonly bestTokPerS: number;
  readonly weightBytesPerToken: number;
  /** Weight bytes per token * tokens/s: the weight bandwidth one decode stream draws at the median rate. */
  readonly weightGBps: number;
  /** The greedy ids: the prefill's choice, the untimed step's, then each timed step's (the same every round). */
  readonly greedyIds: readonly number[];
  /** Host provider only: which kernels ran (WebAssembly SIMD is the default). */
  readonly hostKernels?: HostKernelStats;
}

/** The schedule a target decodes on: shortened on a software adapter (SOFTWARE_SCHEDULE). */
export function scheduleOf(target: BenchTarget): DecodeSchedule {
  return target.where !== 'host' && target.where.software ? SOFTWARE_SCHEDULE : FULL_SCHEDULE;
}

interface DecodeSide {
  readonly target: BenchTarget;
  readonly entry: ModelEntry;
  readonly schedule: DecodeSchedule;
  readonly session: TextSession;
  readonly prompt: readonly number[];
  readonly samples: number[];
  ids: number[] | undefined;
}

function sameIds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** One line per measured round, so a slow run shows where it is. */
function progress(line: string): void {
  console.log(`[bench:models] ${line}`);
}

/**
 * Greedy ids after a fresh prefill of the prompt and one untimed decode step (so the decode graph is
 * compiled and its pipelines made before the clock starts); only the following decode steps are timed.
 */
async function decodeRound(side: DecodeSide): Promise<{ ms: number; ids: number[] }> {
  const s = side.session;
  await s.reset();
  let next = (await s.prefill(side.prompt)).argmax;
  const ids = [next];
  next = (await s.decode(next)).argmax;
  ids.push(next);
  const t0 = performance.now();
  for (let i = 0; i < side.schedule.steps; i++) {
    next = (await s.decode(next)).argmax;
    ids.push(next);
  }
  return { ms: performance.now() - t0, ids };
}

/**
 * Greedy decode after DECODE_PROMPT for every (file, target) pair of a lane, all sessions open at once
 * and their rounds interleaved (the order rotating each round, so drift and other processes' load hit
 * every side; a side with fewer rounds, a software adapter's, drops out after its last). Each round
 * resets, prefills and decodes one step untimed, then times the decode loop (one transaction per token:
 * submit, proven completion, logits read back). A side whose ids change from one round to the next, or
 * two targets of the lane that disagree on a file's ids (over the steps both ran), throw.
 */
export async function decodeCase(targets: readonly BenchTarget[], entries: readonly ModelEntry[]): Promise<DecodeRecord[]> {
  const sides: DecodeSide[] = [];
  try {
    for (const entry of entries) {
      for (const target of targets) {
        const session = await TextSession.create({ runtime: target.runtime, model: entry.model, maxSeq: MAX_SEQ });
        sides.push({ target, entry, schedule: scheduleOf(target), session, prompt: session.tokenizer.encode(DECODE_PROMPT, { bos: true }), samples: [], ids: undefined });
      }
    }
    const roundsOf = (side: DecodeSide): number => side.schedule.warmup + side.schedule.rounds;
    const allRounds = Math.max(...sides.map(roundsOf));
    for (let r = 0; r < allRounds; r++) {
      for (let j = 0; j < sides.length; j++) {
        const side = sides[(j + r) % sides.length]!;
        if (r >= roundsOf(side)) continue;
        const { ms, ids } = await decodeRound(side);
        if (side.ids !== undefined && !sameIds(side.ids, ids)) throw new Error(`${side.entry.file} on ${side.target.provider}: greedy ids changed between rounds (${side.ids.join(',')} then ${ids.join(',')})`);
        side.ids = ids;
        const warm = r < side.schedule.warmup;
        if (!warm) side.samples.push(ms);
        progress(`round ${r + 1}/${roundsOf(side)}${warm ? ' (warmup)' : ''}: ${side.entry.kind} on ${side.target.provider}: ${(ms / side.schedule.steps).toFixed(2)} ms/token`);
      }
    }
  } finally {
    for (const s of sides) s.session.dispose();
  }
  for (const entry of entries) {
    const mine = sides.filter((s) => s.entry === entry);
    for (const s of mine.slice(1)) checkSameIds(entry.file, { provider: mine[0]!.target.provider, ids: mine[0]!.ids! }, { provider: s.target.provider, ids: s.ids! });
  }
  return sides.map((s) => {
    const steps = s.schedule.steps;
    const time = figure(`${s.target.provider}: ${steps} greedy decode steps`, s.samples);
    const tokPerS = (steps * 1000) / time.medianMs;
    const hostKernels = s.target.runtime.hostKernels();
    return {
      lane: s.target.lane,
      provider: s.target.provider,
      kind: s.entry.kind,
      file: s.entry.file,
      schedule: s.schedule,
      time,
      tokPerS,
      msPerToken: time.medianMs / steps,
      bestTokPerS: (steps * 1000) / time.minMs,
      weightBytesPerToken: s.entry.perToken.total,
      weightGBps: (s.entry.perToken.total * tokPerS) / 1e9,
      greedyIds: s.ids!,
      ...(hostKernels === undefined ? {} : { hostKernels }),
      ...hardwareLabel(s.target.where),
    };
  });
}

/**
 * Throws unless both providers produced the same greedy ids for `file` over the steps both ran (a side
 * on the shortened schedule ran fewer); returns how many ids were compared.
 */
export function checkSameIds(file: string, a: { provider: string; ids: readonly number[] }, b: { provider: string; ids: readonly number[] }): number {
  const n = Math.min(a.ids.length, b.ids.length);
  if (sameIds(a.ids.slice(0, n), b.ids.slice(0, n))) return n;
  let at = 0;
  while (at < n && a.ids[at] === b.ids[at]) at++;
  throw new Error(`${file}: ${a.provider} and ${b.provider} compute different greedy ids from position ${at} (${a.ids.join(',')} vs ${b.ids.join(',')})`);
}

/** A load of one file on one provider: OPFS descriptor source vs bytes in memory. */
export interface LoadRecord extends HardwareLabel {
  readonly lane: Lane;
  readonly provider: ProviderName;
  readonly case: string;
  readonly file: string;
  readonly fileBytes: number;
  /** loadModel + materializeWeights from the bytes in memory (bytesSource). */
  readonly baseline: Figure;
  /** loadModel + materializeWeights through descriptorSource over the OPFS blob. */
  readonly candidate: Figure;
  /** candidate median / baseline median (above 1: reading from OPFS costs that much more). */
  readonly ratio: number;
  readonly figures: Readonly<Record<string, number | string | boolean>>;
}

interface LoadSample {
  readonly loadMs: number;
  readonly materializeMs: number;
  readonly packedBytes: number;
  readonly kinds: string;
}

/** `inner`, counting its reads, their bytes and the largest one into `counts`. */
function counted(inner: ByteSource, counts: { reads: number; bytes: number; largest: number }): ByteSource {
  return {
    size: inner.size,
    async read(offset, length) {
      const out = await inner.read(offset, length);
      counts.reads++;
      counts.bytes += length;
      counts.largest = Math.max(counts.largest, length);
      return out;
    },
  };
}

/** loadModel then materializeWeights on `target` (waiting for the upload's queue work on WebGPU), timed. */
async function loadOnce(target: BenchTarget, source: ByteSource): Promise<LoadSample> {
  const t0 = performance.now();
  const model = await loadModel(source);
  const t1 = performance.now();
  const weights = await materializeWeights(model, target.gpuOrHost);
  if (target.gpuOrHost.kind === 'webgpu') await target.gpuOrHost.device.queue.onSubmittedWorkDone();
  const t2 = performance.now();
  const kinds = Object.entries(weights.bytesByKind)
    .map(([k, b]) => `${k} ${mb(b)}`)
    .join(' + ');
  const sample = { loadMs: t1 - t0, materializeMs: t2 - t1, packedBytes: weights.packedBytes, kinds };
  weights.dispose();
  return sample;
}

/**
 * The LOAD_FIXTURE file, written into OPFS through the data plane (`store`), then loaded as the demo's
 * worker does: the blob opened for read, loadModel over descriptorSource (range reads, never the whole
 * file in one buffer) and materializeWeights onto `target`; against the same from the bytes in memory.
 * Sides interleave; opening and closing the descriptor stay outside the timed part. Both sides must give
 * the same packed weights.
 */
export async function loadCase(target: BenchTarget, store: PlaneSession): Promise<LoadRecord> {
  const bytes = await readGgufFixture(LOAD_FIXTURE);
  if (bytes === undefined) throw new Error(`the model benchmark needs ../shared/models/gguf/${LOAD_FIXTURE}.gz`);
  const tw = performance.now();
  const writer = await writeBlob(store, LOAD_PATH, bytes.length);
  await writer.write(bytes);
  await writer.seal();
  const writeMs = performance.now() - tw;
  const opfs: LoadSample[] = [];
  const memory: LoadSample[] = [];
  let reads = { reads: 0, bytes: 0, largest: 0 };
  for (let r = 0; r < LOAD_WARMUP + LOAD_ROUNDS; r++) {
    const fromPlane = async (): Promise<void> => {
      const d = await store.open(LOAD_PATH, { access: 'read', kind: 'blob' });
      try {
        const counts = { reads: 0, bytes: 0, largest: 0 };
        const sample = await loadOnce(target, counted(descriptorSource(d), counts));
        if (r >= LOAD_WARMUP) opfs.push(sample);
        reads = counts;
      } finally {
        await d.close();
      }
    };
    const fromMemory = async (): Promise<void> => {
      const sample = await loadOnce(target, bytesSource(bytes));
      if (r >= LOAD_WARMUP) memory.push(sample);
    };
    for (const run of r % 2 === 0 ? [fromPlane, fromMemory] : [fromMemory, fromPlane]) await run();
  }
  const [a, b] = [opfs[opfs.length - 1]!, memory[memory.length - 1]!];
  if (a.packedBytes !== b.packedBytes || a.kinds !== b.kinds) throw new Error(`${LOAD_FIXTURE}: OPFS and in-memory loads materialised different weights (${a.kinds} vs ${b.kinds})`);
  const total = (s: LoadSample): number => s.loadMs + s.materializeMs;
  const baseline = figure('bytes in memory: loadModel + materializeWeights', memory.map(total));
  const candidate = figure('OPFS descriptor: loadModel + materializeWeights', opfs.map(total));
  return {
    lane: target.lane,
    provider: target.provider,
    case: `load ${LOAD_FIXTURE} (${mb(bytes.length)}): OPFS vs memory`,
    file: LOAD_FIXTURE,
    fileBytes: bytes.length,
    baseline,
    candidate,
    ratio: candidate.medianMs / baseline.medianMs,
    figures: {
      'OPFS loadModel ms': median(opfs.map((s) => s.loadMs)),
      'OPFS materializeWeights ms': median(opfs.map((s) => s.materializeMs)),
      'OPFS MB/s (file bytes / total)': bytes.length / 1e3 / candidate.medianMs,
      'memory loadModel ms': median(memory.map((s) => s.loadMs)),
      'memory materializeWeights ms': median(memory.map((s) => s.materializeMs)),
      'range reads': reads.reads,
      'bytes read': reads.bytes,
      'largest read': reads.largest,
      'packed weights': a.kinds,
      'write into OPFS ms (once, untimed side)': writeMs,
    },
    ...hardwareLabel(target.where),
  };
}

function mb(bytes: number): string {
  return bytes >= 1e6 ? `${(bytes / 1e6).toFixed(2)} MB` : `${(bytes / 1e3).toFixed(1)} kB`;
}

function kindText(k: KindBytes): string {
  return Object.entries(k.byKind)
    .sort((x, y) => y[1] - x[1])
    .map(([kind, b]) => `${kind} ${mb(b)}`)
    .join(' + ');
}

const fmtValue = (v: unknown): string => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toPrecision(3)) : String(v));

/** Per file: packed weights and weight bytes read per token, by lowering kind (as lines). */
export function formatWeightTable(entries: readonly ModelEntry[]): string[] {
  const header = `${'kind'.padEnd(8)}${'file'.padEnd(25)}${'file bytes'.padStart(12)}${'packed'.padStart(12)}${'read/token'.padStart(12)}  read per token by lowering kind`;
  const lines = [header, '-'.repeat(header.length + 40)];
  for (const e of entries) {
    lines.push(`${e.kind.padEnd(8)}${e.file.padEnd(25)}${mb(e.fileBytes).padStart(12)}${mb(e.packed.total).padStart(12)}${mb(e.perToken.total).padStart(12)}  ${kindText(e.perToken)}`);
  }
  return lines;
}

/** How `r`'s greedy ids compare with `first`'s over the ids both have: 'same n', 'DIFFER', or 'reference'. */
function idsText(r: DecodeRecord, first: DecodeRecord | undefined): string {
  if (first === undefined) return '';
  if (first === r) return 'reference';
  const n = Math.min(first.greedyIds.length, r.greedyIds.length);
  return sameIds(first.greedyIds.slice(0, n), r.greedyIds.slice(0, n)) ? `same ${n}` : 'DIFFER';
}

/**
 * The decode table (as lines): one row per file and provider, with the hardware column and the note.
 * `reference` rows (one per file) are what the ids column compares against.
 */
export function formatDecodeTable(rows: readonly DecodeRecord[], reference?: readonly DecodeRecord[]): string[] {
  const header = `${'kind'.padEnd(8)}${'lane'.padEnd(9)}${'provider'.padEnd(17)}${'steps'.padStart(7)}${'tok/s'.padStart(9)}${'best'.padStart(9)}${'ms/tok'.padStart(10)}${'read/token'.padStart(12)}${'weight GB/s'.padStart(12)}  ${'ids'.padEnd(11)}measured on`;
  const lines = [header, '-'.repeat(header.length + 30)];
  for (const r of rows) {
    const ids = idsText(r, reference?.find((x) => x.file === r.file));
    lines.push(
      `${r.kind.padEnd(8)}${r.lane.padEnd(9)}${r.provider.padEnd(17)}${`${r.schedule.steps}x${r.schedule.rounds}`.padStart(7)}${r.tokPerS.toFixed(1).padStart(9)}${r.bestTokPerS.toFixed(1).padStart(9)}${r.msPerToken.toFixed(2).padStart(10)}${mb(r.weightBytesPerToken).padStart(12)}${r.weightGBps.toPrecision(3).padStart(12)}  ${ids.padEnd(11)}${hardwareColumn(r)}`,
    );
  }
  return [...lines, ...softwareNotice(rows)];
}

/** The load table (as lines). */
export function formatLoadTable(rows: readonly LoadRecord[]): string[] {
  const header = `${'lane'.padEnd(9)}${'provider'.padEnd(17)}${'case'.padEnd(52)}${'memory ms'.padStart(11)}${'OPFS ms'.padStart(10)}${'ratio'.padStart(7)}  ${'measured on'.padEnd(40)}figures`;
  const lines = [header, '-'.repeat(header.length + 40)];
  for (const r of rows) {
    const figures = Object.entries(r.figures)
      .map(([k, v]) => `${k}=${fmtValue(v)}`)
      .join('; ');
    lines.push(`${r.lane.padEnd(9)}${r.provider.padEnd(17)}${r.case.slice(0, 51).padEnd(52)}${r.baseline.medianMs.toFixed(1).padStart(11)}${r.candidate.medianMs.toFixed(1).padStart(10)}${r.ratio.toFixed(2).padStart(7)}  ${hardwareColumn(r).padEnd(40)}${figures}`);
  }
  return [...lines, ...softwareNotice(rows)];
}
