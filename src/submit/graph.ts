// CompiledGraph: a recorded list of dispatches over named tensors, compiled once and replayed (G3 graphs).
//
// Compile time (once): names and bindings are checked, static params are checked by each kernel, and on
// WebGPU one pipeline per (kernel, constants) is created through the runtime's pipeline cache plus one
// uniform buffer holding every dispatch's params, each at a 256-byte aligned offset. Replay (per
// submission): the named slots are resolved in the submitted group, dispatch bindings are prepared
// (writes proven disjoint), per-step params are packed into one host buffer (static params only when the
// bound element offsets changed) that is uploaded with a single writeBuffer at admission, cached bind
// groups are reused when the same memory is bound again (an unchanged binding reuses its key without
// building it), and all dispatches are recorded into one compute pass of one encoder. Nothing per replay
// depends on element counts.
// Chained submissions (runtime.chain) replay a graph on a group still in flight: the uniform buffer is
// rewritten with queue.writeBuffer, which the queue orders after every earlier submission, so each replay
// reads its own params; the same memory bound again keeps its cached bind group, so replays on one chained
// group create no bind group and no buffer after the first.
// Every bind group and buffer a graph creates is also counted on its runtime's GraphMeter.
// Prepared host step (G5-prepared-host-step): on a host provider, a graph whose dispatches bind only
// inputs of the submitted group resolves its bindings once per table epoch of that group (prepareDispatch
// per dispatch: borrow check, disjointness proof, layout check against the declarations, addresses in
// the provider's memory) and keeps the result; a replay on the same tables (the same group, passed on
// through take() by submissions and chains) checks the group is bindable, compares one number and only
// evaluates per-step params (checked by their kernel) before the kernels run over the kept addresses.
// Any table change (insert, alias, remove, extract) or another group makes a new epoch: the step is
// prepared again, or refused exactly as the per-dispatch path refuses. Addresses survive memory growth;
// scalar twins re-derive their arrays when the memory's buffer changed.
// Ownership: the graph owns its uniform buffer (destroyed by dispose() once no submission of it is in
// flight; retained forever if one of them ends completion-unproven) and its bind-group cache.
// Thread: the runtime's.
import { TenonError } from '../errors.js';
import { WebGPUProvider } from '../storage/index.js';
import type { AllocationGroup, DType, DescriptorSlot, DeviceBindingState, DispatchBindingRequest, HostBindingState, Provider } from '../storage/index.js';
import type { BoundShape, Kernel } from './kernel.js';
import type { Workgroups } from './ops/types.js';
import type { BoundWork, FreshOutputSpec, OutputRef, Program, StepValues } from './program.js';
import { liveHostArray } from '../storage/index.js';
import type { HostExecutor, ResolvedHostDispatch } from './wasm/executor.js';

/**
 * Each dispatch's params start at a multiple of this (>= minUniformBufferOffsetAlignment on every
 * adapter) and take as many multiples as their size needs (rope's frequency table is 544 bytes).
 */
const UNIFORM_ALIGN = 256;
/**
 * Measurement seam (bench:host): host graphs of the runtimes in this set bind every dispatch on every
 * replay, as before the prepared step, so one process can time both ways side by side.
 */
export const perDispatchHostRuntimes = new WeakSet<object>();

/** Bind groups kept per dispatch; older entries (memory no longer bound) are dropped. */
const BIND_GROUP_CACHE = 4;

export interface GraphInput {
  readonly slot: DescriptorSlot;
  readonly dtype: DType;
  readonly shape: readonly number[];
}

export interface DispatchSpec<P = unknown> {
  readonly kernel: Kernel<P>;
  /** Tensor name for each kernel binding, in the kernel's binding order. */
  readonly bind: readonly string[];
  /** Params, or a function of the submission's step values (evaluated per replay). */
  readonly params: P | ((step: StepValues) => P);
}

