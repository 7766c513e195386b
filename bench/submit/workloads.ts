// The dispatch lists the overhead cases replay, described once and run two ways: as a tenon compiled
// graph (submit -> wait -> bundle.intoGroup, the runtime's proven retirement) and as hand-written WebGPU
// (own buffers of the same sizes, pipelines from the same WGSL and override constants, bind groups made
// once, the same uniform layout, one encoder and one compute pass per step, queue.submit and
// onSubmittedWorkDone). Both sides pack params with the op's own `params()`, so the dispatches, their
// workgroup counts and their uniform bytes are the same. The hand-written side can also wait the way
// tenon's retirement used to (onSubmittedWorkDone + one macrotask, a timing guess kept here only as a
// benchmark baseline, never as a runtime option) or prove completion the way it does now (a completion
// fence: a sequence number copied after the work into a staging buffer, mapped and checked).
//
// Ownership: a TenonSide owns its group (moved through each submission and back) and its graph; a
// RawSide owns its buffers. `dispose()` ends both. Single-threaded, on the device's thread.
import { OPS, ROPE_THETA, RMSNORM_EPS, createAllocationGroup, createRuntime, fromArray } from '../../src/index.js';
import type { AllocationGroup, AnyOpDef, CompiledGraph, DescriptorSlot, DispatchSpec, GraphInput, Runtime, StepValues, WebGPUProvider } from '../../src/index.js';

/** One dispatch: op, tensor names in binding order, params (or a function of the step values). */
export interface WorkDispatch {
  readonly kernel: AnyOpDef;
  readonly bind: readonly string[];
  readonly params: unknown;
}

export interface Workload {
  readonly name: string;
  /** Every tensor (all f32), by name, with its shape. */
  readonly tensors: Readonly<Record<string, readonly number[]>>;
  readonly dispatches: readonly WorkDispatch[];
  readonly outputs: readonly string[];
  /** Step values of call `i` (both sides see the same sequence). */
  step(i: number): StepValues;
}

const op = <P>(kernel: { readonly name: string }, bind: readonly string[], params: P | ((s: StepValues) => P)): WorkDispatch => ({
  kernel: kernel as unknown as AnyOpDef,
  bind,
  params,
});

const sizeOf = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** Deterministic values in [-scale, scale] (a small LCG; the math of these cases does not matter). */
export function pseudoRandom(n: number, seed: number, scale: number): Float32Array<ArrayBuffer> {
  const out = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = ((s / 0x1_0000_0000) * 2 - 1) * scale;
  }
  return out;
}

/** (b) Three small dispatches over 256 elements: c = a + b; d = silu(c) * b; a += d. */
export function smallGraph(): Workload {
  const n = 256;
  return {
    name: 'small3',
    tensors: { a: [n], b: [n], c: [n], d: [n] },
    dispatches: [
      op(OPS.add, ['a', 'b', 'c'], { n }),
      op(OPS.silu_mul, ['c', 'b', 'd'], { n }),
      op(OPS.add_inplace, ['a', 'd'], { n }),
    ],
    outputs: ['a'],
    step: () => ({}),
  };
}

/** llama2.c stories260K: dim 64, hidden 172, 8 heads / 4 kv heads of 8, 5 layers, seq_len 512. */
export const STORIES_260K = { dim: 64, hidden: 172, heads: 8, kvHeads: 4, headDim: 8, layers: 5, maxSeq: 512 } as const;

/** Positions cycle through 0..DECODE_POSITIONS-1 so attention cost is the same on both sides per call. */
export const DECODE_POSITIONS = 64;

/**
 * (c) One decode step (a single token, M = 1) of a 5-layer llama with stories260K shapes: per layer
 * rmsnorm, q/k/v projections (matmul_nt), rope on q and k, kv_write of k and v, attention over the
 * cache, output projection, residual add, rmsnorm, w1 and w3 (matmul_nt), silu_mul, w2, residual add:
 * 17 dispatches per layer, 85 per step; rope, kv_write and attention read the position per step.
 */
