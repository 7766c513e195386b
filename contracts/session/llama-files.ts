// Writers for llama2.c checkpoint and tokenizer files, used by the session suites to build synthetic
// models (any shape, shared or separate classifier, version 0 or 1) and synthetic tokenizers (e.g. a
// 32,000-token one with byte fallback). They follow llama2.c export.py / tokenizer.py byte for byte and
// share no code with the parsers in src/session.

export interface HeaderFields {
  dim: number;
  hiddenDim: number;
  nLayers: number;
  nHeads: number;
  nKvHeads: number;
  vocabSize: number;
  seqLen: number;
}

/** stories260K's header (../shared/models/README.md). */
export const STORIES260K: HeaderFields = { dim: 64, hiddenDim: 172, nLayers: 5, nHeads: 8, nKvHeads: 4, vocabSize: 512, seqLen: 512 };

export const TENSOR_ORDER_V0 = ['tokenEmbedding', 'rmsAtt', 'wq', 'wk', 'wv', 'wo', 'rmsFfn', 'w1', 'w2', 'w3', 'rmsFinal'] as const;

/** Element counts of each tensor of a header (legacy order), plus the two RoPE tables and wcls. */
export function tensorSizes(h: HeaderFields): Record<string, number> {
  const headSize = h.dim / h.nHeads;
  const kvDim = headSize * h.nKvHeads;
  const V = Math.abs(h.vocabSize);
  return {
    tokenEmbedding: V * h.dim,
    rmsAtt: h.nLayers * h.dim,
    wq: h.nLayers * h.dim * h.dim,
    wk: h.nLayers * kvDim * h.dim,
    wv: h.nLayers * kvDim * h.dim,
    wo: h.nLayers * h.dim * h.dim,
    rmsFfn: h.nLayers * h.dim,
    w1: h.nLayers * h.hiddenDim * h.dim,
    w2: h.nLayers * h.dim * h.hiddenDim,
    w3: h.nLayers * h.hiddenDim * h.dim,
    rmsFinal: h.dim,
    freqCisReal: (h.seqLen * headSize) / 2,
    freqCisImag: (h.seqLen * headSize) / 2,
    wcls: V * h.dim,
  };
}

/** Deterministic small weights: value i of tensor t. */
export function syntheticValue(tensorIndex: number, i: number): number {
  return Math.fround(Math.sin(tensorIndex * 1000 + i * 0.37) * 0.1);
}

/**
 * A legacy (version 0) file. A negative `vocabSize` writes a separate classifier (values from
 * `syntheticValue(11, i) * 2`). `values(name, i)` overrides weights.
 */
export function buildV0(h: HeaderFields, values: (name: string, i: number) => number = defaultValues): Uint8Array {
  const sizes = tensorSizes(h);
  const names: string[] = [...TENSOR_ORDER_V0, 'freqCisReal', 'freqCisImag', ...(h.vocabSize < 0 ? ['wcls'] : [])];
  const total = names.reduce((n, name) => n + sizes[name]!, 0);
  const out = new Uint8Array(28 + 4 * total);
  const view = new DataView(out.buffer);
  [h.dim, h.hiddenDim, h.nLayers, h.nHeads, h.nKvHeads, h.vocabSize, h.seqLen].forEach((v, i) => view.setInt32(4 * i, v, true));
  let at = 28;
  for (const name of names) {
    for (let i = 0; i < sizes[name]!; i++, at += 4) view.setFloat32(at, values(name, i), true);
  }
  return out;
}

function defaultValues(name: string, i: number): number {
  if (name === 'wcls') return syntheticValue(11, i) * 2;
  if (name === 'freqCisReal' || name === 'freqCisImag') return Math.cos(i);
  return syntheticValue(TENSOR_ORDER_V0.indexOf(name as (typeof TENSOR_ORDER_V0)[number]), i);
}

