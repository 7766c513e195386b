// Dense F32 weights for partitioned ranks: read once from a LoadedModel (or synthesised from a seed for
// benchmarks), then sliced per rank by its checked plan (partition.ts). Every slice is a fresh contiguous
// Float32Array that the caller owns (and usually transfers to the rank's worker); nothing is shared with
// the source model. Thread: any (reading a LoadedModel awaits its range source).
import { TenonError } from '../../errors.js';
import type { LoadedModel } from '../../model/index.js';
import type { RopeStyle } from '../../submit/index.js';
import type { PartitionModel, RankPlan } from './partition.js';

/** The configuration the rank forward runs (a dense llama-style model). */
export interface DenseConfig extends PartitionModel {
  readonly ropeTheta: number;
  readonly ropeStyle: RopeStyle;
  readonly rmsEps: number;
  readonly contextLength: number;
}

export interface DenseLayer {
  readonly attnNorm: Float32Array;
  /** [heads*headDim, dim], [kvHeads*headDim, dim] x2, [dim, heads*headDim] (row-major, out x in). */
  readonly wq: Float32Array;
  readonly wk: Float32Array;
  readonly wv: Float32Array;
  readonly wo: Float32Array;
  readonly ffnNorm: Float32Array;
  /** [ffn, dim] x2 and [dim, ffn]. */
  readonly gate: Float32Array;
  readonly up: Float32Array;
  readonly down: Float32Array;
}

export interface DenseWeights {
  readonly config: DenseConfig;
  /** [vocab, dim]. */
  readonly embedding: Float32Array;
  readonly layers: readonly DenseLayer[];
  readonly outputNorm: Float32Array;
  /** [vocab, dim] (the embedding itself when tied). */
  readonly classifier: Float32Array;
}

/** One rank's share of the weights: only what its plan names. */
export interface RankWeights {
  readonly config: DenseConfig;
  readonly plan: RankPlan;
  /** Whole embedding for ranks that gather tokens, else empty. */
  readonly embedding: Float32Array;
  /** Layers [plan.layerStart, plan.layerEnd), each cut to the rank's heads and FFN columns. */
  readonly layers: readonly DenseLayer[];
  readonly outputNorm: Float32Array;
  /** Classifier rows [vocabStart, vocabEnd). */
  readonly classifier: Float32Array;
}

const OP = 'partition.weights';
const NONE = new Float32Array(0);

/** The facts checkPartition needs, from a loaded model. */
export function partitionModelOf(model: LoadedModel): DenseConfig {
  const c = model.config;
  const entry = model.architecture;
  const dense = entry.ffn === 'dense' && !entry.attentionBias && !c.ropeFreqs && model.tensors.every((t) => t.kind.name === 'F32');
  return {
    dim: c.dim,
    layers: c.layers,
    ffnDim: c.ffnDim,
    heads: c.heads,
    kvHeads: c.kvHeads,
    headDim: c.headDim,
    vocabSize: c.vocabSize,
    dense,
    ropeTheta: c.ropeTheta,
    ropeStyle: entry.ropeStyle,
    rmsEps: c.rmsEps,
    contextLength: c.contextLength,
  };
}

async function readF32(model: LoadedModel, name: string | undefined, t: LoadedModel['tensors'][number] | undefined): Promise<Float32Array> {
  if (t === undefined) throw new TenonError('EINVAL', `tensor ${name ?? '?'} missing`, { op: OP, reason: 'missing-tensor' });
  const bytes = await t.readRows(0, t.geometry.rows);
  const out = new Float32Array(bytes.byteLength / 4);
  new Uint8Array(out.buffer).set(bytes);
  return out;
}

/** Reads every weight of a dense F32 model (ENOTSUP `partition-unsupported` for any other). */
export async function readDenseWeights(model: LoadedModel): Promise<DenseWeights> {
  const config = partitionModelOf(model);
  if (!config.dense) throw new TenonError('ENOTSUP', 'only dense F32 llama-style models can be partitioned', { op: OP, reason: 'partition-unsupported' });
  const g = model.globals;
  const embedding = await readF32(model, 'token_embd', g.tokenEmbedding);
  const classifier = g.output === g.tokenEmbedding ? embedding : await readF32(model, 'output', g.output);
  const layers: DenseLayer[] = [];
  for (const L of model.layers) {
    layers.push({
      attnNorm: await readF32(model, 'attn_norm', L.attnNorm),
      wq: await readF32(model, 'attn_q', L.attnQ),
      wk: await readF32(model, 'attn_k', L.attnK),
      wv: await readF32(model, 'attn_v', L.attnV),
      wo: await readF32(model, 'attn_output', L.attnOutput),
      ffnNorm: await readF32(model, 'ffn_norm', L.ffnNorm),
      gate: await readF32(model, 'ffn_gate', L.ffnGate),
      up: await readF32(model, 'ffn_up', L.ffnUp),
      down: await readF32(model, 'ffn_down', L.ffnDown),
    });
  }
  return { config, embedding, layers, outputNorm: await readF32(model, 'output_norm', g.outputNorm), classifier };
}

