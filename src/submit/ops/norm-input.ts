// The input side the matmul_nt_norm ops share (shaders/lib/norm_input.wesl owns their bindings 0 and 1):
// x [M, K] and the norm weight [K], row-major f32, their checks, and the host twin of one normed row.
// Pure functions on the caller's arrays; nothing is kept between calls.
import { F32, checkFloat, checkShape, checkSize } from './common.js';
import type { OpBinding, OpOperand } from './types.js';

/** What every norm-folding op's params carry about its input. */
export interface NormInputParams {
  readonly m: number;
  /** K: the row length of x, of the norm weight and of every weight row. */
  readonly k: number;
  readonly eps: number;
}

/** Bindings 0 and 1 of every norm-folding op, in shaders/lib/norm_input.wesl's order. */
export const NORM_INPUT_BINDINGS: readonly OpBinding[] = [
  { name: 'x', access: 'read', dtypes: F32 },
  { name: 'norm', access: 'read', dtypes: F32 },
];

/** EINVAL (`bad-param`, `shape-mismatch`) unless m, k and eps are valid and operands 0 and 1 are x [m, k] and norm [k]. */
export function checkNormInput(op: string, operands: readonly OpOperand[], p: NormInputParams): void {
  checkSize(op, 'm', p.m);
  checkSize(op, 'k', p.k);
  checkFloat(op, 'eps', p.eps, true);
  checkShape(op, 'x', operands[0]!, [p.m, p.k]);
  checkShape(op, 'norm', operands[1]!, [p.k]);
}

/**
 * Row `row` of x normed into `into` (K elements): rmsnorm's twin's expression and order (sum of squares
 * and inv in f64, each element rounded to f32 on store), so a folded op's twin equals rmsnorm's then the
 * matmul's, exactly.
 */
export function normedRow(p: NormInputParams, x: Float32Array, norm: Float32Array, row: number, into: Float32Array): void {
  const { k } = p;
  const eps = Math.fround(p.eps);
  const at = row * k;
  let ss = 0;
  for (let c = 0; c < k; c++) ss += x[at + c]! * x[at + c]!;
  const inv = 1 / Math.sqrt(ss / k + eps);
  for (let c = 0; c < k; c++) into[c] = norm[c]! * (inv * x[at + c]!);
}
