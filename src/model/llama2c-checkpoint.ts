// llama2.c checkpoint parser (DESIGN.md "src/model": one reader per file format; seed 003 construction validation).
//
// Contract: `parseLlamaModel(bytes)` is a pure function of the bytes it is given. It reads the header,
// checks every field, computes the exact byte length the header implies with exact integer arithmetic
// and compares it with the file length, and only then looks at the weights: one scan for NaN/Inf, then
// one Float32Array view per tensor. Nothing is allocated before the sizes are proven; a bad file throws a
// TenonError with a stable code and reason and produces nothing. The caller's bytes are never written.
// `planLlamaModel(head, length)` does the same checks from the first 256 bytes and the file length alone
// (no weight read, so no finite scan): the layout a range reader (src/model/model.ts) reads tensors by.
//
// Ownership: the weight views alias the caller's buffer (zero copy) whenever the fp32 data starts on a
// 4-byte boundary of it (always, for an ArrayBuffer or an aligned view: both headers are multiples of 4
// bytes); otherwise the payload is copied once into a fresh buffer and `zeroCopy` is false. The caller
// hands the buffer over: writing to it afterwards changes the model.
//
// Formats (llama2.c export.py, little-endian):
// - legacy "version 0": 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len),
//   a negative vocab_size meaning the classifier is stored separately at the end; then fp32 tensors
//   token_embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final, the RoPE tables
//   freq_cis_real and freq_cis_imag ([seq_len, head_size / 2] each, skipped: tenon computes RoPE), and wcls
//   when not shared.
// - "version 1": uint32 magic "ak42", int32 version 1, the same 7 int32 (vocab_size positive), one byte
//   shared_classifier, zero padding to 256 bytes; then the norms first (rms_att, rms_ffn, rms_final), then
//   token_embedding, wq, wk, wv, wo, w1, w2, w3, and wcls when not shared. No RoPE tables.
// - "version 2" (int8 group-quantized weights) is refused with ENOTSUP 'unsupported-version'.
import { TenonError } from '../errors.js';

const OP = 'session.parseLlamaModel';

/** Size of one fp32 weight. */
const F32_BYTES = 4;
/** Legacy header: 7 int32 fields. */
export const LLAMA_V0_HEADER_BYTES = 7 * 4;
/** Version 1/2 header, padded with zeros (llama2.c export.py). */
export const LLAMA_V1_HEADER_BYTES = 256;
/** uint32 "ak42" as llama2.c export.py writes it, read little-endian. */
export const LLAMA_MAGIC = 0x616b3432;
/** Byte offset of the shared_classifier flag in the version 1 header (magic, version, 7 fields). */
const V1_SHARED_FLAG_OFFSET = 4 + 4 + 7 * 4;

/** The architecture described by a checkpoint header; headSize and kvDim are derived. */
export interface LlamaConfig {
  readonly dim: number;
  readonly hiddenDim: number;
  readonly nLayers: number;
  readonly nHeads: number;
  readonly nKvHeads: number;
  /** Always positive here; the file's sign convention is reported as `sharedClassifier`. */
  readonly vocabSize: number;
  readonly seqLen: number;
  /** dim / nHeads (even). */
  readonly headSize: number;
  /** headSize * nKvHeads: width of one position of K or V. */
  readonly kvDim: number;
}

/** Every tensor of the model, in llama2.c's (legacy) order. */
export const LLAMA_TENSOR_NAMES = ['tokenEmbedding', 'rmsAtt', 'wq', 'wk', 'wv', 'wo', 'rmsFfn', 'w1', 'w2', 'w3', 'rmsFinal', 'wcls'] as const;
export type LlamaTensorName = (typeof LLAMA_TENSOR_NAMES)[number];

/** Row-major fp32 tensors; `wcls` is the very same array as `tokenEmbedding` when the classifier is shared. */
export type LlamaWeights = { readonly [K in LlamaTensorName]: Float32Array };

/** One tensor stored in the file. */
export interface LlamaTensorInfo {
  readonly name: LlamaTensorName;
  /** tokenEmbedding [vocab, dim], rmsAtt [layers, dim], wq [layers, dim, dim], wk/wv [layers, kvDim, dim], ... */
  readonly shape: readonly number[];
  readonly elements: number;
  /** Where its bytes start in the file. */
  readonly byteOffset: number;
}

export type LlamaFileFormat = 'llama2c-v0' | 'llama2c-v1';

export interface LlamaModelFile {
  readonly format: LlamaFileFormat;
  readonly config: LlamaConfig;
  /** True when the classifier is the token embedding (no wcls in the file). */
  readonly sharedClassifier: boolean;
  readonly weights: LlamaWeights;
  /** The tensors the file stores, in canonical (legacy) order; wcls only when not shared. */
  readonly tensors: readonly LlamaTensorInfo[];
  /** True when the weights are views of the caller's buffer, false when they had to be copied to align. */
  readonly zeroCopy: boolean;
  /** Length of the file that was parsed. */
  readonly byteLength: number;
}

