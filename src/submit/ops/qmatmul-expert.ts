// qmatmul_expert: the expert-indexed quantized matmul of a routed-experts (Mixtral-style) block. For
// each token t and slot j, out[t, j, :] = x[t (or t, j), :] · W[ids[t, j]]^T, with W the 3-D expert
// tensor [experts, n, k] as packed rows (a u32 tensor [experts, n, rowWords] or [experts * n, rowWords];
// F32 also as f32) and ids u32 [tokens, used] written by moe_route in the same submission: the kernel
// reads the expert id on the device (shaders/qmatmul_expert*.wgsl). x is [tokens, k] (gate and up: every
// slot reads the token's row) or, with xPerSlot, [tokens, used, k] (down: each slot its own row); out is
// [tokens, used, n]. A pair whose expert id is outside expertBase..expertBase+experts-1 leaves its output
// row as it was, so an expert tensor split by experts across several bindings is one dispatch per
// binding with its own expertBase.
//
// One op per (kind, variant) as for qmatmul (qmatmul.ts explains why), all kinds sharing one shader per
// variant specialized by the override constant KIND (qunit.ts). The dispatch is GROUPED (workgroup z =
// one expert, serving every pair routed to it, up to TM pairs per weight load) when there are more
// pairs than experts (prefill), and per pair otherwise (decode); see the shader for the kernel design.
import { TenonError } from '../../errors.js';
import plainShader from '../../../shaders/qmatmul_expert.wgsl?raw';
import subgroupsShader from '../../../shaders/qmatmul_expert_subgroups.wgsl?raw';
import { F32, INDEX_TYPES, U32, checkDispatch, checkIndex, checkOperands, checkShape, checkSize, linearWorkgroups, packParams, rejectParam, rejectRange } from './common.js';
import { qmatmulVariant } from './qmatmul.js';
import type { QMatmulFeatures, QMatmulVariant } from './qmatmul.js';
import { PACKED_KINDS, decodePackedRow, packedRowLayout } from './qmatmul-layout.js';
import type { PackedKind, PackedRowLayout } from './qmatmul-layout.js';
import { PACKED_KIND_ID, unitWorkgroup, walkUnits } from './qunit.js';
import type { OpBinding, OpDef, OpOperand, Workgroups } from './types.js';

export interface QMatmulExpertParams {
  readonly tokens: number;
  /** Slots per token (expert_used_count): the second dimension of ids and out. */
  readonly used: number;
  /** Experts in the bound weight tensor. */
  readonly experts: number;
  /** Expert id of the bound tensor's first expert (0 unless the experts are split across bindings). */
  readonly expertBase?: number;
  /** Output columns (weight rows per expert). */
  readonly n: number;
  /** Inner dimension (elements per weight row; a whole number of the kind's blocks). */
  readonly k: number;
  /** x holds one row per (token, slot) [tokens, used, k] instead of one per token [tokens, k]. */
  readonly xPerSlot: boolean;
}

export type QMatmulExpertArrays = readonly [x: Float32Array, ids: Uint32Array | Int32Array, w: Uint32Array | Float32Array, out: Float32Array];

/** The override constants of one dispatch. */
export interface QMatmulExpertTiling {
  readonly WG: number;
  readonly RN: number;
  readonly TM: number;
  /** 1: workgroup z is an expert; 0: workgroup z is a (token, slot) pair. */
  readonly GROUPED: number;
  readonly KIND: number;
}

/** Weight rows per workgroup. */
const ROWS_PER_WORKGROUP = 2;
/** Largest TM: RN * TM accumulators per invocation (MAX_ACC = 8 in the shaders). */
const MAX_TM = 4;
/** Bytes of the uniform params struct (16 u32 fields). */
const PARAMS_BYTES = 64;

const SHADERS: Readonly<Record<QMatmulVariant, string>> = { plain: plainShader, subgroups: subgroupsShader };

