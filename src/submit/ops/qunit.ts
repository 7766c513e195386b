// The unit walk shared by the kernels that read packed weights through one shader for every kind
// (shaders/qgather.wgsl, shaders/qmatmul_expert*.wgsl): the kind is the override constant KIND, and a
// row is walked in "units" of 4 adjacent elements per group, 1, 2 or 4 groups per unit:
//
//   kind   KIND  unit                                      groups  group stride  units per row
//   F32    0     4 words (elements 4u..4u+3)               1       -             ceil(K / 4)
//   F16    1     2 words (elements 4u..4u+3)               1       -             ceil(K / 4)
//   BF16   2     2 words (elements 4u..4u+3)               1       -             ceil(K / 4)
//   Q8_0   3     1 quant word (elements 4u..4u+3)          1       -             K / 4
//   Q4_0   4     1 quant word (low and high nibbles)       2       16            K / 8
//   Q4_K   5     1 quant word (low and high nibbles)       2       32            K / 8
//   Q6_K   6     1 qh word and the 2 ql words it completes 4       32            K / 16
//   Q4_1   7     1 quant word (low and high nibbles)       2       16            K / 8
//   Q5_0   8     1 quant word and its 8 bits of qh         2       16            K / 8
//   Q5_1   9     1 quant word and its 8 bits of qh         2       16            K / 8
//
// For the quantized kinds a unit is exactly a unit of src/submit/ops/qmatmul-layout.ts; the float kinds
// take four elements per unit (the tail past K is masked). Adjacent invocations take adjacent units, so
// they load adjacent words. Pure data and arithmetic; nothing here touches a device.
import type { PackedKind, PackedRowLayout } from './qmatmul-layout.js';

/** The WGSL `KIND` constant of each packed kind (the KIND_* constants of the shaders). */
export const PACKED_KIND_ID: Readonly<Record<PackedKind, number>> = { F32: 0, F16: 1, BF16: 2, Q8_0: 3, Q4_0: 4, Q4_K: 5, Q6_K: 6, Q4_1: 7, Q5_0: 8, Q5_1: 9 };

/** Elements of one unit of the walk (4 per group). */
export const UNIT_ELEMENTS: Readonly<Record<PackedKind, number>> = { F32: 4, F16: 4, BF16: 4, Q8_0: 4, Q4_0: 8, Q4_K: 8, Q6_K: 16, Q4_1: 8, Q5_0: 8, Q5_1: 8 };

/** Units of the walk over one row of `layout`. */
export function walkUnits(layout: PackedRowLayout): number {
  return Math.ceil(layout.k / UNIT_ELEMENTS[layout.kind]);
}

/** Smallest and largest workgroup (powers of two; 256 is the WebGPU default limit every device meets). */
export const MIN_UNIT_WORKGROUP = 32;
export const MAX_UNIT_WORKGROUP = 256;

/** The smallest power of two in 32..256 that gives every invocation at least one unit where there are that many. */
export function unitWorkgroup(units: number): number {
  let wg = MIN_UNIT_WORKGROUP;
  while (wg < MAX_UNIT_WORKGROUP && wg < units) wg *= 2;
  return wg;
}
