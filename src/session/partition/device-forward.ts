// The forward pass of one pipeline rank on a WebGPU provider (a GPU carrying the layers that fit while host
// ranks carry the rest). The same op-library dispatch list as RankForward and LlamaForward's op-by-op list,
// compiled once per token count into a graph over one AllocationGroup (weights, per-layer KV caches,
// activations sized for maxBatch and aliased to T rows) and submitted with the step's position as a step
// value; every step waits for proven completion and takes the group back from the bundle. Hidden states
// cross to and from host ranks through host copies (download after, upload before). Tensor partitions and
// cache shards are host-rank features (the coordinator refuses them for WebGPU ranks).
// Ownership: this object owns the provider's group between steps; a step moves it into the runtime and
// takes it back; a step that ends unproven leaves the group to the runtime and the forward refuses more
// steps (ENODEV). Thread: the rank's worker.
import { TenonError } from '../../errors.js';
import { createAllocationGroup, createWebGPUProvider, fromArray, zeros } from '../../storage/index.js';
import type { AllocationGroup, AllocationSlot, DescriptorSlot, DType, WebGPUProvider } from '../../storage/index.js';
import { addInplace, attention, createRuntime, gather, kvWrite, matmulNT, rmsnorm, rope, siluMul } from '../../submit/index.js';
import type { CompiledGraph, DispatchSpec, GraphInput, Runtime, StepValues } from '../../submit/index.js';
import type { RankLinks } from './rank-forward.js';
import type { RankWeights } from './weights.js';

const F32_BYTES = 4;
const OP = 'partition.device';

interface Slot {
  readonly allocation: AllocationSlot;
  readonly slot: DescriptorSlot;
  readonly shape: readonly number[];
}

export class DeviceRankForward {
  readonly kvWidth: number;
  readonly maxSeq: number;
  readonly maxBatch: number;
  readonly #w: RankWeights;
  readonly #provider: WebGPUProvider;
  readonly #runtime: Runtime;
  #group: AllocationGroup | undefined;
  readonly #weights = new Map<string, Slot>();
  readonly #kv: { k: Slot; v: Slot }[] = [];
  readonly #act = new Map<string, { allocation: AllocationSlot; width: number; dtype: DType }>();
  readonly #graphs = new Map<number, { graph: CompiledGraph; ids: DescriptorSlot; x: DescriptorSlot; logits: DescriptorSlot | undefined }>();

  private constructor(w: RankWeights, maxSeq: number, maxBatch: number, provider: WebGPUProvider, runtime: Runtime, group: AllocationGroup) {
    this.#w = w;
    this.maxSeq = maxSeq;
    this.maxBatch = maxBatch;
    this.kvWidth = (w.plan.kvEnd - w.plan.kvStart) * w.config.headDim;
    this.#provider = provider;
    this.#runtime = runtime;
    this.#group = group;
  }

  static async create(w: RankWeights, maxSeq: number, maxBatch: number): Promise<DeviceRankForward> {
    const provider = await createWebGPUProvider();
    const runtime = createRuntime(provider);
    const group = createAllocationGroup();
    const f = new DeviceRankForward(w, maxSeq, maxBatch, provider, runtime, group);
    const c = w.config;
    const put = async (name: string, data: Float32Array, shape: number[]): Promise<void> => {
      if (data.length === 0) return;
      const r = group.insert(await fromArray(provider, 'f32', data, shape));
      f.#weights.set(name, { allocation: r.allocation, slot: r.descriptor, shape });
    };
    await put('embedding', w.embedding, [c.vocabSize, c.dim]);
    await put('outputNorm', w.outputNorm, [c.dim]);
    await put('classifier', w.classifier, [w.plan.vocabEnd - w.plan.vocabStart, c.dim]);
    const qw = (w.plan.headEnd - w.plan.headStart) * c.headDim;
    const ffn = w.plan.ffnEnd - w.plan.ffnStart;
    for (const [l, L] of w.layers.entries()) {
      await put(`attnNorm${l}`, L.attnNorm, [c.dim]);
      await put(`wq${l}`, L.wq, [qw, c.dim]);
      await put(`wk${l}`, L.wk, [f.kvWidth, c.dim]);
      await put(`wv${l}`, L.wv, [f.kvWidth, c.dim]);
      await put(`wo${l}`, L.wo, [c.dim, qw]);
      await put(`ffnNorm${l}`, L.ffnNorm, [c.dim]);
      await put(`gate${l}`, L.gate, [ffn, c.dim]);
      await put(`up${l}`, L.up, [ffn, c.dim]);
      await put(`down${l}`, L.down, [c.dim, ffn]);
      const cache = async (): Promise<Slot> => {
        const r = group.insert(await zeros(provider, 'f32', [maxSeq, f.kvWidth]));
        return { allocation: r.allocation, slot: r.descriptor, shape: [maxSeq, f.kvWidth] };
      };
      f.#kv.push({ k: await cache(), v: await cache() });
    }
    const widths: [string, number, DType][] = [
      ['x', c.dim, 'f32'],
      ['xb', c.dim, 'f32'],
      ['xb2', c.dim, 'f32'],
      ['q', qw, 'f32'],
      ['k', f.kvWidth, 'f32'],
      ['v', f.kvWidth, 'f32'],
      ['att', qw, 'f32'],
      ['hb', ffn, 'f32'],
      ['hb2', ffn, 'f32'],
      ['hb3', ffn, 'f32'],
      ['ids', 1, 'u32'],
    ];
    for (const [name, width, dtype] of widths) {
      const r = group.insert(await zeros(provider, dtype, [maxBatch, width]));
      f.#act.set(name, { allocation: r.allocation, width, dtype });
    }
    if (w.plan.classifies) {
      const r = group.insert(await zeros(provider, 'f32', [1, w.plan.vocabEnd - w.plan.vocabStart]));
      f.#act.set('logits', { allocation: r.allocation, width: w.plan.vocabEnd - w.plan.vocabStart, dtype: 'f32' });
    }
    return f;
  }

