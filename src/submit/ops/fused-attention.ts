// Single-pass attention over a KV cache (shaders/fused_attention.wesl, fused_attention_combine.wesl):
// causal grouped-query attention of `count` query rows at positions pos0..pos0+count-1, one workgroup per
// (head, position split, row) with an online softmax over tiles of positions (the scores, their maximum
// and the weighted sum of v rows never leave the workgroup), for real GPUs (the `attention` op is the
// one-invocation-per-slice kernel tuned for SwiftShader). Two ways to run it:
//   fused_attention                 one split: out [count, heads * headDim] directly;
//   fused_attention_split + fused_attention_combine
//                                   positions cut into splits of splitLen (parallel work for long
//                                   contexts at decode): each split writes (m, l, acc) to a partial buffer
//                                   [count, heads, maxSplits, headDim + 2], the combine merges them.
// The splits in use (ceil((pos0 + count) / splitLen)) follow the step's pos0; the partial buffer is sized
// for the cache (maxSplits = ceil(maxSeq / splitLen)).
// Host twins: fused_attention is the attention op's host twin (the unfused kernel it replaces); the split
// pair computes each split in f64 and merges in f64, so split + combine equals it up to f32 rounding.
import attentionVariants from '../../../shaders/fused_attention.wesl?wesl';
import combineVariants from '../../../shaders/fused_attention_combine.wesl?wesl';
import { attention, attentionScale } from './attention.js';
import type { AttentionParams } from './attention.js';
import { F32, LINEAR_WORKGROUP, checkDispatch, checkIndex, checkOperands, checkShape, checkSize, linearDispatch, packParams, rejectParam, rejectRange } from './common.js';
import { weslVariant } from './fused-variants.js';
import type { OpBinding, OpDef, OpLimits, Workgroups } from './types.js';

/** fused_attention's params: those of the attention op. */
export type FusedAttentionParams = AttentionParams;

export interface FusedAttentionSplitParams extends AttentionParams {
  /** Positions per split. */
  readonly splitLen: number;
}

type F = Float32Array;
export type FusedAttentionArrays = readonly [q: F, k: F, v: F, out: F];
export type FusedAttentionCombineArrays = readonly [part: F, out: F];

/** Positions per tile and invocations per workgroup. */
const ATTENTION_WORKGROUP = 64;
/** Largest head size (shared-memory rows of the shader). */
export const FUSED_ATTENTION_MAX_HEAD_DIM = 256;
/** The running maximum before any score, and what an empty split reports (the most negative f32). */
const MOST_NEGATIVE = -3.4028234663852886e38;
const PARAMS_BYTES = 48;
const COMBINE_PARAMS_BYTES = 32;

/** Splits a cache of maxSeq rows has room for. */
export function maxSplits(maxSeq: number, splitLen: number): number {
  return Math.ceil(maxSeq / splitLen);
}

/** Splits the step's positions occupy. */
export function usedSplits(pos0: number, count: number, splitLen: number): number {
  return Math.ceil((pos0 + count) / splitLen);
}

