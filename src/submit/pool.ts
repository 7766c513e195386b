// WorkerPool: detached submissions that run in worker threads (Web Workers in a browser, worker_threads in
// Node), over host tensors in SharedArrayBuffer memory that both threads see without copying.
//
// Ownership. submit() checks everything on this thread first (kernels, slots, dtypes, shapes, write
// disjointness, params); a failure there throws SubmitRejected with the inputs untouched. Admission moves
// the inputs group (and the freshly allocated outputs) into a pool record, then the job goes to one worker.
// The record owns them until the worker reports: a report is sent only after the job's work retired in
// the worker, so it proves completion (completed / retired-failed). WebGPU jobs retire in the worker by the
// same completion fence as any runtime (src/submit/fence.ts); the device only ever holds copies of the
// shared bytes, so a device job the worker could not prove still ends this record: retired-failed with
// cause ENODEV (reason completion-unproven), nothing written back. If the worker dies first (terminated,
// crashed), completion cannot be proven: the record retains every root forever and the outcome is
// completion-unproven; jobs on other workers are unaffected.
// Death is observed through production signals only: a Web Lock each browser worker holds for life (the
// pool's request for it is granted when the worker dies), the worker's error event, or Node's exit event.
// Capability ids: every admitted job has an unguessable id bound to this pool; attach(id) answers EBADF
// for ids this pool never issued and ESTALE for ids whose outcome was already taken.
// Thread: the pool lives on the thread that created it; workers own their devices.
import * as Comlink from 'comlink';
import { TenonError, isTenonError } from '../errors.js';
import { AllocationGroup, HostProvider, createAllocationGroup, zeros } from '../storage/index.js';
import type { DescriptorSlot, DispatchBindingRequest, HostBindingState } from '../storage/index.js';
import type { Kernel } from './kernel.js';
import { Bundle, SubmitRejected } from './outcome.js';
import type { Outcome } from './outcome.js';
import type { JobResult, PoolGraphSpec, PoolJob, PoolProviderKind, PoolWorkerApi, SharedTensorRef, WireError, WorkerInfo } from './pool-protocol.js';
import { resolveParams } from './pool-worker.js';
import type { OutputRef, StepValues } from './program.js';
import { builtinKernels } from './builtin-kernels.js';
import { nodePoolWorkerUrl, startPoolWorker } from './pool-entry.js';

export interface WorkerPoolOptions {
  /** Host provider with shared memory: inputs must live on it, fresh outputs are allocated on it. */
  readonly provider: HostProvider;
  /** Number of workers (default 2). */
  readonly size?: number;
  /** Kernels the pool checks jobs against on this thread (the op library is always included). */
  readonly kernels?: readonly Kernel<never>[];
  /** Modules each worker imports for extra kernels (`export const kernels: Kernel[]`), as URLs. */
  readonly kernelModules?: readonly string[];
  /**
   * Whether workers create their own WebGPU device (needed for `provider: 'webgpu'` jobs). In Node each
   * worker_threads worker gets its own Dawn instance; terminating one mid-GPU-work can abort the process
   * (TOOLCHAIN.md), so Node pools are ended with close(), which lets workers finish and exit by themselves.
   */
  readonly gpu?: boolean;
  /** Worker script; defaults to the bundled pool worker. Node needs the built JavaScript file. */
  readonly workerUrl?: string | URL;
}

export interface PoolSubmitOptions {
  readonly step?: StepValues;
  /** Where the job runs: host kernels over shared memory, or the worker's own WebGPU device. */
  readonly provider?: PoolProviderKind;
  /** Worker index; round-robin over live workers by default. */
  readonly worker?: number;
}

export interface PoolStats {
  readonly workers: number;
  readonly alive: number;
  readonly admitted: number;
  readonly rejected: number;
  readonly completed: number;
  readonly retiredFailed: number;
  readonly unproven: number;
  readonly inFlight: number;
  /** Workers ended because their death could no longer be observed (a refused Web Lock watch). */
  readonly lockWatchFailures: number;
}

/** Named fault-injection seams: end a worker through the platform's own terminate(), or lose its device. */
export interface PoolFaults {
  terminateWorker(index: number): void;
  /** The worker's device is lost right after its next device submission is enqueued (silently: reported late). */
  loseWorkerDevice(index: number, options?: { readonly silently?: boolean }): Promise<void>;
  /** The next worker started (create, replaceWorker) watches its lock under a name Web Locks refuses. */
  refuseNextLockWatch(): void;
}

