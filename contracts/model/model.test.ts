// Model descriptions (src/model/model.ts): what loadModel makes of each file, and what it refuses.
// Plan:
// (1) every GGUF fixture loads with its architecture entry and the config ../shared/models/README.md
//     documents (dimensions, layers, heads, KV heads, context, vocabulary, experts, theta, tied output,
//     lowering kinds per tensor); the vocabulary-only file is refused as a model (no embedding);
// (2) stories260K.bin with tok512.bin maps onto the llama entry with GGUF tensor names whose bytes are
//     the bytes of stories260K-f32.gguf's tensors; a checkpoint without its tokenizer is refused;
// (3) loading reads headers only: no tensor byte is read until a tensor is asked for;
// (4) bad models written with the test writer (missing, extra, misshapen or quantized-vector tensors, a
//     tensor type that is no lowering kind, a vocabulary that disagrees with the embedding or with
//     {arch}.vocab_size, an unsupported architecture, bad hyperparameters) are refused with their code and
//     reason, and a load-then-materialise pipeline allocates nothing on any provider (counters unchanged);
// (5) the control: the same writer's well-formed model loads.
import { describe, expect, it } from 'vitest';
import { GGUF_MAX_HEADER_CHUNK, countingSource, loadModel, materializeWeights, parseGguf, parseLlamaModel, parseTokenizer } from '../../src/model/index.js';
import type { GgmlTypeName, GgufValue, LoadedModel } from '../../src/model/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { GGUF_FIXTURE_NAMES, readGgufFixture } from '../support/gguf-fixtures.js';
import type { GgufFixture } from '../support/gguf-fixtures.js';
import { gv, writeGguf } from '../support/gguf-writer.js';
import type { WriterTensor } from '../support/gguf-writer.js';
import { readModelFixture } from '../support/models.js';
import { providerCases } from '../support/providers.js';

/** Documented facts per fixture (../shared/models/README.md, and the file table of each). */
interface Facts {
  readonly entry: 'llama' | 'llama-moe' | 'qwen2';
  readonly dim: number;
  readonly ffnDim: number;
  readonly layers: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly contextLength: number;
  readonly vocabSize: number;
  readonly ropeTheta: number;
  readonly tiedOutput: boolean;
  readonly experts: number;
  readonly expertsUsed: number;
  /** Lowering kinds of the matrices (norms and biases are F32 in every fixture). */
  readonly matrixKinds: readonly GgmlTypeName[];
  /** Kind of token_embd.weight and of the classifier. */
  readonly embedding: GgmlTypeName;
  readonly output: GgmlTypeName;
}

const TINY_LLAMA = { entry: 'llama', dim: 256, ffnDim: 768, layers: 4, heads: 8, kvHeads: 4, contextLength: 512, vocabSize: 512, ropeTheta: 10_000, tiedOutput: false, experts: 0, expertsUsed: 0 } as const;
const TINY_MOE = { entry: 'llama-moe', dim: 256, ffnDim: 512, layers: 2, heads: 8, kvHeads: 4, contextLength: 512, vocabSize: 512, ropeTheta: 10_000, tiedOutput: false, experts: 4, expertsUsed: 2 } as const;