export function decodeGraph(): Workload {
  const { dim, hidden, heads, kvHeads, headDim, layers, maxSeq } = STORIES_260K;
  const kvDim = kvHeads * headDim;
  const tensors: Record<string, readonly number[]> = {
    x: [1, dim], xb: [1, dim], q: [1, dim], k: [1, kvDim], v: [1, kvDim], att: [1, dim], xo: [1, dim],
    hb: [1, hidden], hb2: [1, hidden], hg: [1, hidden], ffo: [1, dim],
  };
  const pos = (s: StepValues) => s['pos'] ?? 0;
  const dispatches: WorkDispatch[] = [];
  for (let l = 0; l < layers; l++) {
    const w = (name: string) => `l${l}.${name}`;
    Object.assign(tensors, {
      [w('attn_norm')]: [dim], [w('wq')]: [dim, dim], [w('wk')]: [kvDim, dim], [w('wv')]: [kvDim, dim], [w('wo')]: [dim, dim],
      [w('ffn_norm')]: [dim], [w('w1')]: [hidden, dim], [w('w3')]: [hidden, dim], [w('w2')]: [dim, hidden],
      [w('kc')]: [maxSeq, kvDim], [w('vc')]: [maxSeq, kvDim],
    });
    dispatches.push(
      op(OPS.rmsnorm, ['x', w('attn_norm'), 'xb'], { rows: 1, cols: dim, eps: RMSNORM_EPS }),
      op(OPS.matmul_nt, ['xb', w('wq'), 'q'], { m: 1, n: dim, k: dim }),
      op(OPS.matmul_nt, ['xb', w('wk'), 'k'], { m: 1, n: kvDim, k: dim }),
      op(OPS.matmul_nt, ['xb', w('wv'), 'v'], { m: 1, n: kvDim, k: dim }),
      op(OPS.rope, ['q'], (s: StepValues) => ({ count: 1, heads, headDim, pos0: pos(s), theta: ROPE_THETA })),
      op(OPS.rope, ['k'], (s: StepValues) => ({ count: 1, heads: kvHeads, headDim, pos0: pos(s), theta: ROPE_THETA })),
      op(OPS.kv_write, ['k', w('kc')], (s: StepValues) => ({ count: 1, width: kvDim, maxSeq, pos0: pos(s) })),
      op(OPS.kv_write, ['v', w('vc')], (s: StepValues) => ({ count: 1, width: kvDim, maxSeq, pos0: pos(s) })),
      op(OPS.attention, ['q', w('kc'), w('vc'), 'att'], (s: StepValues) => ({ count: 1, heads, kvHeads, headDim, maxSeq, pos0: pos(s) })),
      op(OPS.matmul_nt, ['att', w('wo'), 'xo'], { m: 1, n: dim, k: dim }),
      op(OPS.add_inplace, ['x', 'xo'], { n: dim }),
      op(OPS.rmsnorm, ['x', w('ffn_norm'), 'xb'], { rows: 1, cols: dim, eps: RMSNORM_EPS }),
      op(OPS.matmul_nt, ['xb', w('w1'), 'hb'], { m: 1, n: hidden, k: dim }),
      op(OPS.matmul_nt, ['xb', w('w3'), 'hb2'], { m: 1, n: hidden, k: dim }),
      op(OPS.silu_mul, ['hb', 'hb2', 'hg'], { n: hidden }),
      op(OPS.matmul_nt, ['hg', w('w2'), 'ffo'], { m: 1, n: dim, k: hidden }),
      op(OPS.add_inplace, ['x', 'ffo'], { n: dim }),
    );
  }
  return { name: 'decode5', tensors, dispatches, outputs: ['x'], step: (i) => ({ pos: i % DECODE_POSITIONS }) };
}

/** Initial contents: norms around 1, everything else small, so repeated steps stay finite. */
function initialData(name: string, shape: readonly number[], seed: number): Float32Array<ArrayBuffer> {
  const n = sizeOf(shape);
  if (name.endsWith('norm')) return Float32Array.from(pseudoRandom(n, seed, 0.1), (v) => 1 + v);
  return pseudoRandom(n, seed, name.includes('.') ? 0.05 : 0.5);
}

const isDynamic = (params: unknown): params is (s: StepValues) => unknown => typeof params === 'function';
const paramsAt = (d: WorkDispatch, step: StepValues): never => (isDynamic(d.params) ? d.params(step) : d.params) as never;

/** Time of each phase of tenon calls, one entry per call (diagnostics: where a submission's time goes). */
export interface Phases {
  /** `await runtime.submit(...)`: checks, bind (prepareDispatch per dispatch), encode, queue.submit. */
  readonly submitMs: number[];
  /** `await handle.wait()`: the completion fence (copy + map + check), error scopes, the Bundle. */
  readonly waitMs: number[];
  /** `bundle.intoGroup()`: the group back to the caller. */
  readonly intoGroupMs: number[];
}

