// Test-side reference for layouts: row-major strides and the element order a (shape, strides, first)
// layout visits, computed the obvious way (decode each logical index). Shares no code with src/storage,
// so the suites compare the kernel against an independent answer.
import type { AnyTypedArray, DType } from '../../src/index.js';

export function rowMajor(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let acc = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = acc;
    acc *= Math.max(shape[d]!, 1);
  }
  return strides;
}

/** Backing element indices in row-major logical order. */
export function offsetsOf(shape: readonly number[], strides: readonly number[], first: number): number[] {
  const size = shape.reduce((a, b) => a * b, 1);
  const out: number[] = [];
  const idx = new Array<number>(shape.length).fill(0);
  for (let k = 0; k < size; k++) {
    let at = first;
    for (let d = 0; d < shape.length; d++) at += idx[d]! * strides[d]!;
    out.push(at);
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++idx[d]! < shape[d]!) break;
      idx[d] = 0;
    }
  }
  return out;
}


/** The host array type of each dtype (f16 travels as its raw bits). */
export const HOST_ARRAY: Record<DType, new (length: number) => AnyTypedArray> = {
  f32: Float32Array,
  f16: Uint16Array,
  i32: Int32Array,
  u32: Uint32Array,
  u8: Uint8Array,
};

/** A layout over a 1-D backing array of `backing` elements, with the backing indices it visits. */
export interface LayoutRef {
  readonly dtype: DType;
  readonly shape: number[];
  readonly strides: number[];
  /** Backing element index of element [0, ...]. */
  readonly first: number;
  /** Backing length in elements. */
  readonly backing: number;
  /** Backing indices visited in row-major logical order. */
  readonly offsets: number[];
}

export function isContiguousRef(c: LayoutRef): boolean {
  return c.offsets.every((o, i) => o === c.offsets[0]! + i);
}

export function isInjectiveRef(c: LayoutRef): boolean {
  return new Set(c.offsets).size === c.offsets.length;
}

/**
 * The documented sufficient condition for write injectivity (src/storage/layout.ts proveInjective): the
 * dimensions longer than 1, taken by increasing |stride|, each step past everything the shorter-stride
 * ones reach. A layout that meets it must be writable; one that does not may still be injective, but
 * the conservative proof is then allowed to refuse it.
 */
export function isNestedRef(c: LayoutRef): boolean {
  if (c.offsets.length === 0) return true;
  const dims = c.shape.map((n, d) => ({ n, s: Math.abs(c.strides[d]!) })).filter((x) => x.n > 1);
  dims.sort((a, b) => a.s - b.s);
  let reach = 0;
  for (const { n, s } of dims) {
    if (s <= reach) return false;
    reach += s * (n - 1);
  }
  return true;
}

/** Distinct-ish, nonzero values for backing index i (u8 wraps). */
export function valueAt(dtype: DType, i: number): number {
  if (dtype === 'u8') return (i * 7 + 1) & 0xff;
  if (dtype === 'i32') return i % 2 === 0 ? i + 1 : -(i + 1);
  return i + 1;
}

export function makeArray(dtype: DType, values: readonly number[]): AnyTypedArray {
  const out = new HOST_ARRAY[dtype](values.length);
  values.forEach((v, i) => (out[i] = v));
  return out;
}

export function backingValues(c: LayoutRef): number[] {
  return Array.from({ length: c.backing }, (_, i) => valueAt(c.dtype, i));
}
