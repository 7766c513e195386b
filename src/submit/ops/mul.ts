// mul: out = a * b, elementwise over f32 tensors of one shape (shaders/mul.wgsl).
import shader from '../../../shaders/mul.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkCount, checkOperands, checkShape, checkSize, linearDispatch, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface MulParams {
  /** Number of elements (the product of the common shape). */
  readonly n: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'a', access: 'read', dtypes: F32 },
  { name: 'b', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

export const mul: OpDef<MulParams, readonly [a: Float32Array, b: Float32Array, out: Float32Array]> = {
  name: 'mul',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 16,
  check(operands, p) {
    checkOperands('mul', BINDINGS, operands);
    checkSize('mul', 'n', p.n);
    const a = operands[0]!;
    checkCount('mul', 'a', a, p.n);
    checkShape('mul', 'b', operands[1]!, a.shape);
    checkShape('mul', 'out', operands[2]!, a.shape);
  },
  params(p, offsets) {
    return packParams(16, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: offsets[2]! }, { u32: p.n }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('mul', p.n, LINEAR_WORKGROUP, limits);
  },
  host(p, [a, b, out]) {
    for (let i = 0; i < p.n; i++) out[i] = a[i]! * b[i]!;
  },
};
