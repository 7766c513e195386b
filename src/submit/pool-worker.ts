// The logic of one pool worker (the entry point in workers/pool.worker.ts only wires the thread).
//
// A worker runs jobs sent by its pool. Host jobs run the registered kernels directly over the job's
// SharedArrayBuffer ranges: no copy, the page sees the results in place. WebGPU jobs run on the worker's
// own device (one WebGPUProvider + Runtime per worker): inputs are uploaded (queue writes copy the shared
// bytes at call time, so the device never references shared memory), the graph runs with the runtime's
// proven retirement (a checked completion fence, src/submit/fence.ts, never a timing), and tensors the job
// writes are copied back into their shared ranges only after that proof. A job whose completion could not
// be proven reports ENODEV (reason completion-unproven) without writing anything back; its device copies
// stay retained forever by the worker's runtime. A job reports only after it stopped touching the shared
// memory, so the pool may treat the report as the proof for that memory.
// Job ids are the pool's capability ids; a worker answers `status` for ids it ran (ESTALE once reported)
// and EBADF for anything else. Single-threaded inside the worker.
import { TenonError, isTenonError } from '../errors.js';
import { createAllocationGroup, createWebGPUProvider, fromArray, typedArrayOver } from '../storage/index.js';
import type { AnyTypedArray, DescriptorSlot, WebGPUProvider } from '../storage/index.js';
import type { Kernel } from './kernel.js';
import type { JobResult, JobStatus, PoolJob, PoolParamValue, PoolWorkerApi, WireError, WorkerInfo, WorkerInit } from './pool-protocol.js';
import type { StepValues } from './program.js';
import { createRuntime } from './runtime.js';
import type { Runtime } from './runtime.js';
import type { CompiledGraph, GraphSpec } from './graph.js';

export interface PoolWorkerEnv {
  /** The GPU entry point of this thread, if any (navigator.gpu, or Dawn's in Node). */
  gpu(): Promise<GPU | undefined>;
  /** Holds a Web Lock for the life of the thread (browser), resolving once it is held, so the pool can observe our death. */
  holdLock?(name: string): Promise<void>;
  /** Kernels built into this worker bundle. */
  readonly builtinKernels: readonly Kernel<never>[];
  /** Ends the thread on its own once shutdown answered (closing its message port / self.close()). */
  exitSoon(): void;
}

export function toWire(err: unknown): WireError {
  if (isTenonError(err)) return { code: err.code, op: err.op, ...(err.reason !== undefined ? { reason: err.reason } : {}), message: err.message };
  return { code: 'EIO', op: 'worker', reason: 'worker-threw', message: String(err) };
}

/** Replaces every `{ $step: name }` in params with the step value (or its default). */
export function resolveParams(value: PoolParamValue, step: StepValues): unknown {
  if (Array.isArray(value)) return value.map((v) => resolveParams(v, step));
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, PoolParamValue>;
    if (typeof record['$step'] === 'string') {
      const v = step[record['$step']] ?? (record['default'] as number | undefined);
      if (typeof v !== 'number') throw new TenonError('EINVAL', `step value ${record['$step']} is missing`, { op: 'pool.params', reason: 'missing-step-value' });
      return v;
    }
    return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, resolveParams(v, step)]));
  }
  return value;
}