/** Tensors of a legacy file as arrays (read with DataView, independent of the parser). */
export function readV0Tensors(file: Uint8Array): { header: HeaderFields; tensors: Record<string, Float32Array> } {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const f = [0, 1, 2, 3, 4, 5, 6].map((i) => view.getInt32(4 * i, true));
  const header: HeaderFields = { dim: f[0]!, hiddenDim: f[1]!, nLayers: f[2]!, nHeads: f[3]!, nKvHeads: f[4]!, vocabSize: f[5]!, seqLen: f[6]! };
  const sizes = tensorSizes(header);
  const names: string[] = [...TENSOR_ORDER_V0, 'freqCisReal', 'freqCisImag', ...(header.vocabSize < 0 ? ['wcls'] : [])];
  const tensors: Record<string, Float32Array> = {};
  let at = 28;
  for (const name of names) {
    const t = new Float32Array(sizes[name]!);
    for (let i = 0; i < t.length; i++, at += 4) t[i] = view.getFloat32(at, true);
    tensors[name] = t;
  }
  return { header, tensors };
}

/** The version 1 export (export.py version1_export) of the same weights as a legacy file. */
export function v0ToV1(file: Uint8Array, options: { version?: number; sharedFlag?: number; padByte?: number } = {}): Uint8Array {
  const { header, tensors } = readV0Tensors(file);
  const shared = header.vocabSize > 0;
  const order = ['rmsAtt', 'rmsFfn', 'rmsFinal', 'tokenEmbedding', 'wq', 'wk', 'wv', 'wo', 'w1', 'w2', 'w3', ...(shared ? [] : ['wcls'])];
  const total = order.reduce((n, name) => n + tensors[name]!.length, 0);
  const out = new Uint8Array(256 + 4 * total);
  const view = new DataView(out.buffer);
  view.setUint32(0, 0x616b3432, true);
  view.setInt32(4, options.version ?? 1, true);
  [header.dim, header.hiddenDim, header.nLayers, header.nHeads, header.nKvHeads, Math.abs(header.vocabSize), header.seqLen].forEach((v, i) => view.setInt32(8 + 4 * i, v, true));
  view.setUint8(36, options.sharedFlag ?? (shared ? 1 : 0));
  if (options.padByte !== undefined) view.setUint8(200, options.padByte);
  let at = 256;
  for (const name of order) for (const v of tensors[name]!) (view.setFloat32(at, v, true), (at += 4));
  return out;
}

/** Overwrites header field `index` (0..6) of a legacy file, in a copy. */
export function withHeaderField(file: Uint8Array, index: number, value: number): Uint8Array {
  const copy = file.slice();
  new DataView(copy.buffer).setInt32(4 * index, value, true);
  return copy;
}

/** Byte offset of element `i` of tensor `name` in a legacy file. */
export function v0Offset(h: HeaderFields, name: string, i: number): number {
  const sizes = tensorSizes(h);
  const names: string[] = [...TENSOR_ORDER_V0, 'freqCisReal', 'freqCisImag', 'wcls'];
  let at = 28;
  for (const n of names) {
    if (n === name) return at + 4 * i;
    at += 4 * sizes[n]!;
  }
  throw new Error(`no tensor ${name}`);
}

export interface TokenRecord {
  readonly score: number;
  /** Token text (UTF-8 encoded) or raw bytes. */
  readonly piece: string | Uint8Array;
}

/** A llama2.c tokenizer file (tokenizer.py export): max_token_length, then (score, len, bytes) records. */
export function buildTokenizer(records: readonly TokenRecord[], maxTokenLength?: number): Uint8Array {
  const enc = new TextEncoder();
  const pieces = records.map((r) => (typeof r.piece === 'string' ? enc.encode(r.piece) : r.piece));
  const max = maxTokenLength ?? Math.max(1, ...pieces.map((p) => p.length));
  const out = new Uint8Array(4 + pieces.reduce((n, p) => n + 8 + p.length, 0));
  const view = new DataView(out.buffer);
  view.setInt32(0, max, true);
  let at = 4;
  records.forEach((r, i) => {
    view.setFloat32(at, r.score, true);
    view.setInt32(at + 4, pieces[i]!.length, true);
    out.set(pieces[i]!, at + 8);
    at += 8 + pieces[i]!.length;
  });
  return out;
}

/** The 259 tokens every sentencepiece-with-byte-fallback vocabulary starts with (llama2.c export). */
export function specialAndByteTokens(): TokenRecord[] {
  const hex = (b: number): string => b.toString(16).toUpperCase().padStart(2, '0');
  return [
    { score: 0, piece: '<unk>' },
    { score: 0, piece: '\n<s>\n' },
    { score: 0, piece: '\n</s>\n' },
    ...Array.from({ length: 256 }, (_, b) => ({ score: 0, piece: `<0x${hex(b)}>` })),
  ];
}
