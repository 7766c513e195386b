// add_inplace: acc += b, elementwise over f32 tensors of one shape (shaders/add_inplace.wgsl). The
// residual-stream update without a second buffer: `acc` is one read_write binding.
import shader from '../../../shaders/add_inplace.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkCount, checkOperands, checkShape, checkSize, linearDispatch, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface AddInplaceParams {
  /** Number of elements (the product of the common shape). */
  readonly n: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'acc', access: 'read_write', dtypes: F32 },
  { name: 'b', access: 'read', dtypes: F32 },
];

export const addInplace: OpDef<AddInplaceParams, readonly [acc: Float32Array, b: Float32Array]> = {
  name: 'add_inplace',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 16,
  check(operands, p) {
    checkOperands('add_inplace', BINDINGS, operands);
    checkSize('add_inplace', 'n', p.n);
    const acc = operands[0]!;
    checkCount('add_inplace', 'acc', acc, p.n);
    checkShape('add_inplace', 'b', operands[1]!, acc.shape);
  },
  params(p, offsets) {
    return packParams(16, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: p.n }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('add_inplace', p.n, LINEAR_WORKGROUP, limits);
  },
  host(p, [acc, b]) {
    for (let i = 0; i < p.n; i++) acc[i] = acc[i]! + b[i]!;
  },
};
