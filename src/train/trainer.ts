// Trainer: fine-tuning of a llama2.c model (stories260K and other small models) with AdamW, on any
// provider, independent of sessions: every weight (the default), or LoRA adapters on the attention and FFN
// projections with the base frozen (`lora`). It owns one LlamaGrad built with an optimizer, so every step is one
// submission of one compiled graph: forward, loss, backward, and the AdamW update of every parameter.
//
// Determinism: the only randomness is the choice of training windows, drawn from a mulberry32 stream
// seeded by `seed`; the kernels sum in fixed orders (no atomics), so the same model, text, seed and
// provider give the same losses bit for bit.
//
// Ownership: the trainer owns its LlamaGrad (parameters, gradients, moments, activations in one group);
// `dispose()` releases all of it, after which the provider's live bytes are back at their value before
// `create` (for the WebGPU provider: every buffer the trainer created is destroyed). A failed step loses
// the state (see LlamaGrad) and the trainer refuses further steps. Thread: the runtime's.
import { TenonError } from '../errors.js';
import type { LlamaConfig, LlamaModelFile } from '../model/index.js';
import type { Session as PlaneSession } from '../dataplane/index.js';
import type { Runtime } from '../submit/index.js';
import { adamwConfig } from './adamw.js';
import { LlamaGrad, loraNames } from './llama-grad.js';
import { decodeAdapters, encodeAdapters, fetchAdapters, publishAdapters } from './trainer-adapters.js';
import { exportCheckpoint, exportModel } from './trainer-export.js';
import type { AdapterManifest } from './trainer-adapters.js';
import type { AdamWConfig, LoraConfig } from './llama-grad.js';

const OP = 'train.Trainer';

export interface TrainerOptions {
  /** Tokens per training window (each step predicts tokens 1..T of a window of T + 1). */
  readonly seqLen: number;
  /** Seeds the choice of windows. */
  readonly seed: number;
  /** AdamW settings over ADAMW_DEFAULTS. */
  readonly optimizer?: Partial<AdamWConfig>;
  /** Train low-rank adapters on the seven projections of every layer instead of every weight. */
  readonly lora?: LoraConfig;
}

/** What `train` reports after each step. */
export interface TrainProgress {
  /** 1-based step number. */
  readonly step: number;
  /** Mean cross-entropy of the step's window before its update. */
  readonly loss: number;
}

/** mulberry32: a small seeded generator of uniform numbers in [0, 1). */
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

export class Trainer {
  readonly grad: LlamaGrad;
  readonly optimizer: AdamWConfig;
  readonly #next: () => number;
  /** The base model's config (a reference to the parsed file's frozen config), for exports. */
  readonly #config: LlamaConfig;

  private constructor(grad: LlamaGrad, optimizer: AdamWConfig, seed: number, config: LlamaConfig) {
    this.grad = grad;
    this.optimizer = optimizer;
    this.#next = generator(seed);
    this.#config = config;
  }

  /** Copies the model's parameters onto the runtime's provider with zeroed moments. EINVAL for bad options. */
  static async create(runtime: Runtime, file: LlamaModelFile, options: TrainerOptions): Promise<Trainer> {
    if (!Number.isInteger(options?.seed)) throw new TenonError('EINVAL', 'seed must be an integer', { op: `${OP}.create`, reason: 'bad-param', ids: { param: 'seed' } });
    const optimizer = adamwConfig(options.optimizer, `${OP}.create`);
    const grad = await LlamaGrad.create(runtime, file, { seqLen: options.seqLen, optimizer, ...(options.lora === undefined ? {} : { lora: options.lora }) });
    return new Trainer(grad, optimizer, options.seed, file.config);
  }

  get seqLen(): number {
    return this.grad.seqLen;
  }

  /** Steps taken so far. */
  get steps(): number {
    return this.grad.steps;
  }

  /** One AdamW step on one window of seqLen + 1 tokens; returns its loss before the update. */
  async step(window: readonly number[]): Promise<number> {
    return (await this.grad.step(window)).loss;
  }