/** mulberry32: a small seeded generator, enough for benchmark weights. */
function generator(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Seeded random weights of a given shape (benchmarks): uniform in +-scale/sqrt(in), norms near 1. */
export function randomDenseWeights(shape: Omit<DenseConfig, 'dense' | 'headDim'>, seed: number): DenseWeights {
  const config: DenseConfig = { ...shape, headDim: shape.dim / shape.heads, dense: true };
  const next = generator(seed);
  const matrix = (rows: number, cols: number): Float32Array => {
    const a = new Float32Array(rows * cols);
    const scale = 1 / Math.sqrt(cols);
    for (let i = 0; i < a.length; i++) a[i] = (next() * 2 - 1) * scale;
    return a;
  };
  const norm = (n: number): Float32Array => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = 0.9 + 0.2 * next();
    return a;
  };
  const { dim, ffnDim, heads, kvHeads } = config;
  const hd = config.headDim;
  const embedding = matrix(shape.vocabSize, dim);
  const layers = Array.from({ length: shape.layers }, (): DenseLayer => ({
    attnNorm: norm(dim),
    wq: matrix(heads * hd, dim),
    wk: matrix(kvHeads * hd, dim),
    wv: matrix(kvHeads * hd, dim),
    wo: matrix(dim, heads * hd),
    ffnNorm: norm(dim),
    gate: matrix(ffnDim, dim),
    up: matrix(ffnDim, dim),
    down: matrix(dim, ffnDim),
  }));
  return { config, embedding, layers, outputNorm: norm(dim), classifier: embedding };
}

/** Rows [start, end) of a row-major [*, cols] matrix, copied. */
function rows(m: Float32Array, cols: number, start: number, end: number): Float32Array {
  return m.slice(start * cols, end * cols);
}

/** Columns [start, end) of a row-major [rowCount, cols] matrix, copied into [rowCount, end - start]. */
function columns(m: Float32Array, rowCount: number, cols: number, start: number, end: number): Float32Array {
  const w = end - start;
  const out = new Float32Array(rowCount * w);
  for (let r = 0; r < rowCount; r++) out.set(m.subarray(r * cols + start, r * cols + end), r * w);
  return out;
}

/** The share of `weights` that `plan` names (fresh copies). */
export function rankWeights(weights: DenseWeights, plan: RankPlan): RankWeights {
  const c = weights.config;
  const hd = c.headDim;
  const whole = plan.headStart === 0 && plan.headEnd === c.heads && plan.ffnStart === 0 && plan.ffnEnd === c.ffnDim;
  const layers = weights.layers.slice(plan.layerStart, plan.layerEnd).map((L): DenseLayer => {
    if (whole) return { ...L, attnNorm: L.attnNorm.slice(), wq: L.wq.slice(), wk: L.wk.slice(), wv: L.wv.slice(), wo: L.wo.slice(), ffnNorm: L.ffnNorm.slice(), gate: L.gate.slice(), up: L.up.slice(), down: L.down.slice() };
    return {
      attnNorm: L.attnNorm.slice(),
      wq: rows(L.wq, c.dim, plan.headStart * hd, plan.headEnd * hd),
      wk: rows(L.wk, c.dim, plan.kvStart * hd, plan.kvEnd * hd),
      wv: rows(L.wv, c.dim, plan.kvStart * hd, plan.kvEnd * hd),
      wo: columns(L.wo, c.dim, c.heads * hd, plan.headStart * hd, plan.headEnd * hd),
      ffnNorm: L.ffnNorm.slice(),
      gate: rows(L.gate, c.dim, plan.ffnStart, plan.ffnEnd),
      up: rows(L.up, c.dim, plan.ffnStart, plan.ffnEnd),
      down: columns(L.down, c.dim, c.ffnDim, plan.ffnStart, plan.ffnEnd),
    };
  });
  return {
    config: c,
    plan,
    embedding: plan.embeds ? weights.embedding.slice() : NONE,
    layers,
    outputNorm: plan.classifies ? weights.outputNorm.slice() : NONE,
    classifier: plan.classifies ? rows(weights.classifier, c.dim, plan.vocabStart, plan.vocabEnd) : NONE,
  };
}
