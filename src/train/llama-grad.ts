// LlamaGrad: loss and gradients of the llama forward (llama2.c checkpoints: stories260K and friends) for
// one token window, on any provider (host or WebGPU), written out explicitly in the manner of llm.c: the
// forward keeps every activation the backward needs, the backward runs the backward kernels
// (src/submit/ops/grad-*.ts) in reverse layer order, and the whole step is one compiled graph.
//
// Step = forward (gather, then per layer rmsnorm, Q/K/V matmul_nt, rope, attention, O, residual add,
// rmsnorm, gate/up, silu_mul, down, residual add; final rmsnorm, classifier), fused softmax cross-entropy
// with its gradient (mean over the T positions of -log p(target)), then the backward. With an optimizer
// the same graph ends with one AdamW update per parameter tensor (apply_grad_adamw), the step number and
// learning rate arriving as step values, so one compiled graph is replayed for every step.
//
// Ownership: one AllocationGroup (`#group`) owns every parameter, gradient, optimizer moment, saved
// activation and scratch tensor, one allocation each. Between steps LlamaGrad holds it; during a step it
// is moved into the runtime's retirement record and comes back through the completed bundle
// (intoGroup). A step whose outcome is not `completed` loses the state: retired-failed disposes what came
// back, completion-unproven leaves it retained by the runtime; either way LlamaGrad refuses further use
// (ENODEV, reason `state-lost`). `dispose()` releases the group and the graph: after it the provider's
// live bytes are back where they were before `create`. Thread: the runtime's.
//
// LoRA (`lora` option): every projection W of the attention and FFN (wq, wk, wv, wo, w1, w2, w3) gets
// a low-rank pair A [rank, in], B [out, rank] with out = x · Wᵀ + (alpha / rank) · (x · Aᵀ) · Bᵀ; A starts
// seeded uniform in ±1/sqrt(in), B at zero (so the adapted model starts as the base). Then only the
// adapters are trainable: base weights are frozen (no gradients, no moments, no update), the backward
// still carries the residual gradient through them.
//
// The G7 core (src/train tape, value handles, gradients bundle) is not used here: this is the explicit
// backward the issue asks for beside it. Gradients are read through `gradient(name)` (a host copy).
import { TenonError } from '../errors.js';
import type { LlamaModelFile } from '../model/index.js';
import { createAllocationGroup, fromArray, zeros } from '../storage/index.js';
import type { AllocationGroup, DescriptorSlot, DType, Provider } from '../storage/index.js';
import {
  ROPE_THETA, RMSNORM_EPS, add, addInplace, adamwStep, attention, attentionGradKV, attentionGradQ, checkTargets, crossEntropyGrad, embeddingGrad, gather, matmul, matmulNT,
  matmulTNGrad, rmsnorm, rmsnormGradW, rmsnormGradX, rope, ropeGrad, scale, siluMul, siluMulGrad,
} from '../submit/index.js';
import type { CompiledGraph, DispatchSpec, GraphInput, Runtime, StepValues } from '../submit/index.js';

const OP = 'train.LlamaGrad';

/** The model's dimensions, as the step uses them. */
export interface LlamaDims {
  readonly dim: number;
  readonly hidden: number;
  readonly layers: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly kvDim: number;
  readonly vocab: number;
  /** The classifier is the token embedding (one parameter, two gradient contributions). */
  readonly tied: boolean;
}

/** AdamW hyperparameters (decoupled weight decay). */
export interface AdamWConfig {
  readonly lr: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly weightDecay: number;
}

export const ADAMW_DEFAULTS: AdamWConfig = { lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 };

/** Low-rank adapters on the seven projections of every layer. */
export interface LoraConfig {
  readonly rank: number;
  /** The adapter's output is scaled by alpha / rank. */
  readonly alpha: number;
  /** Seeds A's initial values. */
  readonly seed: number;
}

export interface LlamaGradOptions {
  /** Tokens per window (T): inputs are tokens[0..T-1], targets tokens[1..T]. */
  readonly seqLen: number;
  /** When given, every step ends with an AdamW update of every trainable parameter. */
  readonly optimizer?: AdamWConfig;
  /** When given, the adapters are the only trainable parameters. */
  readonly lora?: LoraConfig;
}