interface WorkerSlot {
  readonly index: number;
  readonly id: string;
  readonly kill: () => void;
  readonly api: Comlink.Remote<PoolWorkerApi>;
  readonly info: WorkerInfo;
  alive: boolean;
  readonly jobs: Set<PoolRecord>;
  /** Resolves when the worker's end was observed (exit, crash, termination, lock released). */
  readonly exited: Promise<void>;
}

interface PoolRecord {
  readonly id: string;
  readonly program: string;
  worker: WorkerSlot;
  inputs: AllocationGroup | undefined;
  fresh: AllocationGroup | undefined;
  readonly outputs: readonly OutputRef[];
  settle: (outcome: Outcome) => void;
  readonly outcome: Promise<Outcome>;
  state: 'draining' | 'settled';
  taken: boolean;
}

/** How long close() waits for a browser worker to end itself before terminating it. */
const CLOSE_GRACE_MS = 2000;

/** Remembered ids of jobs whose outcome was taken (for ESTALE); bounded. */
const STALE_MEMORY = 4096;

function newCapabilityId(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function fromWire(error: WireError): TenonError {
  return new TenonError(error.code as TenonError['code'], error.message, { op: error.op, ...(error.reason !== undefined ? { reason: error.reason } : {}) });
}

const inNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string' && typeof window === 'undefined';

async function spawn(url: string | URL | undefined): Promise<{ api: Comlink.Remote<PoolWorkerApi>; kill: () => void; onDeath: (cb: () => void) => void }> {
  if (inNode) {
    const { Worker } = await import('node:worker_threads');
    const { default: nodeEndpoint } = await import('comlink/dist/esm/node-adapter.mjs');
    const worker = new Worker(url ?? nodePoolWorkerUrl());
    const deaths: (() => void)[] = [];
    worker.on('exit', () => deaths.splice(0).forEach((cb) => cb()));
    worker.on('error', () => void worker.terminate());
    return {
      api: Comlink.wrap<PoolWorkerApi>(nodeEndpoint(worker as never)),
      kill: () => void worker.terminate(),
      onDeath: (cb) => deaths.push(cb),
    };
  }
  const worker = url === undefined ? startPoolWorker() : new Worker(url, { type: 'module' });
  const deaths: (() => void)[] = [];
  worker.addEventListener('error', () => {
    worker.terminate();
    deaths.splice(0).forEach((cb) => cb());
  });
  return { api: Comlink.wrap<PoolWorkerApi>(worker), kill: () => worker.terminate(), onDeath: (cb) => deaths.push(cb) };
}

export class WorkerPool {
  readonly provider: HostProvider;
  readonly faults: PoolFaults;
  readonly #id = newCapabilityId();
  readonly #options: WorkerPoolOptions;
  readonly #kernels = new Map<string, Kernel<never>>();
  readonly #workers: WorkerSlot[] = [];
  readonly #records = new Map<string, PoolRecord>();
  readonly #stale = new Set<string>();
  /** Records of dead workers: their roots are retained forever, and so are the records. */
  readonly #retained: PoolRecord[] = [];
  #next = 0;
  #closed = false;
  readonly #stats = { admitted: 0, rejected: 0, completed: 0, retiredFailed: 0, unproven: 0, lockWatchFailures: 0 };
  #refuseLockWatch = false;

  private constructor(options: WorkerPoolOptions) {
    this.#options = options;
    this.provider = options.provider;
    for (const k of [...builtinKernels, ...(options.kernels ?? [])]) this.#kernels.set(k.name, k);
    this.faults = Object.freeze({
      terminateWorker: (index: number) => {
        const slot = this.#slot(index, 'pool.faults.terminateWorker');
        slot.kill();
      },
      loseWorkerDevice: async (index: number, options: { readonly silently?: boolean } = {}) => {
        const slot = this.#slot(index, 'pool.faults.loseWorkerDevice');
        await slot.api.loseDeviceAfterNextEnqueue(options.silently === true);
      },
      refuseNextLockWatch: () => {
        this.#refuseLockWatch = true;
      },
    });
  }

  static async create(options: WorkerPoolOptions): Promise<WorkerPool> {
    const op = 'createWorkerPool';
    if (!(options?.provider instanceof HostProvider) || !options.provider.capabilities.sharedMemory) {
      throw new TenonError('EINVAL', 'a pool needs a host provider with shared memory', { op, reason: 'not-shared-memory' });
    }
    const size = options.size ?? 2;
    if (!Number.isSafeInteger(size) || size < 1) throw new TenonError('EINVAL', 'size must be a positive integer', { op, reason: 'bad-size' });
    const pool = new WorkerPool(options);
    try {
      for (let i = 0; i < size; i++) pool.#workers.push(await pool.#start(i));
    } catch (err) {
      for (const w of pool.#workers) w.kill();
      throw err;
    }
    return pool;
  }

  /** Information each worker reported at start (kernels, GPU adapter). */
  workers(): readonly { index: number; alive: boolean; info: WorkerInfo }[] {
    return this.#workers.map((w) => ({ index: w.index, alive: w.alive, info: w.info }));
  }

  stats(): PoolStats {
    let inFlight = 0;
    for (const r of this.#records.values()) if (r.state === 'draining') inFlight++;
    return { workers: this.#workers.length, alive: this.#workers.filter((w) => w.alive).length, ...this.#stats, inFlight };
  }

  /** Detached submission to a worker. Rejects with SubmitRejected (inputs untouched) before admission. */
  async submit(spec: PoolGraphSpec, inputs: AllocationGroup, options: PoolSubmitOptions = {}): Promise<PoolHandle> {
    const reject = (err: unknown): never => {
      this.#stats.rejected++;
      throw new SubmitRejected(isTenonError(err) ? err : new TenonError('EINVAL', String(err), { op: 'pool.submit', reason: 'bad-job', cause: err }), inputs);
    };
    let worker: WorkerSlot;
    try {
      worker = this.#check(spec, inputs, options);
    } catch (err) {
      return reject(err);
    }
    const fresh = createAllocationGroup();
    const freshSlots: DescriptorSlot[] = [];
    let job: PoolJob;
    try {
      for (const f of spec.fresh ?? []) freshSlots.push(fresh.insert(await zeros(this.provider, f.dtype, f.shape)).descriptor);
      worker = this.#check(spec, inputs, options); // ownership stayed with the caller while we awaited
      job = this.#bind(spec, inputs, fresh, freshSlots, options);
    } catch (err) {
      fresh.dispose();
      return reject(err);
    }
    const names = new Map<string, OutputRef>();
    for (const [name, decl] of Object.entries(spec.inputs)) names.set(name, { from: 'inputs', slot: decl.slot as DescriptorSlot });
    (spec.fresh ?? []).forEach((f, i) => names.set(f.name, { from: 'fresh', slot: freshSlots[i]! }));
    // Admission: from here the record owns the groups.
    let settle!: (o: Outcome) => void;
    const outcome = new Promise<Outcome>((resolve) => (settle = resolve));
    const record: PoolRecord = {
      id: newCapabilityId(),
      program: spec.name,
      worker,
      inputs: inputs.take(),
      fresh: fresh.take(),
      outputs: spec.outputs.map((n) => names.get(n)!),
      settle,
      outcome,
      state: 'draining',
      taken: false,
    };
    this.#records.set(record.id, record);
    worker.jobs.add(record);
    this.#stats.admitted++;
    void worker.api.run(record.id, job).then(
      (result) => this.#report(record, result),
      (err: unknown) => this.#report(record, { ok: false, error: { code: 'EIO', op: 'pool.run', reason: 'transport', message: String(err) } }),
    );
    return new PoolHandle(this, record.id);
  }

  /** A handle for a capability id received from elsewhere. EBADF if this pool never issued it, ESTALE if used up. */
  attach(id: string): PoolHandle {
    this.#record(id, 'pool.attach');
    return new PoolHandle(this, id);
  }

  /** The worker's own view of a job: 'running' or 'done'; EBADF / ESTALE like attach. */
  async status(id: string): Promise<'running' | 'done'> {
    const record = this.#record(id, 'pool.status');
    if (record.state === 'settled') return 'done';
    if (!record.worker.alive) throw new TenonError('ENXIO', 'the job\'s worker is gone', { op: 'pool.status', reason: 'worker-dead' });
    const s = await record.worker.api.status(id);
    if (!s.ok) {
      if (s.error.code === 'ESTALE') return 'done';
      throw fromWire(s.error);
    }
    return s.state;
  }

  /** Starts a new worker in the place of a dead one. */
  async replaceWorker(index: number): Promise<void> {
    const slot = this.#slot(index, 'pool.replaceWorker');
    if (slot.alive) throw new TenonError('EBUSY', `worker ${index} is alive`, { op: 'pool.replaceWorker', reason: 'alive' });
    this.#workers[index] = await this.#start(index);
  }

  /** Cooperative shutdown: waits for in-flight jobs, lets workers release their devices, then ends them. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#records.values()].filter((r) => r.state === 'draining').map((r) => r.outcome));
    for (const w of this.#workers) {
      if (!w.alive) continue;
      await w.api.shutdown();
      // The worker ends itself after shutdown (terminating a Node worker mid-GPU-work can abort the
      // process, TOOLCHAIN.md); a browser worker that lingers is terminated after a grace period.
      await Promise.race([w.exited, new Promise((r) => setTimeout(r, CLOSE_GRACE_MS))]);
      w.alive = false;
      if (!inNode) w.kill();
    }
  }

  /** @internal used by PoolHandle */
  take(id: string, op: string): Promise<Outcome> {
    const record = this.#record(id, op);
    record.taken = true;
    return record.outcome.then((o) => {
      this.#records.delete(id);
      this.#remember(id);
      return o;
    });
  }

  /** @internal used by PoolHandle */
  detach(id: string): void {
    const record = this.#records.get(id);
    if (record === undefined || record.taken) return;
    record.taken = true;
    void record.outcome.then((o) => {
      this.#records.delete(id);
      this.#remember(id);
      if (o.kind === 'completed') o.bundle.dispose();
      else if (o.kind === 'retired-failed') o.inputs.dispose();
    });
  }

  async #start(index: number): Promise<WorkerSlot> {
    const { api, kill, onDeath } = await spawn(this.#options.workerUrl);
    const id = `${this.#id}:${index}:${newCapabilityId().slice(0, 8)}`;
    const lockName = !inNode && typeof navigator !== 'undefined' && navigator.locks !== undefined ? `tenon-pool:${id}` : undefined;
    let info: WorkerInfo;
    try {
      info = await api.init({
        workerId: id,
        ...(lockName !== undefined ? { lockName } : {}),
        kernelModules: [...(this.#options.kernelModules ?? [])],
        gpu: this.#options.gpu === true,
      });
    } catch (err) {
      kill();
      throw err;
    }
    let markExited!: () => void;
    const exited = new Promise<void>((resolve) => (markExited = resolve));
    const slot: WorkerSlot = { index, id, kill, api, info, alive: true, jobs: new Set(), exited };
    const died = (): void => {
      this.#died(slot);
      markExited();
    };
    onDeath(died);
    // The worker holds this lock for its whole life; our request is granted only when it dies. A watch
    // that fails would leave the worker's death unseen, so the worker is ended at once and its jobs become
    // completion-unproven (reason lock-watch-failed): nothing runs where loss could go unnoticed.
    if (lockName !== undefined) {
      // Seam: Web Locks refuses names that start with '-', so the production failure path runs.
      const watched = this.#refuseLockWatch ? `-${lockName}` : lockName;
      this.#refuseLockWatch = false;
      navigator.locks.request(watched, () => died()).catch(() => {
        if (!slot.alive) return;
        this.#stats.lockWatchFailures++;
        slot.kill();
        this.#died(slot, 'lock-watch-failed');
        markExited();
      });
    }
    return slot;
  }

  #died(slot: WorkerSlot, reason: 'worker-died' | 'lock-watch-failed' = 'worker-died'): void {
    if (!slot.alive && slot.jobs.size === 0) return;
    slot.alive = false;
    for (const record of [...slot.jobs]) {
      if (record.state !== 'draining') continue;
      const rootsRetained = record.inputs!.retainForever() + record.fresh!.retainForever();
      record.inputs = record.fresh = undefined;
      record.state = 'settled';
      slot.jobs.delete(record);
      this.#retained.push(record);
      this.#stats.unproven++;
      record.settle({
        kind: 'completion-unproven',
        cause: new TenonError('ENODEV', `worker ${slot.index} ended before job ${record.program} reported`, { op: 'pool.retire', reason }),
        diagnostics: Object.freeze({ index: slot.index, program: record.program, reason, rootsRetained }),
      });
    }
  }

  #report(record: PoolRecord, result: JobResult): void {
    if (record.state !== 'draining' || !record.worker.alive) return; // already unproven
    record.state = 'settled';
    record.worker.jobs.delete(record);
    const inputs = record.inputs!;
    const fresh = record.fresh!;
    record.inputs = record.fresh = undefined;
    if (result.ok) {
      this.#stats.completed++;
      record.settle({ kind: 'completed', bundle: new Bundle(inputs, fresh, record.outputs) });
    } else {
      this.#stats.retiredFailed++;
      fresh.dispose();
      record.settle({ kind: 'retired-failed', cause: fromWire(result.error), inputs });
    }
  }

  #remember(id: string): void {
    this.#stale.add(id);
    if (this.#stale.size > STALE_MEMORY) this.#stale.delete(this.#stale.values().next().value!);
  }

  #record(id: string, op: string): PoolRecord {
    const record = typeof id === 'string' ? this.#records.get(id) : undefined;
    if (record === undefined || record.taken) {
      if (typeof id === 'string' && (this.#stale.has(id) || record?.taken)) {
        throw new TenonError('ESTALE', 'job outcome was already taken', { op, reason: 'stale-id' });
      }
      throw new TenonError('EBADF', 'not a job id of this pool', { op, reason: 'unknown-id' });
    }
    return record;
  }

  #slot(index: number, op: string): WorkerSlot {
    const slot = Number.isSafeInteger(index) ? this.#workers[index] : undefined;
    if (slot === undefined) throw new TenonError('EINVAL', `no worker ${String(index)}`, { op, reason: 'bad-worker' });
    return slot;
  }

  #check(spec: PoolGraphSpec, inputs: AllocationGroup, options: PoolSubmitOptions): WorkerSlot {
    const op = 'pool.submit';
    if (this.#closed) throw new TenonError('ECANCELED', 'pool is closed', { op, reason: 'closed' });
    if (!(inputs instanceof AllocationGroup)) throw new TenonError('EINVAL', 'inputs must be an AllocationGroup', { op, reason: 'bad-inputs' });
    if (inputs.moved) throw new TenonError('EMOVED', 'inputs were already consumed', { op });
    if (spec === null || typeof spec !== 'object' || typeof spec.name !== 'string' || !Array.isArray(spec.dispatches) || !Array.isArray(spec.outputs)) {
      throw new TenonError('EINVAL', 'malformed pool graph', { op, reason: 'bad-graph' });
    }
    const kind = options.provider ?? 'host';
    if (kind !== 'host' && kind !== 'webgpu') throw new TenonError('EINVAL', 'provider must be host or webgpu', { op, reason: 'bad-provider' });
    const alive = this.#workers.filter((w) => w.alive && (kind === 'host' || w.info.gpu !== null));
    if (kind === 'webgpu' && this.#workers.every((w) => w.info.gpu === null)) {
      throw new TenonError('ENOTSUP', 'no worker of this pool has a WebGPU device', { op, reason: 'no-device' });
    }
    if (options.worker !== undefined) {
      const w = this.#slot(options.worker, op);
      if (!w.alive) throw new TenonError('ENXIO', `worker ${options.worker} is dead`, { op, reason: 'worker-dead' });
      return w;
    }
    if (alive.length === 0) throw new TenonError('ENXIO', 'no live worker', { op, reason: 'worker-dead' });
    return alive[this.#next++ % alive.length]!;
  }

  #bind(spec: PoolGraphSpec, inputs: AllocationGroup, fresh: AllocationGroup, freshSlots: readonly DescriptorSlot[], options: PoolSubmitOptions): PoolJob {
    const op = 'pool.submit';
    const step = options.step ?? {};
    const decls = new Map<string, { from: 'inputs' | 'fresh'; slot: DescriptorSlot; dtype: string; shape: readonly number[] }>();
    for (const [name, d] of Object.entries(spec.inputs ?? {})) decls.set(name, { from: 'inputs', slot: d.slot as DescriptorSlot, dtype: d.dtype, shape: d.shape });
    (spec.fresh ?? []).forEach((f, i) => {
      if (decls.has(f.name)) throw new TenonError('EINVAL', `tensor name ${f.name} used twice`, { op, reason: 'duplicate-name' });
      decls.set(f.name, { from: 'fresh', slot: freshSlots[i]!, dtype: f.dtype, shape: f.shape });
    });
    const tensors: Record<string, SharedTensorRef> = {};
    const written = new Set<string>();
    spec.dispatches.forEach((d, i) => {
      const kernel = this.#kernels.get(d.kernel);
      if (kernel === undefined) throw new TenonError('EINVAL', `unknown kernel ${d.kernel}`, { op, reason: 'unknown-kernel', ids: { dispatch: i } });
      if (!Array.isArray(d.bind) || d.bind.length !== kernel.bindings.length) {
        throw new TenonError('EINVAL', `${kernel.name} takes ${kernel.bindings.length} bindings`, { op, reason: 'binding-count', ids: { dispatch: i } });
      }
      const refs = d.bind.map((name) => {
        const ref = decls.get(name);
        if (ref === undefined) throw new TenonError('EINVAL', `unknown tensor ${name}`, { op, reason: 'unknown-name', ids: { name } });
        return { name, ...ref };
      });
      kernel.check(refs.map((r) => ({ dtype: r.dtype as never, shape: r.shape, contiguous: true })), resolveParams(d.params, step) as never);
      // Disjointness of this dispatch's writes, per group, through the kernel's own proof.
      const states = new Map<string, HostBindingState>();
      for (const from of ['inputs', 'fresh'] as const) {
        const part = refs.map((r, j) => ({ r, j })).filter(({ r }) => r.from === from);
        if (part.length === 0) continue;
        const requests: DispatchBindingRequest[] = part.map(({ r, j }) => ({ slot: r.slot, access: kernel.bindings[j]!.access === 'read' ? 'read' : 'write' }));
        const got = (from === 'inputs' ? inputs : fresh).prepareDispatch(requests, 'host');
        part.forEach(({ r }, k) => states.set(r.name, got[k]!));
      }
      refs.forEach((r, j) => {
        const s = states.get(r.name)!;
        const sameShape = s.layout.shape.length === r.shape.length && s.layout.shape.every((n, k) => n === r.shape[k]);
        if (s.layout.dtype !== r.dtype || !sameShape || s.layout.kind !== 'contiguous') {
          throw new TenonError('EINVAL', `slot for ${r.name} does not hold the declared tensor`, { op, reason: 'input-mismatch', ids: { name: r.name } });
        }
        if (!(s.array.buffer instanceof SharedArrayBuffer)) {
          throw new TenonError('EINVAL', `${r.name} is not in shared memory`, { op, reason: 'not-shared-memory', ids: { name: r.name } });
        }
        if (kernel.bindings[j]!.access !== 'read') written.add(r.name);
        tensors[r.name] = {
          buffer: s.array.buffer,
          byteOffset: s.array.byteOffset,
          length: s.array.length,
          elementOffset: s.elementOffset,
          dtype: s.layout.dtype,
          shape: s.layout.shape,
          written: false,
        };
      });
    });
    for (const name of spec.outputs) if (!decls.has(name)) throw new TenonError('EINVAL', `unknown output ${name}`, { op, reason: 'unknown-name', ids: { name } });
    for (const name of written) tensors[name] = { ...tensors[name]!, written: true };
    return { provider: options.provider ?? 'host', graph: spec, tensors, step };
  }
}

/** Observes one pool job through its capability id. */
export class PoolHandle {
  readonly id: string;
  readonly #pool: WorkerPool;

  constructor(pool: WorkerPool, id: string) {
    this.#pool = pool;
    this.id = id;
  }

  /** The terminal outcome; its owners belong to the caller. A second taker gets ESTALE. */
  wait(): Promise<Outcome> {
    try {
      return this.#pool.take(this.id, 'poolHandle.wait');
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Stops observing; the pool releases the owners when the job retires. */
  dispose(): void {
    this.#pool.detach(this.id);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

export function createWorkerPool(options: WorkerPoolOptions): Promise<WorkerPool> {
  return WorkerPool.create(options);
}
