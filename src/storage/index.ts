// Public face of the ownership kernel (src/storage). Everything not exported here is internal.
// Contract summary: providers make roots; a Tensor owns one claim of a root; views are checked borrows;
// an AllocationGroup owns many allocations and descriptors; prepared accesses are the only element
// access; every physical allocation and byte-preserving copy is in the provider's ledger.
export { createHostProvider, HostProvider } from './host.js';
export type { HostMemoryKind, HostProviderOptions } from './host.js';
export { BLOCK_ALIGN, HostMemory, WASM_PAGE } from './host-memory.js';
export { createWebGPUProvider, WebGPUProvider } from './webgpu.js';
export type { DeviceLoss, WebGPUFaults, WebGPULimitCaps, WebGPUProviderOptions } from './webgpu.js';
export type { Provider, ProviderCapabilities, ProviderKind } from './provider.js';
export { classifyAdapter, createProvider } from './auto.js';
export type { AdapterClass, AdapterIdentity, AdapterSummary, CreateProviderOptions, ProviderChoice, ProviderSelection, SelectedProvider, SelectionReason } from './auto.js';
export type { AllocationEvent, AllocationReason, CopyEvent, CopyReason, CounterSnapshot, LedgerEvent } from './counters.js';
export { DTYPES, dtypeSize, isDType, typedView as typedArrayOver } from './dtype.js';
export type { AnyTypedArray, ArrayOf, DType } from './dtype.js';
export { MAX_RANK } from './layout.js';
export type { CheckedLayout, LayoutSpec, StridedPlan } from './layout.js';
export { Tensor, TensorView, TensorViewMut, allocate, fromArray, zeros } from './tensor.js';
export type { AllocateOptions, HostWriteOptions, TensorDiagnostics, TensorReadApi, TensorWriteApi } from './tensor.js';
export {
  PreparedContiguousRead,
  PreparedContiguousWrite,
  PreparedDeviceRead,
  PreparedDeviceWrite,
  PreparedStridedRead,
  PreparedStridedWrite,
  StridedCursor,
  StridedRuns,
} from './prepared.js';
export type { PreparedHostRead, PreparedHostWrite } from './prepared.js';
export { AllocationGroup, createAllocationGroup, liveHostArray } from './group.js';
export type {
  AllocationSlot,
  BindingAccess,
  DescriptorSlot,
  DeviceBindingState,
  DispatchBindingRequest,
  HostBindingState,
  InsertResult,
} from './group.js';
export { CONSUMING_METHODS, MUTATION_METHODS, READ_GETTERS, READ_METHODS } from './methods.js';
