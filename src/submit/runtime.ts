// Runtime: detached owning submission with proven retirement (G3, G5) on one provider, plain or chained.
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
// Chains (G3-chain-*). `chain(program, group)` admits like submit and returns a ChainHandle;
// `chain(program, handle)` (or `handle.chain(program)`) admits the next member on the same group while the
// earlier one may still be in flight. The queue runs submissions in order, so the later member's work
// starts after the earlier one's: instead of waiting for proof, the earlier record passes its group on to
// the later record at admission (like a resource whose last use moves to a newer submission index), and
// only the newest member holds it. A member whose group moved on ends, after its own proof, `passed-on`
// (no owner; its readback and fresh outputs are delivered) or `passed-on-failed`. The group comes back only
// from the last member, after its proof, which (queue order, checked numbers) covers every earlier member.
// A proven last member that nobody has claimed yet is parked: still holding the group, which no GPU work
// uses any more, until wait() takes it (completed) or chain() passes it on. While any member is in flight
// the group is reachable from no host object at all. What the members share (ChainState) is sticky: the first
// error any member reports makes every later member passed-on-failed and the last retired-failed with
// that cause (they ran on possibly-bad state; the inputs come back only when the whole chain is proven),
// and refuses new members (EIO chain-failed); the first member that cannot be proven makes every later
// member completion-unproven too, and the group's roots are retained forever by the member holding it.
// Staged writes (TS-residency-stage-write). While a chain's newest member holds the group,
// `stageWrite(handle, slot, data)` writes host bytes into one of its allocations without waiting (the
// handle's surface is unchanged: the runtime does it), ordered after the members admitted so far
// and before the next one (queue order); it is refused (EBUSY slot-in-flight) when any member of the chain
// still in flight may bind that allocation: a compiled graph declares every slot it binds, so the runtime
// knows, per member, which allocations it may read. A proven member reads nothing any more.
// Readbacks (readback.ts). A submission may declare small ranges of its group; on WebGPU their copies and
// the submission's completion stamp end its command buffer in a pooled staging buffer, mapped right after
// queue.submit. A stamp that reads back the submission's own number proves it like a fence (fence.ts), so
// a step with a readback costs one map and no fence; the values are delivered only with a proven outcome.
// Proof on WebGPU is a completion fence (fence.ts): the record's sequence number, copied by the GPU into a
// staging buffer after the work and read back through mapAsync, which only a finished queue can satisfy
// and which rejects on a lost device. One checked map of sequence N proves every record <= N (records are
// proven in batches; one fence map is outstanding at a time). Nothing is decided on timing: neither
// onSubmittedWorkDone (it resolves on a lost device too, TOOLCHAIN.md) nor the absence of a loss signal
// (a driver reset can report late) counts, so a loss that becomes visible only later still ends as
// completion-unproven. Error scopes decide retired-failed only after the proof. On the host provider the
// kernels run on this thread, in admission order: their return is the proof.
// Disposing a handle only stops observing: the record still retires and then releases what it owns
// exactly once. The fence's and the readback pool's buffers live as long as the runtime.
// Thread: the runtime lives on the thread of its provider; GPU objects never leave it.
import { TenonError, isTenonError } from '../errors.js';
import { AllocationGroup, TensorView, WebGPUProvider, createAllocationGroup, zeros } from '../storage/index.js';
import type { AllocationSlot, AnyTypedArray, DescriptorSlot, HostProvider, PreparedHostRead, PreparedHostWrite, Provider, Tensor } from '../storage/index.js';
import { Bundle, SubmitRejected } from './outcome.js';
import type { ChainOutcome, Outcome, Readback, UnprovenDiagnostics } from './outcome.js';
import { CompletionFence } from './fence.js';
import type { FenceVerdict } from './fence.js';
import { CompiledGraph, PipelineCache } from './graph.js';
import type { GraphMeter, GraphSpec } from './graph.js';
import type { BoundWork, Program, StepValues } from './program.js';
import { HostExecutor } from './wasm/executor.js';
import type { HostKernelChoice, HostKernelStats } from './wasm/executor.js';
import { ReadbackPool, copyHostReadback, encodeReadback, planReadback } from './readback.js';
import type { ReadbackArrival, ReadbackPlan, ReadbackRequest } from './readback.js';

