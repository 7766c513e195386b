// matmul_nt: out = a x w^T ("x times W-transposed"): a [M, K], w [N, K], out [M, N], row-major f32
// (shaders/matmul_nt.wgsl). llama2.c stores every weight as [out_features, in_features], so a linear
// layer is this op with M = 1 at decode and M = T at prefill.
// matmul_nt_add is the same kernel with its accumulating epilogue (override ACC): out += a x w^T, each
// output one f32 addition of the f32 product to what `out` held (a residual connection folded into the
// matmul, exactly what matmul_nt into a scratch followed by add_inplace computes).
import shader from '../../../shaders/matmul_nt.wgsl?raw';
import { F32, checkDispatch, checkOperands, checkShape, checkSize, packParams } from './common.js';
import { matmulGroups, matmulTiling } from './tiling.js';
import type { OpBinding, OpDef } from './types.js';

export interface MatmulNTParams {
  readonly m: number;
  readonly n: number;
  readonly k: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'a', access: 'read', dtypes: F32 },
  { name: 'w', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

type MatmulNTArrays = readonly [a: Float32Array, w: Float32Array, out: Float32Array];

function matmulNTDef(name: 'matmul_nt' | 'matmul_nt_add', accumulate: boolean): OpDef<MatmulNTParams, MatmulNTArrays> {
  return {
    name,
    shader,
    entryPoint: 'main',
    bindings: BINDINGS,
    paramsBytes: 32,
    check(operands, p) {
      checkOperands(name, BINDINGS, operands);
      checkSize(name, 'm', p.m);
      checkSize(name, 'n', p.n);
      checkSize(name, 'k', p.k);
      checkShape(name, 'a', operands[0]!, [p.m, p.k]);
      checkShape(name, 'w', operands[1]!, [p.n, p.k]);
      checkShape(name, 'out', operands[2]!, [p.m, p.n]);
    },
    params(p, offsets) {
      return packParams(32, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: offsets[2]! }, { u32: p.m }, { u32: p.n }, { u32: p.k }]);
    },
    constants(p) {
      return accumulate ? { ...matmulTiling(p.m), ACC: 1 } : { ...matmulTiling(p.m) };
    },
    workgroups(p, limits) {
      return checkDispatch(name, matmulGroups(p.m, p.n, 1), limits);
    },
    host(p, arrays) {
      hostMatmulNT(p, arrays, accumulate);
    },
  };
}

export const matmulNT = matmulNTDef('matmul_nt', false);
export const matmulNTAdd = matmulNTDef('matmul_nt_add', true);

/** out = a x w^T, or out += (the f32 product) with `accumulate`. */
function hostMatmulNT(p: MatmulNTParams, [a, w, out]: MatmulNTArrays, accumulate: boolean): void {
  // Each output is a dot product of two contiguous rows, accumulated in f64; four outputs of a row
  // at a time share each load of a (2.4x the one-dot loop at 1024^3 in Node).
  const { m, n, k } = p;
  const put = accumulate ? (i: number, s: number): void => { out[i] = out[i]! + Math.fround(s); } : (i: number, s: number): void => { out[i] = s; };
  for (let i = 0; i < m; i++) {
    const aRow = i * k;
    const oRow = i * n;
    let j = 0;
    for (; j + 4 <= n; j += 4) {
      const w0 = j * k;
      const w1 = w0 + k;
      const w2 = w1 + k;
      const w3 = w2 + k;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let kk = 0; kk < k; kk++) {
        const x = a[aRow + kk]!;
        s0 += x * w[w0 + kk]!;
        s1 += x * w[w1 + kk]!;
        s2 += x * w[w2 + kk]!;
        s3 += x * w[w3 + kk]!;
      }
      put(oRow + j, s0);
      put(oRow + j + 1, s1);
      put(oRow + j + 2, s2);
      put(oRow + j + 3, s3);
    }
    for (; j < n; j++) {
      const wRow = j * k;
      let s = 0;
      for (let kk = 0; kk < k; kk++) s += a[aRow + kk]! * w[wRow + kk]!;
      put(oRow + j, s);
    }
  }
}
