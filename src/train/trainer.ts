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
import type { LlamaModelFile } from '../model/index.js';
import type { Runtime } from '../submit/index.js';
import { adamwConfig } from './adamw.js';
import { LlamaGrad } from './llama-grad.js';
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

  private constructor(grad: LlamaGrad, optimizer: AdamWConfig, seed: number) {
    this.grad = grad;
    this.optimizer = optimizer;
    this.#next = generator(seed);
  }

  /** Copies the model's parameters onto the runtime's provider with zeroed moments. EINVAL for bad options. */
  static async create(runtime: Runtime, file: LlamaModelFile, options: TrainerOptions): Promise<Trainer> {
    if (!Number.isInteger(options?.seed)) throw new TenonError('EINVAL', 'seed must be an integer', { op: `${OP}.create`, reason: 'bad-param', ids: { param: 'seed' } });
    const optimizer = adamwConfig(options.optimizer, `${OP}.create`);
    const grad = await LlamaGrad.create(runtime, file, { seqLen: options.seqLen, optimizer, ...(options.lora === undefined ? {} : { lora: options.lora }) });
    return new Trainer(grad, optimizer, options.seed);
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

  /** A host copy of parameter `name` (the fine-tuned weights). */
  parameter(name: string): Promise<Float32Array> {
    return this.grad.parameter(name);
  }

  /** Releases every tensor the trainer created. Idempotent. */
  dispose(): void {
    this.grad.dispose();
  }
}
