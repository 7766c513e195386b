// matmul_nt_norm: out = a x w^T with a = rmsnorm(x) · norm: a final norm folded into the classifier of a
// decode step, in one dispatch (shaders/matmul_nt_norm.wgsl): x [M, K], norm [K], w [N, K] (llama2.c's
// [out_features, in_features]), out [M, N], row-major f32. The host twin computes what rmsnorm then
// matmul_nt compute: the normed row rounded to f32 as rmsnorm's twin rounds it, each product summed in
// f64 and rounded once.
import shader from '../../../shaders/matmul_nt_norm.wgsl?raw';
import { F32, checkDispatch, checkFloat, checkOperands, checkShape, checkSize, packParams } from './common.js';
import { TILE_N } from './tiling.js';
import type { OpBinding, OpDef } from './types.js';

export interface MatmulNTNormParams {
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly eps: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'x', access: 'read', dtypes: F32 },
  { name: 'norm', access: 'read', dtypes: F32 },
  { name: 'w', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

/** Invocations per workgroup (x); each computes TILE_N columns of one row. */
const WORKGROUP = 32;
const OP = 'matmul_nt_norm';

export const matmulNTNorm: OpDef<MatmulNTNormParams, readonly [x: Float32Array, norm: Float32Array, w: Float32Array, out: Float32Array]> = {
  name: OP,
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands(OP, BINDINGS, operands);
    checkSize(OP, 'm', p.m);
    checkSize(OP, 'n', p.n);
    checkSize(OP, 'k', p.k);
    checkFloat(OP, 'eps', p.eps, true);
    checkShape(OP, 'x', operands[0]!, [p.m, p.k]);
    checkShape(OP, 'norm', operands[1]!, [p.k]);
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
    const eps = Math.fround(p.eps);
    const a = new Float32Array(k);
    for (let i = 0; i < m; i++) {
      let ss = 0;
      for (let c = 0; c < k; c++) ss += x[i * k + c]! * x[i * k + c]!;
      const inv = 1 / Math.sqrt(ss / k + eps);
      for (let c = 0; c < k; c++) a[c] = norm[c]! * (inv * x[i * k + c]!);
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let kk = 0; kk < k; kk++) s += a[kk]! * w[j * k + kk]!;
        out[i * n + j] = s;
      }
    }
  },
};
