// matmul_tn_grad: the weight gradient of a linear layer out = x · Wᵀ (matmul_nt with W [n, k]):
// dw [n, k] (+)= dyᵀ · x for dy [m, n] and x [m, k] (shaders/matmul_tn_grad.wgsl). The input gradient of the
// same layer, dx [m, k] = dy · W, is the plain `matmul` op with (m, n: k, k: n) and needs no kernel of its
// own. `accumulate` adds into dw instead of overwriting it (a classifier tied to the embedding).
import shader from '../../../shaders/matmul_tn_grad.wgsl?raw';
import { F32, checkDispatch, checkOperands, checkShape, checkSize, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface MatmulTNGradParams {
  /** Rows of dy and x (tokens). */
  readonly m: number;
  /** Rows of dw (output features). */
  readonly n: number;
  /** Columns of dw and x (input features). */
  readonly k: number;
  /** Add into dw (true) or overwrite it (false). */
  readonly accumulate: boolean;
}

/** Workgroup shape and block of the kernel: 16 x 4 invocations of 4 x 4 outputs each. */
const WG_X = 16;
const WG_Y = 4;
const BLOCK = 4;

const BINDINGS: readonly OpBinding[] = [
  { name: 'dy', access: 'read', dtypes: F32 },
  { name: 'x', access: 'read', dtypes: F32 },
  { name: 'dw', access: 'read_write', dtypes: F32 },
];

export const matmulTNGrad: OpDef<MatmulTNGradParams, readonly [dy: Float32Array, x: Float32Array, dw: Float32Array]> = {
  name: 'matmul_tn_grad',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands('matmul_tn_grad', BINDINGS, operands);
    checkSize('matmul_tn_grad', 'm', p.m);
    checkSize('matmul_tn_grad', 'n', p.n);
    checkSize('matmul_tn_grad', 'k', p.k);
    checkShape('matmul_tn_grad', 'dy', operands[0]!, [p.m, p.n]);
    checkShape('matmul_tn_grad', 'x', operands[1]!, [p.m, p.k]);
    checkShape('matmul_tn_grad', 'dw', operands[2]!, [p.n, p.k]);
  },
  params(p, offsets) {
    return packParams(32, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: offsets[2]! }, { u32: p.m }, { u32: p.n }, { u32: p.k }, { u32: p.accumulate ? 1 : 0 }]);
  },
  constants() {
    return { WG_X, WG_Y };
  },
  workgroups(p, limits) {
    return checkDispatch('matmul_tn_grad', [Math.ceil(p.k / (BLOCK * WG_X)), Math.ceil(p.n / (BLOCK * WG_Y)), 1], limits);
  },
  host(p, [dy, x, dw]) {
    // Row i of the reduction adds dy[i, j] times row i of x into row j of the f64 accumulators.
    const { m, n, k } = p;
    const acc = new Float64Array(n * k);
    for (let i = 0; i < m; i++) {
      const xr = i * k;
      for (let j = 0; j < n; j++) {
        const g = dy[i * n + j]!;
        if (g === 0) continue;
        const ar = j * k;
        for (let c = 0; c < k; c++) acc[ar + c]! += g * x[xr + c]!;
      }
    }
    for (let e = 0; e < n * k; e++) dw[e] = p.accumulate ? dw[e]! + acc[e]! : acc[e]!;
  },
};
