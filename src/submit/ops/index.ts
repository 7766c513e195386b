// The op library: one module per kernel (WGSL in shaders/, imported as text), each an OpDef with a
// host reference. The list below is the set the session builds models from.
import { add } from './add.js';
import { addInplace } from './add-inplace.js';
import { argmax } from './argmax.js';
import { attention } from './attention.js';
import { biasAdd } from './bias-add.js';
import { fusedAttention, fusedAttentionCombine, fusedAttentionSplit } from './fused-attention.js';
import { FUSED_ATTENTION_BLOCK } from './fused-attention-block.js';
import { FUSED_MATVEC } from './fused-matvec.js';
import { fusedRopeKv, fusedRopeKvBias } from './fused-rope-kv.js';
import { gather } from './gather.js';
import { kvWrite } from './kv-write.js';
import { matmul } from './matmul.js';
import { matmulBatched } from './matmul-batched.js';
import { matmulNT, matmulNTAdd } from './matmul-nt.js';
import { matmulNTNorm } from './matmul-nt-norm.js';
import { matmulNTNormGlu } from './matmul-nt-norm-glu.js';
import { matmulNTNormQkv } from './matmul-nt-norm-qkv.js';
import { moeCombine } from './moe-combine.js';
import { moeRoute } from './moe-route.js';
import { mul } from './mul.js';
import { QGATHER } from './qgather.js';
import { QMATMUL } from './qmatmul.js';
import { QMATMUL_EXPERT } from './qmatmul-expert.js';
import { rmsnorm } from './rmsnorm.js';
import { rope } from './rope.js';
import { sample } from './sample.js';
import { scale } from './scale.js';
import { siluMul } from './silu-mul.js';
import { softmax } from './softmax.js';
import { attentionGradKV, attentionGradQ } from './grad-attention.js';
import { adamwStep } from './grad-adamw.js';
import { crossEntropyGrad } from './grad-cross-entropy.js';
import { embeddingGrad } from './grad-embedding.js';
import { matmulTNGrad } from './grad-matmul.js';
import { rmsnormGradW, rmsnormGradX } from './grad-rmsnorm.js';
import { ropeGrad } from './grad-rope.js';
import { siluMulGrad } from './grad-silu-mul.js';
import { softmaxGrad } from './grad-softmax.js';
import type { AnyOpDef } from './types.js';

