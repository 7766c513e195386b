// rope: llama2.c rotary position embedding, in place over x f32 [count, heads * headDim]; row t is at
// position pos0 + t and each pair (2i, 2i+1) of every head turns by (pos0 + t) / theta^(2i / headDim)
// radians (shaders/rope.wgsl). Applied to q with heads = n_heads and to k with heads = n_kv_heads.
import shader from '../../../shaders/rope.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkFloat, checkIndex, checkOperands, checkShape, checkSize, linearDispatch, packParams, rejectParam, rejectRange } from './common.js';
import type { OpBinding, OpDef } from './types.js';

/** llama2.c's base. */
export const ROPE_THETA = 10000;

/**
 * Largest position the kernel's angle reduction covers: it is exact for angles below 2^15 turns of
 * 2*pi (see shaders/rope.wgsl), and the angle of pair 0 is the position itself.
 */
export const ROPE_MAX_POSITION = 200_000;

export interface RopeParams {
  /** Rows of x (consecutive positions). */
  readonly count: number;
  /** Heads per row (n_heads for q, n_kv_heads for k). */
  readonly heads: number;
  /** Even. */
  readonly headDim: number;
  /** Position of row 0. */
  readonly pos0: number;
  readonly theta: number;
}

const BINDINGS: readonly OpBinding[] = [{ name: 'x', access: 'read_write', dtypes: F32 }];

export const rope: OpDef<RopeParams, readonly [x: Float32Array]> = {
  name: 'rope',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands('rope', BINDINGS, operands);
    checkSize('rope', 'count', p.count);
    checkSize('rope', 'heads', p.heads);
    checkSize('rope', 'headDim', p.headDim);
    if (p.headDim % 2 !== 0) rejectParam('rope', 'headDim', 'headDim must be even');
    checkIndex('rope', 'pos0', p.pos0);
    checkFloat('rope', 'theta', p.theta, true);
    if (p.pos0 + p.count - 1 > ROPE_MAX_POSITION) rejectRange('rope', `positions past ${ROPE_MAX_POSITION} are not supported`, { pos0: p.pos0, count: p.count });
    checkShape('rope', 'x', operands[0]!, [p.count, p.heads * p.headDim]);
  },
  params(p, offsets) {
    return packParams(32, [{ u32: offsets[0]! }, { u32: p.count }, { u32: p.heads }, { u32: p.headDim }, { u32: p.pos0 }, { f32: p.theta }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('rope', (p.count * p.heads * p.headDim) / 2, LINEAR_WORKGROUP, limits);
  },
  host(p, [x]) {
    // The frequency and angle are rounded to f32 as llama2.c computes them (float powf, float pos * freq).
    const { count, heads, headDim } = p;
    const f = Math.fround;
    const theta = f(p.theta);
    for (let t = 0; t < count; t++) {
      const pos = p.pos0 + t;
      for (let h = 0; h < heads; h++) {
        for (let i = 0; i < headDim; i += 2) {
          const freq = f(1 / f(Math.pow(theta, f(i / headDim))));
          const angle = f(pos * freq);
          const cos = Math.cos(angle);
          const sin = Math.sin(angle);
          const at = t * heads * headDim + h * headDim + i;
          const x0 = x[at]!;
          const x1 = x[at + 1]!;
          x[at] = x0 * cos - x1 * sin;
          x[at + 1] = x0 * sin + x1 * cos;
        }
      }
    }
  },
};