/** A workload as a tenon compiled graph over one group, replayed by moving the group through each call. */
export class TenonSide {
  readonly runtime: Runtime;
  readonly graph: CompiledGraph;
  readonly slots: ReadonlyMap<string, DescriptorSlot>;
  #group: AllocationGroup | undefined;
  #calls = 0;
  readonly #workload: Workload;

  private constructor(runtime: Runtime, graph: CompiledGraph, group: AllocationGroup, slots: Map<string, DescriptorSlot>, workload: Workload) {
    this.runtime = runtime;
    this.graph = graph;
    this.#group = group;
    this.slots = slots;
    this.#workload = workload;
  }

  static async create(provider: WebGPUProvider, workload: Workload, runtime: Runtime = createRuntime(provider)): Promise<TenonSide> {
    const group = createAllocationGroup();
    const slots = new Map<string, DescriptorSlot>();
    const inputs: Record<string, GraphInput> = {};
    let seed = 1;
    for (const [name, shape] of Object.entries(workload.tensors)) {
      const slot = group.insert(await fromArray(provider, 'f32', initialData(name, shape, seed++), [...shape])).descriptor;
      slots.set(name, slot);
      inputs[name] = { slot, dtype: 'f32', shape };
    }
    const graph = runtime.compile({
      name: workload.name,
      inputs,
      dispatches: workload.dispatches.map((d): DispatchSpec => ({ kernel: d.kernel, bind: d.bind, params: d.params })),
      outputs: workload.outputs,
    });
    return new TenonSide(runtime, graph, group, slots, workload);
  }

  get group(): AllocationGroup {
    return this.#group!;
  }

