// The attention half of a decoder layer for one row in one dispatch (shaders/fused_attention_block.wesl):
// rmsnorm, the Q/K/V projections of any packed kinds (+ qwen2's biases), RoPE of Q and K (either
// pairing), the K/V cache write at pos0 and attention over cache rows 0..pos0, one workgroup per KV head.
// It replaces fused_norm_qkv_rope(_bias) -> fused_attention for a decode step; the kernel's header says
// the trade-off (kvHeads workgroups for the projections), attentionBlockFits says where it applies.
// Ops: fused_attention_block, _bias, each with a subgroups variant (the reduction, shaders/lib/reduce.wesl).
// Host twin: the host twins of the chain it replaces (fused_norm_qkv_rope(_bias) into a scratch q, then
// fused_attention), so on the host it is that chain bit for bit; the GPU kernel sums in its own order
// (contracts/ops/fused-attention-block.test.ts states the tolerance).
import variants from '../../../shaders/fused_attention_block.wesl?wesl';
import { attentionScale } from './attention.js';
import { F32, checkDispatch, rejectParam } from './common.js';
import { fusedAttention } from './fused-attention.js';
import { FUSED_MATVEC, ROPE_PARAMS_BYTES, WEIGHT_DTYPES, kindConstants, pack, ropeFormFields } from './fused-matvec.js';
import type { FusedNormQkvRopeArrays, FusedNormQkvRopeParams } from './fused-matvec.js';
import { weslVariant } from './fused-variants.js';
import type { QMatmulVariant } from './qmatmul.js';
import type { OpBinding, OpDef } from './types.js';

/** fused_norm_qkv_rope's params for one row (m = 1): the step's position is pos0. */
export type FusedAttentionBlockParams = Omit<FusedNormQkvRopeParams, 'm'>;

type F = Float32Array;
type W = Uint32Array | Float32Array;
/** out [1, heads * headDim]: the attention output row. */
export type FusedAttentionBlockArrays = readonly [x: F, vec: F, wq: W, wk: W, wv: W, out: F, kCache: F, vCache: F];

/** Invocations per workgroup and positions per attention tile (workgroup memory is sized for it). */
const ATTENTION_BLOCK_WORKGROUP = 128;
/** Largest head size (shader MAX_HEAD_DIM). */
export const ATTENTION_BLOCK_MAX_HEAD_DIM = 256;
/** Most query heads per KV head (shader MAX_ACC: one accumulator per head in the reductions). */
export const ATTENTION_BLOCK_MAX_GROUP = 8;
/** Most query elements per KV head, heads / kvHeads * headDim (shader MAX_GROUP_DIM). */
export const ATTENTION_BLOCK_MAX_GROUP_DIM = 512;
/** Uniform bytes: the rope form's fields, then heads, kv_heads, scale and a pad word. */
const PARAMS_BYTES = ROPE_PARAMS_BYTES + 16;

/** Whether heads of headDim grouped heads / kvHeads per KV head fit the kernel's workgroup memory. */
export function attentionBlockFits(heads: number, kvHeads: number, headDim: number): boolean {
  const group = heads / kvHeads;
  return Number.isInteger(group) && group <= ATTENTION_BLOCK_MAX_GROUP && group * headDim <= ATTENTION_BLOCK_MAX_GROUP_DIM && headDim <= ATTENTION_BLOCK_MAX_HEAD_DIM;
}

function oneRow(p: FusedAttentionBlockParams): FusedNormQkvRopeParams {
  return { ...p, m: 1 };
}

function makeAttentionBlock(variant: QMatmulVariant, bias: boolean): OpDef<FusedAttentionBlockParams, FusedAttentionBlockArrays> {
  const base = bias ? 'fused_attention_block_bias' : 'fused_attention_block';
  const name = variant === 'plain' ? base : `${base}_${variant}`;
  const chain = bias ? FUSED_MATVEC.normQkvRopeBias.plain : FUSED_MATVEC.normQkvRope.plain;
  const bindings: readonly OpBinding[] = [
    { name: 'x', access: 'read', dtypes: F32 },
    { name: 'vec', access: 'read', dtypes: F32 },
    { name: 'wq', access: 'read', dtypes: WEIGHT_DTYPES },
    { name: 'wk', access: 'read', dtypes: WEIGHT_DTYPES },
    { name: 'wv', access: 'read', dtypes: WEIGHT_DTYPES },
    { name: 'out', access: 'read_write', dtypes: F32 },
    { name: 'kCache', access: 'read_write', dtypes: F32 },
    { name: 'vCache', access: 'read_write', dtypes: F32 },
  ];
  const conditions = [...(bias ? ['bias'] : []), ...(variant === 'subgroups' ? ['subgroups'] : [])];
  return {
    name,
    shader: weslVariant(variants, conditions, name),
    entryPoint: 'main',
    bindings,
    paramsBytes: PARAMS_BYTES,
    check(operands, p) {
      // Shapes, kinds, positions and RoPE: the one-row fused_norm_qkv_rope's rules (out is its q row).
      chain.check(operands, oneRow(p));
      if (!attentionBlockFits(p.heads, p.kvHeads, p.headDim)) {
        rejectParam(name, 'heads', `at most ${ATTENTION_BLOCK_MAX_GROUP} query heads and ${ATTENTION_BLOCK_MAX_GROUP_DIM} query elements per kv head, head size at most ${ATTENTION_BLOCK_MAX_HEAD_DIM}`);
      }
    },
    params(p, offsets) {
      // The rope form's fields for one row (the kernel reads neither m nor n), then the attention fields.
      const buffer = pack(PARAMS_BYTES, { ...ropeFormFields(name, oneRow(p), offsets), n: 0 });
      const tail = new DataView(buffer, ROPE_PARAMS_BYTES);
      tail.setUint32(0, p.heads, true);
      tail.setUint32(4, p.kvHeads, true);
      tail.setFloat32(8, attentionScale(p.headDim), true);
      return buffer;
    },
    constants(p) {
      return { WG: ATTENTION_BLOCK_WORKGROUP, ...kindConstants([p.qKind, p.kKind, p.vKind]), NEOX: p.style === 'neox' ? 1 : 0 };
    },
    workgroups(p, limits) {
      return checkDispatch(name, [p.kvHeads, 1, 1], limits);
    },
    host(p, [x, vec, wq, wk, wv, out, kCache, vCache]) {
      const q = new Float32Array(p.heads * p.headDim);
      chain.host(oneRow(p), [x, vec, wq, wk, wv, q, kCache, vCache] as FusedNormQkvRopeArrays);
      fusedAttention.host({ count: 1, heads: p.heads, kvHeads: p.kvHeads, headDim: p.headDim, maxSeq: p.maxSeq, pos0: p.pos0 }, [q, kCache, vCache, out]);
    },
  };
}

type ByVariant<T> = Readonly<Record<QMatmulVariant, T>>;

/** fused_attention_block (.plain/.subgroups) and its bias form. */
export const FUSED_ATTENTION_BLOCK: Readonly<{ block: ByVariant<OpDef<FusedAttentionBlockParams, FusedAttentionBlockArrays>>; bias: ByVariant<OpDef<FusedAttentionBlockParams, FusedAttentionBlockArrays>> }> = Object.freeze({
  block: Object.freeze({ plain: makeAttentionBlock('plain', false), subgroups: makeAttentionBlock('subgroups', false) }),
  bias: Object.freeze({ plain: makeAttentionBlock('plain', true), subgroups: makeAttentionBlock('subgroups', true) }),
});
