// softmax_grad: the gradient of softmax over the rows of [rows, cols] from the forward's output y:
// dx = y * (dy - rowsum(y * dy)) (shaders/softmax_grad.wgsl). The llama step needs no standalone one
// (its softmaxes are inside attention_grad_q/kv and cross_entropy_grad); this is the rule for the
// `softmax` op itself.
import shader from '../../../shaders/softmax_grad.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkOperands, checkShape, checkSize, linearDispatch, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface SoftmaxGradParams {
  readonly rows: number;
  readonly cols: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'y', access: 'read', dtypes: F32 },
  { name: 'dy', access: 'read', dtypes: F32 },
  { name: 'dx', access: 'read_write', dtypes: F32 },
];

export const softmaxGrad: OpDef<SoftmaxGradParams, readonly [y: Float32Array, dy: Float32Array, dx: Float32Array]> = {
  name: 'softmax_grad',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands('softmax_grad', BINDINGS, operands);
    checkSize('softmax_grad', 'rows', p.rows);
    checkSize('softmax_grad', 'cols', p.cols);
    for (let i = 0; i < BINDINGS.length; i++) checkShape('softmax_grad', BINDINGS[i]!.name, operands[i]!, [p.rows, p.cols]);
  },
  params(p, o) {
    return packParams(32, [{ u32: o[0]! }, { u32: o[1]! }, { u32: o[2]! }, { u32: p.rows }, { u32: p.cols }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('softmax_grad', p.rows, LINEAR_WORKGROUP, limits);
  },
  host(p, [y, dy, dx]) {
    const { rows, cols } = p;
    for (let r = 0; r < rows; r++) {
      const at = r * cols;
      let dot = 0;
      for (let c = 0; c < cols; c++) dot += y[at + c]! * dy[at + c]!;
      for (let c = 0; c < cols; c++) dx[at + c] = y[at + c]! * (dy[at + c]! - dot);
    }
  },
};