export interface RuntimeOptions {
  /**
   * Kernels on a host provider: `auto` (default) runs the WebAssembly SIMD kernels where the engine
   * validates them and the scalar twins elsewhere; `wasm` refuses (ENOTSUP) where they are unavailable;
   * `scalar` always runs the twins; `wasm-q8` is `wasm` with Q8_0 / Q4_0 / Q4_K / Q6_K qmatmuls that
   * quantize x to 8-bit blocks first (faster, with x's rounding error in the results; never chosen by
   * `auto`). Ignored on WebGPU.
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
  /** Make the next submission with a readback encode no stamp: its map reads an older number (WebGPU). */
  dropNextStamp(): void;
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
  /** Chain members that ended passed-on or passed-on-failed (their group moved on to a later member). */
  readonly passedOn: number;
  /** Members admitted onto a group held by an earlier member of their chain (in flight or parked). */
  readonly chained: number;
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
  /** Submissions proven by their own readback stamp, with no fence (WebGPU). */
  readonly stampProofs: number;
  /** queue.submit calls of this runtime: one per admitted WebGPU submission plus one per fence. */
  readonly queueSubmits: number;
  /** Host waits on the GPU: every map this runtime awaited (fence maps and readback maps). */
  readonly hostAwaits: number;
  /** Bytes of declared readback ranges copied to the host. */
  readonly bytesReadBack: number;
  /** GPU buffers this runtime created: fresh outputs, graph uniforms, fence and readback staging buffers. */
  readonly buffersCreated: number;
  /** Bind groups the graphs of this runtime created. */
  readonly bindGroupsCreated: number;
  /** Readback staging buffers created so far (at most READBACK_POOL_LIMIT, none per step once warm). */
  readonly readbackBuffers: number;
  /** Readback staging buffers whose map is in flight now. */
  readonly readbackBuffersInUse: number;
  /** Writes staged into a chain's group through stageWrite, and their bytes. */
  readonly stagedWrites: number;
  readonly stagedBytes: number;
  /** Staged writes issued while at least one member of their chain was in flight (upload beside compute). */
  readonly stagedWhileInFlight: number;
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
  /**
   * Small ranges of the group read back with this submission's proven outcome (READBACK_MAX_BYTES in
   * all): as the submission left them, also for a chain member whose group moved on.
   */
  readonly readback?: readonly ReadbackRequest[];
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const PROVEN: FenceVerdict = Object.freeze({ proven: true });
/** A record's `retired` before admission sets it: already settled (shared, not one per record). */
const SETTLED: Promise<void> = Promise.resolve();

/**
 * Runs `task` on a later macrotask: host runs are scheduled there so that submit() returns before the
 * kernels run (host scheduling only; it proves nothing). Tasks run in the order they were scheduled.
 * Where the engine has setImmediate (Node, Deno, Bun) it is used: one FIFO queue, no message port to
 * cross. Elsewhere (browsers) a MessageChannel, which avoids the 4 ms clamp browsers put on nested
 * setTimeout(0).
 */
const setImmediateOf = (globalThis as { setImmediate?: (task: () => void) => unknown }).setImmediate;
const macrotasks: (() => void)[] = [];
let channel: MessageChannel | undefined;
/** Node: the port keeps the process alive exactly while a macrotask is pending (browsers lack ref/unref). */
type RefPort = MessagePort & { ref?: () => void; unref?: () => void };
function onMacrotask(task: () => void): void {
  if (setImmediateOf !== undefined) {
    setImmediateOf(task);
    return;
  }
  if (channel === undefined) {
    const created = new MessageChannel();
    channel = created;
    created.port1.onmessage = () => {
      const next = macrotasks.shift();
      if (macrotasks.length === 0) (created.port1 as RefPort).unref?.();
      next?.();
    };
  }
  const port = channel.port1 as RefPort;
  if (macrotasks.length === 0) port.ref?.();
  macrotasks.push(task);
  channel.port2.postMessage(null);
}

/** Resolves on a later macrotask (see onMacrotask); the mutant completion-proof-by-timing awaits it. */
function nextMacrotask(): Promise<void> {
  return new Promise<void>((resolve) => onMacrotask(resolve));
}

/** Settles with `work`'s result (or rejects with what it throws), run on a later macrotask (see onMacrotask). */
function onMacrotaskRun<T>(work: () => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    onMacrotask(() => {
      try {
        resolve(work());
      } catch (err) {
        reject(err);
      }
    });
  });
}

/** What the members of one chain share; a plain submission has one of its own. */
interface ChainState {
  /** The first error a member reported (validation, out of memory, a host kernel); sticky. */
  failure: TenonError | undefined;
  /** Why the first unprovable member could not be proven; every later member is unproven too. */
  unproven: string | undefined;
}

type RecordState = 'in-flight' | 'parked' | 'decided';

