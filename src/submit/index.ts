// Public face of the execution layer (src/submit): compiled graphs, detached submission with proven
// retirement, terminal outcomes and bundles, and the kernel interface ops implement.
export { Runtime, ExecutionHandle, createRuntime } from './runtime.js';
export type { LossPoint, RuntimeFaults, RuntimeOptions, RuntimeStats, ScopedOutcome, ScopedOutput, SubmitOptions } from './runtime.js';
export type { HostKernelChoice, HostKernelKind, HostKernelStats } from './wasm/executor.js';
export { hostKernelFaults, wasmKernelsAvailable } from './wasm/kernels.js';
export { Bundle, SubmitRejected } from './outcome.js';
export type { Outcome, UnprovenDiagnostics } from './outcome.js';
export { CompiledGraph } from './graph.js';
export type { DispatchSpec, GraphInput, GraphSpec, GraphStats } from './graph.js';
export type { BoundWork, FreshOutputSpec, OutputRef, Program, StepValues } from './program.js';
export type { BoundShape, Kernel, KernelAccess, KernelBinding } from './kernel.js';
export * from './ops/index.js';
export { PoolHandle, WorkerPool, createWorkerPool } from './pool.js';
export type { PoolFaults, PoolStats, PoolSubmitOptions, WorkerPoolOptions } from './pool.js';
export type { PoolGraphSpec, PoolParamValue, PoolProviderKind, WorkerInfo } from './pool-protocol.js';
