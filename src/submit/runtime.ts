// Runtime: detached owning submission with proven retirement (G3, G5) on one provider.
//
// Ownership and lifetime. `submit(program, inputs)` checks everything it can before admission; any
// failure there throws SubmitRejected and leaves `inputs` exactly as it was. Admission is the moment the
// inputs group is moved into a RetirementRecord, immediately before the first enqueue-capable call
// (queue.submit on WebGPU, scheduling the host run on the host provider). From then on the record owns
// the inputs, the fresh outputs, their roots and the device reference until retirement:
//   - completed: completion is proven and no validation / out-of-memory error was reported: the owners
//     come back in a Bundle;
//   - retired-failed: completion proven but the work reported an error: the exact inputs come back;
//   - completion-unproven: no proof could be had: every root the record holds is retained forever
//     (never destroyed, never reused), no owner comes back, and the record is kept for good.
// Proof on WebGPU is a completion fence (fence.ts): the record's sequence number, copied by the GPU into a
// staging buffer after the work and read back through mapAsync, which only a finished queue can satisfy
// and which rejects on a lost device. One checked map of sequence N proves every record <= N (records are
// proven in batches; one fence map is outstanding at a time). Nothing is decided on timing: neither
// onSubmittedWorkDone (it resolves on a lost device too, TOOLCHAIN.md) nor the absence of a loss signal
// (a driver reset can report late) counts, so a loss that becomes visible only later still ends as
// completion-unproven. Error scopes decide retired-failed only after the proof. On the host provider the
// kernels run on this thread: their return is the proof.
// Disposing an ExecutionHandle only stops observing: the record still retires and then releases what it
// owns exactly once. The fence's buffers live as long as the runtime.
// Thread: the runtime lives on the thread of its provider; GPU objects never leave it.
import { TenonError, isTenonError } from '../errors.js';
import { AllocationGroup, TensorView, WebGPUProvider, createAllocationGroup, zeros } from '../storage/index.js';
import type { AnyTypedArray, DescriptorSlot, HostProvider, PreparedHostRead, PreparedHostWrite, Provider, Tensor } from '../storage/index.js';
import { Bundle, SubmitRejected } from './outcome.js';
import type { Outcome, UnprovenDiagnostics } from './outcome.js';
import { CompletionFence } from './fence.js';
import { CompiledGraph, PipelineCache } from './graph.js';
import type { GraphSpec } from './graph.js';
import type { BoundWork, Program, StepValues } from './program.js';
import { HostExecutor } from './wasm/executor.js';
import type { HostKernelChoice, HostKernelStats } from './wasm/executor.js';

export interface RuntimeOptions {
  /**
   * Kernels on a host provider: `auto` (default) runs the WebAssembly SIMD kernels where the engine
   * validates them and the scalar twins elsewhere; `wasm` refuses (ENOTSUP) where they are unavailable;
   * `scalar` always runs the twins. Ignored on WebGPU.
   */
  readonly hostKernels?: HostKernelChoice;
}

/** Points at which the device-loss seam can fire (fault injection through production paths). */
export type LossPoint = 'before-enqueue' | 'after-enqueue';

export interface LossOptions {
  /** Keep the loss invisible (provider.faults.loseDeviceSilently) until provider.faults.revealLoss(). */
  readonly silently?: boolean;
}

/** Named fault-injection seam of a runtime. Each arm fires once, on the next submission. */
export interface RuntimeFaults {
  /** Lose the device at `point` of the next submission (silently: the loss is reported only later). */
  loseDeviceAt(point: LossPoint, options?: LossOptions): void;
  /** Make the next completion fence submit no copy: its map resolves over an older number (WebGPU). */
  dropNextFenceCopy(): void;
  /** Make the next submission carry an invalid dispatch (a real validation error on the device). */
  invalidateNextSubmission(): void;
  /** Make the next host run throw after it started (host provider). */
  failNextHostRun(): void;
}

