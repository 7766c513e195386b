// add: out = a + b, elementwise over f32 tensors of one shape (shaders/add.wgsl).
import shader from '../../../shaders/add.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkCount, checkOperands, checkShape, checkSize, linearDispatch, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface AddParams {
  /** Number of elements (the product of the common shape). */
  readonly n: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'a', access: 'read', dtypes: F32 },
  { name: 'b', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

export const add: OpDef<AddParams, readonly [a: Float32Array, b: Float32Array, out: Float32Array]> = {
  name: 'add',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 16,
  check(operands, p) {
    checkOperands('add', BINDINGS, operands);
    checkSize('add', 'n', p.n);
    const a = operands[0]!;
    checkCount('add', 'a', a, p.n);
    checkShape('add', 'b', operands[1]!, a.shape);
    checkShape('add', 'out', operands[2]!, a.shape);
  },
  params(p, offsets) {
    return packParams(16, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: offsets[2]! }, { u32: p.n }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('add', p.n, LINEAR_WORKGROUP, limits);
  },
  host(p, [a, b, out]) {
    for (let i = 0; i < p.n; i++) out[i] = a[i]! + b[i]!;
  },
};