  #live(): AllocationGroup {
    const g = this.#group;
    if (g === undefined) throw new TenonError('ENODEV', 'the WebGPU rank lost its state', { op: OP, reason: 'state-lost' });
    return g;
  }

  #graphFor(T: number): { graph: CompiledGraph; ids: DescriptorSlot; x: DescriptorSlot; logits: DescriptorSlot | undefined } {
    const have = this.#graphs.get(T);
    if (have !== undefined) return have;
    const group = this.#live();
    const w = this.#w;
    const c = w.config;
    const p = w.plan;
    const hd = c.headDim;
    const heads = p.headEnd - p.headStart;
    const kvHeads = p.kvEnd - p.kvStart;
    const qw = heads * hd;
    const kvw = this.kvWidth;
    const ffn = p.ffnEnd - p.ffnStart;
    const eps = c.rmsEps;
    const inputs: Record<string, GraphInput> = {};
    const d: DispatchSpec<never>[] = [];
    const add = (kernel: unknown, bind: string[], params: unknown): void => {
      d.push({ kernel, bind, params } as unknown as DispatchSpec<never>);
    };
    for (const [name, s] of this.#weights) inputs[name] = { slot: s.slot, dtype: 'f32', shape: s.shape };
    this.#kv.forEach((kv, l) => {
      inputs[`kCache${l}`] = { slot: kv.k.slot, dtype: 'f32', shape: kv.k.shape };
      inputs[`vCache${l}`] = { slot: kv.v.slot, dtype: 'f32', shape: kv.v.shape };
    });
    const rowsOf: Record<string, DescriptorSlot> = {};
    for (const [name, a] of this.#act) {
      const rows = name === 'logits' ? 1 : T;
      const shape = name === 'ids' ? [T] : [rows, a.width];
      const slot = group.alias(a.allocation, a.dtype, { shape });
      rowsOf[name] = slot;
      inputs[name] = { slot, dtype: a.dtype, shape };
    }
    const pos = (s: StepValues): number => s['pos'] ?? 0;
    if (p.embeds) add(gather, ['ids', 'embedding', 'x'], { count: T, vocab: c.vocabSize, dim: c.dim });
    this.#kv.forEach((_, l) => {
      add(rmsnorm, ['x', `attnNorm${l}`, 'xb'], { rows: T, cols: c.dim, eps });
      add(matmulNT, ['xb', `wq${l}`, 'q'], { m: T, n: qw, k: c.dim });
      add(matmulNT, ['xb', `wk${l}`, 'k'], { m: T, n: kvw, k: c.dim });
      add(matmulNT, ['xb', `wv${l}`, 'v'], { m: T, n: kvw, k: c.dim });
      add(rope, ['q'], (s: StepValues) => ({ count: T, heads, headDim: hd, pos0: pos(s), theta: c.ropeTheta, style: c.ropeStyle }));
      add(rope, ['k'], (s: StepValues) => ({ count: T, heads: kvHeads, headDim: hd, pos0: pos(s), theta: c.ropeTheta, style: c.ropeStyle }));
      add(kvWrite, ['k', `kCache${l}`], (s: StepValues) => ({ count: T, width: kvw, maxSeq: this.maxSeq, pos0: pos(s) }));
      add(kvWrite, ['v', `vCache${l}`], (s: StepValues) => ({ count: T, width: kvw, maxSeq: this.maxSeq, pos0: pos(s) }));
      add(attention, ['q', `kCache${l}`, `vCache${l}`, 'att'], (s: StepValues) => ({ count: T, heads, kvHeads, headDim: hd, maxSeq: this.maxSeq, pos0: pos(s) }));
      add(matmulNT, ['att', `wo${l}`, 'xb2'], { m: T, n: c.dim, k: qw });
      add(addInplace, ['x', 'xb2'], { n: T * c.dim });
      add(rmsnorm, ['x', `ffnNorm${l}`, 'xb'], { rows: T, cols: c.dim, eps });
      add(matmulNT, ['xb', `gate${l}`, 'hb'], { m: T, n: ffn, k: c.dim });
      add(matmulNT, ['xb', `up${l}`, 'hb2'], { m: T, n: ffn, k: c.dim });
      add(siluMul, ['hb', 'hb2', 'hb3'], { n: T * ffn });
      add(matmulNT, ['hb3', `down${l}`, 'xb2'], { m: T, n: c.dim, k: ffn });
      add(addInplace, ['x', 'xb2'], { n: T * c.dim });
    });
    if (p.classifies) {
      add(rmsnorm, ['x', 'outputNorm', 'xb'], { rows: T, cols: c.dim, eps });
      const xb = this.#act.get('xb')!;
      const last = group.alias(xb.allocation, 'f32', { shape: [1, c.dim], byteOffset: (T - 1) * c.dim * F32_BYTES });
      inputs['lastRow'] = { slot: last, dtype: 'f32', shape: [1, c.dim] };
      add(matmulNT, ['lastRow', 'classifier', 'logits'], { m: 1, n: p.vocabEnd - p.vocabStart, k: c.dim });
    }
    const graph = this.#runtime.compile({ name: `rank${p.rank} T=${T}`, inputs, dispatches: d, outputs: [] });
    const entry = { graph, ids: rowsOf['ids']!, x: rowsOf['x']!, logits: rowsOf['logits'] };
    this.#graphs.set(T, entry);
    return entry;
  }

  async run(tokens: ArrayLike<number>, pos0: number, links: RankLinks, logits: Float32Array): Promise<void> {
    const T = tokens.length;
    const c = this.#w.config;
    const p = this.#w.plan;
    const entry = this.#graphFor(T);
    let group = this.#live();
    if (p.embeds) {
      using m = group.viewMut<'u32'>(entry.ids);
      await m.write(Uint32Array.from(Array.from({ length: T }, (_, i) => tokens[i]!)));
    } else {
      const x = new Float32Array(T * c.dim);
      links.receiveHidden(x);
      using m = group.viewMut<'f32'>(entry.x);
      await m.write(x);
    }
    this.#group = undefined;
    const handle = await this.#runtime.submit(entry.graph, group, { step: { pos: pos0 } }).catch((err: unknown) => {
      this.#group = group;
      throw err;
    });
    const outcome = await handle.wait();
    if (outcome.kind === 'completion-unproven') throw outcome.cause;
    if (outcome.kind === 'retired-failed') {
      this.#group = outcome.inputs;
      throw outcome.cause;
    }
    group = outcome.bundle.intoGroup().group;
    this.#group = group;
    if (!p.classifies) {
      using v = group.view<'f32'>(entry.x);
      links.sendHidden(await v.toArray());
      return;
    }
    using v = group.view<'f32'>(entry.logits!);
    logits.set(await v.toArray(), p.vocabStart);
  }

  /** Zeroes KV rows [from, maxSeq) of every layer. */
  async clearFrom(from: number): Promise<void> {
    if (from >= this.maxSeq) return;
    const group = this.#live();
    const rows = this.maxSeq - from;
    const blank = new Float32Array(rows * this.kvWidth);
    for (const kv of this.#kv) {
      for (const s of [kv.k, kv.v]) {
        const tail = group.alias(s.allocation, 'f32', { shape: [rows, this.kvWidth], byteOffset: from * this.kvWidth * F32_BYTES });
        {
          using m = group.viewMut<'f32'>(tail);
          await m.write(blank);
        }
        group.removeDescriptor(tail);
      }
    }
  }

  /** Every KV row (k then v per layer), downloaded (digests). */
  async kvBytes(): Promise<Uint8Array> {
    const group = this.#live();
    const parts: Float32Array[] = [];
    for (const kv of this.#kv) {
      for (const s of [kv.k, kv.v]) {
        using v = group.view<'f32'>(s.slot);
        parts.push(await v.toArray());
      }
    }
    const out = new Uint8Array(parts.reduce((n, a) => n + a.byteLength, 0));
    let at = 0;
    for (const a of parts) {
      out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
      at += a.byteLength;
    }
    return out;
  }

  /** Queue submissions this rank's runtime made. */
  gpuSubmits(): number {
    return this.#runtime.stats().queueSubmits;
  }

  dispose(): void {
    for (const g of this.#graphs.values()) g.graph.dispose();
    this.#group?.dispose();
    this.#group = undefined;
    this.#provider.destroy();
  }
}