class RetirementRecord {
  readonly index: number;
  readonly program: Program;
  readonly chain: ChainState;
  /** Admitted through chain(): its group may be passed on, and a proven, unclaimed record parks. */
  readonly extendable: boolean;
  /** The member before this one in its chain (decided first); cleared once this one retired. */
  previous: RetirementRecord | undefined;
  /** Position on the completion fence (WebGPU), assigned right after queue.submit; 0 on the host. */
  seq = 0;
  /**
   * Owned: the group, while this record is the newest member of its chain (always, for a plain
   * submission); moved to the next member when one is admitted.
   */
  inputs: AllocationGroup | undefined;
  /** Owned until the outcome is decided: this submission's fresh outputs. */
  fresh: AllocationGroup | undefined;
  readonly outputs: BoundWork['outputs'];
  readonly readback: ReadbackPlan | undefined;
  /** WebGPU: the readback map issued right after queue.submit. */
  arrival: Promise<ReadbackArrival> | undefined;
  /** Readback values, kept once the record is proven and delivered with its outcome. */
  values: Readback | undefined;
  successor: RetirementRecord | undefined;
  state: RecordState = 'in-flight';
  /** Resolves when the record left the in-flight set (decided or parked); never rejects. */
  retired: Promise<void> = SETTLED;
  /** Set while parked: decides the outcome now (completed or retired-failed). */
  unpark: (() => void) | undefined;
  /**
   * Chain members: the allocations of the group its program may bind (from the graph's declared inputs),
   * or undefined when unknown (treated as every allocation). A staged write never targets one of these
   * while the record is in flight.
   */
  binds: ReadonlySet<AllocationSlot> | undefined;
  /** A staged write into the group this record holds is running (no member is admitted meanwhile). */
  writing = false;
  readonly outcome: Promise<ChainOutcome>;
  readonly decide: (outcome: ChainOutcome) => void;
  detached = false;
  taken = false;

