// Host reference forward pass: llama2.c run.c's `forward`, one token at a time, in plain TypeScript.
// It is the correctness oracle for the op-library forward on WebGPU and the host provider, not a fast
// path: no storage kernel, no submission, no workers.
//
// Contract: `createReferenceModel(model)` allocates the activations and a KV cache
// [n_layers, capacity, kv_dim] (fp32, like run.c) after checking their sizes with exact integers; the
// weights are read from the parsed model and never written. `forward(token)` runs the token at position
// `position`, appends its K and V rows to the cache and returns the logits; bad input throws a TenonError
// and changes nothing. Values are stored as fp32 (Math.fround) wherever run.c stores a float; sums are
// accumulated in f64, so results agree with run.c to fp32 rounding, not bit for bit.
//
// The building blocks are exported for op-level checks: rmsnorm (eps 1e-5 added to the mean square),
// RoPE over pairs (2i, 2i+1) of each head with freq = 1 / 10000^(2i / head_size) in fp32, softmax,
// attention with grouped KV heads (query head h reads KV head floor(h / (n_heads / n_kv_heads))),
// SiLU-gated MLP, classifier = wcls (the token embedding when shared).
import { TenonError } from '../errors.js';
import type { LlamaConfig, LlamaModelFile } from '../model/index.js';
import { BOS_ID } from '../model/index.js';

/** run.c's rmsnorm epsilon. */
export const RMSNORM_EPS = 1e-5;
/** run.c's RoPE base. */
export const ROPE_BASE = 10000;
/** Largest KV cache the reference allocates (bytes); a bigger request fails with ENOMEM before allocating. */
export const REFERENCE_MAX_CACHE_BYTES = 2 ** 31;

const f32 = Math.fround;

/** out[j] = w[j] * (x[j] / sqrt(mean(x^2) + eps)), over `size` elements from the given offsets. */
export function rmsnorm(out: Float32Array, x: Float32Array, weight: Float32Array, size: number, weightOffset = 0): void {
  let ss = 0;
  for (let j = 0; j < size; j++) ss += x[j]! * x[j]!;
  const scale = f32(1 / Math.sqrt(f32(f32(ss / size) + RMSNORM_EPS)));
  for (let j = 0; j < size; j++) out[j] = weight[weightOffset + j]! * f32(scale * x[j]!);
}

/** out[i] = sum_j w[i, j] * x[j] for w [d, n] (row-major, starting at wOffset): run.c's matmul. */
export function matvec(out: Float32Array, x: Float32Array, w: Float32Array, n: number, d: number, wOffset = 0): void {
  for (let i = 0; i < d; i++) {
    let acc = 0;
    const row = wOffset + i * n;
    for (let j = 0; j < n; j++) acc += w[row + j]! * x[j]!;
    out[i] = acc;
  }
}

/** RoPE frequencies of one head: freq[i] = 1 / base^(2i / headSize), rounded to fp32 as run.c does. */
export function ropeFrequencies(headSize: number): Float32Array {
  const freq = new Float32Array(headSize / 2);
  for (let i = 0; i < freq.length; i++) freq[i] = f32(1 / f32(Math.pow(ROPE_BASE, f32((2 * i) / headSize))));
  return freq;
}

/** Rotates pairs (2i, 2i+1) of every head of `vec` [heads * headSize] by pos * freq[i]. */
export function rope(vec: Float32Array, heads: number, headSize: number, pos: number, freq: Float32Array): void {
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < headSize; i += 2) {
      const angle = f32(pos * freq[i / 2]!);
      const cos = Math.cos(angle);
      const sin = Math.sin(angle);
      const at = h * headSize + i;
      const v0 = vec[at]!;
      const v1 = vec[at + 1]!;
      vec[at] = v0 * cos - v1 * sin;
      vec[at + 1] = v0 * sin + v1 * cos;
    }
  }
}

/** In-place softmax over x[0..size). */
export function softmax(x: Float32Array, size: number): void {
  let max = x[0]!;
  for (let i = 1; i < size; i++) if (x[i]! > max) max = x[i]!;
  let total = 0;
  for (let i = 0; i < size; i++) {
    x[i] = Math.exp(x[i]! - max);
    total += x[i]!;
  }
  for (let i = 0; i < size; i++) x[i] = x[i]! / total;
}

/** Index of the largest logit (the first one on ties). */
export function argmax(logits: Float32Array): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
  return best;
}