export interface GraphSpec {
  readonly name: string;
  /** Tensors of the submitted group, by name. */
  readonly inputs: Readonly<Record<string, GraphInput>>;
  /** Tensors allocated per submission, by name. */
  readonly fresh?: readonly FreshOutputSpec[];
  readonly dispatches: readonly DispatchSpec[];
  /** Names of the tensors the bundle exposes as outputs, in order. */
  readonly outputs: readonly string[];
}

export interface GraphStats {
  readonly pipelinesCreated: number;
  readonly bindGroupsCreated: number;
  readonly replays: number;
  readonly dispatchesPerReplay: number;
  /** Dispatch binding preparations (group.prepareDispatch calls) this graph made. */
  readonly dispatchPreparations: number;
  /** Times the prepared host step was (re)built: the first replay and each new table epoch. */
  readonly hostStepPrepares: number;
  /** Replays that ran the prepared host step as it was (no binding work). */
  readonly hostStepReuses: number;
}

/** A graph's host dispatches resolved for one table epoch of the group they were prepared from. */
interface HostStep {
  readonly epoch: number;
  readonly dispatches: readonly ResolvedHostDispatch[];
  /** Scratch bytes the dispatches with static params need (derived once). */
  readonly staticScratch: number;
  /** Indices of the dispatches with per-step params (their scratch is sized per replay). */
  readonly dynamic: readonly number[];
}

/** What the graphs of one runtime created, counted on that runtime (RuntimeStats). */
export interface GraphMeter {
  bindGroupsCreated: number;
  buffersCreated: number;
}

/** Pipeline cache shared by every graph of one runtime: key = kernel + constants. */
export class PipelineCache {
  readonly #byKernel = new Map<Kernel<never>, Map<string, GPUComputePipeline>>();
  created = 0;

  get(device: GPUDevice, kernel: Kernel<never>, constants: Readonly<Record<string, number>>): GPUComputePipeline {
    const key = JSON.stringify(Object.entries(constants).sort(([a], [b]) => (a < b ? -1 : 1)));
    let perKernel = this.#byKernel.get(kernel);
    if (perKernel === undefined) this.#byKernel.set(kernel, (perKernel = new Map()));
    let pipeline = perKernel.get(key);
    if (pipeline === undefined) {
      const module = device.createShaderModule({ code: kernel.shader, label: kernel.name });
      pipeline = device.createComputePipeline({
        layout: 'auto',
        label: kernel.name,
        compute: { module, entryPoint: 'main', constants: { ...constants } },
      });
      perKernel.set(key, pipeline);
      this.created++;
    }
    return pipeline;
  }
}

type TensorRef = { readonly from: 'inputs'; readonly slot: DescriptorSlot; readonly decl: GraphInput } | { readonly from: 'fresh'; readonly index: number; readonly decl: FreshOutputSpec };

interface CompiledDispatch {
  readonly spec: DispatchSpec<never>;
  readonly refs: readonly TensorRef[];
  /** The kernel's view of `refs` (fixed at compile: declared dtypes and shapes). */
  readonly shapes: readonly BoundShape[];
  /** Binding requests of the refs that name inputs, in ref order (slots and accesses fixed at compile). */
  readonly inputRequests: readonly DispatchBindingRequest[];
  /** True when every ref names an input (no fresh output): the input states are the states. */
  readonly inputsOnly: boolean;
  readonly dynamic: boolean;
  readonly pipeline: GPUComputePipeline | undefined;
  readonly bindGroups: Map<string, GPUBindGroup>;
  /** Byte offset of this dispatch's params in the graph's uniform buffer. */
  readonly uniformOffset: number;
  /**
   * Replay caches (device graphs). Static params: the element offsets the staging bytes of this dispatch
   * were last packed with (the staging region holds exactly those bytes while this is set), and the
   * workgroup counts (fixed for fixed params on one device). Bind groups: the (root, offset, size)
   * triples of the last bound memory and their cache key, so an unchanged binding skips building it.
   */
  packedOffsets: number[] | undefined;
  workgroups: Workgroups | undefined;
  lastBinding: number[] | undefined;
  lastKey: string | undefined;
}