  constructor(
    index: number,
    program: Program,
    chain: ChainState,
    extendable: boolean,
    previous: RetirementRecord | undefined,
    inputs: AllocationGroup,
    fresh: AllocationGroup,
    outputs: BoundWork['outputs'],
    readback: ReadbackPlan | undefined,
  ) {
    this.index = index;
    this.program = program;
    this.chain = chain;
    this.extendable = extendable;
    this.previous = previous;
    this.inputs = inputs;
    this.fresh = fresh;
    this.outputs = outputs;
    this.readback = readback;
    let decide!: (outcome: ChainOutcome) => void;
    this.outcome = new Promise<ChainOutcome>((resolve) => (decide = resolve));
    this.decide = (outcome) => {
      this.state = 'decided';
      this.unpark = undefined;
      decide(outcome);
    };
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
    // A plain submission is never extendable, so it never ends passed-on.
    return record.outcome as Promise<Outcome>;
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

/**
 * Observes one member of a chain and can admit the next member on the same group (chain()). A chain is a
 * line: each member passes the group on at most once. Disposing it stops observation only.
 */
export class ChainHandle {
  readonly index: number;
  readonly #record: RetirementRecord;
  readonly #runtime: Runtime;

  constructor(runtime: Runtime, record: RetirementRecord) {
    this.#runtime = runtime;
    this.#record = record;
    this.index = record.index;
  }

  /**
   * The member's terminal outcome: passed-on / passed-on-failed when a later member took the group,
   * otherwise completed / retired-failed with the group, or completion-unproven. Claiming it ends the
   * chain at this member if it is the newest one and proven (the group comes back).
   */
  wait(): Promise<ChainOutcome> {
    const record = this.#record;
    if (record.detached) {
      return Promise.reject(new TenonError('ERELEASED', 'handle was disposed', { op: 'chainHandle.wait', ids: { submission: this.index } }));
    }
    record.taken = true;
    record.unpark?.();
    return record.outcome;
  }

  /** Admits the next member on this member's group: runtime.chain(program, this, options). */
  chain(program: Program, options: SubmitOptions = {}): Promise<ChainHandle> {
    return this.#runtime.chain(program, this, options);
  }

  /** Stops observing. If the outcome was not taken, the runtime releases what it carries once decided. */
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

/** Where the group of a new submission comes from: the caller, or the newest member of a chain. */
type Source = { readonly kind: 'caller'; readonly group: AllocationGroup } | { readonly kind: 'member'; readonly record: RetirementRecord; readonly check: () => void };

export class Runtime {
  readonly provider: HostProvider | WebGPUProvider;
  readonly faults: RuntimeFaults;
  #index = 0;
  readonly #inFlight = new Set<RetirementRecord>();
  /** Completion-unproven records: kept for the life of the runtime, never released. */
  readonly #retained: RetirementRecord[] = [];
  /** The record of every ChainHandle this runtime issued (a handle of another runtime is not in it). */
  readonly #members = new WeakMap<ChainHandle, RetirementRecord>();
  readonly #stats = {
    submitted: 0,
    rejected: 0,
    admitted: 0,
    completed: 0,
    retiredFailed: 0,
    unproven: 0,
    passedOn: 0,
    chained: 0,
    detachedReleases: 0,
    workSubmits: 0,
    readbackMaps: 0,
    bytesReadBack: 0,
    freshBuffers: 0,
    stagedWrites: 0,
    stagedBytes: 0,
    stagedWhileInFlight: 0,
  };
  /** The descriptor slots each graph compiled here declares as inputs (every slot it may bind). */
  readonly #graphInputs = new WeakMap<Program, readonly DescriptorSlot[]>();
  /**
   * Per graph: the allocations it binds, derived at one table epoch of its inputs. An epoch names one
   * table (it moves with take() and changes with every table change), so equal epochs give the same set.
   */
  readonly #bindsKept = new WeakMap<Program, { readonly epoch: number; readonly binds: ReadonlySet<AllocationSlot> }>();
  /** Pipelines of every graph compiled on this runtime, keyed by kernel and constants. */
  readonly #pipelines = new PipelineCache();
  /** Bind groups and buffers the graphs of this runtime created. */
  readonly #graphMeter: GraphMeter = { bindGroupsCreated: 0, buffersCreated: 0 };
  /** Completion proof of this runtime's queue (WebGPU only; made with the runtime, kept for its life). */
  readonly #fence: CompletionFence | undefined;
  /** Readback staging buffers (WebGPU only; created on demand, kept for the runtime's life). */
  readonly #readbacks: ReadbackPool | undefined;
  #lossAt: { readonly point: LossPoint; readonly silently: boolean } | undefined;
  #invalidNext = false;
  #dropStampNext = false;
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
    const usable = provider instanceof WebGPUProvider && !provider.lossObserved;
    this.#fence = usable ? new CompletionFence(provider, 'tenon runtime') : undefined;
    this.#readbacks = usable ? new ReadbackPool(provider) : undefined;
    this.faults = Object.freeze({
      loseDeviceAt: (point: LossPoint, options: LossOptions = {}) => {
        this.#lossAt = { point, silently: options.silently === true };
      },
      dropNextFenceCopy: () => {
        this.#fence?.dropNextCopy();
      },
      dropNextStamp: () => {
        this.#dropStampNext = true;
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
    const graph = new CompiledGraph(this, this.provider, spec, this.#pipelines, this.#host, this.#graphMeter);
    this.#graphInputs.set(graph, Object.values(spec.inputs ?? {}).map((decl) => decl.slot));
    return graph;
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
    const pool = this.#readbacks?.stats();
    const s = this.#stats;
    return {
      submitted: s.submitted,
      rejected: s.rejected,
      admitted: s.admitted,
      completed: s.completed,
      retiredFailed: s.retiredFailed,
      unproven: s.unproven,
      passedOn: s.passedOn,
      chained: s.chained,
      inFlight: this.#inFlight.size,
      retainedRecords: this.#retained.length,
      detachedReleases: s.detachedReleases,
      fences: fence?.fences ?? 0,
      fencesFailed: fence?.fencesFailed ?? 0,
      stampProofs: fence?.witnessed ?? 0,
      queueSubmits: s.workSubmits + (fence?.fences ?? 0),
      hostAwaits: s.readbackMaps + (fence?.fences ?? 0),
      bytesReadBack: s.bytesReadBack,
      buffersCreated: s.freshBuffers + this.#graphMeter.buffersCreated + (fence?.buffersCreated ?? 0) + (pool?.created ?? 0),
      bindGroupsCreated: this.#graphMeter.bindGroupsCreated,
      readbackBuffers: pool?.created ?? 0,
      readbackBuffersInUse: pool?.inUse ?? 0,
      stagedWrites: s.stagedWrites,
      stagedBytes: s.stagedBytes,
      stagedWhileInFlight: s.stagedWhileInFlight,
    };
  }

  /** Resolves once every record admitted so far left the in-flight set (by proof, never by time). */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight].map((r) => r.retired));
  }

  /**
   * Detached owning submission. Resolves with a handle once the work is admitted; rejects with
   * SubmitRejected (inputs untouched) for any failure before admission.
   */
  async submit(program: Program, inputs: AllocationGroup, options: SubmitOptions = {}): Promise<ExecutionHandle> {
    const record = await this.#admit('runtime.submit', program, { kind: 'caller', group: inputs }, options, false);
    return new ExecutionHandle(this, record);
  }

  /**
   * Chained submission (G3-chain-*). With a group: admits the first member of a chain, exactly like
   * submit (SubmitRejected, inputs untouched, for any failure before admission). With the handle of the
   * chain's newest member: admits the next member on the same group, which that member passes on at
   * admission even while its work is in flight (the queue runs them in order); a refusal rejects with a
   * TenonError and leaves the handle as it was (still chainable, its outcome unchanged).
   */
  async chain(program: Program, from: AllocationGroup | ChainHandle, options: SubmitOptions = {}): Promise<ChainHandle> {
    const op = 'runtime.chain';
    let source: Source;
    if (from instanceof ChainHandle) {
      const previous = this.#members.get(from);
      if (previous === undefined) {
        this.#stats.submitted++;
        this.#stats.rejected++;
        throw new TenonError('EINVAL', 'the handle belongs to another runtime', { op, reason: 'foreign-handle', ids: { submission: from.index } });
      }
      source = { kind: 'member', record: previous, check: () => this.#checkExtendable(previous, op) };
    } else {
      source = { kind: 'caller', group: from };
    }
    const record = await this.#admit(op, program, source, options, true);
    const handle = new ChainHandle(this, record);
    this.#members.set(handle, record);
    return handle;
  }

  /**
   * Staged write (TS-residency-stage-write): writes `data` into `slot` of the group held by the chain's
   * newest member `handle` without waiting for it, ordered on the queue after every member admitted so far and before
   * the next one (on WebGPU a queue.writeBuffer; on the host a copy before the next member's run). Allowed
   * only where no member of the chain that is still in flight (not yet proven) may bind the slot's
   * allocation: a member's graph declares every slot it binds, and a program whose inputs are unknown
   * counts as binding everything. Refused, with nothing written: EBUSY `slot-in-flight` (ids submission,
   * allocation) when an unproven member may read it; EBUSY `write-pending` while another staged write runs;
   * the chain() refusals of #checkExtendable (not the newest member, chain ended, failed or unproven);
   * ENODEV on a lost device. The slot must be a contiguous view of whole 4-byte words.
   */
  async stageWrite(handle: ChainHandle, slot: DescriptorSlot, data: Uint32Array | Float32Array): Promise<void> {
    const op = 'chain.write';
    const record = this.#members.get(handle);
    if (record === undefined) throw new TenonError('EINVAL', 'the handle belongs to another runtime', { op, reason: 'foreign-handle', ids: { submission: handle.index } });
    this.#checkExtendable(record, op);
    this.#checkDevice(op);
    const group = record.inputs!;
    const target = group.allocationOf(slot);
    let inFlight = 0;
    for (const r of this.#inFlight) {
      if (r.chain !== record.chain) continue;
      inFlight++;
      if (r.binds === undefined || r.binds.has(target)) {
        throw new TenonError('EBUSY', `submission ${r.index} may read allocation ${target} and is not proven complete`, { op, reason: 'slot-in-flight', ids: { submission: r.index, allocation: target } });
      }
    }
    record.writing = true;
    try {
      using m = group.viewMut(slot);
      await m.write(data as never);
    } finally {
      record.writing = false;
    }
    this.#stats.stagedWrites++;
    this.#stats.stagedBytes += data.byteLength;
    if (inFlight > 0) this.#stats.stagedWhileInFlight++;
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
    // A parked member is decided now; its group goes with the release below.
    record.unpark?.();
    void record.outcome.then((outcome) => {
      this.#stats.detachedReleases++;
      if (outcome.kind === 'completed') outcome.bundle.dispose();
      else if (outcome.kind === 'retired-failed') outcome.inputs.dispose();
      else if (outcome.kind === 'passed-on') outcome.fresh.dispose();
    });
  }

  /**
   * Everything up to admission, shared by submit and chain: checks, fresh outputs, binding, readback
   * plan and staging buffer, all before the group is touched; then the synchronous admission.
   */
  async #admit(op: string, program: Program, source: Source, options: SubmitOptions, extendable: boolean): Promise<RetirementRecord> {
    this.#stats.submitted++;
    const reject = (err: unknown): never => {
      this.#stats.rejected++;
      const cause = isTenonError(err) ? err : new TenonError('EINVAL', String(err), { op, reason: 'bind-failed', cause: err });
      if (source.kind === 'caller') throw new SubmitRejected(cause, source.group);
      throw cause;
    };
    const check = (): void => {
      if (source.kind === 'caller') this.#checkAdmissible(program, source.group, options, op);
      else {
        source.check();
        this.#checkProgram(program, options, op);
      }
    };
    try {
      check();
    } catch (err) {
      reject(err);
    }

    // Fresh outputs are allocated before anything touches the inputs, in a group of their own.
    const fresh = createAllocationGroup();
    const freshSlots: DescriptorSlot[] = [];
    try {
      for (const spec of program.fresh) {
        freshSlots.push(fresh.insert(await zeros(this.provider, spec.dtype, spec.shape)).descriptor);
        if (this.provider instanceof WebGPUProvider) this.#stats.freshBuffers++;
      }
      // The caller (or the chain) kept ownership while we awaited: check again.
      check();
    } catch (err) {
      fresh.dispose();
      reject(err);
    }

    // From here to admission nothing awaits, so the inputs cannot change under us.
    const inputs = source.kind === 'caller' ? source.group : source.record.inputs!;
    const target = this.provider instanceof WebGPUProvider ? 'device' : 'host';
    let bound: BoundWork;
    let readback: ReadbackPlan | undefined;
    let staging: GPUBuffer | undefined;
    try {
      if (this.#lossAt?.point === 'before-enqueue') this.#fireLoss();
      this.#checkDevice(op);
      // Readbacks are planned and their staging buffer taken before bind packs this replay's params.
      if (options.readback !== undefined && options.readback.length > 0) readback = planReadback(options.readback, inputs, target, op);
      if (readback !== undefined && this.#readbacks !== undefined) staging = this.#readbacks.acquire(op);
      bound = program.bind(inputs, fresh, freshSlots, options.step ?? {});
    } catch (err) {
      fresh.dispose();
      if (staging !== undefined) this.#readbacks!.unused(staging);
      return reject(err);
    }
    return this.provider instanceof WebGPUProvider
      ? this.#admitDevice(this.provider, program, source, inputs, fresh, bound, readback, staging, extendable, reject)
      : this.#admitHost(program, source, inputs, fresh, bound, readback, extendable);
  }

  /**
   * Moves the group into a new record: from the caller (its group object is moved), or from the chain's
   * newest member (which no longer holds it: passed on). The one place a group changes hands at admission.
   */
  #record(program: Program, source: Source, inputs: AllocationGroup, fresh: AllocationGroup, outputs: BoundWork['outputs'], readback: ReadbackPlan | undefined, extendable: boolean): RetirementRecord {
    const previous = source.kind === 'member' ? source.record : undefined;
    const chain: ChainState = previous?.chain ?? { failure: undefined, unproven: undefined };
    const binds = extendable ? this.#bindsOf(program, inputs) : undefined;
    const record = new RetirementRecord(++this.#index, program, chain, extendable, previous, inputs.take(), fresh.take(), outputs, readback);
    record.binds = binds;
    if (previous !== undefined) {
      previous.inputs = undefined;
      previous.successor = record;
      this.#stats.chained++;
      // A parked member was proven already: its outcome is decided now that the group moved on.
      if (previous.state === 'parked') this.#passOn(previous);
    }
    this.#inFlight.add(record);
    this.#stats.admitted++;
    return record;
  }

  /** The allocations of `group` a graph compiled here may bind (undefined: unknown, i.e. every one). */
  #bindsOf(program: Program, group: AllocationGroup): ReadonlySet<AllocationSlot> | undefined {
    const slots = this.#graphInputs.get(program);
    if (slots === undefined) return undefined;
    let epoch: number | undefined;
    try {
      epoch = group.dispatchEpoch();
    } catch {
      epoch = undefined;
    }
    const kept = this.#bindsKept.get(program);
    if (epoch !== undefined && kept !== undefined && kept.epoch === epoch) return kept.binds;
    try {
      const binds = new Set(slots.map((s) => group.allocationOf(s)));
      if (epoch !== undefined) this.#bindsKept.set(program, { epoch, binds });
      return binds;
    } catch {
      return undefined;
    }
  }

  /** Program-level checks (no group): a program of this runtime, no abort, a usable device. */
  #checkProgram(program: Program, options: SubmitOptions, op: string): void {
    if (program === null || typeof program !== 'object' || typeof program.bind !== 'function') {
      throw new TenonError('EINVAL', 'not a compiled program', { op, reason: 'bad-program' });
    }
    if (program.owner !== this || program.provider !== this.provider) {
      throw new TenonError('EINVAL', 'program was compiled for another runtime', { op, reason: 'foreign-program' });
    }
    if (options.signal?.aborted) throw new TenonError('ECANCELED', 'aborted before admission', { op, cause: options.signal.reason });
    this.#checkDevice(op);
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

  /** Whether `record` can pass its group on to a new member now (throws the reason it cannot). */
  #checkExtendable(record: RetirementRecord, op: string): void {
    const ids = { submission: record.index };
    if (record.detached) throw new TenonError('ERELEASED', 'handle was disposed', { op, ids });
    if (record.chain.unproven !== undefined) {
      throw new TenonError('ENODEV', `an earlier member of this chain is unproven: ${record.chain.unproven}`, { op, reason: 'chain-unproven', ids });
    }
    if (record.successor !== undefined) {
      throw new TenonError('EMOVED', `submission ${record.index} passed its group on to ${record.successor.index}`, { op, reason: 'chain-passed-on', ids });
    }
    if (record.inputs === undefined) throw new TenonError('EMOVED', 'the chain ended: its group went back to its owner', { op, reason: 'chain-ended', ids });
    if (record.writing) throw new TenonError('EBUSY', 'a staged write into this group is running', { op, reason: 'write-pending', ids });
    if (record.chain.failure !== undefined) {
      throw new TenonError('EIO', 'a member of this chain failed; wait for the last member to get the inputs back', { op, reason: 'chain-failed', ids, cause: record.chain.failure });
    }
  }

  #checkDevice(op: string): void {
    if (this.provider instanceof WebGPUProvider && this.provider.lossObserved) {
      throw new TenonError('ENODEV', 'device lost', { op, reason: 'device-lost', ids: { provider: this.provider.id } });
    }
  }

  #admitDevice(
    provider: WebGPUProvider,
    program: Program,
    source: Source,
    inputs: AllocationGroup,
    fresh: AllocationGroup,
    bound: BoundWork,
    readback: ReadbackPlan | undefined,
    staging: GPUBuffer | undefined,
    extendable: boolean,
    reject: (err: unknown) => never,
  ): RetirementRecord {
    const device = provider.device;
    const fence = this.#fence!;
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
      if (staging !== undefined) {
        // The readbacks and the completion stamp end this command buffer, after all of its work.
        encodeReadback(encoder, readback!, staging);
        if (this.#dropStampNext) this.#dropStampNext = false;
        else fence.stamp(encoder, staging, 0);
      }
      commands = encoder.finish();
    } catch (err) {
      void device.popErrorScope();
      void device.popErrorScope();
      fresh.dispose();
      if (staging !== undefined) this.#readbacks!.unused(staging);
      return reject(isTenonError(err) ? err : new TenonError('EINVAL', String(err), { op: 'runtime.submit', reason: 'encode-failed', cause: err }));
    }
    // Admission: the record owns everything from here; the caller's objects are moved.
    const record = this.#record(program, source, inputs, fresh, bound.outputs, readback, extendable);
    bound.upload?.(device.queue);
    device.queue.submit([commands]);
    this.#stats.workSubmits++;
    record.seq = fence.admitted();
    if (staging !== undefined) {
      record.arrival = this.#readbacks!.map(staging, readback!);
      this.#stats.readbackMaps++;
    }
    provider.meter.bump('dispatches', bound.dispatches);
    const oom = device.popErrorScope();
    const validation = device.popErrorScope();
    if (this.#lossAt?.point === 'after-enqueue') this.#fireLoss();
    record.retired = this.#retireDevice(fence, record, validation, oom);
    return record;
  }

  /** The loss seam: destroys the real device, reported at once or (silently) only when revealed. */
  #fireLoss(): void {
    const arm = this.#lossAt!;
    this.#lossAt = undefined;
    const faults = (this.provider as WebGPUProvider).faults;
    if (arm.silently) faults?.loseDeviceSilently();
    else faults?.loseDevice();
  }

