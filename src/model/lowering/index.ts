// The lowering kinds, by GGML type name and id: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, Q4_1, Q5_0, Q5_1
// (Q4_K_M files mix Q4_K and Q6_K; where a row is not a whole number of 256-element super-blocks, as in
// Qwen2.5-0.5B's 896-wide rows, llama.cpp's quantizer falls back from Q4_K to Q5_0, Q5_K to Q5_1 and Q6_K
// to Q8_0). Each entry validates a tensor's geometry, dequantizes GGUF blocks exactly on the host and
// repacks GGUF rows into the packed layout the qmatmul kernels read (src/submit/ops/qmatmul-layout.ts,
// src/submit/ops/qmatmul.ts). Pure data and functions; see kind.ts for the contract.
import { TenonError } from '../../errors.js';
import type { PackedKind } from '../../submit/ops/qmatmul-layout.js';
import { bf16, f16, f32 } from './float.js';
import type { LoweredGeometry, LoweringKind } from './kind.js';
import { q4_0 } from './q4_0.js';
import { q4_1 } from './q4_1.js';
import { q4_k } from './q4_k.js';
import { q5_0 } from './q5_0.js';
import { q5_1 } from './q5_1.js';
import { q6_k } from './q6_k.js';
import { q8_0 } from './q8_0.js';

export type { KindCodec, LoweredGeometry, LoweringKind } from './kind.js';
export { MAX_RANK } from './kind.js';
export type { PackedKind as LoweringKindName } from '../../submit/ops/qmatmul-layout.js';

/** Every lowering kind, by GGML type name. */
export const LOWERING_KINDS: Readonly<Record<PackedKind, LoweringKind>> = Object.freeze({
  F32: f32,
  F16: f16,
  BF16: bf16,
  Q8_0: q8_0,
  Q4_0: q4_0,
  Q4_K: q4_k,
  Q6_K: q6_k,
  Q4_1: q4_1,
  Q5_0: q5_0,
  Q5_1: q5_1,
});

const BY_ID = new Map<number, LoweringKind>(Object.values(LOWERING_KINDS).map((k) => [k.ggmlTypeId, k]));

/** The lowering kind named `name` (a GGML type name). ENOTSUP `unsupported-tensor-type` for any other. */
export function loweringKind(name: string): LoweringKind {
  const kind = Object.prototype.hasOwnProperty.call(LOWERING_KINDS, name) ? LOWERING_KINDS[name as PackedKind] : undefined;
  if (kind === undefined) {
    throw new TenonError('ENOTSUP', `${name} is not a lowering kind (${Object.keys(LOWERING_KINDS).join(', ')})`, {
      op: 'lowering.kind',
      reason: 'unsupported-tensor-type',
      ids: { type: name },
    });
  }
  return kind;
}

/** The lowering kind of GGML type id `id`. ENOTSUP `unsupported-tensor-type` for any other id. */
export function loweringKindById(id: number): LoweringKind {
  const kind = BY_ID.get(id);
  if (kind === undefined) {
    throw new TenonError('ENOTSUP', `GGML type ${id} is not a lowering kind`, { op: 'lowering.kind', reason: 'unsupported-tensor-type', ids: { typeId: id } });
  }
  return kind;
}

/** What tensorGeometry reads of a GGUF tensor info (src/model/gguf.ts GgufTensorInfo fits). */
export interface LoweredTensorInfo {
  readonly name: string;
  /** ggml order: shape[0] is the row length. */
  readonly shape: readonly number[];
  readonly type: { readonly name: string };
  readonly byteLength: number;
}

/**
 * The lowering geometry of a GGUF tensor: its kind (ENOTSUP for a type that is not one), its ggml-order
 * shape reversed into row-major order, validated against its byte length (EINVAL as geometry()).
 */
export function tensorGeometry(info: LoweredTensorInfo): LoweredGeometry {
  return loweringKind(info.type.name).geometry([...info.shape].reverse(), info.byteLength);
}