const isDynamic = <P>(params: DispatchSpec<P>['params']): params is (step: StepValues) => P => typeof params === 'function';

function shapeOf(ref: TensorRef): BoundShape {
  return { dtype: ref.decl.dtype, shape: ref.decl.shape, contiguous: true };
}

export class CompiledGraph implements Program {
  readonly name: string;
  readonly provider: Provider;
  readonly owner: object;
  readonly fresh: readonly FreshOutputSpec[];
  readonly #dispatches: readonly CompiledDispatch[];
  readonly #outputs: readonly TensorRef[];
  readonly #outputNames: readonly string[];
  /** Host replays: the output refs of every bound run (all in the inputs group), made on the first. */
  #hostOutputs: readonly OutputRef[] | undefined;
  readonly #inputs: Readonly<Record<string, GraphInput>>;
  readonly #gpu: WebGPUProvider | undefined;
  /** Owned: params of every dispatch; destroyed by dispose() when nothing of this graph is in flight. */
  #uniform: GPUBuffer | undefined;
  readonly #staging: ArrayBuffer;
  #bindGroupsCreated = 0;
  readonly #pipelinesCreated: number;
  #replays = 0;
  #inFlight = 0;
  #disposed = false;
  #retainedForever = false;
  /** Runs the host dispatches (host providers only; owned by the runtime). */
  readonly #host: HostExecutor | undefined;
  readonly #meter: GraphMeter;
  /** Host providers, every dispatch binding inputs only: replays run a prepared step. */
  readonly #preparedHost: boolean;
  #hostStep: HostStep | undefined;
  #dispatchPreparations = 0;
  #hostStepPrepares = 0;
  #hostStepReuses = 0;