/**
 * Tiling for one dispatch: GROUPED when there are more (token, slot) pairs than experts, with TM = 4, 2
 * or 1 as the mean number of pairs per expert reaches 4, 2 or not; per pair (TM = 1) otherwise. WG as for qgather (qunit.ts).
 */
export function qmatmulExpertTiling(kind: PackedKind, p: Pick<QMatmulExpertParams, 'tokens' | 'used' | 'experts'>, layout: PackedRowLayout): QMatmulExpertTiling {
  const pairs = p.tokens * p.used;
  const grouped = pairs > p.experts;
  const mean = pairs / p.experts;
  const TM = !grouped ? 1 : mean >= MAX_TM ? MAX_TM : mean >= 2 ? 2 : 1;
  return { WG: unitWorkgroup(walkUnits(layout)), RN: ROWS_PER_WORKGROUP, TM, GROUPED: grouped ? 1 : 0, KIND: PACKED_KIND_ID[kind] };
}

function opName(kind: PackedKind, variant: QMatmulVariant): string {
  return `qmatmul_expert_${kind.toLowerCase()}${variant === 'plain' ? '' : `_${variant}`}`;
}

function checkWeights(name: string, w: OpOperand, p: QMatmulExpertParams, rowWords: number): void {
  if (w.shape.length === 3) checkShape(name, 'w', w, [p.experts, p.n, rowWords]);
  else checkShape(name, 'w', w, [p.experts * p.n, rowWords]);
}

function makeQMatmulExpert(kind: PackedKind, variant: QMatmulVariant): OpDef<QMatmulExpertParams, QMatmulExpertArrays> {
  const name = opName(kind, variant);
  const bindings: readonly OpBinding[] = [
    { name: 'x', access: 'read', dtypes: F32 },
    { name: 'ids', access: 'read', dtypes: INDEX_TYPES },
    { name: 'w', access: 'read', dtypes: kind === 'F32' ? ['f32', 'u32'] : U32 },
    { name: 'out', access: 'read_write', dtypes: F32 },
  ];
  const layoutOf = (p: QMatmulExpertParams): PackedRowLayout => {
    try {
      return packedRowLayout(kind, p.k, `ops.${name}`);
    } catch (err) {
      if (err instanceof TenonError && err.reason === 'bad-param') rejectParam(name, 'k', `k = ${String(p.k)} is not a whole number of ${kind} blocks`);
      throw err;
    }
  };
  return {
    name,
    shader: SHADERS[variant],
    entryPoint: 'main',
    bindings,
    paramsBytes: PARAMS_BYTES,
    check(operands, p) {
      checkOperands(name, bindings, operands);
      checkSize(name, 'tokens', p.tokens);
      checkSize(name, 'used', p.used);
      checkSize(name, 'experts', p.experts);
      checkSize(name, 'n', p.n);
      checkSize(name, 'k', p.k);
      if (p.expertBase !== undefined) checkIndex(name, 'expertBase', p.expertBase);
      if (typeof p.xPerSlot !== 'boolean') rejectParam(name, 'xPerSlot', 'xPerSlot must be a boolean');
      if ((p.expertBase ?? 0) + p.experts > 0xffff_ffff) rejectRange(name, 'expert ids pass the u32 range', { experts: p.experts });
      const layout = layoutOf(p);
      checkShape(name, 'x', operands[0]!, p.xPerSlot ? [p.tokens, p.used, p.k] : [p.tokens, p.k]);
      checkShape(name, 'ids', operands[1]!, [p.tokens, p.used]);
      checkWeights(name, operands[2]!, p, layout.rowWords);
      checkShape(name, 'out', operands[3]!, [p.tokens, p.used, p.n]);
    },
    params(p, offsets) {
      const layout = layoutOf(p);
      return packParams(PARAMS_BYTES, [
        { u32: offsets[0]! },
        { u32: offsets[1]! },
        { u32: offsets[2]! },
        { u32: offsets[3]! },
        { u32: p.tokens },
        { u32: p.used },
        { u32: p.experts },
        { u32: p.expertBase ?? 0 },
        { u32: p.n },
        { u32: p.k },
        { u32: layout.rowWords },
        { u32: walkUnits(layout) },
        { u32: layout.planes[0] },
        { u32: layout.planes[1] },
        { u32: layout.planes[2] },
        { u32: p.xPerSlot ? 1 : 0 },
      ]);
    },
    constants(p) {
      return { ...qmatmulExpertTiling(kind, p, layoutOf(p)) };
    },
    workgroups(p, limits): Workgroups {
      const t = qmatmulExpertTiling(kind, p, layoutOf(p));
      const [x, y] = linearWorkgroups(name, Math.ceil(p.n / t.RN), limits);
      return checkDispatch(name, [x, y, t.GROUPED === 1 ? p.experts : p.tokens * p.used], limits);
    },
    host(p, [x, ids, w, out]) {
      // Expert by expert: each weight row is dequantized once into a k-element scratch (the packed rows
      // are the only copy of the weights) and dotted, in f64, with the x row of every pair routed to it.
      const { tokens, used, experts, n, k } = p;
      const base = p.expertBase ?? 0;
      const layout = layoutOf(p);
      const words = w instanceof Uint32Array ? w : new Uint32Array(w.buffer, w.byteOffset, w.length);
      const byExpert: number[][] = Array.from({ length: experts }, () => []);
      for (let pair = 0; pair < tokens * used; pair++) {
        const e = ids[pair]! - base;
        if (e >= 0 && e < experts) byExpert[e]!.push(pair);
      }
      const row = new Float32Array(k);
      byExpert.forEach((pairs, e) => {
        if (pairs.length === 0) return;
        for (let j = 0; j < n; j++) {
          decodePackedRow(layout, words, (e * n + j) * layout.rowWords, row);
          for (const pair of pairs) {
            const xb = (p.xPerSlot ? pair : Math.floor(pair / used)) * k;
            let s = 0;
            for (let kk = 0; kk < k; kk++) s += x[xb + kk]! * row[kk]!;
            out[pair * n + j] = s;
          }
        }
      });
    },
  };
}