  async #retireDevice(fence: CompletionFence, record: RetirementRecord, validation: Promise<GPUError | null>, oom: Promise<GPUError | null>): Promise<void> {
    // Proof first: only a checked stamp or fence map covering this record's sequence counts.
    const verdict = await this.#prove(fence, record);
    // Members of a chain are decided in order (an earlier member's proof is covered by this one's).
    await record.previous?.retired;
    record.previous = undefined; // a long chain must not keep every earlier record alive
    if (!verdict.proven) return this.#unproven(record, verdict.reason);
    if (record.chain.unproven !== undefined) return this.#unproven(record, record.chain.unproven);
    // The scopes settled with the queue the proof showed finished; only now may they decide the outcome.
    const [v, o] = await Promise.all([validation.catch(() => null), oom.catch(() => null)]);
    let failure: TenonError | undefined;
    if (v !== null || o !== null) {
      failure = new TenonError(o !== null ? 'ENOMEM' : 'EINVAL', (o ?? v)!.message, {
        op: 'runtime.retire',
        reason: o !== null ? 'out-of-memory' : 'validation',
        ids: { submission: record.index },
      });
    } else if (record.readback !== undefined && record.values === undefined) {
      // Proven by a fence, yet its own stamp never came back: its readback cannot be trusted.
      failure = new TenonError('EIO', `the readback of submission ${record.index} did not arrive`, { op: 'runtime.retire', reason: 'readback-lost', ids: { submission: record.index } });
    }
    this.#retire(record, failure);
  }

  /**
   * The proof of one record: its own stamp when it has a readback and the stamp read back its number,
   * otherwise a fence map covering it.
   */
  async #prove(fence: CompletionFence, record: RetirementRecord): Promise<FenceVerdict> {
    if (record.arrival !== undefined) {
      const arrival = await record.arrival;
      if (arrival.stamp === record.seq) {
        fence.witnessed(record.seq);
        record.values = arrival.values;
        this.#stats.bytesReadBack += record.readback!.bytes;
        return PROVEN;
      }
    }
    const verdict = await fence.prove(record.seq);
    return verdict;
  }

  #admitHost(program: Program, source: Source, inputs: AllocationGroup, fresh: AllocationGroup, bound: BoundWork, readback: ReadbackPlan | undefined, extendable: boolean): RetirementRecord {
    const record = this.#record(program, source, inputs, fresh, bound.outputs, readback, extendable);
    record.previous = undefined; // host runs are ordered by the macrotask queue
    const fail = this.#failHostNext;
    this.#failHostNext = false;
    // Host runs go in admission order (macrotasks are FIFO), so an earlier member has run and retired.
    record.retired = onMacrotaskRun(() => {
      // A chain whose earlier member failed runs no further kernels: its members end failed anyway.
      if (record.chain.failure !== undefined) return this.#retire(record, undefined);
      try {
        bound.run!();
        this.provider.meter.bump('dispatches', bound.dispatches);
        if (fail) throw new TenonError('EIO', 'injected host failure', { op: 'runtime.run', reason: 'injected' });
        if (readback !== undefined) {
          record.values = copyHostReadback(readback);
          this.#stats.bytesReadBack += readback.bytes;
        }
      } catch (err) {
        const cause = isTenonError(err) ? err : new TenonError('EIO', String(err), { op: 'runtime.run', reason: 'kernel-threw', cause: err });
        return this.#retire(record, cause);
      }
      return this.#retire(record, undefined);
    });
    return record;
  }

  /**
   * A proven record leaves the in-flight set: its group moved on (passed-on), or it is the newest member
   * and its outcome is decided now or, for an unclaimed chain member, when claimed (parked).
   */
  #retire(record: RetirementRecord, failure: TenonError | undefined): void {
    this.#inFlight.delete(record);
    record.program.settled?.(true);
    const chain = record.chain;
    if (failure !== undefined && chain.failure === undefined) chain.failure = failure;
    // Values read from possibly-bad state are never delivered.
    if (chain.failure !== undefined) record.values = undefined;
    if (record.successor !== undefined) return this.#passOn(record);
    if (record.extendable && !record.taken && !record.detached) {
      record.state = 'parked';
      record.unpark = () => this.#finish(record);
      return;
    }
    this.#finish(record);
  }

  /** Decides the outcome of a proven member whose group a later member holds. */
  #passOn(record: RetirementRecord): void {
    this.#stats.passedOn++;
    const fresh = record.fresh!;
    record.fresh = undefined;
    const cause = record.chain.failure;
    if (cause !== undefined) {
      fresh.dispose();
      record.decide({ kind: 'passed-on-failed', next: record.successor!.index, cause });
      return;
    }
    record.decide({ kind: 'passed-on', next: record.successor!.index, fresh, readback: record.values ?? [] });
  }

  /** Decides the outcome of a proven newest member: the group comes back. */
  #finish(record: RetirementRecord): void {
    const inputs = record.inputs!;
    const fresh = record.fresh!;
    record.inputs = record.fresh = undefined;
    const cause = record.chain.failure;
    if (cause !== undefined) {
      this.#stats.retiredFailed++;
      fresh.dispose();
      record.decide({ kind: 'retired-failed', cause, inputs });
      return;
    }
    this.#stats.completed++;
    record.decide({ kind: 'completed', bundle: new Bundle(inputs, fresh, record.outputs), readback: record.values ?? [] });
  }

  /**
   * No proof: every root the record holds (its fresh outputs, and the group if it is the newest member)
   * is retained forever; later members of its chain end here too.
   */
  #unproven(record: RetirementRecord, reason: string): void {
    this.#inFlight.delete(record);
    record.program.settled?.(false);
    this.#stats.unproven++;
    record.chain.unproven ??= reason;
    const rootsRetained = (record.inputs?.retainForever() ?? 0) + record.fresh!.retainForever();
    record.inputs = record.fresh = record.values = undefined;
    this.#retained.push(record);
    const diagnostics: UnprovenDiagnostics = Object.freeze({ index: record.index, program: record.program.name, reason, rootsRetained });
    const cause = new TenonError('ENODEV', `completion of submission ${record.index} cannot be proven: ${reason}`, {
      op: 'runtime.retire',
      reason: 'completion-unproven',
      ids: { submission: record.index },
    });
    record.decide({ kind: 'completion-unproven', cause, diagnostics });
  }
}

export function createRuntime(provider: Provider, options: RuntimeOptions = {}): Runtime {
  return new Runtime(provider, options);
}