export interface RuntimeStats {
  readonly submitted: number;
  readonly rejected: number;
  readonly admitted: number;
  readonly completed: number;
  readonly retiredFailed: number;
  readonly unproven: number;
  /** Records admitted but not yet retired. */
  readonly inFlight: number;
  /** Records kept forever because completion was unproven. */
  readonly retainedRecords: number;
  /** Handles disposed before their outcome was taken; their owners were released by the runtime. */
  readonly detachedReleases: number;
  /** Completion fences submitted (WebGPU; each one copy and one map, proving every record before it). */
  readonly fences: number;
  /** Fences whose map was rejected or read back another number: the records they covered are unproven. */
  readonly fencesFailed: number;
}

/** One output of a scoped call: fresh outputs are owned, input outputs stay the caller's borrowed views. */
export type ScopedOutput = { readonly kind: 'owned'; readonly tensor: Tensor } | { readonly kind: 'borrowed'; readonly view: TensorView };

/** A scoped call returns only after every piece of its work retired. */
export type ScopedOutcome =
  | { readonly kind: 'completed'; readonly outputs: readonly ScopedOutput[] }
  | { readonly kind: 'retired-failed'; readonly cause: TenonError };

export interface SubmitOptions {
  readonly step?: StepValues;
  /** Aborts only before admission (ECANCELED via SubmitRejected); admitted work always retires. */
  readonly signal?: AbortSignal;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Resolves on the next macrotask: host runs are scheduled there so that submit() returns before the
 * kernels run (host scheduling only; it proves nothing). A MessageChannel avoids the 4 ms clamp browsers
 * put on nested setTimeout(0).
 */
const macrotasks: (() => void)[] = [];
let channel: MessageChannel | undefined;
/** Node: the port keeps the process alive exactly while a macrotask is pending (browsers lack ref/unref). */
type RefPort = MessagePort & { ref?: () => void; unref?: () => void };
function nextMacrotask(): Promise<void> {
  if (channel === undefined) {
    const created = new MessageChannel();
    channel = created;
    created.port1.onmessage = () => {
      macrotasks.shift()?.();
      if (macrotasks.length === 0) (created.port1 as RefPort).unref?.();
    };
  }
  const port = channel.port1 as RefPort;
  return new Promise((resolve) => {
    if (macrotasks.length === 0) port.ref?.();
    macrotasks.push(resolve);
    channel!.port2.postMessage(null);
  });
}

class RetirementRecord {
  readonly index: number;
  readonly program: Program;
  /** Position on the completion fence (WebGPU), assigned right after queue.submit; 0 on the host. */
  seq = 0;
  /** Owned until retirement: the inputs group and the fresh outputs group. */
  inputs: AllocationGroup | undefined;
  fresh: AllocationGroup | undefined;
  readonly outputs: BoundWork['outputs'];
  outcome: Promise<Outcome> | undefined;
  detached = false;
  taken = false;

  constructor(index: number, program: Program, inputs: AllocationGroup, fresh: AllocationGroup, outputs: BoundWork['outputs']) {
    this.index = index;
    this.program = program;
    this.inputs = inputs;
    this.fresh = fresh;
    this.outputs = outputs;
  }
}

/** Observes one admitted submission. Disposing it stops observation; it never cancels retirement. */
export class ExecutionHandle {
  readonly index: number;
  readonly #record: RetirementRecord;
  readonly #runtime: Runtime;

  constructor(runtime: Runtime, record: RetirementRecord) {
    this.#runtime = runtime;
    this.#record = record;
    this.index = record.index;
  }

  /** The terminal outcome. The owners it carries belong to the caller from here on. */
  wait(): Promise<Outcome> {
    const record = this.#record;
    if (record.detached) {
      return Promise.reject(new TenonError('ERELEASED', 'handle was disposed', { op: 'handle.wait', ids: { submission: this.index } }));
    }
    record.taken = true;
    return record.outcome!;
  }

