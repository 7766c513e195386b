// scale: out = a * s, elementwise over an f32 tensor (shaders/scale.wgsl). `s` travels in the uniform,
// so a recorded graph can change it per replay.
import shader from '../../../shaders/scale.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkCount, checkFloat, checkOperands, checkShape, checkSize, linearDispatch, packParams } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface ScaleParams {
  /** Number of elements. */
  readonly n: number;
  /** The factor; applied as an f32. */
  readonly s: number;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'a', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

export const scale: OpDef<ScaleParams, readonly [a: Float32Array, out: Float32Array]> = {
  name: 'scale',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 16,
  check(operands, p) {
    checkOperands('scale', BINDINGS, operands);
    checkSize('scale', 'n', p.n);
    checkFloat('scale', 's', p.s);
    const a = operands[0]!;
    checkCount('scale', 'a', a, p.n);
    checkShape('scale', 'out', operands[1]!, a.shape);
  },
  params(p, offsets) {
    return packParams(16, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: p.n }, { f32: p.s }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('scale', p.n, LINEAR_WORKGROUP, limits);
  },
  host(p, [a, out]) {
    const s = Math.fround(p.s);
    for (let i = 0; i < p.n; i++) out[i] = a[i]! * s;
  },
};
