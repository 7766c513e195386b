// rope: rotary position embedding, in place over x f32 [count, heads * headDim]; row t is at position
// pos0 + t and pair i of every head turns by (pos0 + t) * freq[i] radians (shaders/rope.wgsl), with
// freq[i] = 1 / theta^(2i / headDim), divided by freqFactors[i] when the model has frequency factors
// (Llama 3's `rope_freqs` tensor, as GGML divides its angle by them). Two pairings (`style`):
// 'normal' pairs (2i, 2i+1) (llama2.c, GGML mode 0: llama) and 'neox' pairs (i, i + headDim/2) (GGML
// mode 2: qwen2). Applied to q with heads = n_heads and to k with heads = n_kv_heads. The uniform carries
// the f32 frequency table (ropeTable), not theta; the style is the override constant NEOX.
import shader from '../../../shaders/rope.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkFloat, checkIndex, checkOperands, checkShape, checkSize, linearDispatch, packParams, rejectParam, rejectRange } from './common.js';
import type { OpBinding, OpDef } from './types.js';

/** llama2.c's base. */
export const ROPE_THETA = 10000;

/** Largest head_dim: the uniform holds head_dim / 2 frequencies in 32 vec4s (shaders/rope.wgsl). */
export const ROPE_MAX_HEAD_DIM = 256;

/**
 * Largest position, and largest angle in radians: the kernel's angle reduction is exact for quadrants
 * below 2^16 (shaders/rope.wgsl). Without frequency factors and with theta >= 1 the largest angle is the
 * position itself (pair 0 has frequency 1).
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

/** Which elements of a head form pair i: (2i, 2i+1) or (i, i + headDim/2). */
export type RopeStyle = 'normal' | 'neox';

export const ROPE_STYLES: readonly RopeStyle[] = ['normal', 'neox'];

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
  /** Pairing; 'normal' (the llama2.c behaviour) when absent. */
  readonly style?: RopeStyle;
  /**
   * Per-pair frequency divisors (headDim / 2 finite positive values; Llama 3's `rope_freqs`): pair i
   * turns by pos * freq[i] / freqFactors[i]. None when absent.
   */
  readonly freqFactors?: ArrayLike<number>;
}

/**
 * The f32 frequency table the kernel and the host twin rotate by: ropeFrequencies(headDim, theta), each
 * entry divided by its factor (rounded to f32 once) when `freqFactors` is given. Assumes check() passed.
 */
export function ropeTable(p: RopeParams): Float32Array {
  const freq = ropeFrequencies(p.headDim, p.theta);
  const factors = p.freqFactors;
  if (factors !== undefined) for (let i = 0; i < freq.length; i++) freq[i] = Math.fround(freq[i]! / factors[i]!);
  return freq;
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
    checkRopeParams(p);
    checkShape('rope', 'x', operands[0]!, [p.count, p.heads * p.headDim]);
  },
  params(p, offsets) {
    const bytes = packParams(PARAMS_BYTES, [{ u32: offsets[0]! }, { u32: p.count }, { u32: p.heads }, { u32: p.headDim }, { u32: p.pos0 }]);
    new Float32Array(bytes, 32, ROPE_MAX_HEAD_DIM / 2).set(ropeTable(p));
    return bytes;
  },
  constants(p) {
    return { WG: LINEAR_WORKGROUP, NEOX: p.style === 'neox' ? 1 : 0 };
  },
  workgroups(p, limits) {
    return linearDispatch('rope', (p.count * p.heads * p.headDim) / 2, LINEAR_WORKGROUP, limits);
  },
  host(p, [x]) {
    // Frequencies and angles are rounded to f32 as llama2.c computes them (float powf, float pos * freq).
    const { count, heads, headDim } = p;
    const half = headDim / 2;
    const neox = p.style === 'neox';
    const freq = ropeTable(p);
    for (let t = 0; t < count; t++) {
      const pos = p.pos0 + t;
      for (let h = 0; h < heads; h++) {
        const head = t * heads * headDim + h * headDim;
        for (let i = 0; i < half; i++) {
          const angle = Math.fround(pos * freq[i]!);
          const cos = Math.cos(angle);
          const sin = Math.sin(angle);
          const a = neox ? head + i : head + 2 * i;
          const b = neox ? a + half : a + 1;
          const x0 = x[a]!;
          const x1 = x[b]!;
          x[a] = x0 * cos - x1 * sin;
          x[b] = x0 * sin + x1 * cos;
        }
      }
    }
  },
};

/**
 * rope's checks of its params (everything rope.check checks but the operand), errors under rope's name:
 * shared with fused_rope_kv, which rotates rows of p.heads heads with the same params (no operand to build).
 */
export function checkRopeParams(p: RopeParams): void {
  checkSize('rope', 'count', p.count);
  checkSize('rope', 'heads', p.heads);
  checkSize('rope', 'headDim', p.headDim);
  if (p.headDim % 2 !== 0 || p.headDim > ROPE_MAX_HEAD_DIM) rejectParam('rope', 'headDim', `headDim must be even and at most ${ROPE_MAX_HEAD_DIM}`);
  checkIndex('rope', 'pos0', p.pos0);
  checkFloat('rope', 'theta', p.theta, true);
  if (p.pos0 + p.count - 1 > ROPE_MAX_POSITION) rejectRange('rope', `positions past ${ROPE_MAX_POSITION} are not supported`, { pos0: p.pos0, count: p.count });
  if (p.style !== undefined && !ROPE_STYLES.includes(p.style)) rejectParam('rope', 'style', `style must be one of ${ROPE_STYLES.join(', ')}`);
  if (p.freqFactors !== undefined) checkFactors(p.freqFactors, p.headDim / 2);
  // The kernel's angle reduction is exact up to ROPE_MAX_POSITION radians (see ROPE_MAX_POSITION);
  // frequencies above 1 (theta below 1, factors below 1) reach it before the last position does.
  // Without factors and with theta >= 1 the fastest pair is pair 0 (frequency 1): the check above.
  if (p.freqFactors !== undefined || p.theta < 1) {
    let fastest = 0;
    for (const f of ropeTable(p)) fastest = Math.max(fastest, f);
    if ((p.pos0 + p.count - 1) * fastest > ROPE_MAX_POSITION) rejectRange('rope', `angles past ${ROPE_MAX_POSITION} radians are not supported`, { pos0: p.pos0, count: p.count });
  }
}

/** Checks a frequency-factor table: `pairs` finite positive numbers. */
function checkFactors(factors: ArrayLike<number>, pairs: number): void {
  if (factors === null || typeof factors !== 'object' || factors.length !== pairs) {
    rejectParam('rope', 'freqFactors', `freqFactors must hold headDim / 2 = ${pairs} values`);
  }
  for (let i = 0; i < pairs; i++) {
    const v = factors[i];
    if (typeof v !== 'number' || !Number.isFinite(v) || !(v > 0)) rejectParam('rope', 'freqFactors', `freqFactors[${i}] must be a finite positive number`);
  }
}