export interface TrainStepResult {
  /** Mean cross-entropy over the window's T positions, at the parameters before this step's update. */
  readonly loss: number;
}

/** Per-layer parameter tensors, with their llama2.c names. */
const LAYER_PARAMS = ['rmsAtt', 'wq', 'wk', 'wv', 'wo', 'rmsFfn', 'w1', 'w2', 'w3'] as const;
type LayerParam = (typeof LAYER_PARAMS)[number];

/** Shapes of one layer's parameters. */
function layerShape(d: LlamaDims, name: LayerParam): number[] {
  switch (name) {
    case 'rmsAtt':
    case 'rmsFfn':
      return [d.dim];
    case 'wq':
    case 'wo':
      return [d.dim, d.dim];
    case 'wk':
    case 'wv':
      return [d.kvDim, d.dim];
    case 'w1':
    case 'w3':
      return [d.hidden, d.dim];
    case 'w2':
      return [d.dim, d.hidden];
  }
}

const count = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** The dims of a parsed llama2.c model; ENOTSUP when a head is not a multiple of 4 (the attention backward's lanes). */
export function llamaDims(file: LlamaModelFile): LlamaDims {
  const c = file.config;
  if (c.headSize % 4 !== 0) throw new TenonError('ENOTSUP', `head size ${c.headSize} is not a multiple of 4`, { op: OP, reason: 'head-size' });
  return { dim: c.dim, hidden: c.hiddenDim, layers: c.nLayers, heads: c.nHeads, kvHeads: c.nKvHeads, headDim: c.headSize, kvDim: c.kvDim, vocab: c.vocabSize, tied: file.sharedClassifier };
}

/** The projections that carry adapters. */
export const LORA_TARGETS = ['wq', 'wk', 'wv', 'wo', 'w1', 'w2', 'w3'] as const;

/** Adapter names in a fixed order: `loraA:<target>.<layer>`, `loraB:<target>.<layer>`. */
export function loraNames(d: LlamaDims): string[] {
  const names: string[] = [];
  for (let l = 0; l < d.layers; l++) for (const t of LORA_TARGETS) names.push(`loraA:${t}.${l}`, `loraB:${t}.${l}`);
  return names;
}

/** Shape of an adapter: A [rank, in], B [out, rank] for its projection's [out, in]. */
function loraShape(d: LlamaDims, name: string, rank: number): number[] {
  const [kind, target] = name.split(':') as [string, string];
  const [out, inp] = parameterShape(d, target);
  return kind === 'loraA' ? [rank, inp!] : [out!, rank];
}

/** mulberry32 uniform numbers in [0, 1). */
function uniform(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function checkLora(lora: LoraConfig | undefined, op: string): void {
  if (lora === undefined) return;
  const bad = (param: string): never => {
    throw new TenonError('EINVAL', `lora.${param} is invalid`, { op, reason: 'bad-param', ids: { param: `lora.${param}` } });
  };
  if (!Number.isInteger(lora.rank) || lora.rank < 1) bad('rank');
  if (typeof lora.alpha !== 'number' || !Number.isFinite(lora.alpha) || !(lora.alpha > 0)) bad('alpha');
  if (!Number.isInteger(lora.seed)) bad('seed');
}

/** Every parameter name of the model in a fixed order: tokenEmbedding, per-layer `name.l`, rmsFinal, then wcls when untied. */
export function parameterNames(d: LlamaDims): string[] {
  const names = ['tokenEmbedding'];
  for (let l = 0; l < d.layers; l++) for (const p of LAYER_PARAMS) names.push(`${p}.${l}`);
  names.push('rmsFinal');
  if (!d.tied) names.push('wcls');
  return names;
}

/** The shape of a parameter by name. */
export function parameterShape(d: LlamaDims, name: string): number[] {
  if (name === 'tokenEmbedding' || name === 'wcls') return [d.vocab, d.dim];
  if (name === 'rmsFinal') return [d.dim];
  return layerShape(d, name.split('.')[0] as LayerParam);
}

/** A parameter's initial values from the file (a copy of its slice of the stacked llama2.c tensor). */
function initialValues(file: LlamaModelFile, d: LlamaDims, name: string): Float32Array {
  const w = file.weights;
  if (name === 'tokenEmbedding') return w.tokenEmbedding.slice();
  if (name === 'wcls') return w.wcls.slice();
  if (name === 'rmsFinal') return w.rmsFinal.slice();
  const [base, layer] = name.split('.') as [LayerParam, string];
  const n = count(layerShape(d, base));
  const l = Number(layer);
  return w[base].slice(l * n, (l + 1) * n);
}

export class LlamaGrad {
  readonly runtime: Runtime;
  readonly dims: LlamaDims;
  readonly seqLen: number;
  readonly optimizer: AdamWConfig | undefined;
  readonly lora: LoraConfig | undefined;
  #group: AllocationGroup | undefined;
  #lost = false;
  #graph: CompiledGraph;
  readonly #slots: ReadonlyMap<string, DescriptorSlot>;
  #steps = 0;

  private constructor(runtime: Runtime, dims: LlamaDims, seqLen: number, optimizer: AdamWConfig | undefined, lora: LoraConfig | undefined, group: AllocationGroup, slots: Map<string, DescriptorSlot>, graph: CompiledGraph) {
    this.lora = lora;
    this.runtime = runtime;
    this.dims = dims;
    this.seqLen = seqLen;
    this.optimizer = optimizer;
    this.#group = group;
    this.#slots = slots;
    this.#graph = graph;
  }

  /**
   * Allocates the state on the runtime's provider (parameters copied from `file`, gradients, moments when
   * an optimizer is given, activations for `seqLen` tokens) and compiles the step graph. EINVAL for a bad
   * seqLen (1..file's seqLen); nothing stays allocated when it throws.
   */
  static async create(runtime: Runtime, file: LlamaModelFile, options: LlamaGradOptions): Promise<LlamaGrad> {
    const T = options.seqLen;
    if (!Number.isInteger(T) || T < 1 || T > file.config.seqLen) {
      throw new TenonError('EINVAL', `seqLen must be an integer in 1..${file.config.seqLen}`, { op: `${OP}.create`, reason: 'bad-param', ids: { param: 'seqLen' } });
    }
    checkLora(options.lora, `${OP}.create`);
    const d = llamaDims(file);
    const lora = options.lora;
    const provider = runtime.provider as Provider;
    const group = createAllocationGroup();
    const slots = new Map<string, DescriptorSlot>();
    const shapes = new Map<string, { dtype: DType; shape: number[] }>();
    try {
      const put = async (name: string, dtype: DType, shape: number[], data?: Float32Array): Promise<void> => {
        const tensor = data === undefined ? await zeros(provider, dtype, shape) : await fromArray(provider, 'f32', data, shape);
        slots.set(name, group.insert(tensor).descriptor);
        shapes.set(name, { dtype, shape });
      };
      for (const name of parameterNames(d)) await put(name, 'f32', parameterShape(d, name), initialValues(file, d, name));
      if (lora !== undefined) {
        const next = uniform(lora.seed);
        for (const name of loraNames(d)) {
          const shape = loraShape(d, name, lora.rank);
          const init = new Float32Array(count(shape));
          if (name.startsWith('loraA:')) {
            const bound = 1 / Math.sqrt(shape[1]!);
            for (let i = 0; i < init.length; i++) init[i] = (2 * next() - 1) * bound;
          }
          await put(name, 'f32', shape, init);
        }
        for (let l = 0; l < d.layers; l++) for (const t of LORA_TARGETS) await put(`loraU:${t}.${l}`, 'f32', [T, lora.rank]);
        await put('loraRaw', 'f32', [T, lora.rank]);
        await put('loraDu', 'f32', [T, lora.rank]);
        for (const width of new Set([d.dim, d.kvDim, d.hidden])) await put(`loraOut.${width}`, 'f32', [T, width]);
      }
      for (const name of trainableNames(d, lora)) {
        const shape = shapes.get(name)!.shape;
        await put(`grad:${name}`, 'f32', shape);
        if (options.optimizer !== undefined) {
          await put(`m:${name}`, 'f32', shape);
          await put(`v:${name}`, 'f32', shape);
        }
      }
      await put('ids', 'u32', [T]);
      await put('targets', 'u32', [T]);
      await put('losses', 'f32', [T]);
      for (let l = 0; l <= d.layers; l++) await put(`x.${l}`, 'f32', [T, d.dim]);
      for (let l = 0; l < d.layers; l++) {
        for (const [name, width] of [['xbA', d.dim], ['q', d.dim], ['k', d.kvDim], ['v', d.kvDim], ['att', d.dim], ['xm', d.dim], ['xbF', d.dim], ['h1', d.hidden], ['h3', d.hidden], ['hg', d.hidden]] as const) {
          await put(`${name}.${l}`, 'f32', [T, width]);
        }
      }
      for (const [name, width] of [['xbOut', d.dim], ['tmp', d.dim], ['dx', d.dim], ['dxb', d.dim], ['dxb2', d.dim], ['datt', d.dim], ['dq', d.dim], ['dk', d.kvDim], ['dv', d.kvDim], ['dhg', d.hidden], ['dh1', d.hidden], ['dh3', d.hidden]] as const) {
        await put(name, 'f32', [T, width]);
      }
      await put('logits', 'f32', [T, d.vocab]);
      await put('dlogits', 'f32', [T, d.vocab]);
      await put('rstd', 'f32', [T]);
      await put('stats', 'f32', [T, d.heads, 2]);
      const inputs: Record<string, GraphInput> = {};
      for (const [name, slot] of slots) inputs[name] = { slot, ...shapes.get(name)! };
      const sizes = new Map([...shapes].map(([name, v]) => [name, count(v.shape)]));
      const graph = runtime.compile({ name: `llama-grad T=${T}`, inputs, dispatches: stepDispatches(d, T, options.optimizer, lora, sizes), outputs: [] });
      return new LlamaGrad(runtime, d, T, options.optimizer, lora, group, slots, graph);
    } catch (err) {
      group.dispose();
      throw err;
    }
  }

  /** Every parameter name (base weights, then adapters when LoRA is on) in a fixed order. */
  get parameterNames(): string[] {
    return [...parameterNames(this.dims), ...(this.lora === undefined ? [] : loraNames(this.dims))];
  }

  /** The parameters that get gradients (and updates): the adapters with LoRA, else every base weight. */
  get trainableNames(): string[] {
    return trainableNames(this.dims, this.lora);
  }

  /** Steps run so far. */
  get steps(): number {
    return this.#steps;
  }

  /**
   * One step over `tokens` (seqLen + 1 ids, each below the vocabulary): loss and every gradient (and the
   * AdamW update when an optimizer was given). EINVAL for bad tokens before anything runs.
   */
  async step(tokens: readonly number[], values: { readonly lr?: number } = {}): Promise<TrainStepResult> {
    const op = `${OP}.step`;
    const group = this.#live(op);
    const T = this.seqLen;
    if (!Array.isArray(tokens) || tokens.length !== T + 1) throw new TenonError('EINVAL', `expects ${T + 1} tokens`, { op, reason: 'bad-tokens' });
    checkTargets(tokens, this.dims.vocab);
    {
      using ids = group.viewMut<'u32'>(this.#slots.get('ids')!);
      await ids.write(Uint32Array.from(tokens.slice(0, T)));
    }
    {
      using targets = group.viewMut<'u32'>(this.#slots.get('targets')!);
      await targets.write(Uint32Array.from(tokens.slice(1)));
    }
    const step: StepValues = { step: this.#steps + 1, lr: values.lr ?? this.optimizer?.lr ?? 0 };
    this.#group = undefined;
    let back: AllocationGroup;
    try {
      const handle = await this.runtime.submit(this.#graph, group, { step });
      const outcome = await handle.wait();
      if (outcome.kind !== 'completed') {
        this.#lost = true;
        if (outcome.kind === 'retired-failed') outcome.inputs.dispose();
        throw outcome.cause;
      }
      back = outcome.bundle.intoGroup().group;
    } catch (err) {
      // Refused before admission: the group is still ours.
      if (!group.moved) this.#group = group;
      else this.#lost = true;
      throw err;
    }
    this.#group = back;
    this.#steps++;
    const losses = await this.#read('losses');
    let sum = 0;
    for (const v of losses) sum += v;
    return { loss: sum / T };
  }

  /** A host copy of the gradient of trainable parameter `name` from the last step. */
  gradient(name: string): Promise<Float32Array> {
    if (!this.trainableNames.includes(name)) throw new TenonError('EINVAL', `no trainable parameter ${name}`, { op: OP, reason: 'unknown-name' });
    return this.#read(`grad:${name}`);
  }

  /** A host copy of parameter `name`. */
  parameter(name: string): Promise<Float32Array> {
    return this.#read(this.#param(name));
  }

  /** Overwrites parameter `name` (finite-difference probes, restoring a snapshot). */
  async setParameter(name: string, data: Float32Array): Promise<void> {
    const group = this.#live(`${OP}.setParameter`);
    using view = group.viewMut<'f32'>(this.#slots.get(this.#param(name))!);
    await view.write(data);
  }

  /** Releases every tensor of the state (unless lost to the runtime) and the compiled graph. Idempotent. */
  dispose(): void {
    this.#group?.dispose();
    this.#group = undefined;
    this.#lost = true;
    this.#graph.dispose();
  }

  #param(name: string): string {
    if (!this.parameterNames.includes(name)) throw new TenonError('EINVAL', `no parameter ${name}`, { op: OP, reason: 'unknown-name' });
    return name;
  }

  async #read(name: string): Promise<Float32Array> {
    const group = this.#live(`${OP}.read`);
    using view = group.view<'f32'>(this.#slots.get(name)!);
    return Float32Array.from(await view.toArray());
  }

  #live(op: string): AllocationGroup {
    if (this.#group === undefined) {
      throw this.#lost ? new TenonError('ENODEV', 'the training state is gone (disposed or lost with a failed step)', { op, reason: 'state-lost' }) : new TenonError('EBUSY', 'a step is running', { op, reason: 'busy' });
    }
    return this.#group;
  }
}

/** The parameters that get gradients: the adapters with LoRA, else the base weights. */
function trainableNames(d: LlamaDims, lora: LoraConfig | undefined): string[] {
  return lora === undefined ? parameterNames(d) : loraNames(d);
}

/** The step's dispatch list: forward, loss, backward in reverse, optional AdamW. */
function stepDispatches(d: LlamaDims, T: number, optimizer: AdamWConfig | undefined, lora: LoraConfig | undefined, sizes: ReadonlyMap<string, number>): DispatchSpec<never>[] {
  const list: DispatchSpec<never>[] = [];
  const run = <P>(kernel: DispatchSpec<P>['kernel'], bind: string[], params: DispatchSpec<P>['params']): void => {
    list.push({ kernel, bind, params } as unknown as DispatchSpec<never>);
  };
  const { dim, hidden, heads, kvHeads, headDim, kvDim, vocab } = d;
  const eps = RMSNORM_EPS;
  const cls = d.tied ? 'tokenEmbedding' : 'wcls';
  const ropeOf = (h: number) => ({ count: T, heads: h, headDim, pos0: 0, theta: ROPE_THETA });
  const attn = { count: T, heads, kvHeads, headDim };
  const frozen = lora !== undefined;
  const adapted = (w: string): boolean => frozen && (LORA_TARGETS as readonly string[]).includes(w.split('.')[0]!);
  const r = lora?.rank ?? 0;
  const s = lora === undefined ? 0 : lora.alpha / lora.rank;
  /** out = x · Wᵀ (+ s · (x · Aᵀ) · Bᵀ with the scaled x · Aᵀ kept as loraU for the backward). */
  const linear = (x: string, w: string, out: string, n: number, k: number): void => {
    run(matmulNT, [x, w, out], { m: T, n, k });
    if (!adapted(w)) return;
    run(matmulNT, [x, `loraA:${w}`, 'loraRaw'], { m: T, n: r, k });
    run(scale, ['loraRaw', `loraU:${w}`], { n: T * r, s });
    run(matmulNT, [`loraU:${w}`, `loraB:${w}`, `loraOut.${n}`], { m: T, n, k: r });
    run(addInplace, [out, `loraOut.${n}`], { n: T * n });
  };
  /** dx = dy · W (W [n, k], dy [T, n], dx [T, k]), plus the adapter's part and its gradients. */
  const linearDx = (dy: string, w: string, dx: string, n: number, k: number, x?: string): void => {
    run(matmul, [dy, w, dx], { m: T, n: k, k: n });
    if (!adapted(w)) return;
    // dB = dyᵀ · u; du = s · dy · B; dA = duᵀ · x; dx += du · A.
    run(matmulTNGrad, [dy, `loraU:${w}`, `grad:loraB:${w}`], { m: T, n, k: r, accumulate: false });
    run(matmul, [dy, `loraB:${w}`, 'loraRaw'], { m: T, n: r, k: n });
    run(scale, ['loraRaw', 'loraDu'], { n: T * r, s });
    run(matmulTNGrad, ['loraDu', x!, `grad:loraA:${w}`], { m: T, n: r, k, accumulate: false });
    run(matmul, ['loraDu', `loraA:${w}`, `loraOut.${k}`], { m: T, n: k, k: r });
    run(addInplace, [dx, `loraOut.${k}`], { n: T * k });
  };
  /** dW = dyᵀ · x, for trainable base weights only. */
  const linearDw = (dy: string, x: string, dw: string, n: number, k: number, accumulate = false): void => {
    if (!frozen) run(matmulTNGrad, [dy, x, dw], { m: T, n, k, accumulate });
  };

  // Forward.
  run(gather, ['ids', 'tokenEmbedding', 'x.0'], { count: T, vocab, dim });
  for (let l = 0; l < d.layers; l++) {
    run(rmsnorm, [`x.${l}`, `rmsAtt.${l}`, `xbA.${l}`], { rows: T, cols: dim, eps });
    linear(`xbA.${l}`, `wq.${l}`, `q.${l}`, dim, dim);
    linear(`xbA.${l}`, `wk.${l}`, `k.${l}`, kvDim, dim);
    linear(`xbA.${l}`, `wv.${l}`, `v.${l}`, kvDim, dim);
    run(rope, [`q.${l}`], ropeOf(heads));
    run(rope, [`k.${l}`], ropeOf(kvHeads));
    run(attention, [`q.${l}`, `k.${l}`, `v.${l}`, `att.${l}`], { ...attn, maxSeq: T, pos0: 0 });
    linear(`att.${l}`, `wo.${l}`, 'tmp', dim, dim);
    run(add, [`x.${l}`, 'tmp', `xm.${l}`], { n: T * dim });
    run(rmsnorm, [`xm.${l}`, `rmsFfn.${l}`, `xbF.${l}`], { rows: T, cols: dim, eps });
    linear(`xbF.${l}`, `w1.${l}`, `h1.${l}`, hidden, dim);
    linear(`xbF.${l}`, `w3.${l}`, `h3.${l}`, hidden, dim);
    run(siluMul, [`h1.${l}`, `h3.${l}`, `hg.${l}`], { n: T * hidden });
    linear(`hg.${l}`, `w2.${l}`, 'tmp', dim, hidden);
    run(add, [`xm.${l}`, 'tmp', `x.${l + 1}`], { n: T * dim });
  }
  const xL = `x.${d.layers}`;
  run(rmsnorm, [xL, 'rmsFinal', 'xbOut'], { rows: T, cols: dim, eps });
  linear('xbOut', cls, 'logits', vocab, dim);
  run(crossEntropyGrad, ['logits', 'targets', 'dlogits', 'losses'], { rows: T, cols: vocab, scale: 1 / T });

  // Backward. `dx` carries the gradient of the residual stream at the current depth.
  linearDx('dlogits', cls, 'dxb', vocab, dim);
  linearDw('dlogits', 'xbOut', `grad:${cls}`, vocab, dim);
  run(rmsnormGradX, [xL, 'rmsFinal', 'dxb', 'dx', 'rstd'], { rows: T, cols: dim, eps, accumulate: false });
  if (!frozen) run(rmsnormGradW, [xL, 'dxb', 'rstd', 'grad:rmsFinal'], { rows: T, cols: dim, accumulate: false });
  for (let l = d.layers - 1; l >= 0; l--) {
    // FFN: x.(l+1) = xm.l + w2 · (silu(w1 · xbF) * (w3 · xbF)), xbF = rmsnorm(xm.l).
    linearDx('dx', `w2.${l}`, 'dhg', dim, hidden, `hg.${l}`);
    linearDw('dx', `hg.${l}`, `grad:w2.${l}`, dim, hidden);
    run(siluMulGrad, [`h1.${l}`, `h3.${l}`, 'dhg', 'dh1', 'dh3'], { n: T * hidden });
    linearDx('dh1', `w1.${l}`, 'dxb', hidden, dim, `xbF.${l}`);
    linearDx('dh3', `w3.${l}`, 'dxb2', hidden, dim, `xbF.${l}`);
    run(addInplace, ['dxb', 'dxb2'], { n: T * dim });
    linearDw('dh1', `xbF.${l}`, `grad:w1.${l}`, hidden, dim);
    linearDw('dh3', `xbF.${l}`, `grad:w3.${l}`, hidden, dim);
    run(rmsnormGradX, [`xm.${l}`, `rmsFfn.${l}`, 'dxb', 'dx', 'rstd'], { rows: T, cols: dim, eps, accumulate: true });
    if (!frozen) run(rmsnormGradW, [`xm.${l}`, 'dxb', 'rstd', `grad:rmsFfn.${l}`], { rows: T, cols: dim, accumulate: false });
    // Attention: xm.l = x.l + wo · attention(rope(wq · xbA), rope(wk · xbA), wv · xbA), xbA = rmsnorm(x.l).
    linearDx('dx', `wo.${l}`, 'datt', dim, dim, `att.${l}`);
    linearDw('dx', `att.${l}`, `grad:wo.${l}`, dim, dim);
    run(attentionGradQ, [`q.${l}`, `k.${l}`, `v.${l}`, `att.${l}`, 'datt', 'dq', 'stats'], attn);
    run(attentionGradKV, [`q.${l}`, `k.${l}`, `v.${l}`, 'datt', 'stats', 'dk', 'dv'], attn);
    run(ropeGrad, ['dq'], ropeOf(heads));
    run(ropeGrad, ['dk'], ropeOf(kvHeads));
    linearDx('dq', `wq.${l}`, 'dxb', dim, dim, `xbA.${l}`);
    linearDx('dk', `wk.${l}`, 'dxb2', kvDim, dim, `xbA.${l}`);
    run(addInplace, ['dxb', 'dxb2'], { n: T * dim });
    linearDx('dv', `wv.${l}`, 'dxb2', kvDim, dim, `xbA.${l}`);
    run(addInplace, ['dxb', 'dxb2'], { n: T * dim });
    linearDw('dq', `xbA.${l}`, `grad:wq.${l}`, dim, dim);
    linearDw('dk', `xbA.${l}`, `grad:wk.${l}`, kvDim, dim);
    linearDw('dv', `xbA.${l}`, `grad:wv.${l}`, kvDim, dim);
    run(rmsnormGradX, [`x.${l}`, `rmsAtt.${l}`, 'dxb', 'dx', 'rstd'], { rows: T, cols: dim, eps, accumulate: true });
    if (!frozen) run(rmsnormGradW, [`x.${l}`, 'dxb', 'rstd', `grad:rmsAtt.${l}`], { rows: T, cols: dim, accumulate: false });
  }
  // The embedding: its rows' gradients, added to the classifier's part when tied.
  if (!frozen) run(embeddingGrad, ['ids', 'dx', 'grad:tokenEmbedding'], { count: T, vocab, dim, accumulate: d.tied });

  if (optimizer !== undefined) {
    for (const name of trainableNames(d, lora)) {
      const n = sizes.get(name)!;
      run(adamwStep, [name, `grad:${name}`, `m:${name}`, `v:${name}`], (s: StepValues) => ({
        n, lr: s['lr'] ?? optimizer.lr, beta1: optimizer.beta1, beta2: optimizer.beta2, eps: optimizer.eps, weightDecay: optimizer.weightDecay, step: s['step'] ?? 1,
      }));
    }
  }
  return list;
}