export function createPoolWorker(env: PoolWorkerEnv): PoolWorkerApi {
  const kernels = new Map<string, Kernel<never>>();
  for (const k of env.builtinKernels) kernels.set(k.name, k);
  let gpu: { provider: WebGPUProvider; runtime: Runtime; graphs: Map<string, CompiledGraph> } | undefined;
  const running = new Set<string>();
  const reported = new Set<string>();
  let closing = false;

  const kernelOf = (name: string): Kernel<never> => {
    const k = kernels.get(name);
    if (k === undefined) throw new TenonError('EINVAL', `no kernel named ${name} in this worker`, { op: 'worker.run', reason: 'unknown-kernel', ids: { kernel: name } });
    return k;
  };

  const arrayOf = (t: PoolJob['tensors'][string]): AnyTypedArray => typedArrayOver(t.dtype, t.buffer, t.byteOffset, t.length);

  /** Lets queued messages (status queries) in between two dispatches of a long host job. */
  const yieldToMessages = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

  async function runHost(job: PoolJob): Promise<number> {
    // Job tensors are contiguous: element 0 sits at elementOffset of each envelope array.
    const arrays = new Map<string, AnyTypedArray>();
    for (const [name, t] of Object.entries(job.tensors)) arrays.set(name, arrayOf(t).subarray(t.elementOffset) as AnyTypedArray);
    const plan = job.graph.dispatches.map((d) => {
      const kernel = kernelOf(d.kernel);
      const params = resolveParams(d.params, job.step) as never;
      kernel.check(d.bind.map((n) => ({ dtype: job.tensors[n]!.dtype, shape: job.tensors[n]!.shape, contiguous: true })), params);
      return { kernel, params, arrays: d.bind.map((n) => arrays.get(n)!) };
    });
    for (const { kernel, params, arrays: a } of plan) {
      kernel.host(params, a);
      await yieldToMessages();
    }
    return plan.length;
  }

  async function runDevice(job: PoolJob): Promise<number> {
    if (gpu === undefined) throw new TenonError('ENOTSUP', 'this worker has no WebGPU device', { op: 'worker.run', reason: 'no-device' });
    const { provider, runtime } = gpu;
    const group = createAllocationGroup();
    const slots = new Map<string, DescriptorSlot>();
    try {
      for (const [name, t] of Object.entries(job.tensors)) {
        const view = arrayOf(t).subarray(t.elementOffset, t.elementOffset + t.shape.reduce((a, b) => a * b, 1));
        slots.set(name, group.insert(await fromArray(provider, t.dtype, view as never, t.shape)).descriptor);
      }
    } catch (err) {
      group.dispose();
      throw err;
    }
    const key = JSON.stringify(job.graph);
    let graph = gpu.graphs.get(key);
    if (graph === undefined) {
      const spec: GraphSpec = {
        name: job.graph.name,
        inputs: Object.fromEntries(Object.entries(job.tensors).map(([name, t]) => [name, { slot: slots.get(name)!, dtype: t.dtype, shape: t.shape }])),
        dispatches: job.graph.dispatches.map((d) => ({ kernel: kernelOf(d.kernel), bind: d.bind, params: (step: StepValues) => resolveParams(d.params, step) as never })),
        outputs: [],
      };
      graph = runtime.compile(spec);
      gpu.graphs.set(key, graph);
    }
    const outcome = await (await runtime.submit(graph, group, { step: job.step })).wait();
    if (outcome.kind === 'completion-unproven') throw outcome.cause;
    if (outcome.kind === 'retired-failed') {
      outcome.inputs.dispose();
      throw outcome.cause;
    }
    const { group: done } = outcome.bundle.intoGroup();
    try {
      for (const [name, t] of Object.entries(job.tensors)) {
        if (!t.written) continue;
        using v = done.view(slots.get(name)!);
        const values = await v.toArray();
        arrayOf(t).set(values as never, t.elementOffset);
      }
    } finally {
      done.dispose();
    }
    return job.graph.dispatches.length;
  }

  return {
    async init(config: WorkerInit): Promise<WorkerInfo> {
      if (config.lockName !== undefined) await env.holdLock?.(config.lockName);
      for (const url of config.kernelModules) {
        const mod = (await import(/* @vite-ignore */ url)) as { kernels?: readonly Kernel<never>[] };
        for (const k of mod.kernels ?? []) kernels.set(k.name, k);
      }
      let info: WorkerInfo['gpu'] = null;
      if (config.gpu) {
        const entry = await env.gpu();
        if (entry !== undefined) {
          const provider = await createWebGPUProvider({ gpu: entry });
          gpu = { provider, runtime: createRuntime(provider), graphs: new Map() };
          info = { vendor: provider.adapterInfo.vendor, architecture: provider.adapterInfo.architecture };
        }
      }
      return { workerId: config.workerId, kernels: [...kernels.keys()], gpu: info };
    },

    async run(jobId: string, job: PoolJob): Promise<JobResult> {
      if (closing) return { ok: false, error: toWire(new TenonError('ECANCELED', 'worker is shutting down', { op: 'worker.run' })) };
      running.add(jobId);
      try {
        const dispatches = job.provider === 'host' ? await runHost(job) : await runDevice(job);
        return { ok: true, dispatches };
      } catch (err) {
        return { ok: false, error: toWire(err) };
      } finally {
        running.delete(jobId);
        reported.add(jobId);
      }
    },

    async status(jobId: string): Promise<JobStatus> {
      if (running.has(jobId)) return { ok: true, state: 'running' };
      if (reported.has(jobId)) return { ok: false, error: toWire(new TenonError('ESTALE', 'job already reported', { op: 'worker.status' })) };
      return { ok: false, error: toWire(new TenonError('EBADF', 'no such job', { op: 'worker.status' })) };
    },

    async shutdown(): Promise<void> {
      closing = true;
      while (running.size > 0) await new Promise((r) => setTimeout(r, 1));
      if (gpu !== undefined) {
        // Every record of the runtime reached its outcome through the fence (never by waiting on the queue).
        await gpu.runtime.idle();
        for (const g of gpu.graphs.values()) g.dispose();
        gpu.provider.destroy();
        await gpu.provider.lost;
        gpu = undefined;
      }
      env.exitSoon();
    },

    async loseDeviceAfterNextEnqueue(silently: boolean): Promise<void> {
      if (gpu === undefined) throw new TenonError('ENOTSUP', 'this worker has no WebGPU device', { op: 'worker.faults', reason: 'no-device' });
      gpu.runtime.faults.loseDeviceAt('after-enqueue', { silently });
    },
  };
}
