// apply_grad_adamw: one AdamW step on a parameter tensor in place, from its gradient and the first and
// second moments m, v (updated in place) (shaders/apply_grad_adamw.wgsl). Decoupled weight decay:
// param -= lr * (mhat / (sqrt(vhat) + eps) + weightDecay * param), mhat = m / (1 - beta1^step),
// vhat = v / (1 - beta2^step). The bias corrections are computed on the host in f64 and rounded to f32
// once, so host and device use the same values.
import shader from '../../../shaders/apply_grad_adamw.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkCount, checkFloat, checkOperands, checkShape, checkSize, linearDispatch, packParams, rejectParam } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface AdamWParams {
  /** Elements. */
  readonly n: number;
  readonly lr: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly weightDecay: number;
  /** 1-based step number (for the bias corrections). */
  readonly step: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'param', access: 'read_write', dtypes: F32 },
  { name: 'grad', access: 'read', dtypes: F32 },
  { name: 'm', access: 'read_write', dtypes: F32 },
  { name: 'v', access: 'read_write', dtypes: F32 },
];

/** The two bias corrections as f32. */
export function adamwCorrections(p: AdamWParams): readonly [number, number] {
  return [Math.fround(1 - Math.pow(p.beta1, p.step)), Math.fround(1 - Math.pow(p.beta2, p.step))];
}

export const adamwStep: OpDef<AdamWParams, readonly [param: Float32Array, grad: Float32Array, m: Float32Array, v: Float32Array]> = {
  name: 'apply_grad_adamw',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 48,
  check(operands, p) {
    checkOperands('apply_grad_adamw', BINDINGS, operands);
    checkSize('apply_grad_adamw', 'n', p.n);
    checkSize('apply_grad_adamw', 'step', p.step);
    checkFloat('apply_grad_adamw', 'lr', p.lr);
    checkFloat('apply_grad_adamw', 'eps', p.eps, true);
    checkFloat('apply_grad_adamw', 'weightDecay', p.weightDecay);
    for (const name of ['beta1', 'beta2'] as const) {
      checkFloat('apply_grad_adamw', name, p[name], true);
      if (!(p[name] < 1)) rejectParam('apply_grad_adamw', name, `${name} must be below 1`);
    }
    checkCount('apply_grad_adamw', 'param', operands[0]!, p.n);
    for (let i = 1; i < BINDINGS.length; i++) checkShape('apply_grad_adamw', BINDINGS[i]!.name, operands[i]!, operands[0]!.shape);
  },
  params(p, o) {
    const [bc1, bc2] = adamwCorrections(p);
    return packParams(48, [{ u32: o[0]! }, { u32: o[1]! }, { u32: o[2]! }, { u32: o[3]! }, { u32: p.n }, { f32: p.lr }, { f32: p.beta1 }, { f32: p.beta2 }, { f32: p.eps }, { f32: p.weightDecay }, { f32: bc1 }, { f32: bc2 }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('apply_grad_adamw', p.n, LINEAR_WORKGROUP, limits);
  },
  host(p, [param, grad, m, v]) {
    const f = Math.fround;
    const [bc1, bc2] = adamwCorrections(p);
    const b1 = f(p.beta1);
    const b2 = f(p.beta2);
    const lr = f(p.lr);
    const eps = f(p.eps);
    const wd = f(p.weightDecay);
    for (let i = 0; i < p.n; i++) {
      const g = grad[i]!;
      const mi = f(b1 * m[i]! + (1 - b1) * g);
      const vi = f(b2 * v[i]! + (1 - b2) * g * g);
      m[i] = mi;
      v[i] = vi;
      const w = param[i]!;
      param[i] = w - lr * (mi / bc1 / (Math.sqrt(vi / bc2) + eps) + wd * w);
    }
  },
};
