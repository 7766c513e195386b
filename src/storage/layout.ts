// Validate once: turns a caller's layout request into a CheckedLayout (G1 "validate once, then
// traverse"). Pure; the only side effect is one `validations` tick on the counters passed in.
//
// A CheckedLayout is immutable and retained by tensors, views and group descriptors. Nothing downstream
// (views, preparation, splitting, binding) repeats these checks; they read the retained facts.
// Offsets are bytes from the start of the owning claim; strides are in elements and may be negative or
// zero (zero and overlapping strides are legal for reading; writing needs an injectivity proof).
import { TenonError } from '../errors.js';
import type { ByteRange } from '../errors.js';
import { checkedAdd, checkedMul } from './arith.js';
import type { Counters } from './counters.js';
import { dtypeSize } from './dtype.js';
import type { DType } from './dtype.js';

/** Ranks above this are rejected; the cursor keeps one counter per dimension. */
export const MAX_RANK = 16;

export interface LayoutSpec {
  readonly shape: readonly number[];
  /** Element strides; row-major contiguous when omitted. */
  readonly strides?: readonly number[];
  /** Bytes from the start of the claim to element [0, 0, ...]; 0 when omitted. */
  readonly byteOffset?: number;
}

/** Precomputed traversal plan for a strided layout (only dimensions longer than 1). */
export interface StridedPlan {
  /** Index of the first logical element inside the envelope array. */
  readonly firstIndex: number;
  readonly extents: readonly number[];
  readonly strides: readonly number[];
  /** strides[d] * (extents[d] - 1): what a carry out of dimension d subtracts. */
  readonly backstrides: readonly number[];
}

interface CheckedBase {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly byteOffset: number;
  /** Number of logical elements. */
  readonly size: number;
  /** Bytes reachable by this layout, relative to the claim start; empty when size is 0. */
  readonly envelope: ByteRange;
}

export type CheckedLayout =
  | (CheckedBase & { readonly kind: 'contiguous' })
  | (CheckedBase & { readonly kind: 'strided'; readonly plan: StridedPlan });

function invalid(op: string, reason: string, message: string, range?: ByteRange): never {
  throw new TenonError('EINVAL', message, range === undefined ? { op, reason } : { op, reason, range });
}

function isIntArray(value: unknown): value is readonly number[] {
  return Array.isArray(value) && value.every((v) => Number.isSafeInteger(v));
}

export function rowMajorStrides(shape: readonly number[], op: string): number[] {
  const strides = new Array<number>(shape.length);
  let acc = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = acc;
    acc = checkedMul(acc, Math.max(shape[d]!, 1), op, 'row-major stride');
  }
  return strides;
}

/**
 * Validates `spec` for `dtype` inside a claim of `claimBytes` bytes that starts `claimStart` bytes into
 * its root: shape, strides, offset, exact arithmetic, alignment of element [0, ...] to the element size
 * within the root (so a typed array can view it), and that every reachable byte lies inside the claim.
 */
