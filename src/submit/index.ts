// Public face of the execution layer (src/submit): compiled graphs, detached submission with proven
// retirement (plain or chained on a live group, with small pooled readbacks), terminal outcomes and
// bundles, and the kernel interface ops implement.
export { Runtime, ExecutionHandle, ChainHandle, createRuntime } from './runtime.js';
export type { LossOptions, LossPoint, RuntimeFaults, RuntimeOptions, RuntimeStats, ScopedOutcome, ScopedOutput, SubmitOptions } from './runtime.js';
export type { HostKernelChoice, HostKernelCount, HostKernelKind, HostKernelStats } from './wasm/executor.js';
export type { WasmKernelSet } from './wasm/kernels.js';
export { hostKernelFaults, wasmKernelsAvailable } from './wasm/kernels.js';
export { Bundle, SubmitRejected } from './outcome.js';
export type { ChainOutcome, Outcome, Readback, UnprovenDiagnostics } from './outcome.js';
export { READBACK_MAX_BYTES, READBACK_POOL_LIMIT } from './readback.js';
export type { ReadbackRequest } from './readback.js';
export { CompiledGraph } from './graph.js';
export type { DispatchSpec, GraphInput, GraphSpec, GraphStats } from './graph.js';
export type { BoundWork, FreshOutputSpec, OutputRef, Program, StepValues } from './program.js';
export type { BoundShape, Kernel, KernelAccess, KernelBinding } from './kernel.js';
export * from './ops/index.js';
export { stepIds } from './ops/step-ids.js';
export type { StepIdsParams, StepIdsSource } from './ops/step-ids.js';
export { PoolHandle, WorkerPool, createWorkerPool } from './pool.js';
export type { PoolFaults, PoolStats, PoolSubmitOptions, WorkerPoolOptions } from './pool.js';
export type { PoolGraphSpec, PoolParamValue, PoolProviderKind, WorkerInfo } from './pool-protocol.js';
// The host executor on its own (partitioned-session ranks run op-library dispatches over their own memory).
export { HostExecutor } from './wasm/executor.js';
export type { HostDispatch } from './wasm/executor.js';
export type { AnyOpDef } from './ops/types.js';
