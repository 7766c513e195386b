// argmax over the rows of x [rows, cols] -> out u32 [rows]: the first index of the row maximum
// (ties go to the smallest index, as in llama2.c's greedy sampler) (shaders/argmax.wgsl).
import shader from '../../../shaders/argmax.wgsl?raw';
import { F32, LINEAR_WORKGROUP, U32, checkOperands, checkShape, checkSize, linearDispatch, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface ArgmaxParams {
  readonly rows: number;
  readonly cols: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'x', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: U32 },
];

export const argmax: OpDef<ArgmaxParams, readonly [x: Float32Array, out: Uint32Array]> = {
  name: 'argmax',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 16,
  check(operands, p) {
    checkOperands('argmax', BINDINGS, operands);
    checkSize('argmax', 'rows', p.rows);
    checkSize('argmax', 'cols', p.cols);
    checkShape('argmax', 'x', operands[0]!, [p.rows, p.cols]);
    checkShape('argmax', 'out', operands[1]!, [p.rows]);
  },
  params(p, offsets) {
    return packParams(16, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: p.rows }, { u32: p.cols }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('argmax', p.rows, LINEAR_WORKGROUP, limits);
  },
  host(p, [x, out]) {
    const { rows, cols } = p;
    for (let r = 0; r < rows; r++) {
      const at = r * cols;
      let best = 0;
      for (let c = 1; c < cols; c++) if (x[at + c]! > x[at + best]!) best = c;
      out[r] = best;
    }
  },
};
