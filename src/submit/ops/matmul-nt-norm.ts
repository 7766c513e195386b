// matmul_nt_norm: out = a x w^T with a = rmsnorm(x) · norm: a final norm folded into the classifier of a
// decode step, in one dispatch (shaders/matmul_nt_norm.wesl, its input side shared in ./norm-input.ts): x [M, K], norm [K], w [N, K] (llama2.c's
// [out_features, in_features]), out [M, N], row-major f32. The host twin computes what rmsnorm then
// matmul_nt compute: the normed row rounded to f32 as rmsnorm's twin rounds it, each product summed in
// f64 and rounded once.
import variants from '../../../shaders/matmul_nt_norm.wesl?wesl';
import { F32, checkDispatch, checkOperands, checkShape, checkSize, packParams } from './common.js';
import { weslVariant } from './fused-variants.js';
import { NORM_INPUT_BINDINGS, checkNormInput, normedRow, type NormInputParams } from './norm-input.js';
import { TILE_N } from './tiling.js';
import type { OpBinding, OpDef } from './types.js';

export interface MatmulNTNormParams extends NormInputParams {
  readonly n: number;
}

const BINDINGS: readonly OpBinding[] = [
  ...NORM_INPUT_BINDINGS,
  { name: 'w', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

/** Invocations per workgroup (x); each computes TILE_N columns of one row. */
const WORKGROUP = 32;
const OP = 'matmul_nt_norm';

export const matmulNTNorm: OpDef<MatmulNTNormParams, readonly [x: Float32Array, norm: Float32Array, w: Float32Array, out: Float32Array]> = {
  name: OP,
  shader: weslVariant(variants, [], OP),
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands(OP, BINDINGS, operands);
    checkNormInput(OP, operands, p);
    checkSize(OP, 'n', p.n);
    checkShape(OP, 'w', operands[2]!, [p.n, p.k]);
    checkShape(OP, 'out', operands[3]!, [p.m, p.n]);
  },
  params(p, offsets) {
    return packParams(32, [...offsets.slice(0, 4).map((o) => ({ u32: o })), { u32: p.m }, { u32: p.n }, { u32: p.k }, { f32: p.eps }]);
  },
  constants() {
    return { WG: WORKGROUP };
  },
  workgroups(p, limits) {
    return checkDispatch(OP, [Math.ceil(p.n / (TILE_N * WORKGROUP)), p.m, 1], limits);
  },
  host(p, [x, norm, w, out]) {
    const { m, n, k } = p;
    const a = new Float32Array(k);
    for (let i = 0; i < m; i++) {
      normedRow(p, x, norm, i, a);
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let kk = 0; kk < k; kk++) s += a[kk]! * w[j * k + kk]!;
        out[i * n + j] = s;
      }
    }
  },
};