  /** Stops observing. If the outcome was not taken, the runtime releases its owners once it retires. */
  dispose(): void {
    const record = this.#record;
    if (record.taken || record.detached) return;
    record.detached = true;
    this.#runtime.detach(record);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

export class Runtime {
  readonly provider: HostProvider | WebGPUProvider;
  readonly faults: RuntimeFaults;
  #index = 0;
  readonly #inFlight = new Set<RetirementRecord>();
  /** Completion-unproven records: kept for the life of the runtime, never released. */
  readonly #retained: RetirementRecord[] = [];
  readonly #stats: Mutable<Omit<RuntimeStats, 'inFlight' | 'retainedRecords' | 'fences' | 'fencesFailed'>> = {
    submitted: 0,
    rejected: 0,
    admitted: 0,
    completed: 0,
    retiredFailed: 0,
    unproven: 0,
    detachedReleases: 0,
  };
  /** Pipelines of every graph compiled on this runtime, keyed by kernel and constants. */
  readonly #pipelines = new PipelineCache();
  /** Completion proof of this runtime's queue (WebGPU only; made with the runtime, kept for its life). */
  readonly #fence: CompletionFence | undefined;
  #lossAt: { readonly point: LossPoint; readonly silently: boolean } | undefined;
  #invalidNext = false;
  #failHostNext = false;
  /** How host kernels run (host providers only). */
  readonly #host: HostExecutor | undefined;

  constructor(provider: Provider, options: RuntimeOptions = {}) {
    if (!(provider instanceof WebGPUProvider) && provider?.kind !== 'host') {
      throw new TenonError('EINVAL', 'a runtime needs a tenon provider', { op: 'createRuntime', reason: 'bad-provider' });
    }
    this.provider = provider as HostProvider | WebGPUProvider;
    this.#host = provider instanceof WebGPUProvider ? undefined : new HostExecutor(provider as HostProvider, options.hostKernels);
    // On a device already known lost nothing is ever admitted, so such a runtime needs no fence.
    this.#fence = provider instanceof WebGPUProvider && !provider.lossObserved ? new CompletionFence(provider, 'tenon runtime') : undefined;
    this.faults = Object.freeze({
      loseDeviceAt: (point: LossPoint, options: LossOptions = {}) => {
        this.#lossAt = { point, silently: options.silently === true };
      },
      dropNextFenceCopy: () => {
        this.#fence?.dropNextCopy();
      },
      invalidateNextSubmission: () => {
        this.#invalidNext = true;
      },
      failNextHostRun: () => {
        this.#failHostNext = true;
      },
    });
  }

  /** Compiles a graph once: checks, pipelines and the params buffer happen here, not per replay. */
  compile(spec: GraphSpec): CompiledGraph {
    if (this.provider instanceof WebGPUProvider && this.provider.lossObserved) {
      throw new TenonError('ENODEV', 'device lost', { op: 'runtime.compile', reason: 'device-lost' });
    }
    return new CompiledGraph(this, this.provider, spec, this.#pipelines, this.#host);
  }

  /** Which kernels run on this runtime's host provider and how many dispatches took each path; undefined on WebGPU. */
  hostKernels(): HostKernelStats | undefined {
    return this.#host?.stats();
  }

  /** Pipelines created on this runtime so far (compile time only). */
  get pipelinesCreated(): number {
    return this.#pipelines.created;
  }

  stats(): RuntimeStats {
    const fence = this.#fence?.stats();
    return {
      ...this.#stats,
      inFlight: this.#inFlight.size,
      retainedRecords: this.#retained.length,
      fences: fence?.fences ?? 0,
      fencesFailed: fence?.fencesFailed ?? 0,
    };
  }

  /** Resolves once every record admitted so far reached its terminal outcome (by proof, never by time). */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight].map((r) => r.outcome));
  }

