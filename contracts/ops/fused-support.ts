// Shared pieces of the fused-op suites (contracts/ops/fused-*.test.ts): packed weights of every kind
// (synthetic GGUF rows repacked by the model layer's lowering kinds, as a model load does), the
// unfused compositions the fused ops must equal (built from the op library's own host twins, step by
// step as the unfused forward runs them), and error bounds that scale with the magnitude of the terms
// of each dot product. Pure functions; no GPU.
import { expect } from 'vitest';
import { LOWERING_KINDS } from '../../src/model/index.js';
import { packedRowLayout, qmatmulOp, rmsnorm } from '../../src/submit/ops/index.js';
import type { PackedKind } from '../../src/submit/ops/index.js';
import { GGUF_BLOCK, randomGgufRows } from './qmatmul-blocks.js';

/** |gpu - reference| <= REL_L1 · Σ_k |xn_k · w_k| + ABS for one dot product (qmatmul's bound). */
export const REL_L1 = 2e-5;
export const ABS = 1e-6;

export interface Weights {
  readonly kind: PackedKind;
  readonly dtype: 'f32' | 'u32';
  readonly shape: readonly [number, number];
  readonly packed: Uint32Array | Float32Array;
  /** The dequantized rows [n, k] (for error bounds). */
  readonly rows: Float32Array;
}

/** K of `blocks` blocks of `kind`. */
export function kOf(kind: PackedKind, blocks: number): number {
  return GGUF_BLOCK[kind][0] * blocks;
}

/**
 * A K that is a whole number of blocks of every kind in `kinds`: `blocks` of the largest block, or for
 * float kinds only 32 * blocks - tail (so rows that end inside a 4-element unit occur).
 */
export function commonK(kinds: readonly PackedKind[], blocks: number, tail = 0): number {
  const block = Math.max(...kinds.map((kind) => GGUF_BLOCK[kind][0]));
  return block === 1 ? 32 * blocks - tail : block * blocks;
}

/** n packed rows of k elements of `kind` from `seed`. */
export function packedWeights(kind: PackedKind, n: number, k: number, seed: number): Weights {
  const lowering = LOWERING_KINDS[kind];
  const gguf = randomGgufRows(kind, n, k, seed);
  const packed = lowering.repack(gguf, k);
  const rows = new Float32Array(n * k);
  lowering.dequantize(gguf, rows);
  const layout = packedRowLayout(kind, k);
  return { kind, dtype: kind === 'F32' ? 'f32' : 'u32', shape: [n, layout.rowWords], packed: kind === 'F32' ? new Float32Array(packed.buffer) : packed, rows };
}

/** rmsnorm of m rows of k (the op library's host twin). */
export function normRows(x: Float32Array, norm: Float32Array, m: number, k: number, eps: number): Float32Array {
  const out = new Float32Array(m * k);
  rmsnorm.host({ rows: m, cols: k, eps }, [x, norm, out]);
  return out;
}

/** x · Wᵀ [m, n] through qmatmul's host twin. */
export function project(w: Weights, x: Float32Array, m: number): Float32Array {
  const [n] = w.shape;
  const k = w.rows.length / n;
  const out = new Float32Array(m * n);
  qmatmulOp(w.kind).host({ m, n, k }, [x, w.packed, out]);
  return out;
}

/** Σ_k |x[i, k] · w[j, k]| for every (i, j): [m, n]. */
export function l1(w: Weights, x: Float32Array, m: number): Float64Array {
  const [n] = w.shape;
  const k = w.rows.length / n;
  const out = new Float64Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let kk = 0; kk < k; kk++) s += Math.abs(x[i * k + kk]! * w.rows[j * k + kk]!);
      out[i * n + j] = s;
    }
  }
  return out;
}

/** Asserts |got[i] - want[i]| <= bound[i] for every element; the message names the first excess. */
export function expectWithin(got: ArrayLike<number>, want: ArrayLike<number>, bound: ArrayLike<number>, label: string): void {
  expect(got.length, `${label}: length`).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i]! - want[i]!) <= bound[i]!)) expect.fail(`${label}: element ${i} is ${got[i]}, expected ${want[i]} within ${bound[i]}`);
  }
}

/** Asserts bit equality (Object.is per element, so -0 and NaN count); the message names the first difference. */
export function expectSameBits(got: ArrayLike<number>, want: ArrayLike<number>, label: string): void {
  expect(got.length, `${label}: length`).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    if (!Object.is(got[i], want[i])) expect.fail(`${label}: element ${i} is ${got[i]}, expected exactly ${want[i]}`);
  }
}
