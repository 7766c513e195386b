// The GGML tensor type table: what a GGUF tensor's `type` id means (name, elements per block, bytes per
// block) and which types tenon can lower into a GPU/host weight kind (DESIGN.md "src/model": lowering
// kinds F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, and the legacy Q4_1, Q5_0, Q5_1 that llama.cpp's k-quant
// files fall back to for rows that are not a whole number of 256-element super-blocks).
//
// Contract: pure data and pure functions; no I/O, no allocation beyond the table itself. Ids, block sizes
// and block byte counts follow ggml's own type list (ids that ggml retired, e.g. 4, 5 and 31-33, are absent
// and read as unknown). Every size computation is exact integer arithmetic: a result past
// Number.MAX_SAFE_INTEGER, or a row that is not a whole number of blocks, is refused with a TenonError
// (EINVAL) rather than rounded. A type that is known but is not a lowering kind is ENOTSUP naming it.
import { TenonError } from '../errors.js';

/** Elements in one super-block of the k-quant and i-quant families (ggml's QK_K). */
const QK_K = 256;
/** Elements in one block of the classic 32-wide quant formats (ggml's QK4_0, QK8_0, ...). */
const QK32 = 32;

export type GgmlTypeName =
  | 'F32'
  | 'F16'
  | 'Q4_0'
  | 'Q4_1'
  | 'Q5_0'
  | 'Q5_1'
  | 'Q8_0'
  | 'Q8_1'
  | 'Q2_K'
  | 'Q3_K'
  | 'Q4_K'
  | 'Q5_K'
  | 'Q6_K'
  | 'Q8_K'
  | 'IQ2_XXS'
  | 'IQ2_XS'
  | 'IQ3_XXS'
  | 'IQ1_S'
  | 'IQ4_NL'
  | 'IQ3_S'
  | 'IQ2_S'
  | 'IQ4_XS'
  | 'I8'
  | 'I16'
  | 'I32'
  | 'I64'
  | 'F64'
  | 'IQ1_M'
  | 'BF16'
  | 'TQ1_0'
  | 'TQ2_0'
  | 'MXFP4';

/** The weight encodings tenon lowers (one lowering kind each; src/model/lowering). */
export type LoweringTypeName = 'F32' | 'F16' | 'BF16' | 'Q8_0' | 'Q4_0' | 'Q4_K' | 'Q6_K' | 'Q4_1' | 'Q5_0' | 'Q5_1';

export const LOWERING_TYPE_NAMES: readonly LoweringTypeName[] = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_K', 'Q6_K', 'Q4_1', 'Q5_0', 'Q5_1'];

export interface GgmlType {
  /** The id stored in a GGUF tensor info. */
  readonly id: number;
  readonly name: GgmlTypeName;
  /** Elements encoded by one block (1 for plain scalar types). A row must hold a whole number of blocks. */
  readonly blockElements: number;
  /** Bytes of one block. */
  readonly blockBytes: number;
  /** True for the types tenon can lower into a weight kind. */
  readonly lowering: boolean;
}

function t(id: number, name: GgmlTypeName, blockElements: number, blockBytes: number): GgmlType {
  return Object.freeze({ id, name, blockElements, blockBytes, lowering: (LOWERING_TYPE_NAMES as readonly string[]).includes(name) });
}

/**
 * Every type ggml defines today. Block bytes are the sum of the block's fields, written out so that each
 * number can be checked against the format: f16/f32 scales (2/4 bytes), packed quants, sub-block scales.
 */