  constructor(
    owner: object,
    provider: Provider,
    spec: GraphSpec,
    pipelines: PipelineCache,
    host?: HostExecutor,
    meter: GraphMeter = { bindGroupsCreated: 0, buffersCreated: 0 },
  ) {
    const op = 'runtime.compile';
    if (spec === null || typeof spec !== 'object' || typeof spec.name !== 'string') {
      throw new TenonError('EINVAL', 'graph spec needs a name', { op, reason: 'bad-graph' });
    }
    this.name = spec.name;
    this.owner = owner;
    this.#host = host;
    this.provider = provider;
    this.fresh = Object.freeze([...(spec.fresh ?? [])]);
    const names = new Map<string, TensorRef>();
    for (const [name, decl] of Object.entries(spec.inputs ?? {})) names.set(name, { from: 'inputs', slot: decl.slot, decl });
    this.fresh.forEach((decl, index) => {
      if (names.has(decl.name)) throw new TenonError('EINVAL', `tensor name ${decl.name} used twice`, { op, reason: 'duplicate-name', ids: { name: decl.name } });
      names.set(decl.name, { from: 'fresh', index, decl });
    });
    const resolve = (name: string): TensorRef => {
      const ref = names.get(name);
      if (ref === undefined) throw new TenonError('EINVAL', `unknown tensor ${name}`, { op, reason: 'unknown-name', ids: { name } });
      return ref;
    };
    const gpu = provider instanceof WebGPUProvider ? provider : undefined;
    this.#gpu = gpu;
    const before = pipelines.created;
    let uniformBytes = 0;
    if (!Array.isArray(spec.dispatches)) throw new TenonError('EINVAL', 'dispatches must be an array', { op, reason: 'bad-graph' });
    this.#dispatches = spec.dispatches.map((d, i) => {
      if (d === null || typeof d !== 'object' || d.kernel === undefined || !Array.isArray(d.bind)) {
        throw new TenonError('EINVAL', `dispatch ${i} is malformed`, { op, reason: 'bad-dispatch', ids: { dispatch: i } });
      }
      if (d.bind.length !== d.kernel.bindings.length) {
        throw new TenonError('EINVAL', `${d.kernel.name} takes ${d.kernel.bindings.length} bindings`, { op, reason: 'binding-count', ids: { dispatch: i } });
      }
      const refs = d.bind.map(resolve);
      const dynamic = isDynamic(d.params);
      const kernel = d.kernel as Kernel<never>;
      const shapes = Object.freeze(refs.map(shapeOf));
      if (!dynamic) kernel.check(shapes, d.params as never);
      const inputRequests: DispatchBindingRequest[] = [];
      refs.forEach((ref: TensorRef, j: number) => {
        if (ref.from === 'inputs') inputRequests.push(Object.freeze({ slot: ref.slot, access: kernel.bindings[j]!.access === 'read' ? 'read' : 'write' }));
      });
      // Specialization constants are fixed at compile time: for per-step params they come from the params
      // of an empty step, so they must not depend on step values.
      const specializeWith = dynamic ? (d.params as (s: StepValues) => never)({}) : (d.params as never);
      const pipeline = gpu === undefined ? undefined : pipelines.get(gpu.device, kernel, kernel.constants?.(specializeWith) ?? {});
      const uniformOffset = uniformBytes;
      uniformBytes += Math.max(1, Math.ceil(kernel.paramsBytes / UNIFORM_ALIGN)) * UNIFORM_ALIGN;
      return {
        spec: d as DispatchSpec<never>,
        refs,
        shapes,
        inputRequests: Object.freeze(inputRequests),
        inputsOnly: inputRequests.length === refs.length,
        dynamic,
        pipeline,
        bindGroups: new Map(),
        uniformOffset,
        packedOffsets: undefined,
        workgroups: undefined,
        lastBinding: undefined,
        lastKey: undefined,
      };
    });
    this.#pipelinesCreated = pipelines.created - before;
    if (!Array.isArray(spec.outputs)) throw new TenonError('EINVAL', 'outputs must be an array', { op, reason: 'bad-graph' });
    this.#outputs = spec.outputs.map(resolve);
    this.#outputNames = Object.freeze([...spec.outputs]);
    this.#inputs = Object.freeze({ ...(spec.inputs ?? {}) });
    this.#staging = new ArrayBuffer(Math.max(UNIFORM_ALIGN, uniformBytes));
    this.#meter = meter;
    this.#preparedHost = gpu === undefined && host !== undefined && this.#dispatches.every((d) => d.inputsOnly);
    this.#uniform = gpu?.createRuntimeBuffer(this.#staging.byteLength, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, `${this.name}.params`);
    if (this.#uniform !== undefined) meter.buffersCreated++;
  }

  stats(): GraphStats {
    return {
      pipelinesCreated: this.#pipelinesCreated,
      bindGroupsCreated: this.#bindGroupsCreated,
      replays: this.#replays,
      dispatchesPerReplay: this.#dispatches.length,
      dispatchPreparations: this.#dispatchPreparations,
      hostStepPrepares: this.#hostStepPrepares,
      hostStepReuses: this.#hostStepReuses,
    };
  }

  bind(inputs: AllocationGroup, fresh: AllocationGroup, freshSlots: readonly DescriptorSlot[], step: StepValues): BoundWork {
    const op = 'graph.bind';
    if (this.#disposed) throw new TenonError('EMOVED', 'graph was disposed', { op });
    if (this.#preparedHost && !perDispatchHostRuntimes.has(this.owner)) return this.#bindHostStep(inputs, step, op);
    const gpu = this.#gpu;
    const staging = new Uint8Array(this.#staging);
    const target = gpu === undefined ? 'host' : 'device';
    type State = DeviceBindingState | HostBindingState;
    const plans = this.#dispatches.map((d, i) => {
      const kernel = d.spec.kernel;
      const params = d.dynamic ? (d.spec.params as (s: StepValues) => never)(step) : (d.spec.params as never);
      const states = this.#prepare(d, inputs, fresh, freshSlots, target, op);
      for (let j = 0; j < states.length; j++) checkDecl(states[j]!, d.refs[j]!, op);
      if (d.dynamic) kernel.check(d.shapes, params);
      return { d, i, kernel, params, states };
    });

    const outputs: OutputRef[] = this.#outputs.map((ref) =>
      ref.from === 'inputs' ? { from: 'inputs', slot: ref.slot } : { from: 'fresh', slot: freshSlots[ref.index]! },
    );
    this.#replays++;
    if (gpu === undefined) {
      return {
        dispatches: plans.length,
        outputs,
        run: () => {
          // Bound layouts are contiguous (checked above): each array starts at element 0. The scratch is
          // reserved first, then each dispatch's arrays are re-derived if an allocation since bind (or that
          // reservation) grew the provider's memory.
          const host = this.#host!;
          host.prepare(plans as never);
          for (const { kernel, params, states } of plans) host.run(kernel as never, params, (states as HostBindingState[]).map(liveHostArray));
        },
      };
    }

    const device = gpu.device;
    const encoded = plans.map(({ d, i, kernel, params, states }) => {
      const deviceStates = states as DeviceBindingState[];
      // Per-step params are packed every replay; static ones only when the bound element offsets changed.
      if (d.dynamic || !sameOffsets(d.packedOffsets, deviceStates)) {
        const offsets = deviceStates.map((s) => s.elementOffset);
        staging.set(new Uint8Array(kernel.params(params, offsets)), d.uniformOffset);
        d.packedOffsets = d.dynamic ? undefined : offsets;
      }
      const pipeline = d.pipeline!;
      // The key string is built only when the bound memory differs from the last replay's.
      let key = d.lastKey;
      if (key === undefined || !sameBinding(d.lastBinding, deviceStates)) {
        key = deviceStates.map((s) => `${s.rootId}:${s.binding.offset}:${s.binding.size}`).join('|');
        d.lastKey = key;
        d.lastBinding = deviceStates.flatMap((s) => [s.rootId, s.binding.offset ?? 0, s.binding.size ?? -1]);
      }
      let group = d.bindGroups.get(key);
      if (group === undefined) {
        group = device.createBindGroup({
          layout: pipeline.getBindGroupLayout(0),
          label: `${this.name}[${i}] ${kernel.name}`,
          entries: [
            ...deviceStates.map((s, j) => ({ binding: j, resource: s.binding })),
            { binding: deviceStates.length, resource: { buffer: this.#uniform!, offset: d.uniformOffset, size: kernel.paramsBytes } },
          ],
        });
        this.#bindGroupsCreated++;
        this.#meter.bindGroupsCreated++;
        d.bindGroups.set(key, group);
        if (d.bindGroups.size > BIND_GROUP_CACHE) d.bindGroups.delete(d.bindGroups.keys().next().value!);
      }
      let workgroups = d.workgroups;
      if (workgroups === undefined) {
        workgroups = kernel.workgroups(params, device.limits);
        if (!d.dynamic) d.workgroups = workgroups;
      }
      return { pipeline, group, workgroups };
    });
    return {
      dispatches: plans.length,
      outputs,
      encode: (encoder) => {
        const pass = encoder.beginComputePass({ label: this.name });
        for (const { pipeline, group, workgroups } of encoded) {
          pass.setPipeline(pipeline);
          pass.setBindGroup(0, group);
          pass.dispatchWorkgroups(workgroups[0], workgroups[1], workgroups[2]);
        }
        pass.end();
      },
      upload: (queue) => {
        queue.writeBuffer(this.#uniform!, 0, this.#staging);
        this.#inFlight++;
      },
    };
  }

  /**
   * Host replay through the prepared step: prepared again when the group's table epoch differs from the
   * kept one (the first replay, a table change, another group), otherwise reused as it is. Per replay:
   * one bindability check of the group, the per-step params (checked by their kernels), one params array.
   */
  #bindHostStep(inputs: AllocationGroup, step: StepValues, op: string): BoundWork {
    const host = this.#host!;
    const epoch = inputs.dispatchEpoch();
    let prepared = this.#hostStep;
    if (prepared === undefined || prepared.epoch !== epoch) {
      this.#hostStep = undefined;
      const dispatches = this.#dispatches.map((d) => {
        const states = this.#prepare(d, inputs, inputs, [], 'host', op) as HostBindingState[];
        for (let j = 0; j < states.length; j++) checkDecl(states[j]!, d.refs[j]!, op);
        return host.resolve(d.spec.kernel as never, states);
      });
      let staticScratch = 0;
      const dynamic: number[] = [];
      this.#dispatches.forEach((d, i) => {
        if (d.dynamic) dynamic.push(i);
        else staticScratch = Math.max(staticScratch, host.scratchOf(dispatches[i]!, d.spec.params as never));
      });
      prepared = Object.freeze({ epoch, dispatches: Object.freeze(dispatches), staticScratch, dynamic: Object.freeze(dynamic) });
      this.#hostStep = prepared;
      this.#hostStepPrepares++;
    } else {
      this.#hostStepReuses++;
    }
    const dispatches = this.#dispatches;
    const params = new Array<never>(dispatches.length);
    for (let i = 0; i < dispatches.length; i++) {
      const d = dispatches[i]!;
      if (d.dynamic) {
        const p = (d.spec.params as (s: StepValues) => never)(step);
        d.spec.kernel.check(d.shapes, p);
        params[i] = p;
      } else params[i] = d.spec.params as never;
    }
    // The same refs every replay (the graph's outputs never change): derived once, frozen, shared.
    const outputs = (this.#hostOutputs ??= Object.freeze(
      this.#outputs.map((ref): OutputRef => Object.freeze({ from: 'inputs', slot: (ref as { slot: DescriptorSlot }).slot })),
    ));
    this.#replays++;
    const resolved = prepared.dispatches;
    const { staticScratch, dynamic } = prepared;
    return {
      dispatches: resolved.length,
      outputs,
      run: () => {
        // Scratch first (it may grow the memory); addresses stay valid, scalar arrays are re-derived.
        // Only the per-step params can change the size: the static part was derived with the step.
        let bytes = staticScratch;
        for (let j = 0; j < dynamic.length; j++) bytes = Math.max(bytes, host.scratchOf(resolved[dynamic[j]!]!, params[dynamic[j]!]!));
        host.reserveBytes(bytes);
        for (let i = 0; i < resolved.length; i++) host.runResolved(resolved[i]!, params[i]!);
      },
    };
  }

  /**
   * The host plan of a scoped read-only call: per dispatch, the kernel, its params and the tensor names
   * it binds, after checking that no dispatch writes an input (inputs are shared borrows there).
   */
  scopedPlan(step: StepValues): {
    readonly dispatches: readonly { kernel: Kernel<never>; params: never; names: readonly string[] }[];
    readonly inputs: Readonly<Record<string, GraphInput>>;
    readonly outputs: readonly string[];
  } {
    const op = 'runtime.executeScopedReadOnly';
    if (this.#disposed) throw new TenonError('EMOVED', 'graph was disposed', { op });
    const dispatches = this.#dispatches.map((d, i) => {
      const kernel = d.spec.kernel;
      d.refs.forEach((ref, j) => {
        if (ref.from === 'inputs' && kernel.bindings[j]!.access !== 'read') {
          throw new TenonError('EINVAL', `dispatch ${i} writes input ${d.spec.bind[j]!} through a shared view`, {
            op,
            reason: 'write-through-shared-view',
            ids: { dispatch: i, name: d.spec.bind[j]! },
          });
        }
      });
      const params = d.dynamic ? (d.spec.params as (s: StepValues) => never)(step) : (d.spec.params as never);
      if (d.dynamic) kernel.check(d.shapes, params);
      return { kernel, params, names: d.spec.bind };
    });
    return { dispatches, inputs: this.#inputs, outputs: this.#outputNames };
  }

  /** Called by the runtime when a submission of this graph retired (proven or not). */
  settled(proven: boolean): void {
    if (this.#gpu === undefined) return;
    this.#inFlight--;
    if (!proven) this.#retainedForever = true;
    this.#maybeDestroy();
  }

  /** Ends the graph; its uniform buffer is destroyed once no submission of it is in flight. */
  dispose(): void {
    if (this.#disposed) throw new TenonError('EMOVED', 'graph was disposed', { op: 'graph.dispose' });
    this.#disposed = true;
    this.#maybeDestroy();
  }

  #maybeDestroy(): void {
    if (this.#disposed && this.#inFlight === 0 && !this.#retainedForever && this.#uniform !== undefined) {
      this.#gpu!.destroyRuntimeBuffer(this.#uniform);
      this.#uniform = undefined;
    }
  }

  #prepare(
    d: CompiledDispatch,
    inputs: AllocationGroup,
    fresh: AllocationGroup,
    freshSlots: readonly DescriptorSlot[],
    target: 'device' | 'host',
    op: string,
  ): (DeviceBindingState | HostBindingState)[] {
    this.#dispatchPreparations++;
    const a = inputs.prepareDispatch(d.inputRequests, target as 'device') as (DeviceBindingState | HostBindingState)[];
    if (d.inputsOnly) return a;
    this.#dispatchPreparations++;
    const fromFresh: DispatchBindingRequest[] = [];
    d.refs.forEach((ref, j) => {
      if (ref.from === 'fresh') fromFresh.push({ slot: freshSlots[ref.index]!, access: d.spec.kernel.bindings[j]!.access === 'read' ? 'read' : 'write' });
    });
    const b = fresh.prepareDispatch(fromFresh, target as 'device') as (DeviceBindingState | HostBindingState)[];
    let ia = 0;
    let ib = 0;
    const states = d.refs.map((ref) => (ref.from === 'inputs' ? a[ia++]! : b[ib++]!));
    void op;
    return states;
  }
}