const FACTS: Readonly<Record<Exclude<GgufFixture, 'llama3-vocab.gguf'>, Facts>> = {
  'stories260K-f32.gguf': { entry: 'llama', dim: 64, ffnDim: 172, layers: 5, heads: 8, kvHeads: 4, contextLength: 128, vocabSize: 512, ropeTheta: 10_000, tiedOutput: false, experts: 0, expertsUsed: 0, matrixKinds: ['F32'], embedding: 'F32', output: 'F32' },
  'tiny-llama-f32.gguf': { ...TINY_LLAMA, matrixKinds: ['F32'], embedding: 'F32', output: 'F32' },
  'tiny-llama-F16.gguf': { ...TINY_LLAMA, matrixKinds: ['F16'], embedding: 'F16', output: 'F16' },
  'tiny-llama-Q8_0.gguf': { ...TINY_LLAMA, matrixKinds: ['Q8_0'], embedding: 'Q8_0', output: 'Q8_0' },
  'tiny-llama-Q4_0.gguf': { ...TINY_LLAMA, matrixKinds: ['Q4_0', 'Q6_K'], embedding: 'Q4_0', output: 'Q6_K' },
  'tiny-llama-Q4_K_M.gguf': { ...TINY_LLAMA, matrixKinds: ['Q4_K', 'Q6_K'], embedding: 'Q4_K', output: 'Q6_K' },
  'tiny-llama-Q6_K.gguf': { ...TINY_LLAMA, matrixKinds: ['Q6_K'], embedding: 'Q6_K', output: 'Q6_K' },
  'tiny-qwen2-Q4_K_M.gguf': { entry: 'qwen2', dim: 256, ffnDim: 768, layers: 2, heads: 4, kvHeads: 2, contextLength: 4096, vocabSize: 151_936, ropeTheta: 1e6, tiedOutput: true, experts: 0, expertsUsed: 0, matrixKinds: ['Q4_K', 'Q6_K'], embedding: 'Q6_K', output: 'Q6_K' },
  'tiny-moe-f32.gguf': { ...TINY_MOE, matrixKinds: ['F32'], embedding: 'F32', output: 'F32' },
  'tiny-moe-Q8_0.gguf': { ...TINY_MOE, matrixKinds: ['F32', 'Q8_0'], embedding: 'Q8_0', output: 'Q8_0' },
  'tiny-moe-Q4_K_M.gguf': { ...TINY_MOE, matrixKinds: ['F32', 'Q4_K', 'Q6_K'], embedding: 'Q4_K', output: 'Q6_K' },
};

const ROLES_BY_ENTRY = {
  llama: ['attnNorm', 'attnQ', 'attnK', 'attnV', 'attnOutput', 'ffnNorm', 'ffnGate', 'ffnUp', 'ffnDown'],
  'llama-moe': ['attnNorm', 'attnQ', 'attnK', 'attnV', 'attnOutput', 'ffnNorm', 'ffnRouter', 'ffnGateExperts', 'ffnUpExperts', 'ffnDownExperts'],
  qwen2: ['attnNorm', 'attnQ', 'attnK', 'attnV', 'attnQBias', 'attnKBias', 'attnVBias', 'attnOutput', 'ffnNorm', 'ffnGate', 'ffnUp', 'ffnDown'],
} as const;

/** Byte equality without a per-element diff (tensors are up to megabytes). */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const fixtures = new Map<GgufFixture, Uint8Array | undefined>();
for (const name of GGUF_FIXTURE_NAMES) fixtures.set(name, await readGgufFixture(name));
const stories = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');

