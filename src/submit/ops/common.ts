// Shared pieces of the op modules: operand validation (TenonError EINVAL with a stable reason, thrown
// before anything runs), dispatch sizing within device limits, and uniform packing. Pure functions; no
// device, no allocation beyond the returned ArrayBuffer.
import { TenonError } from '../../errors.js';
import type { DType } from '../../storage/index.js';
import type { OpBinding, OpLimits, OpOperand, Workgroups } from './types.js';

/** Default workgroup size of the one-dimensional kernels (SwiftShader runs 4 invocations per SIMD step). */
export const LINEAR_WORKGROUP = 64;

/** Largest element count a kernel indexes: WGSL indices are u32. */
const MAX_U32_INDEX = 0xffff_ffff;

function fail(op: string, reason: string, message: string, ids?: Record<string, string | number>): never {
  throw new TenonError('EINVAL', message, ids === undefined ? { op: `ops.${op}`, reason } : { op: `ops.${op}`, reason, ids });
}

/** Checks operand count, dtypes and contiguity against the binding list. */
export function checkOperands(op: string, bindings: readonly OpBinding[], operands: readonly OpOperand[]): void {
  if (!Array.isArray(operands) || operands.length !== bindings.length) {
    fail(op, 'operand-count', `expects ${bindings.length} operands (${bindings.map((b) => b.name).join(', ')})`);
  }
  // Plain loops: recorded graphs run this for every per-step dispatch of every replay.
  for (let i = 0; i < bindings.length; i++) {
    const binding = bindings[i]!;
    const operand = operands[i]!;
    if (!binding.dtypes.includes(operand.dtype)) {
      fail(op, 'dtype-mismatch', `${binding.name} must be ${binding.dtypes.join(' or ')}, got ${operand.dtype}`, { operand: binding.name });
    }
    if (!operand.contiguous) fail(op, 'not-contiguous', `${binding.name} must be contiguous`, { operand: binding.name });
    const shape = operand.shape;
    let size = 1;
    for (let j = 0; j < shape.length; j++) size *= shape[j]!;
    if (size > MAX_U32_INDEX) fail(op, 'shape-mismatch', `${binding.name} has more elements than a u32 index reaches`, { operand: binding.name });
  }
}

/** Checks that operand `name` has exactly `expected` as its shape. */
export function checkShape(op: string, name: string, operand: OpOperand, expected: readonly number[]): void {
  const shape = operand.shape;
  let same = shape.length === expected.length;
  for (let i = 0; same && i < shape.length; i++) same = shape[i] === expected[i];
  if (!same) fail(op, 'shape-mismatch', `${name} must have shape [${expected.join(', ')}], got [${shape.join(', ')}]`, { operand: name });
}

/** Checks that operand `name` holds exactly `count` elements (any shape). */
export function checkCount(op: string, name: string, operand: OpOperand, count: number): void {
  if (sizeOf(operand.shape) !== count) {
    fail(op, 'shape-mismatch', `${name} must hold ${count} elements, has shape [${operand.shape.join(', ')}]`, { operand: name });
  }
}

/** Checks that a size parameter is an integer in 1..2^32-1. */
export function checkSize(op: string, name: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_U32_INDEX) {
    fail(op, 'bad-param', `${name} must be a positive integer`, { param: name });
  }
}

/** Checks that an index parameter (e.g. a position) is an integer in 0..2^32-1. */
export function checkIndex(op: string, name: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_U32_INDEX) {
    fail(op, 'bad-param', `${name} must be a non-negative integer`, { param: name });
  }
}

/** Checks that a float parameter is finite (and positive when asked). */
export function checkFloat(op: string, name: string, value: unknown, positive = false): asserts value is number {
  if (typeof value !== 'number' || !Number.isFinite(value) || (positive && !(value > 0))) {
    fail(op, 'bad-param', `${name} must be a finite${positive ? ' positive' : ''} number`, { param: name });
  }
}

export function rejectParam(op: string, name: string, message: string): never {
  fail(op, 'bad-param', message, { param: name });
}

export function rejectRange(op: string, message: string, ids?: Record<string, string | number>): never {
  fail(op, 'out-of-range', message, ids);
}

/** Workgroups for `groups` linear workgroups: [groups, 1, 1], or folded into y when x would pass the limit. */
export function linearWorkgroups(op: string, groups: number, limits: OpLimits): Workgroups {
  const max = limits.maxComputeWorkgroupsPerDimension;
  if (groups <= max) return [groups, 1, 1];
  const y = Math.ceil(groups / max);
  if (y > max) fail(op, 'shape-mismatch', `dispatch of ${groups} workgroups exceeds the device limit`);
  return [max, y, 1];
}

/** Workgroups for `invocations` linear invocations of `workgroupSize` each (see linearWorkgroups). */
export function linearDispatch(op: string, invocations: number, workgroupSize: number, limits: OpLimits): Workgroups {
  return linearWorkgroups(op, Math.ceil(invocations / workgroupSize), limits);
}

/** Checks that every count of a 3-D dispatch fits the device limit. */
export function checkDispatch(op: string, groups: Workgroups, limits: OpLimits): Workgroups {
  if (groups.some((g) => g > limits.maxComputeWorkgroupsPerDimension)) {
    fail(op, 'shape-mismatch', `dispatch [${groups.join(', ')}] exceeds the device limit`);
  }
  return groups;
}

/** One uniform field: a u32 or an f32, written in declaration order (WGSL struct of 4-byte scalars). */
export type ParamField = { readonly u32: number } | { readonly f32: number };

/** Packs 4-byte scalars into a uniform buffer of `bytes` (a multiple of 16; the tail stays zero). */
export function packParams(bytes: number, fields: readonly ParamField[]): ArrayBuffer {
  const buffer = new ArrayBuffer(bytes);
  const view = new DataView(buffer);
  fields.forEach((field, i) => {
    if ('u32' in field) view.setUint32(i * 4, field.u32, true);
    else view.setFloat32(i * 4, field.f32, true);
  });
  return buffer;
}

/** Product of a shape's extents. */
export function sizeOf(shape: readonly number[]): number {
  let n = 1;
  for (let i = 0; i < shape.length; i++) n *= shape[i]!;
  return n;
}

export const F32: readonly DType[] = ['f32'];
export const INDEX_TYPES: readonly DType[] = ['u32', 'i32'];
export const U32: readonly DType[] = ['u32'];
