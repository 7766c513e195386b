// LlamaForward: the llama2.c architecture on tenon's runtime (WebGPU or host provider), built from the op
// library as compiled graphs.
//
// Ownership: one AllocationGroup (the model state) owns every weight tensor, the per-layer KV caches and
// the activation buffers. Between steps the forward holds it; during a step it is moved into the
// runtime's retirement record and comes back through the bundle. If a step ends completion-unproven the
// state is gone for good (retained forever by the runtime) and the forward refuses further steps
// (ENODEV). Graphs are compiled per token count T (prefill chunk or 1 for decode) and cached; the position
// of row 0 is a per-step value, so replaying a graph never recompiles anything.
// Steps: `run(tokens, pos0)` writes the ids, submits, waits for proven completion and returns the logits
// of the last row (a run with `logits: false` downloads none: a prefill's earlier chunks only write their
// KV rows, so a long prefill reads logits back once, after its last chunk). It does not decide what is
// committed: TextSession (session.ts) wraps it in a transaction. KV rows at and past the committed length
// are kept zero by the session so that a rolled-back step leaves the state bit-identical.
// Layer observation: only a run that asks for it (`layers: true`) copies the residual stream after each
// layer into an observation buffer [nLayers * maxBatch, dim] and downloads it with the logits. That buffer
// is allocated into the state group on the first such run and its graphs are a separate family, so a
// forward whose caller never asks has neither the buffer nor the copy dispatches.
// Thread: the runtime's.
import { TenonError } from '../errors.js';
import { createAllocationGroup, fromArray, zeros } from '../storage/index.js';
import type { AllocationGroup, AllocationSlot, DType, DescriptorSlot, HostProvider, WebGPUProvider } from '../storage/index.js';
import {
  RMSNORM_EPS,
  ROPE_THETA,
  addInplace,
  argmax,
  attention,
  gather,
  kvWrite,
  matmulNT,
  rmsnorm,
  rope,
  siluMul,
} from '../submit/index.js';
import type { CompiledGraph, DispatchSpec, GraphInput, Runtime, StepValues } from '../submit/index.js';
import type { LlamaConfig, LlamaModelFile } from '../model/index.js';

export interface LlamaForwardOptions {
  /** Cache length in positions (default and maximum: the model's seqLen). */
  readonly maxSeq?: number;
  /** Largest number of tokens one step processes (prefill chunk); default 64. */
  readonly maxBatch?: number;
}

/** What one step leaves behind for the caller. */
export interface StepResult {
  /** Logits of the last processed position (a copy on the host). */
  readonly logits: Float32Array;
  /** Argmax of those logits, computed on the provider. */
  readonly argmax: number;
  /** With `allRows`: the argmax of every processed position, in order (for draft verification). */
  readonly argmaxRows: readonly number[];
  /** With `allRows`: the logits of every processed position, row after row ([T, vocab]); else the last row. */
  readonly rowLogits: Float32Array;
  /** With `layers`: the hidden state after each layer, one [T, dim] array per layer (host copies). */
  readonly layers?: readonly Float32Array[];
}

export interface RunOptions {
  /** Compute logits and argmax for every row, not only the last (speculative verification). */
  readonly allRows?: boolean;
  /** Also return the hidden state after every layer (observer hooks); costs nothing when absent. */
  readonly layers?: boolean;
  /**
   * Download the logits and argmax (default true). With false nothing of them is read back: the result's
   * logits and rowLogits are empty, argmaxRows is empty and argmax is -1 (NO_ARGMAX).
   */
  readonly logits?: boolean;
}

/** The argmax of a run that did not read its logits back (`logits: false`). */
export const NO_ARGMAX = -1;
const NO_LOGITS = new Float32Array(0);

const DEFAULT_MAX_BATCH = 64;
const F32_BYTES = 4;

interface GraphEntry {
  readonly graph: CompiledGraph;
  readonly ids: DescriptorSlot;
  readonly logits: DescriptorSlot;
  readonly next: DescriptorSlot;
}