describe('model descriptions of the fixtures', () => {
  for (const [name, facts] of Object.entries(FACTS) as [Exclude<GgufFixture, 'llama3-vocab.gguf'>, Facts][]) {
    it.skipIf(fixtures.get(name) === undefined)(`[MD-model-fixtures] ${name} loads as ${facts.entry} with its documented config, roles and kinds`, async () => {
      const model = await loadModel(fixtures.get(name)!);
      const c = model.config;
      expect(model.format).toBe('gguf');
      expect(model.architecture.id).toBe(facts.entry);
      expect(c.architecture).toBe(facts.entry);
      expect({ dim: c.dim, ffnDim: c.ffnDim, layers: c.layers, heads: c.heads, kvHeads: c.kvHeads, contextLength: c.contextLength, vocabSize: c.vocabSize, experts: c.experts, expertsUsed: c.expertsUsed, tiedOutput: c.tiedOutput }).toEqual({
        dim: facts.dim, ffnDim: facts.ffnDim, layers: facts.layers, heads: facts.heads, kvHeads: facts.kvHeads, contextLength: facts.contextLength, vocabSize: facts.vocabSize, experts: facts.experts, expertsUsed: facts.expertsUsed, tiedOutput: facts.tiedOutput,
      });
      expect(c.headDim).toBe(facts.dim / facts.heads);
      expect(c.kvDim).toBe((facts.dim / facts.heads) * facts.kvHeads);
      expect(c.ropeDim).toBe(c.headDim);
      expect(c.ropeTheta).toBe(facts.ropeTheta);
      // eps is the f32 the file stores: 1e-5 for the llama fixtures, 1e-6 for Qwen2.
      expect(c.rmsEps).toBe(Math.fround(facts.entry === 'qwen2' ? 1e-6 : 1e-5));
      expect(c.ropeFreqs).toBe(false);
      expect(model.tokenizer.vocabSize).toBe(facts.vocabSize);
      // Every layer has exactly its entry's roles; globals are the embedding, final norm and classifier.
      expect(model.layers).toHaveLength(facts.layers);
      for (const layer of model.layers) expect(Object.keys(layer).sort()).toEqual([...ROLES_BY_ENTRY[facts.entry]].sort());
      expect(model.globals.tokenEmbedding.kind.name).toBe(facts.embedding);
      expect(model.globals.output.kind.name).toBe(facts.output);
      expect(model.globals.output === model.globals.tokenEmbedding).toBe(facts.tiedOutput);
      expect(model.globals.tokenEmbedding.geometry.shape).toEqual([facts.vocabSize, facts.dim]);
      expect(model.tensors.length).toBe(3 - (facts.tiedOutput ? 1 : 0) + facts.layers * ROLES_BY_ENTRY[facts.entry].length);
      const matrices = model.tensors.filter((t) => !t.name.endsWith('norm.weight') && !t.name.endsWith('.bias'));
      expect([...new Set(matrices.map((t) => t.kind.name))].sort()).toEqual([...facts.matrixKinds].sort());
      for (const t of model.tensors.filter((x) => x.name.endsWith('norm.weight') || x.name.endsWith('.bias'))) expect(t.kind.name).toBe('F32');
      // The sizes add up from the tensors themselves.
      expect(model.storedBytes).toBe(model.tensors.reduce((n, t) => n + t.geometry.byteLength, 0));
      expect(model.tensor('blk.0.attn_k.weight').geometry.shape).toEqual([c.kvDim, c.dim]);
    });
  }

  it.skipIf(fixtures.get('tiny-qwen2-Q4_K_M.gguf') === undefined)('[MD-model-fixtures] tiny-qwen2: Q/K/V biases, NEOX rope, tied classifier, its chat template and <|im_end|> ending a turn', async () => {
    const model = await loadModel(fixtures.get('tiny-qwen2-Q4_K_M.gguf')!);
    expect(model.architecture.ropeStyle).toBe('neox');
    expect(model.architecture.attentionBias).toBe(true);
    expect(model.layers[1]!.attnKBias!.geometry.shape).toEqual([128]);
    expect(model.chatTemplate).toContain('<|im_start|>');
    const imEnd = model.tokenizer.lookup('<|im_end|>');
    expect(imEnd).toBe(151_645);
    expect(model.endOfGeneration).toContain(imEnd);
    expect(model.name).toBe('tenon-tiny-qwen2-random');
  });

  it.skipIf(fixtures.get('tiny-moe-f32.gguf') === undefined)('[MD-model-fixtures] tiny-moe: router [experts, dim] and 3-D expert tensors, softmax top-2 renormalised routing', async () => {
    const model = await loadModel(fixtures.get('tiny-moe-f32.gguf')!);
    expect(model.architecture.ffn).toBe('routed');
    expect(model.architecture.routing).toEqual({ gating: 'softmax', renormalize: true });
    const l0 = model.layers[0]!;
    expect(l0.ffnRouter!.geometry.shape).toEqual([4, 256]);
    expect(l0.ffnGateExperts!.geometry.shape).toEqual([4, 512, 256]);
    expect(l0.ffnUpExperts!.geometry.shape).toEqual([4, 512, 256]);
    expect(l0.ffnDownExperts!.geometry.shape).toEqual([4, 256, 512]);
    expect(l0.ffnDownExperts!.geometry.rows).toBe(4 * 256);
  });

  it.skipIf(fixtures.get('llama3-vocab.gguf') === undefined)('[MD-model-fixtures] llama3-vocab.gguf holds a vocabulary and no tensors: as a model it is EINVAL missing-tensor token_embd.weight', async () => {
    const err = await expectCodeAsync(() => loadModel(fixtures.get('llama3-vocab.gguf')!), 'EINVAL', 'missing-tensor');
    expect(err.ids?.['tensor']).toBe('token_embd.weight');
  });
});