const ATTENTION_BINDINGS: readonly OpBinding[] = [
  { name: 'q', access: 'read', dtypes: F32 },
  { name: 'k', access: 'read', dtypes: F32 },
  { name: 'v', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

function checkHeadDim(name: string, headDim: number): void {
  if (headDim > FUSED_ATTENTION_MAX_HEAD_DIM) rejectParam(name, 'headDim', `headDim must be at most ${FUSED_ATTENTION_MAX_HEAD_DIM}`);
}

function packAttention(p: AttentionParams, offsets: readonly number[], splitLen: number, splits: number): ArrayBuffer {
  return packParams(PARAMS_BYTES, [
    { u32: offsets[0]! }, { u32: offsets[1]! }, { u32: offsets[2]! }, { u32: offsets[3]! },
    { u32: p.count }, { u32: p.heads }, { u32: p.kvHeads }, { u32: p.headDim },
    { u32: p.pos0 }, { f32: attentionScale(p.headDim) }, { u32: splitLen }, { u32: splits },
  ]);
}

function grid(name: string, heads: number, splits: number, count: number, limits: OpLimits): Workgroups {
  return checkDispatch(name, [heads, splits, count], limits);
}

export const fusedAttention: OpDef<FusedAttentionParams, FusedAttentionArrays> = {
  name: 'fused_attention',
  shader: weslVariant(attentionVariants, [], 'fused_attention'),
  entryPoint: 'main',
  bindings: ATTENTION_BINDINGS,
  paramsBytes: PARAMS_BYTES,
  check(operands, p) {
    attention.check(operands, p);
    checkHeadDim('fused_attention', p.headDim);
  },
  params(p, offsets) {
    // One split holding every position.
    return packAttention(p, offsets, p.maxSeq, 1);
  },
  constants() {
    return { WG: ATTENTION_WORKGROUP };
  },
  workgroups(p, limits) {
    return grid('fused_attention', p.heads, 1, p.count, limits);
  },
  host(p, arrays) {
    attention.host(p, arrays);
  },
};

export const fusedAttentionSplit: OpDef<FusedAttentionSplitParams, FusedAttentionArrays> = {
  name: 'fused_attention_split',
  shader: weslVariant(attentionVariants, ['split'], 'fused_attention_split'),
  entryPoint: 'main',
  bindings: ATTENTION_BINDINGS,
  paramsBytes: PARAMS_BYTES,
  check(operands, p) {
    const name = 'fused_attention_split';
    checkOperands(name, ATTENTION_BINDINGS, operands);
    checkSize(name, 'splitLen', p.splitLen);
    // q, k, v and the positions as the attention op checks them; `out` is the partial buffer.
    attention.check([operands[0]!, operands[1]!, operands[2]!, operands[0]!], p);
    checkHeadDim(name, p.headDim);
    checkShape(name, 'out', operands[3]!, [p.count, p.heads, maxSplits(p.maxSeq, p.splitLen), p.headDim + 2]);
  },
  params(p, offsets) {
    return packAttention(p, offsets, p.splitLen, maxSplits(p.maxSeq, p.splitLen));
  },
  constants() {
    return { WG: ATTENTION_WORKGROUP };
  },
  workgroups(p, limits) {
    return grid('fused_attention_split', p.heads, usedSplits(p.pos0, p.count, p.splitLen), p.count, limits);
  },
  host(p, [q, k, v, part]) {
    // Per split, in f64: m = the split's largest score, l = sum exp(s - m), acc = sum exp(s - m) v.
    const { count, heads, kvHeads, headDim, splitLen } = p;
    const group = heads / kvHeads;
    const qWidth = heads * headDim;
    const kvWidth = kvHeads * headDim;
    const scale = attentionScale(headDim);
    const slots = maxSplits(p.maxSeq, splitLen);
    const acc = new Float64Array(headDim);
    for (let t = 0; t < count; t++) {
      const end = p.pos0 + t + 1;
      for (let h = 0; h < heads; h++) {
        const g = Math.floor(h / group);
        const qAt = t * qWidth + h * headDim;
        for (let s = 0; s < usedSplits(p.pos0, count, splitLen); s++) {
          const lo = s * splitLen;
          const hi = Math.min(lo + splitLen, end);
          const at = ((t * heads + h) * slots + s) * (headDim + 2);
          acc.fill(0);
          let m = MOST_NEGATIVE;
          const scores: number[] = [];
          for (let j = lo; j < hi; j++) {
            let dot = 0;
            for (let d = 0; d < headDim; d++) dot += q[qAt + d]! * k[j * kvWidth + g * headDim + d]!;
            scores.push(dot * scale);
            m = Math.max(m, dot * scale);
          }
          let l = 0;
          scores.forEach((score, i) => {
            const e = Math.exp(score - m);
            l += e;
            const vAt = (lo + i) * kvWidth + g * headDim;
            for (let d = 0; d < headDim; d++) acc[d]! += e * v[vAt + d]!;
          });
          part[at] = m;
          part[at + 1] = l;
          for (let d = 0; d < headDim; d++) part[at + 2 + d] = acc[d]!;
        }
      }
    }
  },
};

/** The combine's params: the split op's (it reads the partials that op wrote). */
export type FusedAttentionCombineParams = FusedAttentionSplitParams;

const COMBINE_BINDINGS: readonly OpBinding[] = [
  { name: 'part', access: 'read', dtypes: F32 },
  { name: 'out', access: 'read_write', dtypes: F32 },
];

export const fusedAttentionCombine: OpDef<FusedAttentionCombineParams, FusedAttentionCombineArrays> = {
  name: 'fused_attention_combine',
  shader: weslVariant(combineVariants, [], 'fused_attention_combine'),
  entryPoint: 'main',
  bindings: COMBINE_BINDINGS,
  paramsBytes: COMBINE_PARAMS_BYTES,
  check(operands, p) {
    const name = 'fused_attention_combine';
    checkOperands(name, COMBINE_BINDINGS, operands);
    for (const [key, value] of Object.entries({ count: p.count, heads: p.heads, headDim: p.headDim, maxSeq: p.maxSeq, splitLen: p.splitLen })) checkSize(name, key, value);
    checkIndex(name, 'pos0', p.pos0);
    if (p.pos0 + p.count > p.maxSeq) rejectRange(name, `positions up to ${p.pos0 + p.count - 1} do not fit a cache of ${p.maxSeq}`, { pos0: p.pos0, count: p.count, maxSeq: p.maxSeq });
    checkShape(name, 'part', operands[0]!, [p.count, p.heads, maxSplits(p.maxSeq, p.splitLen), p.headDim + 2]);
    checkShape(name, 'out', operands[1]!, [p.count, p.heads * p.headDim]);
  },
  params(p, offsets) {
    return packParams(COMBINE_PARAMS_BYTES, [
      { u32: offsets[0]! }, { u32: offsets[1]! }, { u32: p.count }, { u32: p.heads },
      { u32: p.headDim }, { u32: usedSplits(p.pos0, p.count, p.splitLen) }, { u32: maxSplits(p.maxSeq, p.splitLen) },
    ]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('fused_attention_combine', p.count * p.heads * p.headDim, LINEAR_WORKGROUP, limits);
  },
  host(p, [part, out]) {
    const { count, heads, headDim } = p;
    const used = usedSplits(p.pos0, count, p.splitLen);
    const slots = maxSplits(p.maxSeq, p.splitLen);
    const stride = headDim + 2;
    for (let th = 0; th < count * heads; th++) {
      const first = th * slots * stride;
      let top = part[first]!;
      for (let s = 1; s < used; s++) top = Math.max(top, part[first + s * stride]!);
      for (let d = 0; d < headDim; d++) {
        let l = 0;
        let acc = 0;
        for (let s = 0; s < used; s++) {
          const w = Math.exp(part[first + s * stride]! - top);
          l += w * part[first + s * stride + 1]!;
          acc += w * part[first + s * stride + 2 + d]!;
        }
        out[th * headDim + d] = acc / l;
      }
    }
  },
};