  /**
   * `steps` AdamW steps on windows of `tokens` (at least seqLen + 1 of them) starting at seeded offsets;
   * returns every step's loss. EINVAL before any step for too short a text or a bad step count.
   */
  async train(tokens: readonly number[], steps: number, onStep?: (progress: TrainProgress) => void): Promise<number[]> {
    const T = this.seqLen;
    if (!Array.isArray(tokens) || tokens.length < T + 1) throw new TenonError('EINVAL', `the text needs at least ${T + 1} tokens`, { op: `${OP}.train`, reason: 'bad-tokens' });
    if (!Number.isInteger(steps) || steps < 1) throw new TenonError('EINVAL', 'steps must be a positive integer', { op: `${OP}.train`, reason: 'bad-param', ids: { param: 'steps' } });
    const starts = tokens.length - T;
    const losses: number[] = [];
    for (let i = 0; i < steps; i++) {
      const at = Math.floor(this.#next() * starts);
      const loss = await this.step(tokens.slice(at, at + T + 1));
      losses.push(loss);
      onStep?.({ step: this.steps, loss });
    }
    return losses;
  }

  /** The adapter tensors (names and shapes) in blob order; ENOTSUP without LoRA. */
  async #adapterLayout(op: string): Promise<{ rank: number; alpha: number; tensors: { name: string; shape: number[] }[] }> {
    const lora = this.grad.lora;
    if (lora === undefined) throw new TenonError('ENOTSUP', 'this trainer has no adapters (create it with `lora`)', { op, reason: 'no-adapters' });
    const tensors: { name: string; shape: number[] }[] = [];
    for (const name of loraNames(this.grad.dims)) {
      const length = (await this.grad.parameter(name)).length;
      const isA = name.startsWith('loraA:');
      tensors.push({ name, shape: isA ? [lora.rank, length / lora.rank] : [length / lora.rank, lora.rank] });
    }
    return { rank: lora.rank, alpha: lora.alpha, tensors };
  }

  /**
   * Saves the adapters to `path` of a data-plane session as one blob naming `baseModelId` (the base
   * model's identity().modelId), published all-or-nothing (trainer-adapters.ts). ENOTSUP without LoRA.
   */
  async saveAdapters(store: PlaneSession, path: string, options: { readonly baseModelId: string }): Promise<AdapterManifest> {
    const op = `${OP}.saveAdapters`;
    const layout = await this.#adapterLayout(op);
    const values: Float32Array[] = [];
    for (const t of layout.tensors) values.push(await this.grad.parameter(t.name));
    const manifest: AdapterManifest = { schema: 1, baseModelId: options.baseModelId, rank: layout.rank, alpha: layout.alpha, steps: this.steps, tensors: layout.tensors };
    await publishAdapters(store, path, await encodeAdapters(manifest, values));
    return manifest;
  }

  /**
   * Loads adapters saved for the same base model (`baseModelId`), rank and layers into this trainer.
   * Every check (digest, format, identity: ESTALE `wrong-model`, layout: EINVAL `layout-mismatch`) runs
   * before any value is written; a refused load changes nothing. Moments and the step count stay as they are.
   */
  async loadAdapters(store: PlaneSession, path: string, options: { readonly baseModelId: string }): Promise<AdapterManifest> {
    const op = `${OP}.loadAdapters`;
    const layout = await this.#adapterLayout(op);
    const bytes = await fetchAdapters(store, path);
    const { manifest, values } = await decodeAdapters(bytes, { baseModelId: options.baseModelId, rank: layout.rank, tensors: layout.tensors }, op);
    for (const [i, t] of layout.tensors.entries()) await this.grad.setParameter(t.name, values[i]!);
    return manifest;
  }

  /** A host copy of parameter `name` (the fine-tuned weights). */
  parameter(name: string): Promise<Float32Array> {
    return this.grad.parameter(name);
  }

  /**
   * The current weights as llama2.c version 1 checkpoint bytes (LoRA merged: W + (alpha / rank) · B · A),
   * with the base model's config (trainer-export.ts). ENODEV `state-lost` after dispose.
   */
  exportCheckpoint(): Promise<Uint8Array> {
    return exportCheckpoint(this.grad, this.#config);
  }

  /**
   * The current weights as a parsed llama2.c model that `TextSession.create({ runtime, model, tokenizer })`
   * runs (one new buffer; its identity differs from the base model's once a weight changed). EINVAL
   * `non-finite` for a diverged run; ENODEV `state-lost` after dispose.
   */
  exportModel(): Promise<LlamaModelFile> {
    return exportModel(this.grad, this.#config);
  }

  /** Releases every tensor the trainer created. Idempotent. */
  dispose(): void {
    this.grad.dispose();
  }
}