export interface ParseLlamaModelOptions {
  /** Scan every weight for NaN and ±Infinity (default true). */
  readonly checkFinite?: boolean;
}

type Section = { readonly name: LlamaTensorName | 'freqCisReal' | 'freqCisImag'; readonly shape: readonly number[] };

const HEADER_FIELDS = ['dim', 'hiddenDim', 'nLayers', 'nHeads', 'nKvHeads', 'vocabSize', 'seqLen'] as const;

function invalid(reason: string, message: string, ids?: Record<string, string | number>): never {
  throw new TenonError('EINVAL', message, ids === undefined ? { op: OP, reason } : { op: OP, reason, ids });
}

/** Exact product of non-negative safe integers; EOVERFLOW as soon as a partial product leaves the safe range. */
function product(what: string, factors: readonly number[]): number {
  let result = 1;
  for (const factor of factors) {
    result *= factor;
    if (!Number.isSafeInteger(result)) {
      throw new TenonError('EOVERFLOW', `${what} does not fit exact integer arithmetic`, { op: OP, reason: 'size-overflow', ids: { what } });
    }
  }
  return result;
}

function sum(what: string, a: number, b: number): number {
  const result = a + b;
  if (!Number.isSafeInteger(result)) {
    throw new TenonError('EOVERFLOW', `${what} does not fit exact integer arithmetic`, { op: OP, reason: 'size-overflow', ids: { what } });
  }
  return result;
}

/** The caller's bytes as one Uint8Array view (no copy). */
function asBytes(source: ArrayBufferLike | ArrayBufferView): Uint8Array {
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  if (source instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && source instanceof SharedArrayBuffer)) return new Uint8Array(source);
  throw new TenonError('EINVAL', 'expected an ArrayBuffer, SharedArrayBuffer or ArrayBufferView', { op: OP, reason: 'bad-argument' });
}

const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

interface Header {
  readonly format: LlamaFileFormat;
  readonly headerBytes: number;
  readonly fields: Readonly<Record<(typeof HEADER_FIELDS)[number], number>>;
  readonly sharedClassifier: boolean;
}

function readHeader(bytes: Uint8Array): Header {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (n: number, what: string): void => {
    if (bytes.byteLength < n) invalid('truncated', `the file ends inside the ${what}`, { expected: n, actual: bytes.byteLength });
  };
  need(4, 'header');
  const readFields = (at: number): Record<(typeof HEADER_FIELDS)[number], number> => {
    const out = {} as Record<(typeof HEADER_FIELDS)[number], number>;
    HEADER_FIELDS.forEach((field, i) => {
      out[field] = view.getInt32(at + 4 * i, true);
    });
    return out;
  };
  if (view.getUint32(0, true) === LLAMA_MAGIC) {
    need(8, 'header');
    const version = view.getInt32(4, true);
    if (version !== 1) {
      throw new TenonError('ENOTSUP', `llama2.c export version ${version} is not supported (only 0 and 1)`, { op: OP, reason: 'unsupported-version', ids: { version } });
    }
    need(LLAMA_V1_HEADER_BYTES, 'header');
    const fields = readFields(8);
    const flag = view.getUint8(V1_SHARED_FLAG_OFFSET);
    if (flag !== 0 && flag !== 1) invalid('bad-header', 'shared_classifier must be 0 or 1', { field: 'sharedClassifier', value: flag });
    for (let at = V1_SHARED_FLAG_OFFSET + 1; at < LLAMA_V1_HEADER_BYTES; at++) {
      if (view.getUint8(at) !== 0) invalid('bad-header', 'the header padding must be zero', { offset: at });
    }
    if (fields.vocabSize <= 0) invalid('bad-field', 'vocab_size must be positive in a version 1 header', { field: 'vocabSize', value: fields.vocabSize });
    return { format: 'llama2c-v1', headerBytes: LLAMA_V1_HEADER_BYTES, fields, sharedClassifier: flag === 1 };
  }
  need(LLAMA_V0_HEADER_BYTES, 'header');
  const fields = readFields(0);
  // Legacy convention: a negative vocab_size says the classifier follows the other weights.
  const sharedClassifier = fields.vocabSize > 0;
  return { format: 'llama2c-v0', headerBytes: LLAMA_V0_HEADER_BYTES, fields: { ...fields, vocabSize: Math.abs(fields.vocabSize) }, sharedClassifier };
}