describe('llama2.c checkpoints as model descriptions', () => {
  const absent = stories === undefined || tok512 === undefined || fixtures.get('stories260K-f32.gguf') === undefined;

  it.skipIf(absent)('[MD-model-llama2c] stories260K.bin maps onto the llama entry with GGUF names; every tensor holds the bytes of stories260K-f32.gguf', async () => {
    const bin = await loadModel(stories!, { tokenizer: tok512! });
    const gguf = await loadModel(fixtures.get('stories260K-f32.gguf')!);
    expect(bin.format).toBe('llama2c-v0');
    expect(bin.architecture.id).toBe('llama');
    const parsed = parseLlamaModel(stories!);
    expect(bin.config).toEqual({ ...gguf.config, contextLength: parsed.config.seqLen, tiedOutput: true });
    expect(bin.config.contextLength).toBe(512);
    expect(bin.globals.output).toBe(bin.globals.tokenEmbedding);
    // Same names but the classifier (tied in the checkpoint, stored in the GGUF conversion).
    expect(bin.tensors.map((t) => t.name)).toEqual(gguf.tensors.map((t) => t.name).filter((n) => n !== 'output.weight'));
    for (const t of bin.tensors) {
      const other = gguf.tensor(t.name);
      expect(t.geometry).toEqual(other.geometry);
      expect(sameBytes(await t.readRows(0, t.geometry.rows), await other.readRows(0, other.geometry.rows)), t.name).toBe(true);
    }
    // The GGUF conversion stores the shared classifier as a copy of the embedding.
    expect(sameBytes(await gguf.globals.output.readRows(0, 512), await bin.globals.output.readRows(0, 512))).toBe(true);
    // Rows by range: rows 7..9 of a layer-3 slice are those bytes of the checkpoint.
    const wk = bin.tensor('blk.3.attn_k.weight');
    const rows = new Float32Array((await wk.readRows(7, 2)).slice().buffer);
    expect(rows).toEqual(parsed.weights.wk.subarray(3 * 32 * 64 + 7 * 64, 3 * 32 * 64 + 9 * 64));
  });

  it.skipIf(absent)('[MD-model-llama2c] the tokenizer comes from the caller: bytes or a parsed tokenizer; none, or one of another size, is refused', async () => {
    const a = await loadModel(stories!, { tokenizer: tok512! });
    const b = await loadModel(stories!, { tokenizer: parseTokenizer(tok512!, 512) });
    expect(a.tokenizer.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
    expect(b.tokenizer.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
    expect(a.endOfGeneration).toEqual([2]);
    expect(a.chatTemplate).toBeUndefined();
    await expectCodeAsync(() => loadModel(stories!), 'EINVAL', 'no-tokenizer');
    // Not GGUF, so a checkpoint: an empty file, a cut one and one with trailing bytes are the parser's refusals.
    await expectCodeAsync(() => loadModel(new Uint8Array(0), { tokenizer: tok512! }), 'EINVAL', 'truncated');
    await expectCodeAsync(() => loadModel(stories!.subarray(0, stories!.length - 4), { tokenizer: tok512! }), 'EINVAL', 'truncated');
    await expectCodeAsync(() => loadModel(Uint8Array.from([...stories!, 0, 0, 0, 0]), { tokenizer: tok512! }), 'EINVAL', 'trailing-bytes');
    const err = await expectCodeAsync(() => loadModel(stories!, { tokenizer: smallTokenizer(300) }), 'EINVAL', 'vocab-mismatch');
    expect(err.ids).toEqual({ tokenizer: 300, embedding: 512 });
  });
});

describe('loading reads headers, not weights', () => {
  it.skipIf(fixtures.get('tiny-llama-f32.gguf') === undefined)('[MD-model-header-only] a 13.6 MB GGUF loads reading its header (and at most one chunk past it); a tensor is read when asked, by range', async () => {
    const bytes = fixtures.get('tiny-llama-f32.gguf')!;
    const file = await parseGguf(bytes);
    const source = countingSource({ size: bytes.length, read: (o, n) => Promise.resolve(bytes.subarray(o, o + n)) });
    const model = await loadModel(source);
    expect(source.counters.highWater).toBeLessThanOrEqual(file.dataOffset + GGUF_MAX_HEADER_CHUNK);
    expect(source.counters.bytes).toBeLessThan(model.storedBytes / 4);
    const before = source.counters;
    const t = model.tensor('blk.2.ffn_down.weight');
    const rows = await t.readRows(5, 3);
    expect(rows.length).toBe(3 * t.geometry.rowBytes);
    expect(source.counters.bytes - before.bytes).toBe(3 * t.geometry.rowBytes);
    expect(rows).toEqual(bytes.subarray(file.tensor('blk.2.ffn_down.weight').offset + 5 * t.geometry.rowBytes, file.tensor('blk.2.ffn_down.weight').offset + 8 * t.geometry.rowBytes));
    await expectCodeAsync(() => t.readRows(t.geometry.rows - 1, 2), 'EINVAL', 'range');
  });

  it.skipIf(stories === undefined || tok512 === undefined)('[MD-model-header-only] a llama2.c checkpoint loads reading its first 256 bytes', async () => {
    const source = countingSource({ size: stories!.length, read: (o, n) => Promise.resolve(stories!.subarray(o, o + n)) });
    await loadModel(source, { tokenizer: tok512! });
    expect(source.counters.highWater).toBe(256);
  });
});

// ---------------------------------------------------------------------------------------------------
// Synthetic models from the test writer.

const DIM = 32;
const HEADS = 4;
const KV_HEADS = 2;
const FFN = 64;
const LAYERS = 2;
const VOCAB = 16;
const KV_DIM = (DIM / HEADS) * KV_HEADS;

function vocabulary(size: number): [string, GgufValue][] {
  const tokens = ['<unk>', '<s>', '</s>', ...Array.from({ length: size - 3 }, (_, i) => `t${i}`)];
  return [
    ['tokenizer.ggml.model', gv.str('llama')],
    ['tokenizer.ggml.tokens', gv.strings(tokens)],
    ['tokenizer.ggml.scores', gv.f32s(tokens.map((_, i) => -i))],
    ['tokenizer.ggml.token_type', gv.i32s(tokens.map((_, i) => (i === 0 ? 2 : i < 3 ? 3 : 1)))],
  ];
}

function hyper(arch: string, overrides: Record<string, GgufValue | undefined> = {}): [string, GgufValue][] {
  const base: Record<string, GgufValue | undefined> = {
    'embedding_length': gv.u32(DIM),
    'block_count': gv.u32(LAYERS),
    'feed_forward_length': gv.u32(FFN),
    'attention.head_count': gv.u32(HEADS),
    'attention.head_count_kv': gv.u32(KV_HEADS),
    'attention.layer_norm_rms_epsilon': gv.f32(1e-5),
    'context_length': gv.u32(64),
    ...overrides,
  };
  return Object.entries(base).filter((e): e is [string, GgufValue] => e[1] !== undefined).map(([k, v]) => [`${arch}.${k}`, v]);
}

/** ggml-order shape (row first) of a row-major [rows..., row] shape. */
const ggml = (shape: readonly number[]): number[] => [...shape].reverse();

function llamaTensors(options: { vocabRows?: number; layers?: number; type?: GgmlTypeName } = {}): WriterTensor[] {
  const type = options.type ?? 'F32';
  const rows = options.vocabRows ?? VOCAB;
  const t: WriterTensor[] = [
    { name: 'token_embd.weight', shape: ggml([rows, DIM]), type },
    { name: 'output_norm.weight', shape: [DIM], type: 'F32' },
    { name: 'output.weight', shape: ggml([rows, DIM]), type },
  ];
  for (let l = 0; l < (options.layers ?? LAYERS); l++) {
    t.push(
      { name: `blk.${l}.attn_norm.weight`, shape: [DIM], type: 'F32' },
      { name: `blk.${l}.attn_q.weight`, shape: ggml([DIM, DIM]), type },
      { name: `blk.${l}.attn_k.weight`, shape: ggml([KV_DIM, DIM]), type },
      { name: `blk.${l}.attn_v.weight`, shape: ggml([KV_DIM, DIM]), type },
      { name: `blk.${l}.attn_output.weight`, shape: ggml([DIM, DIM]), type },
      { name: `blk.${l}.ffn_norm.weight`, shape: [DIM], type: 'F32' },
      { name: `blk.${l}.ffn_gate.weight`, shape: ggml([FFN, DIM]), type },
      { name: `blk.${l}.ffn_up.weight`, shape: ggml([FFN, DIM]), type },
      { name: `blk.${l}.ffn_down.weight`, shape: ggml([DIM, FFN]), type },
    );
  }
  return t;
}

/** A small valid llama GGUF (F32 weights with finite values), or a variant of it. */
function llamaFile(variant: { arch?: string; hyper?: Record<string, GgufValue | undefined>; tensors?: WriterTensor[]; vocab?: number; extra?: [string, GgufValue][] } = {}): Uint8Array {
  const arch = variant.arch ?? 'llama';
  return writeGguf({
    metadata: [['general.architecture', gv.str(arch)], ...hyper(arch, variant.hyper), ...vocabulary(variant.vocab ?? VOCAB), ...(variant.extra ?? [])],
    tensors: variant.tensors ?? llamaTensors(),
  }).bytes;
}

function smallTokenizer(size: number) {
  const records: Uint8Array[] = [];
  const head = new Uint8Array(4);
  new DataView(head.buffer).setInt32(0, 8, true);
  records.push(head);
  for (let i = 0; i < size; i++) {
    const piece = new TextEncoder().encode(`p${i}`);
    const rec = new Uint8Array(8 + piece.length);
    new DataView(rec.buffer).setFloat32(0, -i, true);
    new DataView(rec.buffer).setInt32(4, piece.length, true);
    rec.set(piece, 8);
    records.push(rec);
  }
  const all = new Uint8Array(records.reduce((n, r) => n + r.length, 0));
  let at = 0;
  for (const r of records) (all.set(r, at), (at += r.length));
  return parseTokenizer(all, size);
}

interface BadCase {
  readonly title: string;
  readonly bytes: () => Uint8Array;
  readonly code: 'EINVAL' | 'ENOTSUP';
  readonly reason: string;
  readonly ids?: Record<string, string | number>;
}

const withoutTensor = (name: string): WriterTensor[] => llamaTensors().filter((t) => t.name !== name);
const reshaped = (name: string, shape: number[]): WriterTensor[] => llamaTensors().map((t) => (t.name === name ? { ...t, shape } : t));

const BAD: readonly BadCase[] = [
  { title: 'a missing tensor', bytes: () => llamaFile({ tensors: withoutTensor('blk.1.ffn_up.weight') }), code: 'EINVAL', reason: 'missing-tensor', ids: { tensor: 'blk.1.ffn_up.weight' } },
  { title: 'a missing embedding', bytes: () => llamaFile({ tensors: withoutTensor('token_embd.weight') }), code: 'EINVAL', reason: 'missing-tensor', ids: { tensor: 'token_embd.weight' } },
  { title: 'an extra tensor', bytes: () => llamaFile({ tensors: [...llamaTensors(), { name: 'blk.0.attn_rot.weight', shape: [DIM], type: 'F32' }] }), code: 'EINVAL', reason: 'unexpected-tensor', ids: { tensor: 'blk.0.attn_rot.weight' } },
  { title: 'a layer past block_count', bytes: () => llamaFile({ tensors: llamaTensors({ layers: LAYERS + 1 }) }), code: 'EINVAL', reason: 'unexpected-tensor', ids: { tensor: `blk.${LAYERS}.attn_norm.weight` } },
  { title: 'Q/K/V biases in a llama file', bytes: () => llamaFile({ tensors: [...llamaTensors(), { name: 'blk.0.attn_q.bias', shape: [DIM], type: 'F32' }] }), code: 'EINVAL', reason: 'unexpected-tensor' },
  { title: 'a K projection of the wrong shape', bytes: () => llamaFile({ tensors: reshaped('blk.0.attn_k.weight', ggml([DIM, DIM])) }), code: 'EINVAL', reason: 'bad-tensor-shape', ids: { tensor: 'blk.0.attn_k.weight' } },
  { title: 'a norm of the wrong length', bytes: () => llamaFile({ tensors: reshaped('blk.1.ffn_norm.weight', [DIM * 2]) }), code: 'EINVAL', reason: 'bad-tensor-shape' },
  { title: 'a classifier with other rows than the embedding', bytes: () => llamaFile({ tensors: reshaped('output.weight', ggml([VOCAB + 1, DIM])) }), code: 'EINVAL', reason: 'bad-tensor-shape', ids: { tensor: 'output.weight' } },
  { title: 'an embedding of rank 3', bytes: () => llamaFile({ tensors: reshaped('token_embd.weight', ggml([2, VOCAB, DIM])) }), code: 'EINVAL', reason: 'bad-tensor-shape' },
  { title: 'a quantized norm', bytes: () => llamaFile({ tensors: llamaTensors().map((t) => (t.name === 'blk.0.attn_norm.weight' ? { ...t, type: 'Q8_0' } : t)) }), code: 'ENOTSUP', reason: 'unsupported-tensor-kind', ids: { tensor: 'blk.0.attn_norm.weight', kind: 'Q8_0' } },
  { title: 'a matrix in a GGML type that is not a lowering kind', bytes: () => llamaFile({ tensors: llamaTensors().map((t) => (t.name === 'blk.1.attn_q.weight' ? { ...t, type: 'IQ4_NL' } : t)) }), code: 'ENOTSUP', reason: 'unsupported-tensor-type', ids: { type: 'IQ4_NL', tensor: 'blk.1.attn_q.weight' } },
  { title: 'a vocabulary smaller than the embedding', bytes: () => llamaFile({ vocab: VOCAB - 2 }), code: 'EINVAL', reason: 'vocab-mismatch', ids: { tokenizer: VOCAB - 2, embedding: VOCAB } },
  { title: 'an embedding larger than the vocabulary', bytes: () => llamaFile({ tensors: llamaTensors({ vocabRows: VOCAB + 4 }) }), code: 'EINVAL', reason: 'vocab-mismatch', ids: { tokenizer: VOCAB, embedding: VOCAB + 4 } },
  { title: 'llama.vocab_size disagreeing with the embedding', bytes: () => llamaFile({ hyper: { vocab_size: gv.u32(VOCAB + 1) } }), code: 'EINVAL', reason: 'vocab-mismatch' },
  { title: 'an unsupported architecture', bytes: () => llamaFile({ arch: 'phi3' }), code: 'ENOTSUP', reason: 'unsupported-architecture', ids: { architecture: 'phi3', ffn: 'dense' } },
  { title: 'qwen2 with routed experts', bytes: () => llamaFile({ arch: 'qwen2', hyper: { expert_count: gv.u32(4), expert_used_count: gv.u32(2) } }), code: 'ENOTSUP', reason: 'unsupported-architecture', ids: { architecture: 'qwen2', ffn: 'routed' } },
  { title: 'no general.architecture', bytes: () => writeGguf({ metadata: [...hyper('llama'), ...vocabulary(VOCAB)], tensors: llamaTensors() }).bytes, code: 'EINVAL', reason: 'no-architecture' },
  { title: 'zero layers', bytes: () => llamaFile({ hyper: { block_count: gv.u32(0) } }), code: 'EINVAL', reason: 'bad-hyperparameter', ids: { key: 'llama.block_count', value: 0 } },
  { title: 'a negative head count', bytes: () => llamaFile({ hyper: { 'attention.head_count': gv.i32(-4) } }), code: 'EINVAL', reason: 'bad-hyperparameter' },
  { title: 'a missing embedding length', bytes: () => llamaFile({ hyper: { embedding_length: undefined } }), code: 'EINVAL', reason: 'bad-hyperparameter', ids: { key: 'llama.embedding_length', value: 'missing' } },
  { title: 'a zero RMSNorm epsilon', bytes: () => llamaFile({ hyper: { 'attention.layer_norm_rms_epsilon': gv.f32(0) } }), code: 'EINVAL', reason: 'bad-hyperparameter' },
  { title: 'a NaN RoPE base', bytes: () => llamaFile({ hyper: { 'rope.freq_base': gv.f32(Number.NaN) } }), code: 'EINVAL', reason: 'bad-hyperparameter' },
  { title: 'a context past 2^24 positions', bytes: () => llamaFile({ hyper: { context_length: gv.u32(2 ** 24 + 1) } }), code: 'EINVAL', reason: 'bad-hyperparameter' },
  { title: 'heads that do not divide the embedding', bytes: () => llamaFile({ hyper: { 'attention.head_count': gv.u32(5) } }), code: 'EINVAL', reason: 'inconsistent-heads' },
  { title: 'KV heads that do not divide the heads', bytes: () => llamaFile({ hyper: { 'attention.head_count_kv': gv.u32(3) } }), code: 'EINVAL', reason: 'inconsistent-heads' },
  { title: 'an odd head size', bytes: () => llamaFile({ hyper: { 'attention.head_count': gv.u32(32), 'attention.head_count_kv': gv.u32(32) } }), code: 'EINVAL', reason: 'odd-head-size' },
  { title: 'partial rotary embedding', bytes: () => llamaFile({ hyper: { 'rope.dimension_count': gv.u32(4) } }), code: 'ENOTSUP', reason: 'partial-rope' },
  { title: 'more experts used than exist', bytes: () => llamaFile({ hyper: { expert_count: gv.u32(2), expert_used_count: gv.u32(3) } }), code: 'EINVAL', reason: 'bad-experts' },
  { title: 'a hyperparameter of the wrong type', bytes: () => llamaFile({ hyper: { block_count: gv.str('2') } }), code: 'EINVAL', reason: 'bad-metadata' },
];

describe('bad models are refused before anything is allocated', () => {
  it('[MD-model-catalog] the control: the writer\'s well-formed llama model loads, tied when output.weight is absent', async () => {
    const model = await loadModel(llamaFile());
    expect(model.architecture.id).toBe('llama');
    expect(model.config).toMatchObject({ dim: DIM, layers: LAYERS, heads: HEADS, kvHeads: KV_HEADS, ffnDim: FFN, vocabSize: VOCAB, kvDim: KV_DIM, tiedOutput: false, contextLength: 64 });
    const tied = await loadModel(llamaFile({ tensors: withoutTensor('output.weight') }));
    expect(tied.config.tiedOutput).toBe(true);
    expect(tied.globals.output).toBe(tied.globals.tokenEmbedding);
  });

  for (const bad of BAD) {
    it(`[MD-model-catalog] ${bad.title}: ${bad.code} ${bad.reason}`, async () => {
      const err = await expectCodeAsync(() => loadModel(bad.bytes()), bad.code, bad.reason);
      if (bad.ids !== undefined) expect(err.ids).toMatchObject(bad.ids);
    });
  }

  it('[MD-model-no-alloc] a refused model never reaches the provider: load-then-materialise leaves every counter as it was', async () => {
    for (const pc of providerCases()) {
      const provider = await pc.make();
      try {
        const before = provider.counters();
        for (const bad of BAD) {
          await expectCodeAsync(async () => {
            const model: LoadedModel = await loadModel(bad.bytes());
            await materializeWeights(model, provider);
          }, bad.code, bad.reason);
        }
        expect(provider.counters()).toEqual(before);
      } finally {
        if ('destroy' in provider) provider.destroy();
      }
    }
  });
});
