// attention: causal grouped-query attention of `count` query rows at positions pos0..pos0+count-1 over
// a KV cache holding positions 0..pos0+count-1 (shaders/attention.wgsl). Prefill is count = T, decode
// count = 1; both are this op.
//   q, out f32 [count, heads * headDim]; k, v f32 [maxSeq, kvHeads * headDim];
//   head h reads kv head h / (heads / kvHeads); scores are scaled by 1/sqrt(headDim).
import shader from '../../../shaders/attention.wgsl?raw';
import { F32, LINEAR_WORKGROUP, checkIndex, checkOperands, checkShape, checkSize, linearDispatch, packParams, rejectParam, rejectRange } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export interface AttentionParams {
  /** Query rows. */
  readonly count: number;
  readonly heads: number;
  /** Divides heads. */
  readonly kvHeads: number;
  readonly headDim: number;
  /** Cache rows (the first dimension of k and v). */
  readonly maxSeq: number;
  /** Position of query row 0; the cache must hold rows 0..pos0+count-1. */
  readonly pos0: number;
}

/** The score scale, rounded to f32 once so host and device use the same value. */
export function attentionScale(headDim: number): number {
  return Math.fround(1 / Math.sqrt(headDim));
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'q', access: 'read', dtypes: F32 },
  { name: 'k', access: 'read', dtypes: F32 },
  { name: 'v', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

export const attention: OpDef<AttentionParams, readonly [q: Float32Array, k: Float32Array, v: Float32Array, out: Float32Array]> = {
  name: 'attention',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 48,
  check(operands, p) {
    checkOperands('attention', BINDINGS, operands);
    checkSize('attention', 'count', p.count);
    checkSize('attention', 'heads', p.heads);
    checkSize('attention', 'kvHeads', p.kvHeads);
    checkSize('attention', 'headDim', p.headDim);
    checkSize('attention', 'maxSeq', p.maxSeq);
    checkIndex('attention', 'pos0', p.pos0);
    if (p.heads % p.kvHeads !== 0) rejectParam('attention', 'kvHeads', 'kvHeads must divide heads');
    if (p.pos0 + p.count > p.maxSeq) {
      rejectRange('attention', `positions up to ${p.pos0 + p.count - 1} do not fit a cache of ${p.maxSeq}`, { pos0: p.pos0, count: p.count, maxSeq: p.maxSeq });
    }
    const qWidth = p.heads * p.headDim;
    const kvWidth = p.kvHeads * p.headDim;
    checkShape('attention', 'q', operands[0]!, [p.count, qWidth]);
    checkShape('attention', 'k', operands[1]!, [p.maxSeq, kvWidth]);
    checkShape('attention', 'v', operands[2]!, [p.maxSeq, kvWidth]);
    checkShape('attention', 'out', operands[3]!, [p.count, qWidth]);
  },
  params(p, offsets) {
    return packParams(48, [
      { u32: offsets[0]! }, { u32: offsets[1]! }, { u32: offsets[2]! }, { u32: offsets[3]! },
      { u32: p.count }, { u32: p.heads }, { u32: p.kvHeads }, { u32: p.headDim },
      { u32: p.pos0 }, { f32: attentionScale(p.headDim) },
    ]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('attention', p.count * p.heads * Math.ceil(p.headDim / 4), LINEAR_WORKGROUP, limits);
  },
  host(p, [q, k, v, out]) {
    // Two-pass softmax per (row, head) in f64: scores, max, exponentials, sum, weighted sum of v rows.
    const { count, heads, kvHeads, headDim } = p;
    const group = heads / kvHeads;
    const qWidth = heads * headDim;
    const kvWidth = kvHeads * headDim;
    const scale = attentionScale(headDim);
    const scores = new Float64Array(p.pos0 + count);
    const acc = new Float64Array(headDim);
    for (let t = 0; t < count; t++) {
      const last = p.pos0 + t;
      for (let h = 0; h < heads; h++) {
        const g = Math.floor(h / group);
        const qAt = t * qWidth + h * headDim;
        let max = -Infinity;
        for (let j = 0; j <= last; j++) {
          const kAt = j * kvWidth + g * headDim;
          let s = 0;
          for (let d = 0; d < headDim; d++) s += q[qAt + d]! * k[kAt + d]!;
          scores[j] = s * scale;
          max = Math.max(max, scores[j]!);
        }
        let sum = 0;
        acc.fill(0);
        for (let j = 0; j <= last; j++) {
          const e = Math.exp(scores[j]! - max);
          sum += e;
          const vAt = j * kvWidth + g * headDim;
          for (let d = 0; d < headDim; d++) acc[d]! += e * v[vAt + d]!;
        }
        for (let d = 0; d < headDim; d++) out[qAt + d] = acc[d]! / sum;
      }
    }
  },
};
