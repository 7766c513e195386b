// Backward of rmsnorm (out = w * x * r, r = 1 / sqrt(mean(x^2) + eps) per row of x [rows, cols]) as two
// kernels: rmsnorm_grad_x (shaders/rmsnorm_grad_x.wgsl) writes or adds dx and each row's r into rstd
// [rows]; rmsnorm_grad_w (shaders/rmsnorm_grad_w.wgsl) then sums dw over rows from that rstd, one column
// per invocation (no cross-row race). Run grad_x first.
import shaderX from '../../../shaders/rmsnorm_grad_x.wgsl?raw';
import shaderW from '../../../shaders/rmsnorm_grad_w.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkFloat, checkOperands, checkShape, checkSize, linearDispatch, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface RmsnormGradXParams {
  readonly rows: number;
  readonly cols: number;
  readonly eps: number;
  /** Add into dx (the residual stream's gradient) instead of overwriting it. */
  readonly accumulate: boolean;
}

export interface RmsnormGradWParams {
  readonly rows: number;
  readonly cols: number;
  readonly accumulate: boolean;
}

const X_BINDINGS: readonly OpBinding[] = [
  { name: 'x', access: 'read', dtypes: F32 },
  { name: 'w', access: 'read', dtypes: F32 },
  { name: 'dy', access: 'read', dtypes: F32 },
  { name: 'dx', access: 'read_write', dtypes: F32 },
  { name: 'rstd', access: 'read_write', dtypes: F32 },
];

const W_BINDINGS: readonly OpBinding[] = [
  { name: 'x', access: 'read', dtypes: F32 },
  { name: 'dy', access: 'read', dtypes: F32 },
  { name: 'rstd', access: 'read', dtypes: F32 },
  { name: 'dw', access: 'read_write', dtypes: F32 },
];

export const rmsnormGradX: OpDef<RmsnormGradXParams, readonly [x: Float32Array, w: Float32Array, dy: Float32Array, dx: Float32Array, rstd: Float32Array]> = {
  name: 'rmsnorm_grad_x',
  shader: shaderX,
  entryPoint: 'main',
  bindings: X_BINDINGS,
  paramsBytes: 48,
  check(operands, p) {
    checkOperands('rmsnorm_grad_x', X_BINDINGS, operands);
    checkSize('rmsnorm_grad_x', 'rows', p.rows);
    checkSize('rmsnorm_grad_x', 'cols', p.cols);
    checkFloat('rmsnorm_grad_x', 'eps', p.eps, true);
    checkShape('rmsnorm_grad_x', 'x', operands[0]!, [p.rows, p.cols]);
    checkShape('rmsnorm_grad_x', 'w', operands[1]!, [p.cols]);
    checkShape('rmsnorm_grad_x', 'dy', operands[2]!, [p.rows, p.cols]);
    checkShape('rmsnorm_grad_x', 'dx', operands[3]!, [p.rows, p.cols]);
    checkShape('rmsnorm_grad_x', 'rstd', operands[4]!, [p.rows]);
  },
  params(p, o) {
    return packParams(48, [{ u32: o[0]! }, { u32: o[1]! }, { u32: o[2]! }, { u32: o[3]! }, { u32: o[4]! }, { u32: p.rows }, { u32: p.cols }, { f32: p.eps }, { u32: p.accumulate ? 1 : 0 }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('rmsnorm_grad_x', p.rows, LINEAR_WORKGROUP, limits);
  },
  host(p, [x, w, dy, dx, rstd]) {
    const { rows, cols } = p;
    const eps = Math.fround(p.eps);
    for (let r = 0; r < rows; r++) {
      const at = r * cols;
      let ss = 0;
      let dot = 0;
      for (let c = 0; c < cols; c++) {
        ss += x[at + c]! * x[at + c]!;
        dot += w[c]! * dy[at + c]! * x[at + c]!;
      }
      const inv = 1 / Math.sqrt(ss / cols + eps);
      const k = (inv * inv * inv * dot) / cols;
      for (let c = 0; c < cols; c++) {
        const g = inv * w[c]! * dy[at + c]! - k * x[at + c]!;
        dx[at + c] = p.accumulate ? dx[at + c]! + g : g;
      }
      rstd[r] = inv;
    }
  },
};

export const rmsnormGradW: OpDef<RmsnormGradWParams, readonly [x: Float32Array, dy: Float32Array, rstd: Float32Array, dw: Float32Array]> = {
  name: 'rmsnorm_grad_w',
  shader: shaderW,
  entryPoint: 'main',
  bindings: W_BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands('rmsnorm_grad_w', W_BINDINGS, operands);
    checkSize('rmsnorm_grad_w', 'rows', p.rows);
    checkSize('rmsnorm_grad_w', 'cols', p.cols);
    checkShape('rmsnorm_grad_w', 'x', operands[0]!, [p.rows, p.cols]);
    checkShape('rmsnorm_grad_w', 'dy', operands[1]!, [p.rows, p.cols]);
    checkShape('rmsnorm_grad_w', 'rstd', operands[2]!, [p.rows]);
    checkShape('rmsnorm_grad_w', 'dw', operands[3]!, [p.cols]);
  },
  params(p, o) {
    return packParams(32, [{ u32: o[0]! }, { u32: o[1]! }, { u32: o[2]! }, { u32: o[3]! }, { u32: p.rows }, { u32: p.cols }, { u32: p.accumulate ? 1 : 0 }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('rmsnorm_grad_w', p.cols, LINEAR_WORKGROUP, limits);
  },
  host(p, [x, dy, rstd, dw]) {
    const { rows, cols } = p;
    for (let c = 0; c < cols; c++) {
      let s = 0;
      for (let r = 0; r < rows; r++) s += dy[r * cols + c]! * x[r * cols + c]! * rstd[r]!;
      dw[c] = p.accumulate ? dw[c]! + s : s;
    }
  },
};