export const GGML_TYPES: readonly GgmlType[] = Object.freeze([
  t(0, 'F32', 1, 4),
  t(1, 'F16', 1, 2),
  t(2, 'Q4_0', QK32, 2 + QK32 / 2), // f16 scale + 32 nibbles
  t(3, 'Q4_1', QK32, 2 + 2 + QK32 / 2), // f16 scale + f16 min + 32 nibbles
  t(6, 'Q5_0', QK32, 2 + 4 + QK32 / 2), // f16 scale + 32 high bits + 32 nibbles
  t(7, 'Q5_1', QK32, 2 + 2 + 4 + QK32 / 2),
  t(8, 'Q8_0', QK32, 2 + QK32), // f16 scale + 32 int8
  t(9, 'Q8_1', QK32, 2 + 2 + QK32), // f16 scale + f16 sum + 32 int8
  t(10, 'Q2_K', QK_K, QK_K / 16 + QK_K / 4 + 2 + 2), // 16 scale bytes + 2-bit quants + f16 d, dmin
  t(11, 'Q3_K', QK_K, QK_K / 8 + QK_K / 4 + 12 + 2), // high-bit mask + 2-bit quants + 12 scale bytes + f16 d
  t(12, 'Q4_K', QK_K, 2 + 2 + 12 + QK_K / 2), // f16 d, dmin + 12 packed 6-bit scales/mins + nibbles
  t(13, 'Q5_K', QK_K, 2 + 2 + 12 + QK_K / 8 + QK_K / 2),
  t(14, 'Q6_K', QK_K, QK_K / 2 + QK_K / 4 + QK_K / 16 + 2), // low nibbles + high 2 bits + int8 scales + f16 d
  t(15, 'Q8_K', QK_K, 4 + QK_K + (QK_K / 16) * 2), // f32 d + int8 quants + int16 block sums
  t(16, 'IQ2_XXS', QK_K, 2 + QK_K / 4),
  t(17, 'IQ2_XS', QK_K, 2 + QK_K / 4 + QK_K / 32),
  t(18, 'IQ3_XXS', QK_K, 2 + QK_K / 4 + QK_K / 8),
  t(19, 'IQ1_S', QK_K, 2 + QK_K / 8 + QK_K / 16),
  t(20, 'IQ4_NL', QK32, 2 + QK32 / 2),
  t(21, 'IQ3_S', QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4),
  t(22, 'IQ2_S', QK_K, 2 + QK_K / 4 + QK_K / 16),
  t(23, 'IQ4_XS', QK_K, 2 + 2 + QK_K / 2 + QK_K / 64),
  t(24, 'I8', 1, 1),
  t(25, 'I16', 1, 2),
  t(26, 'I32', 1, 4),
  t(27, 'I64', 1, 8),
  t(28, 'F64', 1, 8),
  t(29, 'IQ1_M', QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32),
  t(30, 'BF16', 1, 2),
  t(34, 'TQ1_0', QK_K, 2 + 4 * 13),
  t(35, 'TQ2_0', QK_K, 2 + QK_K / 4),
  t(39, 'MXFP4', QK32, 1 + QK32 / 2), // shared e8m0 exponent + 32 fp4 nibbles
]);

const BY_ID = new Map<number, GgmlType>(GGML_TYPES.map((type) => [type.id, type]));
const BY_NAME = new Map<string, GgmlType>(GGML_TYPES.map((type) => [type.name, type]));

/** The type with this id, or undefined when ggml defines none (a corrupt or newer file). */
export function ggmlTypeById(id: number): GgmlType | undefined {
  return BY_ID.get(id);
}

/** The type with this name, or undefined. */
export function ggmlTypeByName(name: string): GgmlType | undefined {
  return BY_NAME.get(name);
}

/** True when `type` is one of the lowering kinds. */
export function isLoweringType(type: GgmlType): type is GgmlType & { readonly name: LoweringTypeName } {
  return type.lowering;
}

/** Refuses a type tenon cannot lower: ENOTSUP, reason `unsupported-tensor-type`, naming the type (and tensor). */
export function requireLoweringType(type: GgmlType, op: string, tensor?: string): LoweringTypeName {
  if (!type.lowering) {
    const ids: Record<string, string | number> = { type: type.name, typeId: type.id };
    if (tensor !== undefined) ids['tensor'] = tensor;
    throw new TenonError('ENOTSUP', `tensor type ${type.name}${tensor === undefined ? '' : ` of ${tensor}`} is not a lowering kind tenon supports (${LOWERING_TYPE_NAMES.join(', ')})`, {
      op,
      reason: 'unsupported-tensor-type',
      ids,
    });
  }
  return type.name as LoweringTypeName;
}

/**
 * Bytes of `elements` consecutive elements of `type` along a row (elements must be a whole number of
 * blocks). EINVAL `bad-shape` when it is not, or when the count is not a safe non-negative integer.
 */
export function ggmlByteLength(type: GgmlType, elements: number, op: string): number {
  if (!Number.isSafeInteger(elements) || elements < 0) {
    throw new TenonError('EINVAL', `element count ${elements} is not a safe non-negative integer`, { op, reason: 'bad-shape', ids: { type: type.name } });
  }
  if (elements % type.blockElements !== 0) {
    throw new TenonError('EINVAL', `${elements} elements are not a whole number of ${type.name} blocks of ${type.blockElements}`, {
      op,
      reason: 'bad-shape',
      ids: { type: type.name, elements },
    });
  }
  const bytes = (elements / type.blockElements) * type.blockBytes;
  if (!Number.isSafeInteger(bytes)) {
    throw new TenonError('EINVAL', `${elements} ${type.name} elements need more bytes than can be counted exactly`, { op, reason: 'bad-shape', ids: { type: type.name } });
  }
  return bytes;
}