  /**
   * Detached owning submission. Resolves with a handle once the work is admitted; rejects with
   * SubmitRejected (inputs untouched) for any failure before admission.
   */
  async submit(program: Program, inputs: AllocationGroup, options: SubmitOptions = {}): Promise<ExecutionHandle> {
    const op = 'runtime.submit';
    this.#stats.submitted++;
    const reject = (err: unknown): never => {
      this.#stats.rejected++;
      const cause = isTenonError(err) ? err : new TenonError('EINVAL', String(err), { op, reason: 'bind-failed', cause: err });
      throw new SubmitRejected(cause, inputs);
    };
    try {
      this.#checkAdmissible(program, inputs, options, op);
    } catch (err) {
      reject(err);
    }

    // Fresh outputs are allocated before anything touches the inputs, in a group of their own.
    const fresh = createAllocationGroup();
    const freshSlots: DescriptorSlot[] = [];
    try {
      for (const spec of program.fresh) {
        freshSlots.push(fresh.insert(await zeros(this.provider, spec.dtype, spec.shape)).descriptor);
      }
      // The caller kept ownership while we awaited: check again.
      this.#checkAdmissible(program, inputs, options, op);
    } catch (err) {
      fresh.dispose();
      reject(err);
    }

    // From here to admission nothing awaits, so the inputs cannot change under us.
    let bound: BoundWork;
    try {
      if (this.#lossAt?.point === 'before-enqueue') this.#fireLoss();
      this.#checkDevice(op);
      bound = program.bind(inputs, fresh, freshSlots, options.step ?? {});
    } catch (err) {
      fresh.dispose();
      return reject(err);
    }
    return this.provider instanceof WebGPUProvider ? this.#admitDevice(this.provider, program, inputs, fresh, bound) : this.#admitHost(program, inputs, fresh, bound);
  }

  /**
   * Scoped read-only execution (G3): runs `graph` over shared views (by input name) and returns only after
   * all of its work retired. Only the host provider offers it (its kernels run synchronously); a device
   * provider refuses with ENOTSUP before anything happens. Inputs are never written; fresh outputs come
   * back owned, input outputs come back as the caller's own views. A refused call leaves every view as it
   * was; a kernel failure is a retired-failed outcome after the work stopped.
   */
  async executeScopedReadOnly(graph: CompiledGraph, views: Readonly<Record<string, TensorView>>, step: StepValues = {}): Promise<ScopedOutcome> {
    const op = 'runtime.executeScopedReadOnly';
    if (this.provider instanceof WebGPUProvider || !this.provider.capabilities.scopedExecution) {
      throw new TenonError('ENOTSUP', 'scoped execution needs a synchronous (host) provider', { op, reason: 'no-scoped-execution', ids: { provider: this.provider.id } });
    }
    if (!(graph instanceof CompiledGraph) || graph.owner !== this) {
      throw new TenonError('EINVAL', 'graph was compiled for another runtime', { op, reason: 'foreign-program' });
    }
    const plan = graph.scopedPlan(step);
    for (const [name, decl] of Object.entries(plan.inputs)) {
      const view = views[name];
      if (!(view instanceof TensorView)) throw new TenonError('EINVAL', `input ${name} needs a shared view`, { op, reason: 'missing-view', ids: { name } });
      const sameShape = view.shape.length === decl.shape.length && view.shape.every((n, i) => n === decl.shape[i]);
      if (view.dtype !== decl.dtype || !sameShape || !view.isContiguous || view.provider !== this.provider) {
        throw new TenonError('EINVAL', `view for ${name} does not match the declared tensor`, { op, reason: 'input-mismatch', ids: { name } });
      }
    }
    const prepared: (PreparedHostRead<never> | PreparedHostWrite<never>)[] = [];
    const fresh: Tensor[] = [];
    let admitted = false;
    try {
      const byName = new Map<string, PreparedHostRead<never> | PreparedHostWrite<never>>();
      for (const name of Object.keys(plan.inputs)) {
        const p = await views[name]!.prepareHost();
        prepared.push(p as never);
        byName.set(name, p as never);
      }
      for (const spec of graph.fresh) {
        const t = await zeros(this.provider, spec.dtype, spec.shape);
        fresh.push(t);
        const p = await t.prepareHostMut({ discard: true });
        prepared.push(p as never);
        byName.set(spec.name, p as never);
      }
      admitted = true;
      try {
        const host = this.#host!;
        host.prepare(plan.dispatches);
        // Arrays are taken only now: the allocations and the scratch above may have grown the memory.
        const arrays = new Map<string, AnyTypedArray>();
        for (const [name, p] of byName) if (p.kind === 'contiguous') arrays.set(name, p.asArray());
        for (const d of plan.dispatches) host.run(d.kernel, d.params, d.names.map((n) => arrays.get(n)!));
        this.provider.meter.bump('dispatches', plan.dispatches.length);
      } catch (err) {
        for (const p of prepared.splice(0)) p.release();
        for (const t of fresh.splice(0)) t.dispose();
        const cause = isTenonError(err) ? err : new TenonError('EIO', String(err), { op, reason: 'kernel-threw', cause: err });
        return { kind: 'retired-failed', cause };
      }
    } catch (err) {
      // Refused before any kernel ran: nothing of ours survives, the views are the caller's as before.
      for (const p of prepared.splice(0)) p.release();
      if (!admitted) for (const t of fresh.splice(0)) t.dispose();
      throw err;
    } finally {
      for (const p of prepared) p.release();
    }
    const byName = new Map(graph.fresh.map((spec, i) => [spec.name, fresh[i]!] as const));
    const outputs = plan.outputs.map((name): ScopedOutput => {
      const owned = byName.get(name);
      return owned !== undefined ? { kind: 'owned', tensor: owned } : { kind: 'borrowed', view: views[name]! };
    });
    for (const [name, t] of byName) if (!plan.outputs.includes(name)) t.dispose();
    return { kind: 'completed', outputs };
  }

  /** Called by a disposed handle: the runtime will release the outcome's owners when it arrives. */
  detach(record: RetirementRecord): void {
    void record.outcome!.then((outcome) => {
      this.#stats.detachedReleases++;
      if (outcome.kind === 'completed') outcome.bundle.dispose();
      else if (outcome.kind === 'retired-failed') outcome.inputs.dispose();
    });
  }

  #checkAdmissible(program: Program, inputs: AllocationGroup, options: SubmitOptions, op: string): void {
    if (program === null || typeof program !== 'object' || typeof program.bind !== 'function') {
      throw new TenonError('EINVAL', 'not a compiled program', { op, reason: 'bad-program' });
    }
    if (program.owner !== this || program.provider !== this.provider) {
      throw new TenonError('EINVAL', 'program was compiled for another runtime', { op, reason: 'foreign-program' });
    }
    if (!(inputs instanceof AllocationGroup)) throw new TenonError('EINVAL', 'inputs must be an AllocationGroup', { op, reason: 'bad-inputs' });
    if (inputs.moved) throw new TenonError('EMOVED', 'inputs were already consumed', { op });
    if (options.signal?.aborted) throw new TenonError('ECANCELED', 'aborted before admission', { op, cause: options.signal.reason });
    this.#checkDevice(op);
  }