interface Allocation {
  readonly allocation: AllocationSlot;
  readonly slot: DescriptorSlot;
}

interface LayerSlots {
  readonly rmsAtt: DescriptorSlot;
  readonly wq: DescriptorSlot;
  readonly wk: DescriptorSlot;
  readonly wv: DescriptorSlot;
  readonly wo: DescriptorSlot;
  readonly rmsFfn: DescriptorSlot;
  readonly w1: DescriptorSlot;
  readonly w2: DescriptorSlot;
  readonly w3: DescriptorSlot;
  readonly kCache: DescriptorSlot;
  readonly vCache: DescriptorSlot;
}

/** Activation buffers sized for maxBatch rows; graphs bind aliases with their own T. */
const ACTIVATIONS = ['x', 'xb', 'xb2', 'q', 'k', 'v', 'att', 'hb', 'hb2', 'hb3'] as const;
type ActivationName = (typeof ACTIVATIONS)[number];

export class LlamaForward {
  readonly config: LlamaConfig;
  readonly runtime: Runtime;
  readonly maxSeq: number;
  readonly maxBatch: number;
  /** Owned between steps; moved into the runtime during one. Undefined once lost. */
  #group: AllocationGroup | undefined;
  readonly #embed: DescriptorSlot;
  readonly #wcls: DescriptorSlot;
  readonly #rmsFinal: DescriptorSlot;
  readonly #layers: readonly LayerSlots[];
  readonly #act: Readonly<Record<ActivationName, Allocation>>;
  readonly #ids: Allocation;
  readonly #logits: DescriptorSlot;
  readonly #next: DescriptorSlot;
  /** Per-row logits [maxBatch, vocab] and argmax [maxBatch] for verification passes. */
  readonly #rowLogits: Allocation;
  readonly #rowNext: Allocation;
  readonly #graphs = new Map<string, GraphEntry>();
  /** Observation buffer [nLayers * maxBatch, dim] in the state group; allocated by the first `layers` run. */
  #hidden: Allocation | undefined;
  #lost: TenonError | undefined;

  private constructor(runtime: Runtime, config: LlamaConfig, maxSeq: number, maxBatch: number, group: AllocationGroup, slots: {
    embed: DescriptorSlot;
    wcls: DescriptorSlot;
    rmsFinal: DescriptorSlot;
    layers: LayerSlots[];
    act: Record<ActivationName, Allocation>;
    ids: Allocation;
    logits: DescriptorSlot;
    next: DescriptorSlot;
    rowLogits: Allocation;
    rowNext: Allocation;
  }) {
    this.runtime = runtime;
    this.config = config;
    this.maxSeq = maxSeq;
    this.maxBatch = maxBatch;
    this.#group = group;
    this.#embed = slots.embed;
    this.#wcls = slots.wcls;
    this.#rmsFinal = slots.rmsFinal;
    this.#layers = slots.layers;
    this.#act = slots.act;
    this.#ids = slots.ids;
    this.#logits = slots.logits;
    this.#next = slots.next;
    this.#rowLogits = slots.rowLogits;
    this.#rowNext = slots.rowNext;
  }