type ExpertTable = Readonly<Record<PackedKind, Readonly<Record<QMatmulVariant, OpDef<QMatmulExpertParams, QMatmulExpertArrays>>>>>;

function table(): ExpertTable {
  const entries = PACKED_KINDS.map((kind) => [kind, Object.freeze({ plain: makeQMatmulExpert(kind, 'plain'), subgroups: makeQMatmulExpert(kind, 'subgroups') })] as const);
  return Object.freeze(Object.fromEntries(entries) as Record<PackedKind, Readonly<Record<QMatmulVariant, OpDef<QMatmulExpertParams, QMatmulExpertArrays>>>>);
}

/** Every qmatmul_expert op, by kind and variant. */
export const QMATMUL_EXPERT = table();

/** The op for one kind and variant; EINVAL `bad-param` for an unknown one. */
export function qmatmulExpertOp(kind: PackedKind, variant: QMatmulVariant = 'plain'): OpDef<QMatmulExpertParams, QMatmulExpertArrays> {
  const byVariant = (QMATMUL_EXPERT as Partial<Record<string, Readonly<Record<QMatmulVariant, OpDef<QMatmulExpertParams, QMatmulExpertArrays>>>>>)[kind];
  const op = byVariant?.[variant];
  if (op === undefined) throw new TenonError('EINVAL', `no qmatmul_expert for ${String(kind)}/${String(variant)}`, { op: 'ops.qmatmul_expert', reason: 'bad-param', ids: { kind: String(kind), variant: String(variant) } });
  return op;
}

/** The fastest qmatmul_expert for `kind` that this provider's device can run (the same rule as selectQMatmul). */
export function selectQMatmulExpert(kind: PackedKind, provider: QMatmulFeatures): OpDef<QMatmulExpertParams, QMatmulExpertArrays> {
  return qmatmulExpertOp(kind, qmatmulVariant(provider));
}