export interface ReferenceOptions {
  /** Positions the KV cache holds (default and maximum: config.seqLen). */
  readonly capacity?: number;
}

export interface ReferenceForwardOptions {
  /** Where to write the logits (length vocabSize); a fresh array when absent. */
  readonly dst?: Float32Array;
  /** Sees the residual stream after each layer (a view that the next step overwrites). */
  readonly onLayer?: (layer: number, hidden: Float32Array) => void;
}

export interface ReferenceModel {
  readonly config: LlamaConfig;
  /** Tokens in the KV cache; the next forward runs at this position. */
  readonly position: number;
  readonly capacity: number;
  /** Runs one token, appends its K/V, returns the logits [vocabSize]. */
  forward(token: number, options?: ReferenceForwardOptions): Float32Array;
  /** Empties the KV cache. */
  reset(): void;
}

/** Builds the reference for a parsed model. Throws EINVAL 'bad-capacity' or ENOMEM 'cache-too-large'. */
export function createReferenceModel(model: LlamaModelFile, options: ReferenceOptions = {}): ReferenceModel {
  const c = model.config;
  const capacity = options.capacity ?? c.seqLen;
  if (!Number.isSafeInteger(capacity) || capacity < 1 || capacity > c.seqLen) {
    throw new TenonError('EINVAL', `capacity must be an integer in 1..${c.seqLen}`, { op: 'session.createReferenceModel', reason: 'bad-capacity', ids: { capacity: String(capacity), seqLen: c.seqLen } });
  }
  const cacheBytes = 2 * c.nLayers * capacity * c.kvDim * 4;
  if (!Number.isSafeInteger(cacheBytes) || cacheBytes > REFERENCE_MAX_CACHE_BYTES) {
    throw new TenonError('ENOMEM', 'the reference KV cache would be too large; pass a smaller capacity', { op: 'session.createReferenceModel', reason: 'cache-too-large', ids: { capacity, bytes: cacheBytes } });
  }
  return new Reference(model, capacity);
}

class Reference implements ReferenceModel {
  readonly config: LlamaConfig;
  readonly capacity: number;
  #position = 0;
  readonly #model: LlamaModelFile;
  readonly #freq: Float32Array;
  // Activations (run.c's RunState) and the KV cache [layers, capacity, kvDim].
  readonly #x: Float32Array;
  readonly #xb: Float32Array;
  readonly #xb2: Float32Array;
  readonly #q: Float32Array;
  readonly #k: Float32Array;
  readonly #v: Float32Array;
  readonly #att: Float32Array;
  readonly #hb: Float32Array;
  readonly #hb2: Float32Array;
  readonly #keyCache: Float32Array;
  readonly #valueCache: Float32Array;

  constructor(model: LlamaModelFile, capacity: number) {
    const c = model.config;
    this.config = c;
    this.capacity = capacity;
    this.#model = model;
    this.#freq = ropeFrequencies(c.headSize);
    this.#x = new Float32Array(c.dim);
    this.#xb = new Float32Array(c.dim);
    this.#xb2 = new Float32Array(c.dim);
    this.#q = new Float32Array(c.dim);
    this.#k = new Float32Array(c.kvDim);
    this.#v = new Float32Array(c.kvDim);
    this.#att = new Float32Array(capacity);
    this.#hb = new Float32Array(c.hiddenDim);
    this.#hb2 = new Float32Array(c.hiddenDim);
    this.#keyCache = new Float32Array(c.nLayers * capacity * c.kvDim);
    this.#valueCache = new Float32Array(c.nLayers * capacity * c.kvDim);
  }

  get position(): number {
    return this.#position;
  }

  reset(): void {
    this.#position = 0;
  }

