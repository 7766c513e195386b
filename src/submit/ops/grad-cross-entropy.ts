// cross_entropy_grad: softmax cross-entropy of logits [rows, cols] against u32 targets [rows], fused with
// its gradient (shaders/cross_entropy_grad.wgsl): loss[r] = logsumexp(logits[r]) - logits[r, target] and
// dlogits[r] = scale * (softmax(logits[r]) - onehot(target)). Targets are data: one outside 0..cols-1
// reads past its row on the device, so callers validate them on the host first (`checkTargets`).
import shader from '../../../shaders/cross_entropy_grad.wgsl?raw';
import { TenonError } from '../../errors.js';
import { F32, U32, checkFloat, checkOperands, checkShape, checkSize, linearWorkgroups, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface CrossEntropyGradParams {
  readonly rows: number;
  readonly cols: number;
  /** Weight of each row in the caller's total loss (1 / rows for a mean). */
  readonly scale: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'logits', access: 'read', dtypes: F32 },
  { name: 'targets', access: 'read', dtypes: U32 },
  { name: 'dlogits', access: 'read_write', dtypes: F32 },
  { name: 'loss', access: 'read_write', dtypes: F32 },
];

/** Throws EINVAL `out-of-range` unless every target is a class index below `cols`. */
export function checkTargets(targets: ArrayLike<number>, cols: number): void {
  for (let i = 0; i < targets.length; i++) {
    const t = targets[i]!;
    if (!Number.isInteger(t) || t < 0 || t >= cols) throw new TenonError('EINVAL', `target ${i} is ${t}, outside 0..${cols - 1}`, { op: 'ops.cross_entropy_grad', reason: 'out-of-range', ids: { index: i } });
  }
}

export const crossEntropyGrad: OpDef<CrossEntropyGradParams, readonly [logits: Float32Array, targets: Uint32Array, dlogits: Float32Array, loss: Float32Array]> = {
  name: 'cross_entropy_grad',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands('cross_entropy_grad', BINDINGS, operands);
    checkSize('cross_entropy_grad', 'rows', p.rows);
    checkSize('cross_entropy_grad', 'cols', p.cols);
    checkFloat('cross_entropy_grad', 'scale', p.scale);
    checkShape('cross_entropy_grad', 'logits', operands[0]!, [p.rows, p.cols]);
    checkShape('cross_entropy_grad', 'targets', operands[1]!, [p.rows]);
    checkShape('cross_entropy_grad', 'dlogits', operands[2]!, [p.rows, p.cols]);
    checkShape('cross_entropy_grad', 'loss', operands[3]!, [p.rows]);
  },
  params(p, o) {
    return packParams(32, [{ u32: o[0]! }, { u32: o[1]! }, { u32: o[2]! }, { u32: o[3]! }, { u32: p.rows }, { u32: p.cols }, { f32: p.scale }]);
  },
  constants() {
    return {};
  },
  workgroups(p, limits) {
    return linearWorkgroups('cross_entropy_grad', p.rows, limits);
  },
  host(p, [logits, targets, dlogits, loss]) {
    const { rows, cols } = p;
    const scale = Math.fround(p.scale);
    for (let r = 0; r < rows; r++) {
      const at = r * cols;
      let max = -Infinity;
      for (let c = 0; c < cols; c++) max = Math.max(max, logits[at + c]!);
      let sum = 0;
      for (let c = 0; c < cols; c++) sum += Math.exp(logits[at + c]! - max);
      const target = targets[r]!;
      for (let c = 0; c < cols; c++) dlogits[at + c] = scale * (Math.exp(logits[at + c]! - max) / sum - (c === target ? 1 : 0));
      loss[r] = max + Math.log(sum) - logits[at + target]!;
    }
  },
};