export { add, addInplace, argmax, attention, biasAdd, gather, kvWrite, matmul, matmulBatched, matmulNT, moeCombine, moeRoute, mul, rmsnorm, rope, sample, scale, siluMul, softmax };
export type { AddParams } from './add.js';
export type { AddInplaceParams } from './add-inplace.js';
export type { ArgmaxParams } from './argmax.js';
export type { AttentionParams } from './attention.js';
export { attentionScale } from './attention.js';
export type { BiasAddParams } from './bias-add.js';
export { FUSED_ATTENTION_MAX_HEAD_DIM, fusedAttention, fusedAttentionCombine, fusedAttentionSplit, maxSplits, usedSplits } from './fused-attention.js';
export type { FusedAttentionArrays, FusedAttentionCombineArrays, FusedAttentionCombineParams, FusedAttentionParams, FusedAttentionSplitParams } from './fused-attention.js';
export { ATTENTION_BLOCK_MAX_GROUP, ATTENTION_BLOCK_MAX_GROUP_DIM, ATTENTION_BLOCK_MAX_HEAD_DIM, FUSED_ATTENTION_BLOCK, attentionBlockFits } from './fused-attention-block.js';
export type { FusedAttentionBlockArrays, FusedAttentionBlockParams } from './fused-attention-block.js';
export { FUSED_MATVEC, fusedMatvecTiling } from './fused-matvec.js';
export type { FusedMatmulAddArrays, FusedMatmulAddParams, FusedMatvecForm, FusedMatvecTiling, FusedNormGluArrays, FusedNormGluParams, FusedNormMatmulArrays, FusedNormMatmulParams, FusedNormQkvRopeArrays, FusedNormQkvRopeParams } from './fused-matvec.js';
export { fusedRopeKv, fusedRopeKvBias, hostRopeKv } from './fused-rope-kv.js';
export type { FusedRopeKvArrays, FusedRopeKvBiasArrays, FusedRopeKvParams } from './fused-rope-kv.js';
export type { GatherParams } from './gather.js';
export type { KvWriteParams } from './kv-write.js';
export type { MatmulParams } from './matmul.js';
export type { MatmulBatchedParams } from './matmul-batched.js';
export type { MatmulNTParams } from './matmul-nt.js';
export { matmulNTAdd } from './matmul-nt.js';
export { matmulNTNorm } from './matmul-nt-norm.js';
export type { MatmulNTNormParams } from './matmul-nt-norm.js';
export { matmulNTNormGlu } from './matmul-nt-norm-glu.js';
export type { MatmulNTNormGluParams } from './matmul-nt-norm-glu.js';
export { matmulNTNormQkv } from './matmul-nt-norm-qkv.js';
export type { MatmulNTNormQkvParams } from './matmul-nt-norm-qkv.js';
export type { MoeCombineParams } from './moe-combine.js';
export { routeOrder } from './moe-route.js';
export type { MoeRouteArrays, MoeRouteParams } from './moe-route.js';
export type { MulParams } from './mul.js';
export { QMATMUL, QMATMUL_VARIANTS, qmatmulOp, qmatmulTiling, qmatmulVariant, selectQMatmul } from './qmatmul.js';
export type { QMatmulArrays, QMatmulFeatures, QMatmulParams, QMatmulTiling, QMatmulVariant } from './qmatmul.js';
export { PACKED_BLOCK, PACKED_KINDS, QK32, QK_K, bf16ToFloat, decodePackedRow, halfToFloat, packedRowLayout, q4kScaleMin } from './qmatmul-layout.js';
export type { PackedKind, PackedRowLayout } from './qmatmul-layout.js';
export { QGATHER, qgatherOp } from './qgather.js';
export { QMATMUL_EXPERT, qmatmulExpertOp, qmatmulExpertTiling, selectQMatmulExpert } from './qmatmul-expert.js';
export type { QMatmulExpertArrays, QMatmulExpertParams, QMatmulExpertTiling } from './qmatmul-expert.js';
export type { QGatherArrays, QGatherParams } from './qgather.js';
export { PACKED_KIND_ID, UNIT_ELEMENTS, unitWorkgroup, walkUnits } from './qunit.js';
export type { RmsnormParams } from './rmsnorm.js';
export { RMSNORM_EPS } from './rmsnorm.js';
export type { RopeParams, RopeStyle } from './rope.js';
export { ROPE_MAX_HEAD_DIM, ROPE_MAX_POSITION, ROPE_STYLES, ROPE_THETA, ropeFrequencies, ropeTable } from './rope.js';
export { SAMPLE_FRAC_BITS, SAMPLE_MAX_COLS, SAMPLE_T_MAX, SAMPLE_WORKGROUP, philox4x32, sampleRandom, sampleRow, sampleScale, sampleWeight } from './sample.js';
export type { SampleOptions, SampleParams } from './sample.js';
export type { ScaleParams } from './scale.js';
export type { SiluMulParams } from './silu-mul.js';
export type { SoftmaxParams } from './softmax.js';
export { rowsPerInvocation } from './tiling.js';
export { ATTENTION_GRAD_STATS, attentionGradKV, attentionGradQ } from './grad-attention.js';
export type { AttentionGradParams } from './grad-attention.js';
export { adamwCorrections, adamwStep } from './grad-adamw.js';
export type { AdamWParams } from './grad-adamw.js';
export { checkTargets, crossEntropyGrad } from './grad-cross-entropy.js';
export type { CrossEntropyGradParams } from './grad-cross-entropy.js';
export { embeddingGrad } from './grad-embedding.js';
export type { EmbeddingGradParams } from './grad-embedding.js';
export { matmulTNGrad } from './grad-matmul.js';
export type { MatmulTNGradParams } from './grad-matmul.js';
export { rmsnormGradW, rmsnormGradX } from './grad-rmsnorm.js';
export type { RmsnormGradWParams, RmsnormGradXParams } from './grad-rmsnorm.js';
export { ropeGrad } from './grad-rope.js';
export { siluMulGrad } from './grad-silu-mul.js';
export type { SiluMulGradParams } from './grad-silu-mul.js';
export { softmaxGrad } from './grad-softmax.js';
export type { SoftmaxGradParams } from './grad-softmax.js';
export type { AnyOpDef, OpAccess, OpBinding, OpConstants, OpDef, OpLimits, OpOperand, Workgroups } from './types.js';

