// Messages between a WorkerPool (page or main thread) and its workers. Type-only: both sides import it,
// neither sends anything it does not declare here. Payload bytes never travel in these messages: tensors
// are SharedArrayBuffer ranges that both threads see (host roots of a shared host provider).
import type { DType } from '../storage/index.js';
import type { FreshOutputSpec, StepValues } from './program.js';

/** A param value, or a reference to a step value resolved per submission: `{ $step: 'pos' }`. */
export type PoolParamValue = number | boolean | string | { readonly $step: string; readonly default?: number } | readonly PoolParamValue[] | { readonly [key: string]: PoolParamValue };

/** A graph that can cross threads: kernels by registered name, static params (with step references). */
export interface PoolGraphSpec {
  readonly name: string;
  readonly inputs: Readonly<Record<string, { readonly slot: number; readonly dtype: DType; readonly shape: readonly number[] }>>;
  readonly fresh?: readonly FreshOutputSpec[];
  readonly dispatches: readonly { readonly kernel: string; readonly bind: readonly string[]; readonly params: PoolParamValue }[];
  readonly outputs: readonly string[];
}

/** One tensor of a job: a range of shared memory the worker reads or writes in place. */
export interface SharedTensorRef {
  readonly buffer: SharedArrayBuffer;
  /** Byte offset of the typed array's first element in `buffer`. */
  readonly byteOffset: number;
  /** Elements in the typed array (the layout's envelope). */
  readonly length: number;
  /** Index of element [0, ...] in the typed array. */
  readonly elementOffset: number;
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** Whether any dispatch of the job writes it (the worker copies device results back only for these). */
  readonly written: boolean;
}

export type PoolProviderKind = 'host' | 'webgpu';

export interface PoolJob {
  readonly provider: PoolProviderKind;
  readonly graph: PoolGraphSpec;
  readonly tensors: Readonly<Record<string, SharedTensorRef>>;
  readonly step: StepValues;
}

/** A TenonError flattened for the structured clone (codes survive; classes do not cross threads). */
export interface WireError {
  readonly code: string;
  readonly op: string;
  readonly reason?: string;
  readonly message: string;
}

export type JobResult = { readonly ok: true; readonly dispatches: number } | { readonly ok: false; readonly error: WireError };

export interface WorkerInit {
  readonly workerId: string;
  /** Web Lock the worker holds for its whole life, so its death is observable (browser only). */
  readonly lockName?: string;
  /** Modules the worker imports for kernels; each exports `kernels: Kernel[]`. */
  readonly kernelModules: readonly string[];
  /** Whether the worker should create its own WebGPU runtime. */
  readonly gpu: boolean;
}

export interface WorkerInfo {
  readonly workerId: string;
  readonly kernels: readonly string[];
  readonly gpu: { readonly vendor: string; readonly architecture: string } | null;
}

export type JobStatus = { readonly ok: true; readonly state: 'running' | 'done' } | { readonly ok: false; readonly error: WireError };

/** The API a pool worker exposes over comlink. */
export interface PoolWorkerApi {
  init(config: WorkerInit): Promise<WorkerInfo>;
  run(jobId: string, job: PoolJob): Promise<JobResult>;
  status(jobId: string): Promise<JobStatus>;
  /** Cooperative shutdown: waits for running jobs, destroys the device, then the worker may exit. */
  shutdown(): Promise<void>;
  /** Fault seam: the worker's device is lost right after its next device submission is enqueued. */
  loseDeviceAfterNextEnqueue(silently: boolean): Promise<void>;
}