  #checkDevice(op: string): void {
    if (this.provider instanceof WebGPUProvider && this.provider.lossObserved) {
      throw new TenonError('ENODEV', 'device lost', { op, reason: 'device-lost', ids: { provider: this.provider.id } });
    }
  }

  #admitDevice(provider: WebGPUProvider, program: Program, inputs: AllocationGroup, fresh: AllocationGroup, bound: BoundWork): ExecutionHandle {
    const device = provider.device;
    device.pushErrorScope('validation');
    device.pushErrorScope('out-of-memory');
    let commands: GPUCommandBuffer;
    try {
      const encoder = device.createCommandEncoder({ label: program.name });
      bound.encode!(encoder);
      if (this.#invalidNext) {
        this.#invalidNext = false;
        // Seam: a dispatch with no pipeline set is a genuine validation error of this submission.
        const pass = encoder.beginComputePass();
        pass.dispatchWorkgroups(1);
        pass.end();
      }
      commands = encoder.finish();
    } catch (err) {
      void device.popErrorScope();
      void device.popErrorScope();
      fresh.dispose();
      this.#stats.rejected++;
      throw new SubmitRejected(isTenonError(err) ? err : new TenonError('EINVAL', String(err), { op: 'runtime.submit', reason: 'encode-failed', cause: err }), inputs);
    }
    // Admission: the record owns everything from here; the caller's objects are moved.
    const record = new RetirementRecord(++this.#index, program, inputs.take(), fresh.take(), bound.outputs);
    this.#inFlight.add(record);
    this.#stats.admitted++;
    bound.upload?.(device.queue);
    device.queue.submit([commands]);
    record.seq = this.#fence!.admitted();
    provider.meter.bump('dispatches', bound.dispatches);
    const oom = device.popErrorScope();
    const validation = device.popErrorScope();
    if (this.#lossAt?.point === 'after-enqueue') this.#fireLoss();
    record.outcome = this.#retireDevice(this.#fence!, record, validation, oom);
    return new ExecutionHandle(this, record);
  }

  /** The loss seam: destroys the real device, reported at once or (silently) only when revealed. */
  #fireLoss(): void {
    const arm = this.#lossAt!;
    this.#lossAt = undefined;
    const faults = (this.provider as WebGPUProvider).faults;
    if (arm.silently) faults?.loseDeviceSilently();
    else faults?.loseDevice();
  }

  async #retireDevice(fence: CompletionFence, record: RetirementRecord, validation: Promise<GPUError | null>, oom: Promise<GPUError | null>): Promise<Outcome> {
    // Proof first: only a checked fence map covering this record's sequence counts.
    const verdict = await fence.prove(record.seq);
    if (!verdict.proven) return this.#unproven(record, verdict.reason);
    // The scopes settled with the queue the fence proved finished; only now may they decide the outcome.
    const [v, o] = await Promise.all([validation.catch(() => null), oom.catch(() => null)]);
    if (v !== null || o !== null) {
      const cause = new TenonError(o !== null ? 'ENOMEM' : 'EINVAL', (o ?? v)!.message, {
        op: 'runtime.retire',
        reason: o !== null ? 'out-of-memory' : 'validation',
        ids: { submission: record.index },
      });
      return this.#retiredFailed(record, cause);
    }
    return this.#completed(record);
  }

  #admitHost(program: Program, inputs: AllocationGroup, fresh: AllocationGroup, bound: BoundWork): ExecutionHandle {
    const record = new RetirementRecord(++this.#index, program, inputs.take(), fresh.take(), bound.outputs);
    this.#inFlight.add(record);
    this.#stats.admitted++;
    const fail = this.#failHostNext;
    this.#failHostNext = false;
    record.outcome = nextMacrotask().then(() => {
      try {
        bound.run!();
        this.provider.meter.bump('dispatches', bound.dispatches);
        if (fail) throw new TenonError('EIO', 'injected host failure', { op: 'runtime.run', reason: 'injected' });
      } catch (err) {
        const cause = isTenonError(err) ? err : new TenonError('EIO', String(err), { op: 'runtime.run', reason: 'kernel-threw', cause: err });
        return this.#retiredFailed(record, cause);
      }
      return this.#completed(record);
    });
    return new ExecutionHandle(this, record);
  }

  #completed(record: RetirementRecord): Outcome {
    this.#inFlight.delete(record);
    record.program.settled?.(true);
    this.#stats.completed++;
    const bundle = new Bundle(record.inputs!, record.fresh!, record.outputs);
    record.inputs = record.fresh = undefined;
    return { kind: 'completed', bundle };
  }

  #retiredFailed(record: RetirementRecord, cause: TenonError): Outcome {
    this.#inFlight.delete(record);
    record.program.settled?.(true);
    this.#stats.retiredFailed++;
    const inputs = record.inputs!;
    record.fresh!.dispose();
    record.inputs = record.fresh = undefined;
    return { kind: 'retired-failed', cause, inputs };
  }

  #unproven(record: RetirementRecord, reason: string): Outcome {
    this.#inFlight.delete(record);
    record.program.settled?.(false);
    this.#stats.unproven++;
    const rootsRetained = record.inputs!.retainForever() + record.fresh!.retainForever();
    this.#retained.push(record);
    const diagnostics: UnprovenDiagnostics = Object.freeze({ index: record.index, program: record.program.name, reason, rootsRetained });
    const cause = new TenonError('ENODEV', `completion of submission ${record.index} cannot be proven: ${reason}`, {
      op: 'runtime.retire',
      reason: 'completion-unproven',
      ids: { submission: record.index },
    });
    return { kind: 'completion-unproven', cause, diagnostics };
  }
}

export function createRuntime(provider: Provider, options: RuntimeOptions = {}): Runtime {
  return new Runtime(provider, options);
}
