// softmax over the rows of x [rows, cols]: out[r, c] = exp(x[r, c] - max_r) / sum_c' exp(x[r, c'] - max_r)
// (shaders/softmax.wgsl).
import shader from '../../../shaders/softmax.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkOperands, checkShape, checkSize, linearDispatch, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface SoftmaxParams {
  readonly rows: number;
  readonly cols: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'x', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

export const softmax: OpDef<SoftmaxParams, readonly [x: Float32Array, out: Float32Array]> = {
  name: 'softmax',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 16,
  check(operands, p) {
    checkOperands('softmax', BINDINGS, operands);
    checkSize('softmax', 'rows', p.rows);
    checkSize('softmax', 'cols', p.cols);
    checkShape('softmax', 'x', operands[0]!, [p.rows, p.cols]);
    checkShape('softmax', 'out', operands[1]!, [p.rows, p.cols]);
  },
  params(p, offsets) {
    return packParams(16, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: p.rows }, { u32: p.cols }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('softmax', p.rows, LINEAR_WORKGROUP, limits);
  },
  host(p, [x, out]) {
    const { rows, cols } = p;
    for (let r = 0; r < rows; r++) {
      const at = r * cols;
      let max = x[at]!;
      for (let c = 1; c < cols; c++) max = Math.max(max, x[at + c]!);
      let sum = 0;
      for (let c = 0; c < cols; c++) sum += Math.exp(x[at + c]! - max);
      for (let c = 0; c < cols; c++) out[at + c] = Math.exp(x[at + c]! - max) / sum;
    }
  },
};