export function checkLayout(
  spec: LayoutSpec,
  dtype: DType,
  claimBytes: number,
  counters: Counters,
  op: string,
  claimStart = 0,
): CheckedLayout {
  counters.bump('validations');
  if (spec === null || typeof spec !== 'object') invalid(op, 'bad-layout', 'layout must be an object');
  const { shape } = spec;
  if (!isIntArray(shape) || shape.some((n) => n < 0)) invalid(op, 'bad-shape', 'shape must be non-negative safe integers');
  if (shape.length > MAX_RANK) invalid(op, 'bad-shape', `rank ${shape.length} exceeds ${MAX_RANK}`);
  const item = dtypeSize(dtype);
  let size = 1;
  for (const n of shape) size = checkedMul(size, n, op, 'element count');

  let strides: readonly number[];
  if (spec.strides === undefined) {
    strides = rowMajorStrides(shape, op);
  } else {
    if (!isIntArray(spec.strides) || spec.strides.length !== shape.length) {
      invalid(op, 'bad-strides', 'strides must be safe integers, one per dimension');
    }
    strides = [...spec.strides];
  }

  const byteOffset = spec.byteOffset ?? 0;
  if (!Number.isSafeInteger(byteOffset) || byteOffset < 0) invalid(op, 'bad-offset', 'byteOffset must be a non-negative safe integer');
  if ((claimStart + byteOffset) % item !== 0) {
    invalid(op, 'misaligned', `element 0 at root byte ${claimStart + byteOffset} is not a multiple of ${item}`);
  }

  const frozenShape = Object.freeze([...shape]);
  const frozenStrides = Object.freeze([...strides]);
  if (size === 0) {
    if (byteOffset > claimBytes) invalid(op, 'out-of-span', 'offset lies past the claim', { start: byteOffset, end: byteOffset });
    return Object.freeze({
      kind: 'contiguous',
      dtype,
      shape: frozenShape,
      strides: frozenStrides,
      byteOffset,
      size,
      envelope: Object.freeze({ start: byteOffset, end: byteOffset }),
    });
  }

  // Lowest and highest element reached, relative to element [0, ...].
  let low = 0;
  let high = 0;
  for (let d = 0; d < shape.length; d++) {
    const reach = checkedMul(strides[d]!, shape[d]! - 1, op, 'stride extent');
    if (reach < 0) low = checkedAdd(low, reach, op, 'lower extent');
    else high = checkedAdd(high, reach, op, 'upper extent');
  }
  // Bounds in bytes relative to the claim: the claim itself may start at any root byte, so element
  // positions are byteOffset + k * item, not multiples of item.
  const start = checkedAdd(byteOffset, checkedMul(low, item, op, 'lower extent'), op, 'envelope start');
  const end = checkedAdd(byteOffset, checkedMul(checkedAdd(high, 1, op, 'upper extent'), item, op, 'upper extent'), op, 'envelope end');
  if (start < 0 || end > claimBytes) {
    invalid(op, 'out-of-span', `layout reaches bytes [${start}, ${end}) outside a claim of ${claimBytes}`, { start, end });
  }
  const envelope = Object.freeze({ start, end });

  const contiguousStrides = rowMajorStrides(shape, op);
  const contiguous = shape.every((n, d) => n <= 1 || strides[d] === contiguousStrides[d]);
  if (contiguous) {
    return Object.freeze({ kind: 'contiguous', dtype, shape: frozenShape, strides: frozenStrides, byteOffset, size, envelope });
  }

  const extents: number[] = [];
  const planStrides: number[] = [];
  const backstrides: number[] = [];
  for (let d = 0; d < shape.length; d++) {
    if (shape[d]! <= 1) continue;
    extents.push(shape[d]!);
    planStrides.push(strides[d]!);
    backstrides.push(strides[d]! * (shape[d]! - 1));
  }
  const plan: StridedPlan = Object.freeze({
    // `0 - low`, not `-low`: a negative zero would make every cursor index a heap double (measured 2x slower).
    firstIndex: 0 - low,
    extents: Object.freeze(extents),
    strides: Object.freeze(planStrides),
    backstrides: Object.freeze(backstrides),
  });
  return Object.freeze({ kind: 'strided', dtype, shape: frozenShape, strides: frozenStrides, byteOffset, size, envelope, plan });
}

/**
 * Write injectivity: true when no two logical indices reach the same element. Conservative: sorting
 * dimensions by |stride| and requiring each stride to clear everything the smaller ones reach is a
 * sufficient condition; layouts it cannot prove are treated as non-injective.
 */
export function proveInjective(layout: CheckedLayout, counters: Counters): boolean {
  counters.bump('injectivityProofs');
  if (layout.size === 0 || layout.kind === 'contiguous') return true;
  const dims = layout.plan.extents.map((n, i) => ({ n, s: Math.abs(layout.plan.strides[i]!) }));
  dims.sort((a, b) => a.s - b.s);
  let reach = 0;
  for (const { n, s } of dims) {
    if (s <= reach) return false;
    reach += s * (n - 1);
  }
  return true;
}