function checkConfig(fields: Header['fields']): LlamaConfig {
  for (const field of HEADER_FIELDS) {
    const value = fields[field];
    if (!(value > 0)) invalid('bad-field', `${field} must be positive`, { field, value });
  }
  const { dim, hiddenDim, nLayers, nHeads, nKvHeads, vocabSize, seqLen } = fields;
  if (dim % nHeads !== 0) invalid('inconsistent-heads', 'dim must be a multiple of n_heads', { dim, nHeads });
  if (nKvHeads > nHeads || nHeads % nKvHeads !== 0) invalid('inconsistent-heads', 'n_heads must be a multiple of n_kv_heads', { nHeads, nKvHeads });
  const headSize = dim / nHeads;
  if (headSize % 2 !== 0) invalid('odd-head-size', 'RoPE rotates pairs: head_size must be even', { headSize });
  return { dim, hiddenDim, nLayers, nHeads, nKvHeads, vocabSize, seqLen, headSize, kvDim: headSize * nKvHeads };
}

/** The tensors in file order for the format. */
function sections(format: LlamaFileFormat, c: LlamaConfig, shared: boolean): Section[] {
  const { dim, hiddenDim: h, nLayers: L, vocabSize: V, kvDim: kv } = c;
  const t = {
    tokenEmbedding: { name: 'tokenEmbedding', shape: [V, dim] },
    rmsAtt: { name: 'rmsAtt', shape: [L, dim] },
    wq: { name: 'wq', shape: [L, dim, dim] },
    wk: { name: 'wk', shape: [L, kv, dim] },
    wv: { name: 'wv', shape: [L, kv, dim] },
    wo: { name: 'wo', shape: [L, dim, dim] },
    rmsFfn: { name: 'rmsFfn', shape: [L, dim] },
    w1: { name: 'w1', shape: [L, h, dim] },
    w2: { name: 'w2', shape: [L, dim, h] },
    w3: { name: 'w3', shape: [L, h, dim] },
    rmsFinal: { name: 'rmsFinal', shape: [dim] },
    wcls: { name: 'wcls', shape: [V, dim] },
  } as const satisfies Record<LlamaTensorName, Section>;
  const cls = shared ? [] : [t.wcls];
  if (format === 'llama2c-v1') {
    return [t.rmsAtt, t.rmsFfn, t.rmsFinal, t.tokenEmbedding, t.wq, t.wk, t.wv, t.wo, t.w1, t.w2, t.w3, ...cls];
  }
  const freq = [c.seqLen, c.headSize / 2];
  return [
    t.tokenEmbedding, t.rmsAtt, t.wq, t.wk, t.wv, t.wo, t.rmsFfn, t.w1, t.w2, t.w3, t.rmsFinal,
    { name: 'freqCisReal', shape: freq }, { name: 'freqCisImag', shape: freq },
    ...cls,
  ];
}

interface Placed {
  readonly section: Section;
  readonly elements: number;
  readonly byteOffset: number;
}

/** The layout of a checkpoint, from its header and length alone (no weight byte read). */
export interface LlamaModelPlan {
  readonly format: LlamaFileFormat;
  readonly config: LlamaConfig;
  readonly sharedClassifier: boolean;
  /** The stored tensors in canonical (legacy) order, wcls only when not shared; RoPE tables left out. */
  readonly tensors: readonly LlamaTensorInfo[];
  /** Exact length of the file. */
  readonly byteLength: number;
}

/** Bytes of the longest header: planLlamaModel needs the first min(this, file length) bytes. */
export const LLAMA_MAX_HEADER_BYTES = LLAMA_V1_HEADER_BYTES;

interface Layout {
  readonly header: Header;
  readonly config: LlamaConfig;
  readonly placed: readonly Placed[];
}

/** Reads and checks the header, then computes the exact layout and compares it with the file length. */
function layoutOf(head: Uint8Array, fileLength: number): Layout {
  const header = readHeader(head);
  const config = checkConfig(header.fields);
  const placed: Placed[] = [];
  let offset = header.headerBytes;
  for (const section of sections(header.format, config, header.sharedClassifier)) {
    const elements = product(section.name, section.shape);
    placed.push({ section, elements, byteOffset: offset });
    offset = sum('file length', offset, product(section.name, [elements, F32_BYTES]));
  }
  if (fileLength < offset) invalid('truncated', 'the file is shorter than its header implies', { expected: offset, actual: fileLength });
  if (fileLength > offset) invalid('trailing-bytes', 'the file is longer than its header implies', { expected: offset, actual: fileLength });
  return { header, config, placed };
}

function storedTensors(placed: readonly Placed[]): (Placed & { section: { name: LlamaTensorName } })[] {
  return placed.filter((p): p is Placed & { section: { name: LlamaTensorName } } => p.section.name !== 'freqCisReal' && p.section.name !== 'freqCisImag');
}