  /**
   * One submission to proven completion; the group comes back through the bundle. With `phases`, the
   * time of each phase is recorded (submit call, wait for the outcome, intoGroup).
   */
  async call(phases?: Phases): Promise<void> {
    const step = this.#workload.step(this.#calls++);
    const t0 = performance.now();
    const handle = await this.runtime.submit(this.graph, this.#group!, { step });
    const t1 = performance.now();
    const outcome = await handle.wait();
    const t2 = performance.now();
    if (outcome.kind !== 'completed') throw new Error(`${this.#workload.name}: ${outcome.kind}: ${outcome.cause.message}`);
    this.#group = outcome.bundle.intoGroup().group;
    if (phases !== undefined) {
      phases.submitMs.push(t1 - t0);
      phases.waitMs.push(t2 - t1);
      phases.intoGroupMs.push(performance.now() - t2);
    }
  }

  /**
   * `n` decode-shaped steps, each reading back the first element of the first output (4 bytes) with its
   * proven outcome. 'wait': each step is submitted and its outcome awaited (group back through the bundle)
   * before the next is submitted. 'chain': step t+1 is chained onto the group before step t's outcome is
   * read, so at most two steps are in flight, and the group comes back after the last. Returns the values
   * read back, in step order.
   */
  async steps(n: number, mode: 'wait' | 'chain'): Promise<number[]> {
    const readback = [{ slot: this.slots.get(this.#workload.outputs[0]!)!, count: 1 }];
    const options = () => ({ step: this.#workload.step(this.#calls++), readback });
    const values: number[] = [];
    const fail = (kind: string): never => {
      throw new Error(`${this.#workload.name}: ${mode} step ended ${kind}`);
    };
    if (mode === 'wait') {
      for (let i = 0; i < n; i++) {
        const outcome = await (await this.runtime.submit(this.graph, this.#group!, options())).wait();
        if (outcome.kind !== 'completed') return fail(outcome.kind);
        values.push(outcome.readback![0]![0]!);
        this.#group = outcome.bundle.intoGroup().group;
      }
      return values;
    }
    const group = this.#group!;
    this.#group = undefined;
    let handle = await this.runtime.chain(this.graph, group, options());
    for (let i = 1; i < n; i++) {
      const next = await handle.chain(this.graph, options());
      const outcome = await handle.wait();
      if (outcome.kind !== 'passed-on') return fail(outcome.kind);
      values.push(outcome.readback[0]![0]!);
      outcome.fresh.dispose();
      handle = next;
    }
    const last = await handle.wait();
    if (last.kind !== 'completed') return fail(last.kind);
    values.push(last.readback[0]![0]!);
    this.#group = last.bundle.intoGroup().group;
    return values;
  }

  /** Reads tensor `name` back (outside timing). */
  async read(name: string): Promise<Float32Array> {
    using v = this.#group!.view<'f32'>(this.slots.get(name)!);
    return Float32Array.from(await v.toArray());
  }

  dispose(): void {
    this.#group?.dispose();
    this.#group = undefined;
    this.graph.dispose();
  }
}

/** Alignment of each dispatch's params in the uniform buffer (minUniformBufferOffsetAlignment <= 256). */
const UNIFORM_ALIGN = 256;

/** Pipelines of the hand-written side, made once per (op, constants) exactly as tenon's cache keys them. */
export class RawPipelines {
  readonly #byKey = new Map<string, GPUComputePipeline>();
  constructor(readonly device: GPUDevice) {}

  get(kernel: AnyOpDef, constants: Readonly<Record<string, number>>): GPUComputePipeline {
    const key = `${kernel.name}:${JSON.stringify(Object.entries(constants).sort(([a], [b]) => (a < b ? -1 : 1)))}`;
    let p = this.#byKey.get(key);
    if (p === undefined) {
      p = this.device.createComputePipeline({
        layout: 'auto',
        compute: { module: this.device.createShaderModule({ code: kernel.shader }), entryPoint: 'main', constants: { ...constants } },
      });
      this.#byKey.set(key, p);
    }
    return p;
  }
}

/** Optional extra steps a hand-written loop can take, to attribute tenon's overhead to its parts. */
export interface RawVariant {
  /** Push/pop a validation and an out-of-memory error scope around encode+submit (as tenon does). */
  readonly errorScopes?: boolean;
  /**
   * How a step waits for its work: `submitted-work-done` (onSubmittedWorkDone, the default), `old-tenon`
   * (onSubmittedWorkDone then one macrotask: tenon's retirement before the completion fence, a timing guess
   * kept only as this baseline), or `fence` (tenon's completion fence written by hand: the step's number
   * copied after the work into a MAP_READ buffer, mapped and checked).
   */
  readonly wait?: 'submitted-work-done' | 'old-tenon' | 'fence';
}

/** Size of a hand-written fence value: two u32 words, as tenon's fence writes a sequence number. */
const RAW_FENCE_BYTES = 8;

/** One macrotask through a MessageChannel: the wait tenon's retirement added after onSubmittedWorkDone. */
export function makeMacrotask(): () => Promise<void> {
  const channel = new MessageChannel();
  const waiting: (() => void)[] = [];
  channel.port1.onmessage = () => waiting.shift()?.();
  (channel.port1 as unknown as { unref?: () => void }).unref?.();
  return () =>
    new Promise<void>((resolve) => {
      waiting.push(resolve);
      channel.port2.postMessage(null);
    });
}

/** A workload hand-written against the device: the baseline of (b) and (c). */
export class RawSide {
  readonly #device: GPUDevice;
  readonly #buffers = new Map<string, GPUBuffer>();
  readonly #uniform: GPUBuffer;
  readonly #staging: ArrayBuffer;
  readonly #items: { d: WorkDispatch; at: number; pipeline: GPUComputePipeline; group: GPUBindGroup; workgroups: readonly [number, number, number] }[];
  readonly #workload: Workload;
  readonly #variant: RawVariant;
  readonly #macrotask = makeMacrotask();
  /** The hand-written fence (wait 'fence'): a source and a staging buffer, reused every step. */
  readonly #fence: { readonly source: GPUBuffer; readonly staging: GPUBuffer; readonly words: Uint32Array<ArrayBuffer> } | undefined;
  #calls = 0;

  constructor(device: GPUDevice, workload: Workload, pipelines: RawPipelines, variant: RawVariant = {}) {
    this.#device = device;
    this.#workload = workload;
    this.#variant = variant;
    this.#fence =
      variant.wait === 'fence'
        ? {
            source: device.createBuffer({ size: RAW_FENCE_BYTES, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST }),
            staging: device.createBuffer({ size: RAW_FENCE_BYTES, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }),
            words: new Uint32Array(RAW_FENCE_BYTES / Uint32Array.BYTES_PER_ELEMENT),
          }
        : undefined;
    let seed = 1;
    for (const [name, shape] of Object.entries(workload.tensors)) {
      const data = initialData(name, shape, seed++);
      const buffer = device.createBuffer({ size: data.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
      device.queue.writeBuffer(buffer, 0, data);
      this.#buffers.set(name, buffer);
    }
    let at = 0;
    const offsets = workload.dispatches.map((d) => {
      const here = at;
      at += Math.ceil(d.kernel.paramsBytes / UNIFORM_ALIGN) * UNIFORM_ALIGN;
      return here;
    });
    this.#staging = new ArrayBuffer(Math.max(at, UNIFORM_ALIGN));
    this.#uniform = device.createBuffer({ size: this.#staging.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.#items = workload.dispatches.map((d, i) => {
      // Specialization and workgroup counts come from the params of an empty step, as in tenon's compile
      // (here they do not depend on the position).
      const params = paramsAt(d, {});
      const pipeline = pipelines.get(d.kernel, d.kernel.constants(params));
      const group = device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [
          ...d.bind.map((name, j) => ({ binding: j, resource: { buffer: this.#buffers.get(name)! } })),
          { binding: d.bind.length, resource: { buffer: this.#uniform, offset: offsets[i]!, size: d.kernel.paramsBytes } },
        ],
      });
      // Static params are packed once; per-step ones in call().
      if (!isDynamic(d.params)) this.#pack(d, params, offsets[i]!);
      return { d, at: offsets[i]!, pipeline, group, workgroups: d.kernel.workgroups(params, device.limits) as [number, number, number] };
    });
  }

  #pack(d: WorkDispatch, params: never, at: number): void {
    const bytes = d.kernel.params(params, d.bind.map(() => 0));
    new Uint8Array(this.#staging, at, bytes.byteLength).set(new Uint8Array(bytes));
  }

  /** One step: pack per-step params, upload the params, encode, submit, wait as the variant says. */
  async call(): Promise<void> {
    const device = this.#device;
    const step = this.#workload.step(this.#calls++);
    for (const item of this.#items) if (isDynamic(item.d.params)) this.#pack(item.d, paramsAt(item.d, step), item.at);
    const scopes = this.#variant.errorScopes === true;
    if (scopes) {
      device.pushErrorScope('validation');
      device.pushErrorScope('out-of-memory');
    }
    device.queue.writeBuffer(this.#uniform, 0, this.#staging);
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    for (const { pipeline, group, workgroups } of this.#items) {
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, group);
      pass.dispatchWorkgroups(workgroups[0], workgroups[1], workgroups[2]);
    }
    pass.end();
    device.queue.submit([encoder.finish()]);
    let errors: Promise<(GPUError | null)[]> | undefined;
    if (scopes) errors = Promise.all([device.popErrorScope(), device.popErrorScope()]);
    if (this.#fence !== undefined) {
      await this.#fenced(this.#calls);
    } else {
      await device.queue.onSubmittedWorkDone();
      if (this.#variant.wait === 'old-tenon') await this.#macrotask();
    }
    if (errors !== undefined) {
      const found = (await errors).find((e) => e !== null);
      if (found) throw new Error(`${this.#workload.name}: ${found.message}`);
    }
  }

  /** A fence after the step's submit, as tenon's runtime submits one: write, copy, map, check, unmap. */
  async #fenced(value: number): Promise<void> {
    const { source, staging, words } = this.#fence!;
    const device = this.#device;
    words[0] = value;
    device.queue.writeBuffer(source, 0, words);
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(source, 0, staging, 0, RAW_FENCE_BYTES);
    device.queue.submit([encoder.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const read = new Uint32Array(staging.getMappedRange(0, RAW_FENCE_BYTES))[0];
    staging.unmap();
    if (read !== value) throw new Error(`${this.#workload.name}: fence read ${read}, expected ${value}`);
  }

  /** Reads tensor `name` back (outside timing). */
  async read(name: string): Promise<Float32Array> {
    const src = this.#buffers.get(name)!;
    const staging = this.#device.createBuffer({ size: src.size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const encoder = this.#device.createCommandEncoder();
    encoder.copyBufferToBuffer(src, 0, staging, 0, src.size);
    this.#device.queue.submit([encoder.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(staging.getMappedRange().slice(0));
    staging.destroy();
    return out;
  }

  /** Runs one call inside error scopes and throws if the device reported anything (validity check). */
  async checkValid(): Promise<void> {
    this.#device.pushErrorScope('validation');
    await this.call();
    const err = await this.#device.popErrorScope();
    if (err !== null) throw new Error(`${this.#workload.name} (hand-written) is invalid: ${err.message}`);
  }

  dispose(): void {
    for (const b of this.#buffers.values()) b.destroy();
    this.#uniform.destroy();
    this.#fence?.source.destroy();
    this.#fence?.staging.destroy();
  }
}
