// What a lowering kind is, and the checks every kind shares. A lowering kind is one GGUF weight encoding
// (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, Q4_1, Q5_0, Q5_1): its block geometry in the file, the validation of a tensor's
// shape and byte count against it, an exact host dequantizer of GGUF blocks (the reference the tests and
// the host reference path use), and the repacking of GGUF rows into the packed row layout the qmatmul
// kernels and their host twins read (src/submit/ops/qmatmul-layout.ts).
//
// Contract: pure functions over caller-owned arrays, any thread. Validation runs before anything is
// written: a failed call throws TenonError EINVAL with a stable reason (`bad-shape`, `block-misaligned`,
// `byte-count`, `too-large`, `bad-destination`) and leaves every argument untouched. Nothing here makes an
// f32 copy of a matrix: dequantize writes into the caller's array (tests, and the host reference on
// small tensors), repack writes packed words.
import { TenonError } from '../../errors.js';
import { decodePackedRow, packedRowLayout } from '../../submit/ops/qmatmul-layout.js';
import type { PackedKind, PackedRowLayout } from '../../submit/ops/qmatmul-layout.js';

/** GGUF tensors have at most this many dimensions (GGML_MAX_DIMS). */
export const MAX_RANK = 4;

/**
 * A tensor's geometry under a lowering kind. `shape` is row-major with the row length last (GGUF lists
 * dimensions innermost first, so this is its `ne` reversed); every leading dimension counts rows.
 */
export interface LoweredGeometry {
  readonly kind: PackedKind;
  readonly shape: readonly number[];
  /** Product of the leading dimensions (1 for a vector). */
  readonly rows: number;
  /** Elements per row (the last dimension). */
  readonly rowElements: number;
  readonly blocksPerRow: number;
  /** GGUF bytes of one row and of the whole tensor. */
  readonly rowBytes: number;
  readonly byteLength: number;
  /** The packed form: u32 words per row, in all, and its byte size. */
  readonly packedRowWords: number;
  readonly packedWords: number;
  readonly packedBytes: number;
}

/** The kind-specific half of a lowering kind: block geometry, one block's decoder, one row's repacker. */
export interface KindCodec {
  readonly name: PackedKind;
  /** The GGML type id of this encoding in a GGUF tensor info. */
  readonly ggmlTypeId: number;
  readonly blockElements: number;
  readonly blockBytes: number;
  /** Version tag of the packed layout (part of a model's identity: a change makes old caches mismatch). */
  readonly packedLayout: string;
  /** Dequantizes the block at byte `offset` of `src` into out[at .. at + blockElements). */
  dequantizeBlock(src: Uint8Array, offset: number, out: Float32Array, at: number): void;
  /** Repacks one GGUF row (at byte `offset`) into the packed row at word `at` of `dst` (all its words). */
  repackRow(src: Uint8Array, offset: number, layout: PackedRowLayout, dst: Uint32Array, at: number): void;
}

export interface LoweringKind extends KindCodec {
  /** Validates a shape (and, when given, the tensor's GGUF byte count) and returns the geometry. */
  geometry(shape: readonly number[], byteLength?: number): LoweredGeometry;
  /** Exact reference: dequantizes GGUF blocks in `src` into all of `out` (src must hold exactly those blocks). */
  dequantize(src: Uint8Array, out: Float32Array): void;
  /** Repacks whole GGUF rows of `rowElements` each into `dst` (or a new array); returns the packed words. */
  repack(src: Uint8Array, rowElements: number, dst?: Uint32Array): Uint32Array;
  /** Dequantizes packed rows of `rowElements` each (all of `words`) into all of `out`, through the host twins' decoder. */
  dequantizePacked(words: Uint32Array, rowElements: number, out: Float32Array): void;
}

function fail(op: string, reason: string, message: string, ids: Record<string, string | number>): never {
  throw new TenonError('EINVAL', message, { op, reason, ids });
}

function safeProduct(a: number, b: number, op: string, kind: PackedKind): number {
  const p = a * b;
  if (!Number.isSafeInteger(p)) fail(op, 'too-large', `size ${a} x ${b} passes Number.MAX_SAFE_INTEGER`, { kind });
  return p;
}

