// The op-library contract (type-only): what a compiled graph, the test runner and the host provider
// need to know about one kernel, with nothing that allocates or touches a device.
//
// Binding convention shared by every shader in shaders/: storage bindings 0..n-1 in the order of
// `bindings`, then one uniform buffer at binding n holding the bytes `params()` packs. Every storage
// binding covers a tensor's whole claim (PreparedDeviceRead/Write.binding()); the kernel finds element 0
// of the tensor at the element offset packed into the params (PreparedDevice*.elementOffset), so a
// recorded graph never re-validates or re-slices a binding. Operand tensors are contiguous, row-major.
// Entry point is always `main`.
import type { AnyTypedArray, DType } from '../../storage/index.js';

/** How a kernel uses a storage binding. `read_write` bindings need an exclusive borrow. */
export type OpAccess = 'read' | 'read_write';

export interface OpBinding {
  /** The WGSL variable name (also the operand's name in errors). */
  readonly name: string;
  readonly access: OpAccess;
  /** Accepted element types; the WGSL array type reads the bits of any of them (e.g. u32 for u32|i32 ids). */
  readonly dtypes: readonly DType[];
}

/** What `check()` sees of one operand: no storage, only its description. */
export interface OpOperand {
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** False for strided layouts, which kernels do not take. */
  readonly contiguous: boolean;
}

/** The device limits a dispatch must respect. */
export interface OpLimits {
  readonly maxComputeWorkgroupsPerDimension: number;
}

export type Workgroups = readonly [x: number, y: number, z: number];

/** Pipeline-overridable constants (WGSL `override`); part of the pipeline cache key with the shader. */
export type OpConstants = Readonly<Record<string, number>>;

/**
 * One kernel: its WGSL, binding list, parameter packing, specialization, dispatch size, validation and
 * host reference. `P` is the op's typed parameters; `A` the host arrays in binding order.
 * Methods (not function-valued properties) so any OpDef<P, A> is usable where an OpDef of unknown
 * parameters is listed.
 */
export interface OpDef<P, A extends readonly AnyTypedArray[] = readonly AnyTypedArray[]> {
  readonly name: string;
  /** WGSL source (shaders/<file>.wgsl imported with `?raw`). */
  readonly shader: string;
  readonly entryPoint: 'main';
  /** Storage bindings in binding order; the uniform params buffer follows at index bindings.length. */
  readonly bindings: readonly OpBinding[];
  /** Size in bytes of the uniform params struct (a multiple of 16). */
  readonly paramsBytes: number;
  /**
   * Throws TenonError EINVAL (reason `operand-count`, `dtype-mismatch`, `not-contiguous`,
   * `shape-mismatch`, `bad-param` or `out-of-range`) when the operands and params do not fit this
   * kernel; returns nothing and changes nothing otherwise. Run it before anything is enqueued.
   */
  check(operands: readonly OpOperand[], params: P): void;
  /** Packs the uniform bytes (paramsBytes long); `elementOffsets[i]` belongs to bindings[i]. */
  params(params: P, elementOffsets: readonly number[]): ArrayBuffer;
  /** Override constants for this parameter set (e.g. workgroup size, rows per invocation). */
  constants(params: P): OpConstants;
  /** Workgroup counts for dispatchWorkgroups, within limits (folded into y where needed). */
  workgroups(params: P, limits: OpLimits): Workgroups;
  /**
   * Reference and host-provider implementation over contiguous host arrays in binding order (element 0
   * at index 0); writes only the read_write arrays. Assumes check() passed.
   */
  host(params: P, arrays: A): void;
}

/** Any op, for lists and runners. */
export type AnyOpDef = OpDef<never, never>;
