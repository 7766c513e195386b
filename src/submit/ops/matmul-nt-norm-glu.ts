// matmul_nt_norm_glu: out = silu(a x gate^T) * (a x up^T) with a = rmsnorm(x) · norm: the FFN norm, the
// gate and up projections of llama's SwiGLU MLP and their product in one dispatch
// (shaders/matmul_nt_norm_glu.wesl, its input side shared in ./norm-input.ts): x [M, K], norm [K], gate and up [N, K] (llama2.c's [out_features,
// in_features]), out [M, N], row-major f32. The host twin computes what rmsnorm, matmul_nt twice and
// silu_mul compute: the normed row rounded to f32 as rmsnorm's twin rounds it, each product summed in
// f64 and rounded to f32, then silu_mul's expression.
import variants from '../../../shaders/matmul_nt_norm_glu.wesl?wesl';
import { F32, checkDispatch, checkOperands, checkShape, checkSize, packParams } from './common.js';
import { weslVariant } from './fused-variants.js';
import { NORM_INPUT_BINDINGS, checkNormInput, normedRow, type NormInputParams } from './norm-input.js';
import { TILE_N } from './tiling.js';
import type { OpBinding, OpDef } from './types.js';

export interface MatmulNTNormGluParams extends NormInputParams {
  readonly n: number;
}

const BINDINGS: readonly OpBinding[] = [
  ...NORM_INPUT_BINDINGS,
  { name: 'gate', access: 'read', dtypes: F32 },
  { name: 'up', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

/** Invocations per workgroup (x); each computes TILE_N columns of one row. */
const WORKGROUP = 32;
const OP = 'matmul_nt_norm_glu';

export const matmulNTNormGlu: OpDef<MatmulNTNormGluParams, readonly [x: Float32Array, norm: Float32Array, gate: Float32Array, up: Float32Array, out: Float32Array]> = {
  name: OP,
  shader: weslVariant(variants, [], OP),
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 48,
  check(operands, p) {
    checkOperands(OP, BINDINGS, operands);
    checkNormInput(OP, operands, p);
    checkSize(OP, 'n', p.n);
    checkShape(OP, 'gate', operands[2]!, [p.n, p.k]);
    checkShape(OP, 'up', operands[3]!, [p.n, p.k]);
    checkShape(OP, 'out', operands[4]!, [p.m, p.n]);
  },
  params(p, offsets) {
    return packParams(48, [...offsets.slice(0, 5).map((o) => ({ u32: o })), { u32: p.m }, { u32: p.n }, { u32: p.k }, { f32: p.eps }]);
  },
  constants() {
    return { WG: WORKGROUP };
  },
  workgroups(p, limits) {
    return checkDispatch(OP, [Math.ceil(p.n / (TILE_N * WORKGROUP)), p.m, 1], limits);
  },
  host(p, [x, norm, gate, up, out]) {
    const { m, n, k } = p;
    const a = new Float32Array(k);
    for (let i = 0; i < m; i++) {
      normedRow(p, x, norm, i, a);
      for (let j = 0; j < n; j++) {
        const wRow = j * k;
        let g = 0;
        let u = 0;
        for (let kk = 0; kk < k; kk++) {
          const v = a[kk]!;
          g += v * gate[wRow + kk]!;
          u += v * up[wRow + kk]!;
        }
        const gf = Math.fround(g);
        out[i * n + j] = (gf / (1 + Math.exp(-gf))) * Math.fround(u);
      }
    }
  },
};