  forward(token: number, options: ReferenceForwardOptions = {}): Float32Array {
    const op = 'reference.forward';
    const c = this.config;
    if (!Number.isInteger(token) || token < 0 || token >= c.vocabSize) {
      throw new TenonError('EINVAL', `token ${token} is not in 0..${c.vocabSize - 1}`, { op, reason: 'bad-token', ids: { token: String(token) } });
    }
    if (this.#position >= this.capacity) throw new TenonError('ENOSPC', 'the KV cache is full', { op, reason: 'context-full', ids: { capacity: this.capacity } });
    const logits = options.dst ?? new Float32Array(c.vocabSize);
    if (logits.length !== c.vocabSize) throw new TenonError('EINVAL', 'dst must hold vocabSize logits', { op, reason: 'bad-destination', ids: { length: logits.length, vocabSize: c.vocabSize } });

    const w = this.#model.weights;
    const { dim, hiddenDim, nLayers, nHeads, nKvHeads, headSize, kvDim } = c;
    const pos = this.#position;
    const kvMul = nHeads / nKvHeads;
    const x = this.#x;
    const xb = this.#xb;
    const q = this.#q;
    const k = this.#k;
    const v = this.#v;
    const att = this.#att;
    const attScale = Math.sqrt(headSize);

    x.set(w.tokenEmbedding.subarray(token * dim, (token + 1) * dim));
    for (let l = 0; l < nLayers; l++) {
      rmsnorm(xb, x, w.rmsAtt, dim, l * dim);
      matvec(q, xb, w.wq, dim, dim, l * dim * dim);
      matvec(k, xb, w.wk, dim, kvDim, l * kvDim * dim);
      matvec(v, xb, w.wv, dim, kvDim, l * kvDim * dim);
      rope(q, nHeads, headSize, pos, this.#freq);
      rope(k, nKvHeads, headSize, pos, this.#freq);
      const layerBase = l * this.capacity * kvDim;
      this.#keyCache.set(k, layerBase + pos * kvDim);
      this.#valueCache.set(v, layerBase + pos * kvDim);

      for (let h = 0; h < nHeads; h++) {
        const qh = h * headSize;
        const kvh = Math.floor(h / kvMul) * headSize;
        for (let t = 0; t <= pos; t++) {
          const kt = layerBase + t * kvDim + kvh;
          let score = 0;
          for (let i = 0; i < headSize; i++) score += q[qh + i]! * this.#keyCache[kt + i]!;
          att[t] = score / attScale;
        }
        softmax(att, pos + 1);
        for (let i = 0; i < headSize; i++) {
          let acc = 0;
          for (let t = 0; t <= pos; t++) acc += att[t]! * this.#valueCache[layerBase + t * kvDim + kvh + i]!;
          xb[qh + i] = acc;
        }
      }
      matvec(this.#xb2, xb, w.wo, dim, dim, l * dim * dim);
      for (let i = 0; i < dim; i++) x[i] = x[i]! + this.#xb2[i]!;

      rmsnorm(xb, x, w.rmsFfn, dim, l * dim);
      matvec(this.#hb, xb, w.w1, dim, hiddenDim, l * hiddenDim * dim);
      matvec(this.#hb2, xb, w.w3, dim, hiddenDim, l * hiddenDim * dim);
      for (let i = 0; i < hiddenDim; i++) {
        const g = this.#hb[i]!;
        this.#hb[i] = f32(g / (1 + Math.exp(-g))) * this.#hb2[i]!;
      }
      matvec(xb, this.#hb, w.w2, hiddenDim, dim, l * dim * hiddenDim);
      for (let i = 0; i < dim; i++) x[i] = x[i]! + xb[i]!;
      options.onLayer?.(l, x);
    }
    rmsnorm(x, x, w.rmsFinal, dim);
    matvec(logits, x, w.wcls, dim, c.vocabSize);
    this.#position = pos + 1;
    return logits;
  }
}

/**
 * llama2.c's greedy loop: feeds `prompt` (which should start with BOS), then appends argmax tokens until
 * `steps` new ids exist, the cache is full, or the model produces BOS (run.c's end-of-sequence signal).
 * Returns only the new ids. Starts from the reference's current position.
 */
export function referenceGreedy(ref: ReferenceModel, prompt: readonly number[], steps: number): number[] {
  if (prompt.length === 0) throw new TenonError('EINVAL', 'the prompt needs at least one token', { op: 'reference.greedy', reason: 'empty-prompt' });
  if (!Number.isSafeInteger(steps) || steps < 0) throw new TenonError('EINVAL', 'steps must be a non-negative integer', { op: 'reference.greedy', reason: 'bad-argument' });
  const logits = new Float32Array(ref.config.vocabSize);
  for (const token of prompt) ref.forward(token, { dst: logits });
  const out: number[] = [];
  while (out.length < steps) {
    const next = argmax(logits);
    if (next === BOS_ID) break;
    out.push(next);
    if (out.length === steps || ref.position >= ref.capacity) break;
    ref.forward(next, { dst: logits });
  }
  return out;
}
