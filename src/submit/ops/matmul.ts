// matmul: out = a x b for row-major f32 matrices a [M, K], b [K, N], out [M, N]
// (shaders/matmul.wgsl, which also serves matmul_batched; this op is its batch-1 case).
import shader from '../../../shaders/matmul.wgsl?raw';
import { F32, checkDispatch, checkOperands, checkShape, checkSize, packParams } from './common.js';
import { matmulGroups, matmulTiling } from './tiling.js';
import type { OpBinding, OpDef } from './types.js';

export interface MatmulParams {
  readonly m: number;
  readonly n: number;
  readonly k: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'a', access: 'read', dtypes: F32 },
  { name: 'b', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

/**
 * Host product over one [m,k] x [k,n] block at the given element offsets, in i-k-j order: the inner loop
 * walks a row of b and a row of accumulators contiguously, and rows of a go four at a time so each
 * loaded b element feeds four accumulator rows (1.8x the one-row loop at 1024^3 in Node). Accumulators
 * are f64, each output rounded to f32 once.
 */
export function hostMatmulBlock(
  a: Float32Array, aAt: number, b: Float32Array, bAt: number, out: Float32Array, outAt: number,
  m: number, n: number, k: number,
): void {
  const r0 = new Float64Array(n);
  const r1 = new Float64Array(n);
  const r2 = new Float64Array(n);
  const r3 = new Float64Array(n);
  let i = 0;
  for (; i + 4 <= m; i += 4) {
    r0.fill(0);
    r1.fill(0);
    r2.fill(0);
    r3.fill(0);
    const a0 = aAt + i * k;
    for (let kk = 0; kk < k; kk++) {
      const x0 = a[a0 + kk]!;
      const x1 = a[a0 + k + kk]!;
      const x2 = a[a0 + 2 * k + kk]!;
      const x3 = a[a0 + 3 * k + kk]!;
      const bRow = bAt + kk * n;
      for (let j = 0; j < n; j++) {
        const y = b[bRow + j]!;
        r0[j]! += x0 * y;
        r1[j]! += x1 * y;
        r2[j]! += x2 * y;
        r3[j]! += x3 * y;
      }
    }
    out.set(r0, outAt + i * n);
    out.set(r1, outAt + (i + 1) * n);
    out.set(r2, outAt + (i + 2) * n);
    out.set(r3, outAt + (i + 3) * n);
  }
  for (; i < m; i++) {
    r0.fill(0);
    const aRow = aAt + i * k;
    for (let kk = 0; kk < k; kk++) {
      const x = a[aRow + kk]!;
      const bRow = bAt + kk * n;
      for (let j = 0; j < n; j++) r0[j]! += x * b[bRow + j]!;
    }
    out.set(r0, outAt + i * n);
  }
}

export const matmul: OpDef<MatmulParams, readonly [a: Float32Array, b: Float32Array, out: Float32Array]> = {
  name: 'matmul',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands('matmul', BINDINGS, operands);
    checkSize('matmul', 'm', p.m);
    checkSize('matmul', 'n', p.n);
    checkSize('matmul', 'k', p.k);
    checkShape('matmul', 'a', operands[0]!, [p.m, p.k]);
    checkShape('matmul', 'b', operands[1]!, [p.k, p.n]);
    checkShape('matmul', 'out', operands[2]!, [p.m, p.n]);
  },
  params(p, offsets) {
    return packParams(32, [
      { u32: offsets[0]! }, { u32: offsets[1]! }, { u32: offsets[2]! }, { u32: 1 },
      { u32: p.m }, { u32: p.n }, { u32: p.k },
    ]);
  },
  constants(p) {
    return { ...matmulTiling(p.m) };
  },
  workgroups(p, limits) {
    return checkDispatch('matmul', matmulGroups(p.m, p.n, 1), limits);
  },
  host(p, [a, b, out]) {
    hostMatmulBlock(a, 0, b, 0, out, 0, p.m, p.n, p.k);
  },
};
