// What the graph compiler needs from a kernel (an op of src/submit/ops). Type-only.
//
// A kernel is one WGSL compute entry point `main` with storage bindings @group(0) @binding(0..n-1) in the
// order of `bindings`, and one uniform params struct at @binding(n). Bindings always cover a tensor's whole
// claim; the params carry each binding's element offset (where element [0, ...] is) plus sizes.
import type { AnyTypedArray, DType } from '../storage/index.js';

export interface KernelBinding {
  readonly name: string;
  readonly access: 'read' | 'write';
}

/** Shape facts of one bound tensor, as the kernel's checks see them. */
export interface BoundShape {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly contiguous: boolean;
}

/** A host binding: the typed array and the index of element [0, ...] in it. */
export interface HostArray {
  readonly array: AnyTypedArray;
  readonly offset: number;
}

export interface Kernel<P> {
  readonly name: string;
  /** WGSL source (one kernel per file in shaders/, imported as text). */
  readonly shader: string;
  readonly bindings: readonly KernelBinding[];
  /**
   * Pipeline-overridable constants (part of the pipeline cache key). Evaluated once at compile time; for
   * per-step params with the params of an empty step, so they must not depend on step values.
   */
  constants?(params: P): Readonly<Record<string, number>>;
  /** Checks dtypes, shapes and params; throws TenonError EINVAL before anything runs. */
  check(params: P, shapes: readonly BoundShape[]): void;
  /** Bytes of the uniform params struct, given each binding's element offset. */
  uniform(params: P, offsets: readonly number[]): ArrayBuffer;
  /** Workgroup counts of the dispatch. */
  workgroups(params: P, limits: GPUSupportedLimits): readonly [number, number, number];
  /** Reference / host-provider implementation over the bound arrays (same order as `bindings`). */
  host(params: P, arrays: readonly HostArray[]): void;
}