  /**
   * Uploads every weight of `model` to the runtime's provider (one tensor per weight and layer), allocates
   * the KV caches and activations, and checks the architecture against what the ops support, all before
   * the forward exists. On failure everything allocated so far is released.
   */
  static async create(runtime: Runtime, model: LlamaModelFile, options: LlamaForwardOptions = {}): Promise<LlamaForward> {
    const op = 'LlamaForward.create';
    const c = model.config;
    const maxSeq = options.maxSeq ?? c.seqLen;
    const maxBatch = Math.min(options.maxBatch ?? DEFAULT_MAX_BATCH, maxSeq);
    if (!Number.isSafeInteger(maxSeq) || maxSeq < 1 || maxSeq > c.seqLen) {
      throw new TenonError('EINVAL', `maxSeq must be in 1..${c.seqLen}`, { op, reason: 'bad-max-seq' });
    }
    if (!Number.isSafeInteger(maxBatch) || maxBatch < 1) throw new TenonError('EINVAL', 'maxBatch must be a positive integer', { op, reason: 'bad-max-batch' });
    if (c.headSize % 2 !== 0 || c.nHeads % c.nKvHeads !== 0) {
      throw new TenonError('EINVAL', 'heads do not fit the attention kernels', { op, reason: 'unsupported-architecture' });
    }
    const provider = runtime.provider as HostProvider | WebGPUProvider;
    const group = createAllocationGroup();
    try {
      const w = model.weights;
      const put = async (dtype: DType, data: Float32Array, shape: number[]): Promise<Allocation> => {
        const r = group.insert(await fromArray(provider, dtype as 'f32', data, shape));
        return { allocation: r.allocation, slot: r.descriptor };
      };
      const blank = async (dtype: DType, shape: number[]): Promise<Allocation> => {
        const r = group.insert(await zeros(provider, dtype, shape));
        return { allocation: r.allocation, slot: r.descriptor };
      };
      const { dim, hiddenDim: hidden, kvDim, vocabSize: vocab } = c;
      const embed = (await put('f32', w.tokenEmbedding, [vocab, dim])).slot;
      const layers: LayerSlots[] = [];
      for (let l = 0; l < c.nLayers; l++) {
        const row = (a: Float32Array, size: number) => a.subarray(l * size, (l + 1) * size);
        layers.push({
          rmsAtt: (await put('f32', row(w.rmsAtt, dim), [dim])).slot,
          wq: (await put('f32', row(w.wq, dim * dim), [dim, dim])).slot,
          wk: (await put('f32', row(w.wk, kvDim * dim), [kvDim, dim])).slot,
          wv: (await put('f32', row(w.wv, kvDim * dim), [kvDim, dim])).slot,
          wo: (await put('f32', row(w.wo, dim * dim), [dim, dim])).slot,
          rmsFfn: (await put('f32', row(w.rmsFfn, dim), [dim])).slot,
          w1: (await put('f32', row(w.w1, hidden * dim), [hidden, dim])).slot,
          w2: (await put('f32', row(w.w2, dim * hidden), [dim, hidden])).slot,
          w3: (await put('f32', row(w.w3, hidden * dim), [hidden, dim])).slot,
          kCache: (await blank('f32', [maxSeq, kvDim])).slot,
          vCache: (await blank('f32', [maxSeq, kvDim])).slot,
        });
      }
      const rmsFinal = (await put('f32', w.rmsFinal, [dim])).slot;
      const wcls = model.sharedClassifier ? embed : (await put('f32', w.wcls, [vocab, dim])).slot;
      const widths: Record<ActivationName, number> = { x: dim, xb: dim, xb2: dim, q: dim, k: kvDim, v: kvDim, att: dim, hb: hidden, hb2: hidden, hb3: hidden };
      const act = {} as Record<ActivationName, Allocation>;
      for (const name of ACTIVATIONS) act[name] = await blank('f32', [maxBatch, widths[name]]);
      const ids = await blank('u32', [maxBatch]);
      const logits = (await blank('f32', [1, vocab])).slot;
      const next = (await blank('u32', [1])).slot;
      const rowLogits = await blank('f32', [maxBatch, vocab]);
      const rowNext = await blank('u32', [maxBatch]);
      return new LlamaForward(runtime, c, maxSeq, maxBatch, group, { embed, wcls, rmsFinal, layers, act, ids, logits, next, rowLogits, rowNext });
    } catch (err) {
      group.dispose();
      throw err;
    }
  }

  /** Whether the state was lost (a step ended completion-unproven); every later step fails ENODEV. */
  get lost(): boolean {
    return this.#lost !== undefined;
  }

  /** The model state, for callers that inspect or checkpoint it between steps (e.g. KV bytes). */
  get group(): AllocationGroup {
    return this.#live('forward.group');
  }

