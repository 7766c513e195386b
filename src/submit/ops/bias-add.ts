// bias_add: x[r, :] += bias over the rows of x f32 [rows, cols], in place, with bias f32 [cols]
// (shaders/bias_add.wgsl): qwen2's Q/K/V biases, added after each projection. A separate pass rather
// than a qmatmul epilogue: the qmatmul kernels stay one binding list for every linear layer, and the pass
// reads rows * cols + cols floats against the projection's whole weight matrix.
import shader from '../../../shaders/bias_add.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkOperands, checkShape, checkSize, linearDispatch, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface BiasAddParams {
  /** Rows of x (tokens). */
  readonly rows: number;
  /** Row length of x and length of bias. */
  readonly cols: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'x', access: 'read_write', dtypes: F32 },
  { name: 'bias', access: 'read', dtypes: F32 },
];

export const biasAdd: OpDef<BiasAddParams, readonly [x: Float32Array, bias: Float32Array]> = {
  name: 'bias_add',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 16,
  check(operands, p) {
    checkOperands('bias_add', BINDINGS, operands);
    checkSize('bias_add', 'rows', p.rows);
    checkSize('bias_add', 'cols', p.cols);
    checkShape('bias_add', 'x', operands[0]!, [p.rows, p.cols]);
    checkShape('bias_add', 'bias', operands[1]!, [p.cols]);
  },
  params(p, offsets) {
    return packParams(16, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: p.rows }, { u32: p.cols }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('bias_add', p.rows * p.cols, LINEAR_WORKGROUP, limits);
  },
  host(p, [x, bias]) {
    const { rows, cols } = p;
    for (let r = 0; r < rows; r++) {
      const base = r * cols;
      for (let c = 0; c < cols; c++) x[base + c] = x[base + c]! + bias[c]!;
    }
  },
};
