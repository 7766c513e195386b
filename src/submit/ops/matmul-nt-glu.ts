// matmul_nt_glu: out = silu(a x gate^T) * (a x up^T), the gate and up projections of llama's SwiGLU MLP
// and their product in one dispatch (shaders/matmul_nt_glu.wgsl): a [M, K], gate and up [N, K] (llama2.c's
// [out_features, in_features]), out [M, N], row-major f32. The host twin computes what matmul_nt twice
// and silu_mul compute: each product summed in f64 and rounded to f32, then silu_mul's expression.
import shader from '../../../shaders/matmul_nt_glu.wgsl?raw';
import { F32, checkDispatch, checkOperands, checkShape, checkSize, packParams } from './common.js';
import { TILE_N } from './tiling.js';
import type { OpBinding, OpDef } from './types.js';

export interface MatmulNTGluParams {
  readonly m: number;
  readonly n: number;
  readonly k: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'a', access: 'read', dtypes: F32 },
  { name: 'gate', access: 'read', dtypes: F32 },
  { name: 'up', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

/** Invocations per workgroup (x); each computes TILE_N columns of one row. */
const WORKGROUP = 32;
const OP = 'matmul_nt_glu';

export const matmulNTGlu: OpDef<MatmulNTGluParams, readonly [a: Float32Array, gate: Float32Array, up: Float32Array, out: Float32Array]> = {
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
    checkShape(OP, 'a', operands[0]!, [p.m, p.k]);
    checkShape(OP, 'gate', operands[1]!, [p.n, p.k]);
    checkShape(OP, 'up', operands[2]!, [p.n, p.k]);
    checkShape(OP, 'out', operands[3]!, [p.m, p.n]);
  },
  params(p, offsets) {
    return packParams(32, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: offsets[2]! }, { u32: offsets[3]! }, { u32: p.m }, { u32: p.n }, { u32: p.k }]);
  },
  constants() {
    return { WG: WORKGROUP };
  },
  workgroups(p, limits) {
    return checkDispatch(OP, [Math.ceil(p.n / (TILE_N * WORKGROUP)), p.m, 1], limits);
  },
  host(p, [a, gate, up, out]) {
    const { m, n, k } = p;
    for (let i = 0; i < m; i++) {
      const aRow = i * k;
      for (let j = 0; j < n; j++) {
        const wRow = j * k;
        let g = 0;
        let u = 0;
        for (let kk = 0; kk < k; kk++) {
          const x = a[aRow + kk]!;
          g += x * gate[wRow + kk]!;
          u += x * up[wRow + kk]!;
        }
        const x = Math.fround(g);
        out[i * n + j] = (x / (1 + Math.exp(-x))) * Math.fround(u);
      }
    }
  },
};