  /** Descriptor slots of layer `l`'s K and V caches in the state group. */
  cacheSlots(layer: number): { k: DescriptorSlot; v: DescriptorSlot } {
    const l = this.#layers[layer];
    if (l === undefined) throw new TenonError('EINVAL', `no layer ${layer}`, { op: 'forward.cacheSlots', reason: 'bad-layer' });
    return { k: l.kCache, v: l.vCache };
  }

  get layers(): number {
    return this.#layers.length;
  }

  /** Bytes of the layer-observation buffer: 0 until a run asked for layer outputs. */
  get observationBytes(): number {
    return this.#hidden === undefined ? 0 : this.#layers.length * this.maxBatch * this.config.dim * F32_BYTES;
  }

  /**
   * Runs tokens at positions pos0..pos0+T-1 through the model (T <= maxBatch), writing their K/V rows, and
   * returns the last position's logits. Throws TenonError before anything ran for bad input; a failure
   * after admission throws the outcome's cause, with the state returned (retired-failed) or lost
   * (completion-unproven).
   */
  async run(tokens: readonly number[], pos0: number, options: RunOptions = {}): Promise<StepResult> {
    const op = 'forward.run';
    const group = this.#live(op);
    const T = tokens.length;
    if (T < 1 || T > this.maxBatch) throw new TenonError('EINVAL', `1..${this.maxBatch} tokens per step`, { op, reason: 'bad-batch' });
    if (!Number.isSafeInteger(pos0) || pos0 < 0 || pos0 + T > this.maxSeq) {
      throw new TenonError('EINVAL', `positions ${pos0}..${pos0 + T - 1} exceed the cache of ${this.maxSeq}`, { op, reason: 'context-full' });
    }
    for (const t of tokens) {
      if (!Number.isSafeInteger(t) || t < 0 || t >= this.config.vocabSize) throw new TenonError('EINVAL', `token ${t} is outside the vocabulary`, { op, reason: 'bad-token' });
    }
    const allRows = options.allRows === true;
    const layers = options.layers === true;
    if (layers && this.#hidden === undefined) {
      const provider = this.runtime.provider as HostProvider | WebGPUProvider;
      const r = group.insert(await zeros(provider, 'f32', [this.#layers.length * this.maxBatch, this.config.dim]));
      this.#hidden = { allocation: r.allocation, slot: r.descriptor };
    }
    const { graph, ids, logits: logitsSlot, next: nextSlot } = this.#graphFor(T, allRows, layers, group);
    {
      using m = group.viewMut<'u32'>(ids);
      await m.write(Uint32Array.from(tokens));
    }
    this.#group = undefined;
    const handle = await this.runtime.submit(graph, group, { step: { pos: pos0 } }).catch((err: unknown) => {
      this.#group = group; // rejected before admission: still ours, untouched
      throw err;
    });
    const outcome = await handle.wait();
    if (outcome.kind === 'completion-unproven') {
      this.#lost = outcome.cause;
      throw outcome.cause;
    }
    if (outcome.kind === 'retired-failed') {
      this.#group = outcome.inputs;
      throw outcome.cause;
    }
    const back = outcome.bundle.intoGroup().group;
    this.#group = back;
    let logits: Float32Array = NO_LOGITS;
    let next: Uint32Array = new Uint32Array(0);
    let hidden: Float32Array | undefined;
    {
      if (options.logits !== false) {
        using lv = back.view<'f32'>(logitsSlot);
        logits = await lv.toArray();
        using nv = back.view<'u32'>(nextSlot);
        next = await nv.toArray();
      }
      if (layers) {
        using hv = back.view<'f32'>(this.#hidden!.slot);
        hidden = await hv.toArray();
      }
    }
    const vocab = this.config.vocabSize;
    const result = { logits: logits.subarray(Math.max(0, logits.length - vocab)), argmax: next[next.length - 1] ?? NO_ARGMAX, argmaxRows: Array.from(next), rowLogits: logits };
    if (hidden === undefined) return result;
    const stride = this.maxBatch * this.config.dim;
    const rows = T * this.config.dim;
    return { ...result, layers: this.#layers.map((_, l) => hidden.slice(l * stride, l * stride + rows)) };
  }

  /** Ends the forward: releases every tensor of the state (unless lost) and the compiled graphs. */
  dispose(): void {
    for (const { graph } of this.#graphs.values()) graph.dispose();
    this.#graphs.clear();
    this.#group?.dispose();
    this.#group = undefined;
  }

  #live(op: string): AllocationGroup {
    if (this.#lost !== undefined) throw new TenonError('ENODEV', 'the model state was lost with its device', { op, reason: 'state-lost' });
    if (this.#group === undefined) throw new TenonError('EBUSY', 'a step is running', { op, reason: 'step-running' });
    return this.#group;
  }

  #graphFor(T: number, allRows: boolean, layers: boolean, group: AllocationGroup): GraphEntry {
    const key = `${T}${allRows ? ':rows' : ''}${layers ? ':layers' : ''}`;
    const cached = this.#graphs.get(key);
    if (cached !== undefined) return cached;
    const c = this.config;
    const { dim, hiddenDim: hidden, kvDim, vocabSize: vocab, nHeads, nKvHeads, headSize } = c;
    const inputs: Record<string, GraphInput> = {};
    const declare = (name: string, slot: DescriptorSlot, dtype: DType, shape: number[]): string => {
      inputs[name] = { slot, dtype, shape };
      return name;
    };
    // Aliases of the activation buffers with exactly T rows (descriptor slots are append-only and cheap).
    const rows = (name: ActivationName, width: number): string =>
      declare(name, T === this.maxBatch ? this.#act[name].slot : group.alias(this.#act[name].allocation, 'f32', { shape: [T, width] }), 'f32', [T, width]);
    const x = rows('x', dim);
    const xb = rows('xb', dim);
    const xb2 = rows('xb2', dim);
    const q = rows('q', dim);
    const k = rows('k', kvDim);
    const v = rows('v', kvDim);
    const att = rows('att', dim);
    const hb = rows('hb', hidden);
    const hb2 = rows('hb2', hidden);
    const hb3 = rows('hb3', hidden);
    const idsSlot = T === this.maxBatch ? this.#ids.slot : group.alias(this.#ids.allocation, 'u32', { shape: [T] });
    const ids = declare('ids', idsSlot, 'u32', [T]);
    const last = allRows ? xb : declare('xbLast', group.alias(this.#act.xb.allocation, 'f32', { shape: [1, dim], byteOffset: (T - 1) * dim * 4 }), 'f32', [1, dim]);
    const outRows = allRows ? T : 1;
    const embed = declare('embed', this.#embed, 'f32', [vocab, dim]);
    const wcls = this.#wcls === this.#embed ? embed : declare('wcls', this.#wcls, 'f32', [vocab, dim]);
    const rmsFinal = declare('rmsFinal', this.#rmsFinal, 'f32', [dim]);
    const logitsSlot = allRows ? group.alias(this.#rowLogits.allocation, 'f32', { shape: [T, vocab] }) : this.#logits;
    const nextSlot = allRows ? group.alias(this.#rowNext.allocation, 'u32', { shape: [T] }) : this.#next;
    const logits = declare('logits', logitsSlot, 'f32', [outRows, vocab]);
    const next = declare('next', nextSlot, 'u32', [outRows]);

    const pos = (s: StepValues): number => s['pos'] ?? 0;
    const d: DispatchSpec<never>[] = [];
    const add = <P>(kernel: DispatchSpec<P>['kernel'], bind: string[], params: DispatchSpec<P>['params']): void => {
      d.push({ kernel, bind, params } as unknown as DispatchSpec<never>);
    };
    add(gather, [ids, embed, x], { count: T, vocab, dim });
    this.#layers.forEach((L, l) => {
      const n = (name: string, slot: DescriptorSlot, shape: number[]) => declare(`${name}${l}`, slot, 'f32', shape);
      const rmsAtt = n('rmsAtt', L.rmsAtt, [dim]);
      const wq = n('wq', L.wq, [dim, dim]);
      const wk = n('wk', L.wk, [kvDim, dim]);
      const wv = n('wv', L.wv, [kvDim, dim]);
      const wo = n('wo', L.wo, [dim, dim]);
      const rmsFfn = n('rmsFfn', L.rmsFfn, [dim]);
      const w1 = n('w1', L.w1, [hidden, dim]);
      const w2 = n('w2', L.w2, [dim, hidden]);
      const w3 = n('w3', L.w3, [hidden, dim]);
      const kc = n('kCache', L.kCache, [this.maxSeq, kvDim]);
      const vc = n('vCache', L.vCache, [this.maxSeq, kvDim]);
      add(rmsnorm, [x, rmsAtt, xb], { rows: T, cols: dim, eps: RMSNORM_EPS });
      add(matmulNT, [xb, wq, q], { m: T, n: dim, k: dim });
      add(matmulNT, [xb, wk, k], { m: T, n: kvDim, k: dim });
      add(matmulNT, [xb, wv, v], { m: T, n: kvDim, k: dim });
      add(rope, [q], (s: StepValues) => ({ count: T, heads: nHeads, headDim: headSize, pos0: pos(s), theta: ROPE_THETA }));
      add(rope, [k], (s: StepValues) => ({ count: T, heads: nKvHeads, headDim: headSize, pos0: pos(s), theta: ROPE_THETA }));
      add(kvWrite, [k, kc], (s: StepValues) => ({ count: T, width: kvDim, maxSeq: this.maxSeq, pos0: pos(s) }));
      add(kvWrite, [v, vc], (s: StepValues) => ({ count: T, width: kvDim, maxSeq: this.maxSeq, pos0: pos(s) }));
      add(attention, [q, kc, vc, att], (s: StepValues) => ({ count: T, heads: nHeads, kvHeads: nKvHeads, headDim: headSize, maxSeq: this.maxSeq, pos0: pos(s) }));
      add(matmulNT, [att, wo, xb2], { m: T, n: dim, k: dim });
      add(addInplace, [x, xb2], { n: T * dim });
      add(rmsnorm, [x, rmsFfn, xb], { rows: T, cols: dim, eps: RMSNORM_EPS });
      add(matmulNT, [xb, w1, hb], { m: T, n: hidden, k: dim });
      add(matmulNT, [xb, w3, hb2], { m: T, n: hidden, k: dim });
      add(siluMul, [hb, hb2, hb3], { n: T * hidden });
      add(matmulNT, [hb3, w2, xb2], { m: T, n: dim, k: hidden });
      add(addInplace, [x, xb2], { n: T * dim });
      if (layers) {
        // The residual stream after layer l, copied row by row into the layer's block of the buffer.
        const block = group.alias(this.#hidden!.allocation, 'f32', { shape: [T, dim], byteOffset: l * this.maxBatch * dim * F32_BYTES });
        add(kvWrite, [x, declare(`hidden${l}`, block, 'f32', [T, dim])], { count: T, width: dim, maxSeq: T, pos0: 0 });
      }
    });
    add(rmsnorm, [x, rmsFinal, xb], { rows: T, cols: dim, eps: RMSNORM_EPS });
    add(matmulNT, [last, wcls, logits], { m: outRows, n: vocab, k: dim });
    add(argmax, [logits, next], { rows: outRows, cols: vocab });
    const graph = this.runtime.compile({ name: `llama T=${key}`, inputs, dispatches: d, outputs: ['logits', 'next'] });
    const entry = { graph, ids: idsSlot, logits: logitsSlot, next: nextSlot };
    this.#graphs.set(key, entry);
    return entry;
  }
}
