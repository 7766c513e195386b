// silu_mul: out = silu(a) * b with silu(x) = x / (1 + exp(-x)), elementwise over f32 tensors of one shape
// (the SwiGLU gate of llama's MLP; shaders/silu_mul.wgsl).
import shader from '../../../shaders/silu_mul.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkCount, checkOperands, checkShape, checkSize, linearDispatch, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface SiluMulParams {
  /** Number of elements (the product of the common shape). */
  readonly n: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'a', access: 'read', dtypes: F32 },
  { name: 'b', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

export const siluMul: OpDef<SiluMulParams, readonly [a: Float32Array, b: Float32Array, out: Float32Array]> = {
  name: 'silu_mul',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 16,
  check(operands, p) {
    checkOperands('silu_mul', BINDINGS, operands);
    checkSize('silu_mul', 'n', p.n);
    const a = operands[0]!;
    checkCount('silu_mul', 'a', a, p.n);
    checkShape('silu_mul', 'b', operands[1]!, a.shape);
    checkShape('silu_mul', 'out', operands[2]!, a.shape);
  },
  params(p, offsets) {
    return packParams(16, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: offsets[2]! }, { u32: p.n }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('silu_mul', p.n, LINEAR_WORKGROUP, limits);
  },
  host(p, [a, b, out]) {
    for (let i = 0; i < p.n; i++) {
      const x = a[i]!;
      out[i] = (x / (1 + Math.exp(-x))) * b[i]!;
    }
  },
};