/** True when `packed` holds exactly the element offsets of `states`. */
function sameOffsets(packed: readonly number[] | undefined, states: readonly DeviceBindingState[]): boolean {
  if (packed === undefined || packed.length !== states.length) return false;
  for (let j = 0; j < states.length; j++) if (packed[j] !== states[j]!.elementOffset) return false;
  return true;
}

/** True when `last` holds exactly the (root, offset, size) triples of `states` (same memory bound). */
function sameBinding(last: readonly number[] | undefined, states: readonly DeviceBindingState[]): boolean {
  if (last === undefined || last.length !== states.length * 3) return false;
  for (let j = 0; j < states.length; j++) {
    const s = states[j]!;
    if (last[3 * j] !== s.rootId || last[3 * j + 1] !== (s.binding.offset ?? 0) || last[3 * j + 2] !== (s.binding.size ?? -1)) return false;
  }
  return true;
}

function checkDecl(state: DeviceBindingState | HostBindingState, ref: TensorRef, op: string): void {
  const { layout } = state;
  const decl = ref.decl;
  const sameShape = layout.shape.length === decl.shape.length && layout.shape.every((n, i) => n === decl.shape[i]);
  if (layout.dtype !== decl.dtype || !sameShape || layout.kind !== 'contiguous') {
    throw new TenonError('EINVAL', `slot does not hold the declared ${decl.dtype}[${decl.shape.join(',')}] contiguous tensor`, {
      op,
      reason: 'input-mismatch',
      ids: { slot: state.slot },
    });
  }
}
