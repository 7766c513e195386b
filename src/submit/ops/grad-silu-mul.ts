// silu_mul_grad: the gradient of out = silu(a) * b (the SwiGLU gate): da = dout * b * silu'(a),
// db = dout * silu(a), elementwise over f32 tensors of one shape (shaders/silu_mul_grad.wgsl).
import shader from '../../../shaders/silu_mul_grad.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkCount, checkOperands, checkShape, checkSize, linearDispatch, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface SiluMulGradParams {
  readonly n: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'a', access: 'read', dtypes: F32 },
  { name: 'b', access: 'read', dtypes: F32 },
  { name: 'dout', access: 'read', dtypes: F32 },
  { name: 'da', access: 'read_write', dtypes: F32 },
  { name: 'db', access: 'read_write', dtypes: F32 },
];

export const siluMulGrad: OpDef<SiluMulGradParams, readonly [a: Float32Array, b: Float32Array, dout: Float32Array, da: Float32Array, db: Float32Array]> = {
  name: 'silu_mul_grad',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands('silu_mul_grad', BINDINGS, operands);
    checkSize('silu_mul_grad', 'n', p.n);
    const a = operands[0]!;
    checkCount('silu_mul_grad', 'a', a, p.n);
    for (let i = 1; i < BINDINGS.length; i++) checkShape('silu_mul_grad', BINDINGS[i]!.name, operands[i]!, a.shape);
  },
  params(p, o) {
    return packParams(32, [{ u32: o[0]! }, { u32: o[1]! }, { u32: o[2]! }, { u32: o[3]! }, { u32: o[4]! }, { u32: p.n }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('silu_mul_grad', p.n, LINEAR_WORKGROUP, limits);
  },
  host(p, [a, b, dout, da, db]) {
    for (let i = 0; i < p.n; i++) {
      const x = a[i]!;
      const sg = 1 / (1 + Math.exp(-x));
      da[i] = dout[i]! * b[i]! * sg * (1 + x * (1 - sg));
      db[i] = dout[i]! * x * sg;
    }
  },
};
