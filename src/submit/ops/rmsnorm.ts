// rmsnorm: llama2.c RMSNorm over the rows of x [rows, cols] with weight w [cols]:
// out[r, c] = w[c] * (x[r, c] / sqrt(mean_c(x[r, c]^2) + eps)) (shaders/rmsnorm.wgsl).
import shader from '../../../shaders/rmsnorm.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkFloat, checkOperands, checkShape, checkSize, linearDispatch, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

/** llama2.c's epsilon. */
export const RMSNORM_EPS = 1e-5;

export interface RmsnormParams {
  readonly rows: number;
  readonly cols: number;
  /** Added to the mean square before the square root; llama2.c uses RMSNORM_EPS. */
  readonly eps: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'x', access: 'read', dtypes: F32 },
  { name: 'w', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

export const rmsnorm: OpDef<RmsnormParams, readonly [x: Float32Array, w: Float32Array, out: Float32Array]> = {
  name: 'rmsnorm',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands('rmsnorm', BINDINGS, operands);
    checkSize('rmsnorm', 'rows', p.rows);
    checkSize('rmsnorm', 'cols', p.cols);
    checkFloat('rmsnorm', 'eps', p.eps, true);
    checkShape('rmsnorm', 'x', operands[0]!, [p.rows, p.cols]);
    checkShape('rmsnorm', 'w', operands[1]!, [p.cols]);
    checkShape('rmsnorm', 'out', operands[2]!, [p.rows, p.cols]);
  },
  params(p, offsets) {
    return packParams(32, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: offsets[2]! }, { u32: p.rows }, { u32: p.cols }, { f32: p.eps }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('rmsnorm', p.rows, LINEAR_WORKGROUP, limits);
  },
  host(p, [x, w, out]) {
    const { rows, cols } = p;
    const eps = Math.fround(p.eps);
    for (let r = 0; r < rows; r++) {
      const at = r * cols;
      let ss = 0;
      for (let c = 0; c < cols; c++) ss += x[at + c]! * x[at + c]!;
      const inv = 1 / Math.sqrt(ss / cols + eps);
      for (let c = 0; c < cols; c++) out[at + c] = w[c]! * (inv * x[at + c]!);
    }
  },
};