function infosOf(tensors: readonly (Placed & { section: { name: LlamaTensorName } })[], shared: boolean): readonly LlamaTensorInfo[] {
  const canonical = LLAMA_TENSOR_NAMES.filter((name) => name !== 'wcls' || !shared);
  return Object.freeze(
    canonical.map((name): LlamaTensorInfo => {
      const t = tensors.find((p) => p.section.name === name)!;
      return Object.freeze({ name, shape: Object.freeze([...t.section.shape]), elements: t.elements, byteOffset: t.byteOffset });
    }),
  );
}

/**
 * The layout of a llama2.c checkpoint from its first min(LLAMA_MAX_HEADER_BYTES, fileLength) bytes and
 * its length: every header check and the exact length check of parseLlamaModel, without reading a weight
 * (so no finite-value scan). For readers that fetch tensors by range. Same errors as parseLlamaModel but
 * 'non-finite' and 'big-endian-host'; EINVAL 'bad-argument' when `head` is not exactly that prefix.
 */
export function planLlamaModel(head: Uint8Array, fileLength: number): LlamaModelPlan {
  if (!(head instanceof Uint8Array) || !Number.isSafeInteger(fileLength) || fileLength < 0 || head.length !== Math.min(LLAMA_MAX_HEADER_BYTES, fileLength)) {
    throw new TenonError('EINVAL', 'planLlamaModel takes the first min(256, fileLength) bytes and the file length', { op: OP, reason: 'bad-argument' });
  }
  const { header, config, placed } = layoutOf(head, fileLength);
  return Object.freeze({
    format: header.format,
    config: Object.freeze(config),
    sharedClassifier: header.sharedClassifier,
    tensors: infosOf(storedTensors(placed), header.sharedClassifier),
    byteLength: fileLength,
  });
}

/**
 * Parses a llama2.c checkpoint (legacy version 0 or version 1). Throws TenonError:
 * EINVAL 'truncated' | 'trailing-bytes' | 'bad-field' | 'inconsistent-heads' | 'odd-head-size' |
 * 'bad-header' | 'non-finite' | 'bad-argument', EOVERFLOW 'size-overflow', ENOTSUP 'unsupported-version' |
 * 'big-endian-host'.
 */
export function parseLlamaModel(source: ArrayBufferLike | ArrayBufferView, options: ParseLlamaModelOptions = {}): LlamaModelFile {
  const bytes = asBytes(source);
  // Exact layout, no typed array yet.
  const { header, config, placed } = layoutOf(bytes, bytes.byteLength);
  if (!LITTLE_ENDIAN_HOST) throw new TenonError('ENOTSUP', 'llama2.c weights are little-endian fp32', { op: OP, reason: 'big-endian-host' });

  const tensors = storedTensors(placed);
  const aligned = (bytes.byteOffset + header.headerBytes) % F32_BYTES === 0;

  if (options.checkFinite ?? true) {
    for (const t of tensors) {
      const at = aligned ? firstNonFinite(new Float32Array(bytes.buffer, bytes.byteOffset + t.byteOffset, t.elements)) : firstNonFiniteUnaligned(bytes, t.byteOffset, t.elements);
      if (at !== undefined) invalid('non-finite', `${t.section.name}[${at}] is NaN or infinite`, { tensor: t.section.name, index: at });
    }
  }

  // Views (or one aligned copy of the payload when the caller's view starts off a 4-byte boundary).
  let buffer: ArrayBufferLike = bytes.buffer;
  let base = bytes.byteOffset;
  if (!aligned) {
    const copy = new Uint8Array(bytes.byteLength);
    copy.set(bytes);
    buffer = copy.buffer;
    base = 0;
  }
  const weights: Partial<Record<LlamaTensorName, Float32Array>> = {};
  for (const t of tensors) weights[t.section.name] = new Float32Array(buffer, base + t.byteOffset, t.elements);
  if (header.sharedClassifier) weights.wcls = weights.tokenEmbedding;

  return Object.freeze({
    format: header.format,
    config: Object.freeze(config),
    sharedClassifier: header.sharedClassifier,
    weights: Object.freeze(weights as LlamaWeights),
    tensors: infosOf(tensors, header.sharedClassifier),
    zeroCopy: aligned,
    byteLength: bytes.byteLength,
  });
}

/** Index of the first NaN or ±Infinity, or undefined (x - x is 0 exactly for finite x). */
function firstNonFinite(values: Float32Array): number | undefined {
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (v - v !== 0) return i;
  }
  return undefined;
}

function firstNonFiniteUnaligned(bytes: Uint8Array, byteOffset: number, elements: number): number | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset + byteOffset, elements * F32_BYTES);
  for (let i = 0; i < elements; i++) {
    const v = view.getFloat32(i * F32_BYTES, true);
    if (v - v !== 0) return i;
  }
  return undefined;
}