/** Shared geometry validation (see LoweringKind.geometry). */
function geometryOf(codec: KindCodec, shape: readonly number[], byteLength: number | undefined, op: string): LoweredGeometry {
  const kind = codec.name;
  if (!Array.isArray(shape) || shape.length < 1 || shape.length > MAX_RANK) {
    fail(op, 'bad-shape', `a ${kind} tensor has 1..${MAX_RANK} dimensions, got ${Array.isArray(shape) ? shape.length : typeof shape}`, { kind });
  }
  for (const [i, d] of shape.entries()) {
    if (!Number.isSafeInteger(d) || d < 1) fail(op, 'bad-shape', `dimension ${i} is ${String(d)}, not a positive integer`, { kind, dim: i });
  }
  const rowElements = shape[shape.length - 1]!;
  if (rowElements % codec.blockElements !== 0) {
    fail(op, 'block-misaligned', `a row of ${rowElements} elements is not a whole number of ${kind} blocks of ${codec.blockElements}`, {
      kind,
      rowElements,
      blockElements: codec.blockElements,
    });
  }
  let rows = 1;
  for (const d of shape.slice(0, -1)) rows = safeProduct(rows, d, op, kind);
  safeProduct(rows, rowElements, op, kind);
  const blocksPerRow = rowElements / codec.blockElements;
  const rowBytes = safeProduct(blocksPerRow, codec.blockBytes, op, kind);
  const total = safeProduct(rows, rowBytes, op, kind);
  if (byteLength !== undefined && byteLength !== total) {
    fail(op, 'byte-count', `a ${kind} tensor of shape [${shape.join(', ')}] has ${total} bytes, got ${String(byteLength)}`, { kind, expected: total, actual: String(byteLength) });
  }
  let layout: PackedRowLayout;
  try {
    layout = packedRowLayout(kind, rowElements, op);
  } catch (err) {
    if (err instanceof TenonError) fail(op, 'too-large', `a packed ${kind} row of ${rowElements} elements passes the u32 word range`, { kind, rowElements });
    throw err;
  }
  const packedWords = safeProduct(rows, layout.rowWords, op, kind);
  return Object.freeze({
    kind,
    shape: Object.freeze([...shape]),
    rows,
    rowElements,
    blocksPerRow,
    rowBytes,
    byteLength: total,
    packedRowWords: layout.rowWords,
    packedWords,
    packedBytes: safeProduct(packedWords, 4, op, kind),
  });
}

/** A full lowering kind from its codec: the shared validation wrapped around the kind's block code. */
export function defineKind(codec: KindCodec): LoweringKind {
  const kind = codec.name;
  return Object.freeze({
    ...codec,
    geometry(shape: readonly number[], byteLength?: number): LoweredGeometry {
      return geometryOf(codec, shape, byteLength, `lowering.${kind}.geometry`);
    },
    dequantize(src: Uint8Array, out: Float32Array): void {
      const op = `lowering.${kind}.dequantize`;
      if (out.length % codec.blockElements !== 0) {
        fail(op, 'block-misaligned', `${out.length} elements are not a whole number of ${kind} blocks`, { kind, elements: out.length });
      }
      const blocks = out.length / codec.blockElements;
      if (src.length !== blocks * codec.blockBytes) {
        fail(op, 'byte-count', `${blocks} ${kind} blocks take ${blocks * codec.blockBytes} bytes, got ${src.length}`, { kind, expected: blocks * codec.blockBytes, actual: src.length });
      }
      for (let b = 0; b < blocks; b++) codec.dequantizeBlock(src, b * codec.blockBytes, out, b * codec.blockElements);
    },
    repack(src: Uint8Array, rowElements: number, dst?: Uint32Array): Uint32Array {
      const op = `lowering.${kind}.repack`;
      const g = geometryOf(codec, [rowElements], undefined, op);
      if (src.length % g.rowBytes !== 0) {
        fail(op, 'byte-count', `${src.length} bytes are not a whole number of ${g.rowBytes}-byte ${kind} rows`, { kind, rowBytes: g.rowBytes, actual: src.length });
      }
      const rows = src.length / g.rowBytes;
      const words = rows * g.packedRowWords;
      if (dst !== undefined && dst.length < words) {
        fail(op, 'bad-destination', `${rows} packed ${kind} rows need ${words} words, the destination has ${dst.length}`, { kind, expected: words, actual: dst.length });
      }
      const out = dst ?? new Uint32Array(words);
      const layout = packedRowLayout(kind, rowElements, op);
      for (let r = 0; r < rows; r++) codec.repackRow(src, r * g.rowBytes, layout, out, r * layout.rowWords);
      return out;
    },
    dequantizePacked(words: Uint32Array, rowElements: number, out: Float32Array): void {
      const op = `lowering.${kind}.dequantizePacked`;
      const layout = packedRowLayout(kind, rowElements, op);
      if (words.length % layout.rowWords !== 0 || out.length !== (words.length / layout.rowWords) * rowElements) {
        fail(op, 'byte-count', `${words.length} packed words and ${out.length} outputs are not whole ${kind} rows of ${rowElements}`, { kind, words: words.length, elements: out.length });
      }
      const rows = words.length / layout.rowWords;
      for (let r = 0; r < rows; r++) decodePackedRow(layout, words, r * layout.rowWords, out.subarray(r * rowElements, (r + 1) * rowElements));
    },
  });
}

/** Little-endian u16 at byte `o`. */
export function u16At(src: Uint8Array, o: number): number {
  return src[o]! | (src[o + 1]! << 8);
}

/** Little-endian u32 at byte `o` (any alignment). */
export function u32At(src: Uint8Array, o: number): number {
  return (src[o]! | (src[o + 1]! << 8) | (src[o + 2]! << 16) | (src[o + 3]! << 24)) >>> 0;
}

/** Copies `count` little-endian words from byte `o` of src into dst[at ..]. */
export function copyWords(src: Uint8Array, o: number, count: number, dst: Uint32Array, at: number): void {
  for (let i = 0; i < count; i++) dst[at + i] = u32At(src, o + 4 * i);
}

/** Writes f16 bits `bits` as block `b`'s entry of the half plane at word `plane` (the other half kept). */
export function putHalf(dst: Uint32Array, plane: number, b: number, bits: number): void {
  const word = plane + (b >> 1);
  if ((b & 1) === 0) dst[word] = bits;
  else dst[word] = (dst[word]! | (bits << 16)) >>> 0;
}

/** Sign-extends a byte. */
export function int8(byte: number): number {
  return (byte << 24) >> 24;
}