/** Every op, by name. */
export const OPS = {
  add,
  add_inplace: addInplace,
  apply_grad_adamw: adamwStep,
  argmax,
  attention,
  attention_grad_kv: attentionGradKV,
  attention_grad_q: attentionGradQ,
  bias_add: biasAdd,
  cross_entropy_grad: crossEntropyGrad,
  embedding_grad: embeddingGrad,
  fused_attention: fusedAttention,
  fused_attention_split: fusedAttentionSplit,
  fused_attention_combine: fusedAttentionCombine,
  fused_attention_block: FUSED_ATTENTION_BLOCK.block.plain,
  fused_attention_block_subgroups: FUSED_ATTENTION_BLOCK.block.subgroups,
  fused_attention_block_bias: FUSED_ATTENTION_BLOCK.bias.plain,
  fused_attention_block_bias_subgroups: FUSED_ATTENTION_BLOCK.bias.subgroups,
  fused_norm_matmul: FUSED_MATVEC.normMatmul.plain,
  fused_norm_matmul_subgroups: FUSED_MATVEC.normMatmul.subgroups,
  fused_norm_glu: FUSED_MATVEC.normGlu.plain,
  fused_norm_glu_subgroups: FUSED_MATVEC.normGlu.subgroups,
  fused_norm_qkv_rope: FUSED_MATVEC.normQkvRope.plain,
  fused_norm_qkv_rope_subgroups: FUSED_MATVEC.normQkvRope.subgroups,
  fused_norm_qkv_rope_bias: FUSED_MATVEC.normQkvRopeBias.plain,
  fused_norm_qkv_rope_bias_subgroups: FUSED_MATVEC.normQkvRopeBias.subgroups,
  fused_matmul_add: FUSED_MATVEC.matmulAdd.plain,
  fused_matmul_add_subgroups: FUSED_MATVEC.matmulAdd.subgroups,
  fused_rope_kv: fusedRopeKv,
  fused_rope_kv_bias: fusedRopeKvBias,
  gather,
  kv_write: kvWrite,
  matmul,
  matmul_batched: matmulBatched,
  matmul_nt: matmulNT,
  matmul_nt_add: matmulNTAdd,
  matmul_nt_norm: matmulNTNorm,
  matmul_nt_norm_glu: matmulNTNormGlu,
  matmul_nt_norm_qkv: matmulNTNormQkv,
  matmul_tn_grad: matmulTNGrad,
  moe_combine: moeCombine,
  moe_route: moeRoute,
  mul,
  qmatmul_f32: QMATMUL.F32.plain,
  qmatmul_f32_subgroups: QMATMUL.F32.subgroups,
  qmatmul_f16: QMATMUL.F16.plain,
  qmatmul_f16_subgroups: QMATMUL.F16.subgroups,
  qmatmul_bf16: QMATMUL.BF16.plain,
  qmatmul_bf16_subgroups: QMATMUL.BF16.subgroups,
  qmatmul_q8_0: QMATMUL.Q8_0.plain,
  qmatmul_q8_0_subgroups: QMATMUL.Q8_0.subgroups,
  qmatmul_q4_0: QMATMUL.Q4_0.plain,
  qmatmul_q4_0_subgroups: QMATMUL.Q4_0.subgroups,
  qmatmul_q4_k: QMATMUL.Q4_K.plain,
  qmatmul_q4_k_subgroups: QMATMUL.Q4_K.subgroups,
  qmatmul_q6_k: QMATMUL.Q6_K.plain,
  qmatmul_q6_k_subgroups: QMATMUL.Q6_K.subgroups,
  qmatmul_q4_1: QMATMUL.Q4_1.plain,
  qmatmul_q4_1_subgroups: QMATMUL.Q4_1.subgroups,
  qmatmul_q5_0: QMATMUL.Q5_0.plain,
  qmatmul_q5_0_subgroups: QMATMUL.Q5_0.subgroups,
  qmatmul_q5_1: QMATMUL.Q5_1.plain,
  qmatmul_q5_1_subgroups: QMATMUL.Q5_1.subgroups,
  qmatmul_expert_f32: QMATMUL_EXPERT.F32.plain,
  qmatmul_expert_f32_subgroups: QMATMUL_EXPERT.F32.subgroups,
  qmatmul_expert_f16: QMATMUL_EXPERT.F16.plain,
  qmatmul_expert_f16_subgroups: QMATMUL_EXPERT.F16.subgroups,
  qmatmul_expert_bf16: QMATMUL_EXPERT.BF16.plain,
  qmatmul_expert_bf16_subgroups: QMATMUL_EXPERT.BF16.subgroups,
  qmatmul_expert_q8_0: QMATMUL_EXPERT.Q8_0.plain,
  qmatmul_expert_q8_0_subgroups: QMATMUL_EXPERT.Q8_0.subgroups,
  qmatmul_expert_q4_0: QMATMUL_EXPERT.Q4_0.plain,
  qmatmul_expert_q4_0_subgroups: QMATMUL_EXPERT.Q4_0.subgroups,
  qmatmul_expert_q4_k: QMATMUL_EXPERT.Q4_K.plain,
  qmatmul_expert_q4_k_subgroups: QMATMUL_EXPERT.Q4_K.subgroups,
  qmatmul_expert_q6_k: QMATMUL_EXPERT.Q6_K.plain,
  qmatmul_expert_q6_k_subgroups: QMATMUL_EXPERT.Q6_K.subgroups,
  qmatmul_expert_q4_1: QMATMUL_EXPERT.Q4_1.plain,
  qmatmul_expert_q4_1_subgroups: QMATMUL_EXPERT.Q4_1.subgroups,
  qmatmul_expert_q5_0: QMATMUL_EXPERT.Q5_0.plain,
  qmatmul_expert_q5_0_subgroups: QMATMUL_EXPERT.Q5_0.subgroups,
  qmatmul_expert_q5_1: QMATMUL_EXPERT.Q5_1.plain,
  qmatmul_expert_q5_1_subgroups: QMATMUL_EXPERT.Q5_1.subgroups,
  qgather_f32: QGATHER.F32,
  qgather_f16: QGATHER.F16,
  qgather_bf16: QGATHER.BF16,
  qgather_q8_0: QGATHER.Q8_0,
  qgather_q4_0: QGATHER.Q4_0,
  qgather_q4_k: QGATHER.Q4_K,
  qgather_q6_k: QGATHER.Q6_K,
  qgather_q4_1: QGATHER.Q4_1,
  qgather_q5_0: QGATHER.Q5_0,
  qgather_q5_1: QGATHER.Q5_1,
  rmsnorm,
  rmsnorm_grad_w: rmsnormGradW,
  rmsnorm_grad_x: rmsnormGradX,
  rope,
  rope_grad: ropeGrad,
  sample,
  scale,
  silu_mul: siluMul,
  silu_mul_grad: siluMulGrad,
  softmax,
  softmax_grad: softmaxGrad,
} as const satisfies Record<string, AnyOpDef>;
