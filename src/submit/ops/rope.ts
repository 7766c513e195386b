// rope: llama2.c rotary position embedding, in place over x f32 [count, heads * headDim]; row t is at
// position pos0 + t and each pair (2i, 2i+1) of every head turns by (pos0 + t) / theta^(2i / headDim)
// radians (shaders/rope.wgsl). Applied to q with heads = n_heads and to k with heads = n_kv_heads.
// The uniform carries the f32 frequency table (ropeFrequencies), not theta.
import shader from '../../../shaders/rope.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkFloat, checkIndex, checkOperands, checkShape, checkSize, linearDispatch, packParams, rejectParam, rejectRange } from './common.js';
import type { OpBinding, OpDef } from './types.js';

/** llama2.c's base. */
export const ROPE_THETA = 10000;

/** Largest head_dim: the uniform holds head_dim / 2 frequencies in 32 vec4s (shaders/rope.wgsl). */
export const ROPE_MAX_HEAD_DIM = 256;

/**
 * Largest position: the kernel's angle reduction is exact for quadrants below 2^16 (shaders/rope.wgsl),
 * and the largest angle is the position itself (pair 0 has frequency 1).
 */
export const ROPE_MAX_POSITION = 65_536;

/** Bytes of the uniform: 8 u32 fields, then ROPE_MAX_HEAD_DIM / 2 f32 frequencies. */
const PARAMS_BYTES = 32 + (ROPE_MAX_HEAD_DIM / 2) * 4;

/**
 * freq[i] = 1 / theta^(2i / headDim) for i in 0..headDim/2-1, rounded to f32 at each step exactly as
 * llama2.c computes it in float (`1.0f / powf(theta, head_dim / (float)head_size)`). The kernel gets
 * this table in its uniform, so host and device rotate by the same f32 angles.
 */
export function ropeFrequencies(headDim: number, theta: number): Float32Array {
  const f = Math.fround;
  const freq = new Float32Array(headDim / 2);
  for (let i = 0; i < freq.length; i++) freq[i] = f(1 / f(Math.pow(f(theta), f((2 * i) / headDim))));
  return freq;
}

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
  paramsBytes: PARAMS_BYTES,
  check(operands, p) {
    checkOperands('rope', BINDINGS, operands);
    checkSize('rope', 'count', p.count);
    checkSize('rope', 'heads', p.heads);
    checkSize('rope', 'headDim', p.headDim);
    if (p.headDim % 2 !== 0 || p.headDim > ROPE_MAX_HEAD_DIM) rejectParam('rope', 'headDim', `headDim must be even and at most ${ROPE_MAX_HEAD_DIM}`);
    checkIndex('rope', 'pos0', p.pos0);
    checkFloat('rope', 'theta', p.theta, true);
    if (p.pos0 + p.count - 1 > ROPE_MAX_POSITION) rejectRange('rope', `positions past ${ROPE_MAX_POSITION} are not supported`, { pos0: p.pos0, count: p.count });
    checkShape('rope', 'x', operands[0]!, [p.count, p.heads * p.headDim]);
  },
  params(p, offsets) {
    const bytes = packParams(PARAMS_BYTES, [{ u32: offsets[0]! }, { u32: p.count }, { u32: p.heads }, { u32: p.headDim }, { u32: p.pos0 }]);
    new Float32Array(bytes, 32, ROPE_MAX_HEAD_DIM / 2).set(ropeFrequencies(p.headDim, p.theta));
    return bytes;
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('rope', (p.count * p.heads * p.headDim) / 2, LINEAR_WORKGROUP, limits);
  },
  host(p, [x]) {
    // Frequencies and angles are rounded to f32 as llama2.c computes them (float powf, float pos * freq).
    const { count, heads, headDim } = p;
    const freq = ropeFrequencies(headDim, p.theta);
    for (let t = 0; t < count; t++) {
      const pos = p.pos0 + t;
      for (let h = 0; h < heads; h++) {
        for (let i = 0; i < headDim; i += 2) {
          const angle = Math.fround(pos * freq[i / 2]!);
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
