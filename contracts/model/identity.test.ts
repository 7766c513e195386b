// Identity suite (src/model/identity.ts: a SHA-256 over config, weights and tokenizer).
// Plan:
// (1) the documented construction, written out independently here with WebCrypto, gives the model id of
//     stories260K + tok512 (pinned) and of tiny-llama-Q4_K_M.gguf; the tokenizer id of tok512.bin is the
//     published file SHA-256 (control);
// (2) changing one weight bit, the tokenizer or the config changes the ids it should and only those; a
//     version 1 export, a misaligned or SharedArrayBuffer copy, a Blob or counting source, and
//     materialising on either provider change nothing;
// (3) a lowering kind is part of the identity: every quantization of tiny-llama and tiny-moe is its own
//     model, and the same stored bytes read as F16 and as BF16 are two models;
// (4) decision: stories260K.bin and stories260K-f32.gguf share their weightsId (same weights) and differ
//     in modelId (context 512 vs 128, tok512.bin vs a GGUF vocabulary);
// (5) a tokenizer parsed for another vocabulary size is EINVAL vocab-mismatch.
import { describe, expect, it } from 'vitest';
import { LOWERING_KINDS, blobSource, countingSource, loadModel, materializeWeights, modelIdentity, parseGguf, parseLlamaModel, parseTokenizer, tokenizerIdentity } from '../../src/model/index.js';
import type { LlamaModelFile, LlamaTensorName, LoweringKindName, ModelIdentity } from '../../src/model/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { readGgufFixture } from '../support/gguf-fixtures.js';
import type { GgufFixture } from '../support/gguf-fixtures.js';
import { gv, writeGguf } from '../support/gguf-writer.js';
import { MODEL_FIXTURES, readModelFixture } from '../support/models.js';
import { providerCases } from '../support/providers.js';
import { buildTokenizer, buildV0, specialAndByteTokens, v0Offset, v0ToV1 } from '../session/llama-files.js';
import type { HeaderFields } from '../session/llama-files.js';

const stories = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');
const noFixtures = stories === undefined || tok512 === undefined;

/** modelId of stories260K.bin with tok512.bin, pinned (the definition is in src/model/identity.ts). */
const STORIES260K_MODEL_ID = 'f4372f73f0ec16e05922c801969bbc726aa622af19883b5f274d8a122e398efd';

const SMALL: HeaderFields = { dim: 16, hiddenDim: 24, nLayers: 2, nHeads: 4, nKvHeads: 2, vocabSize: 300, seqLen: 6 };

function smallTokenizer(scoreOf260 = -1): Uint8Array {
  const records = specialAndByteTokens();
  for (let i = records.length; i < 300; i++) records.push({ score: i === 260 ? scoreOf260 : -i, piece: `t${i}` });
  return buildTokenizer(records);
}

async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes.slice()));
}
const hex = (b: Uint8Array): string => [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
function u32le(...values: number[]): Uint8Array {
  const v = new DataView(new ArrayBuffer(4 * values.length));
  values.forEach((x, i) => v.setUint32(4 * i, x, true));
  return new Uint8Array(v.buffer);
}
function concat(parts: readonly Uint8Array[]): Uint8Array {
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) (all.set(p, at), (at += p.length));
  return all;
}

interface Part {
  readonly name: string;
  readonly kind: LoweringKindName;
  /** Row-major. */
  readonly shape: readonly number[];
  readonly bytes: Uint8Array;
}

/** The documented construction (src/model/identity.ts), written out independently. */
async function expectedIdentity(config: readonly (readonly [string, unknown])[], parts: readonly Part[], tokenizerHex: string): Promise<ModelIdentity> {
  const weightBytes: Uint8Array[] = [];
  for (const p of parts) {
    weightBytes.push(utf8(p.name), Uint8Array.of(0), utf8(p.kind), Uint8Array.of(0), utf8(LOWERING_KINDS[p.kind].packedLayout), Uint8Array.of(0), u32le(p.shape.length, ...p.shape), await sha256(p.bytes));
  }
  const weights = await sha256(concat(weightBytes));
  const configJson = utf8(JSON.stringify(config));
  const tokenizer = Uint8Array.from(tokenizerHex.match(/../g)!.map((h) => parseInt(h, 16)));
  const model = await sha256(concat([utf8('tenon/model/2'), Uint8Array.of(0), u32le(configJson.length), configJson, weights, tokenizer]));
  return { modelId: hex(model), tokenizerId: tokenizerHex, weightsId: hex(weights) };
}

/** A llama config as canonical [field, value] pairs. */
function llamaConfig(c: { dim: number; layers: number; ffnDim: number; heads: number; kvHeads: number; contextLength: number; vocabSize: number; ropeTheta?: number }): [string, unknown][] {
  const headDim = c.dim / c.heads;
  return [
    ['architecture', 'llama'], ['ropeStyle', 'normal'], ['attentionBias', false], ['ffn', 'dense'], ['routing', null],
    ['dim', c.dim], ['layers', c.layers], ['ffnDim', c.ffnDim], ['heads', c.heads], ['kvHeads', c.kvHeads], ['headDim', headDim], ['ropeDim', headDim],
    ['ropeTheta', c.ropeTheta ?? 10_000], ['rmsEps', Math.fround(1e-5)], ['contextLength', c.contextLength], ['vocabSize', c.vocabSize], ['experts', 0], ['expertsUsed', 0],
  ];
}

/** The catalog-ordered parts of a llama2.c checkpoint (tied classifier under output.weight). */
function llama2cParts(model: LlamaModelFile): Part[] {
  const c = model.config;
  const whole = (name: LlamaTensorName): Uint8Array => {
    const w = model.weights[name];
    return new Uint8Array(w.buffer, w.byteOffset, w.byteLength);
  };
  const slice = (name: LlamaTensorName, l: number): Uint8Array => {
    const w = model.weights[name];
    const per = w.byteLength / c.nLayers;
    return new Uint8Array(w.buffer, w.byteOffset + l * per, per);
  };
  const parts: Part[] = [
    { name: 'token_embd.weight', kind: 'F32', shape: [c.vocabSize, c.dim], bytes: whole('tokenEmbedding') },
    { name: 'output_norm.weight', kind: 'F32', shape: [c.dim], bytes: whole('rmsFinal') },
    { name: 'output.weight', kind: 'F32', shape: [c.vocabSize, c.dim], bytes: whole('wcls') },
  ];
  for (let l = 0; l < c.nLayers; l++) {
    parts.push(
      { name: `blk.${l}.attn_norm.weight`, kind: 'F32', shape: [c.dim], bytes: slice('rmsAtt', l) },
      { name: `blk.${l}.attn_q.weight`, kind: 'F32', shape: [c.dim, c.dim], bytes: slice('wq', l) },
      { name: `blk.${l}.attn_k.weight`, kind: 'F32', shape: [c.kvDim, c.dim], bytes: slice('wk', l) },
      { name: `blk.${l}.attn_v.weight`, kind: 'F32', shape: [c.kvDim, c.dim], bytes: slice('wv', l) },
      { name: `blk.${l}.attn_output.weight`, kind: 'F32', shape: [c.dim, c.dim], bytes: slice('wo', l) },
      { name: `blk.${l}.ffn_norm.weight`, kind: 'F32', shape: [c.dim], bytes: slice('rmsFfn', l) },
      { name: `blk.${l}.ffn_gate.weight`, kind: 'F32', shape: [c.hiddenDim, c.dim], bytes: slice('w1', l) },
      { name: `blk.${l}.ffn_up.weight`, kind: 'F32', shape: [c.hiddenDim, c.dim], bytes: slice('w3', l) },
      { name: `blk.${l}.ffn_down.weight`, kind: 'F32', shape: [c.dim, c.hiddenDim], bytes: slice('w2', l) },
    );
  }
  return parts;
}

function configOf(model: LlamaModelFile): [string, unknown][] {
  const c = model.config;
  return llamaConfig({ dim: c.dim, layers: c.nLayers, ffnDim: c.hiddenDim, heads: c.nHeads, kvHeads: c.nKvHeads, contextLength: c.seqLen, vocabSize: c.vocabSize });
}

describe('model and tokenizer identity', () => {
  it.skipIf(noFixtures)('[TS-model-identity][MD-identity-construction] stories260K + tok512: tokenizer id is the file SHA-256, model id follows the documented construction', async () => {
    const model = parseLlamaModel(stories!);
    const tokenizer = parseTokenizer(tok512!, model.config.vocabSize);
    const id = await modelIdentity(model, tokenizer);
    expect(id.tokenizerId).toBe(MODEL_FIXTURES['tok512.bin']);
    expect(await tokenizerIdentity(tokenizer)).toBe(MODEL_FIXTURES['tok512.bin']);
    expect(id).toEqual(await expectedIdentity(configOf(model), llama2cParts(model), MODEL_FIXTURES['tok512.bin']));
    expect(id.modelId).toBe(STORIES260K_MODEL_ID);
    // The same through loadModel (range reads), again, and from the version 1 export of the same weights.
    expect(await (await loadModel(stories!, { tokenizer: tok512! })).identity()).toEqual(id);
    expect(await modelIdentity(parseLlamaModel(stories!.slice()), tokenizer)).toEqual(id);
    expect(await modelIdentity(parseLlamaModel(v0ToV1(stories!)), tokenizer)).toEqual(id);
  });

  it.skipIf(noFixtures)('[TS-model-identity] one flipped weight bit changes the model and weights ids but not the tokenizer id', async () => {
    const tokenizer = parseTokenizer(tok512!, 512);
    const base = await modelIdentity(parseLlamaModel(stories!), tokenizer);
    const flipped = stories!.slice();
    const at = v0Offset({ dim: 64, hiddenDim: 172, nLayers: 5, nHeads: 8, nKvHeads: 4, vocabSize: 512, seqLen: 512 }, 'w2', 1234);
    flipped[at] = flipped[at]! ^ 1;
    const id = await modelIdentity(parseLlamaModel(flipped), tokenizer);
    expect(id.modelId).not.toBe(base.modelId);
    expect(id.weightsId).not.toBe(base.weightsId);
    expect(id.tokenizerId).toBe(base.tokenizerId);
  });

  it('[TS-model-identity] the tokenizer and the config change the model id, not the weights id; the classifier counts by value', async () => {
    const file = buildV0(SMALL);
    const model = parseLlamaModel(file);
    const tokA = smallTokenizer(-1);
    const tokB = smallTokenizer(-1.5);
    const a = await modelIdentity(model, parseTokenizer(tokA, 300));
    expect(a).toEqual(await expectedIdentity(configOf(model), llama2cParts(model), hex(await sha256(tokA))));
    const b = await modelIdentity(model, parseTokenizer(tokB, 300));
    expect(b.tokenizerId).not.toBe(a.tokenizerId);
    expect(b.modelId).not.toBe(a.modelId);
    expect(b.weightsId).toBe(a.weightsId);
    // seq_len is part of the config (a legacy file's RoPE tables grow with it, but they are not hashed).
    const longer = await modelIdentity(parseLlamaModel(buildV0({ ...SMALL, seqLen: 8 })), parseTokenizer(tokA, 300));
    expect(longer.modelId).not.toBe(a.modelId);
    expect(longer.weightsId).toBe(a.weightsId);
    // A separate classifier equal to the embedding computes exactly what the tied one does: same model.
    const value = (name: string, i: number): number => (name === 'wcls' ? model.weights.tokenEmbedding[i]! : name.startsWith('freq') ? 0 : model.weights[name as 'wq'][i]!);
    const separate = parseLlamaModel(buildV0({ ...SMALL, vocabSize: -300 }, value));
    expect(separate.sharedClassifier).toBe(false);
    expect(await modelIdentity(separate, parseTokenizer(tokA, 300))).toEqual(a);
    // One that differs is another model.
    const other = parseLlamaModel(buildV0({ ...SMALL, vocabSize: -300 }, (name, i) => (name === 'wcls' && i === 7 ? 0.5 : value(name, i))));
    expect((await modelIdentity(other, parseTokenizer(tokA, 300))).weightsId).not.toBe(a.weightsId);
  });

  it('[TS-model-identity][MD-identity-sources] a misaligned (copied) load, a SharedArrayBuffer load, a Blob and a counting source have the same ids', async () => {
    const file = buildV0(SMALL);
    const tokBytes = smallTokenizer();
    const tok = parseTokenizer(tokBytes, 300);
    const base = await modelIdentity(parseLlamaModel(file), tok);
    const holder = new Uint8Array(file.byteLength + 1);
    holder.set(file, 1);
    const misaligned = parseLlamaModel(holder.subarray(1));
    expect(misaligned.zeroCopy).toBe(false);
    expect(await modelIdentity(misaligned, tok)).toEqual(base);
    const shared = new Uint8Array(new SharedArrayBuffer(file.byteLength));
    shared.set(file);
    expect(await modelIdentity(parseLlamaModel(shared), tok)).toEqual(base);
    expect(await (await loadModel(blobSource(new Blob([file as Uint8Array<ArrayBuffer>])), { tokenizer: tokBytes })).identity()).toEqual(base);
    const counted = countingSource(blobSource(new Blob([file as Uint8Array<ArrayBuffer>])));
    const loaded = await loadModel(counted, { tokenizer: tok });
    expect(await loaded.identity()).toEqual(base);
    // Each tensor was read once for its digest: the file minus its header and RoPE tables.
    const ropeTables = 2 * SMALL.seqLen * (SMALL.dim / SMALL.nHeads / 2) * 4;
    expect(counted.counters.bytes).toBe(4 + Math.min(256, file.length) + file.length - 28 - ropeTables);
  });

  it('[TS-model-identity] a tokenizer parsed for another vocabulary size is EINVAL vocab-mismatch', async () => {
    const model = parseLlamaModel(buildV0({ ...SMALL, vocabSize: 301 }));
    const err = await expectCodeAsync(() => modelIdentity(model, parseTokenizer(smallTokenizer(), 300)), 'EINVAL', 'vocab-mismatch');
    expect(err.ids).toEqual({ tokenizer: 300, embedding: 301 });
    await expectCodeAsync(() => tokenizerIdentity({} as never), 'EINVAL', 'bad-argument');
  });
});

const TINY_LLAMAS: readonly GgufFixture[] = ['tiny-llama-f32.gguf', 'tiny-llama-F16.gguf', 'tiny-llama-Q8_0.gguf', 'tiny-llama-Q4_0.gguf', 'tiny-llama-Q4_K_M.gguf', 'tiny-llama-Q6_K.gguf'];
const TINY_MOES: readonly GgufFixture[] = ['tiny-moe-f32.gguf', 'tiny-moe-Q8_0.gguf', 'tiny-moe-Q4_K_M.gguf'];
const gguf = new Map<GgufFixture, Uint8Array | undefined>();
for (const name of [...TINY_LLAMAS, ...TINY_MOES, 'stories260K-f32.gguf' as const]) gguf.set(name, await readGgufFixture(name));

/** The catalog order of a dense llama GGUF. */
const LLAMA_LAYER = ['attn_norm', 'attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_norm', 'ffn_gate', 'ffn_up', 'ffn_down'];

describe('identity of GGUF models', () => {
  it.skipIf(gguf.get('tiny-llama-Q4_K_M.gguf') === undefined)('[MD-identity-construction] tiny-llama-Q4_K_M.gguf: the documented construction over its stored Q4_K/Q6_K bytes, packed layout tags and config', async () => {
    const bytes = gguf.get('tiny-llama-Q4_K_M.gguf')!;
    const file = await parseGguf(bytes);
    const names = ['token_embd.weight', 'output_norm.weight', 'output.weight'];
    for (let l = 0; l < 4; l++) for (const n of LLAMA_LAYER) names.push(`blk.${l}.${n}.weight`);
    const parts = await Promise.all(
      names.map(async (name): Promise<Part> => {
        const t = file.tensor(name);
        return { name, kind: t.type.name as LoweringKindName, shape: [...t.shape].reverse(), bytes: await file.readTensor(t) };
      }),
    );
    const model = await loadModel(bytes);
    const expected = await expectedIdentity(llamaConfig({ dim: 256, layers: 4, ffnDim: 768, heads: 8, kvHeads: 4, contextLength: 512, vocabSize: 512 }), parts, await tokenizerIdentity(model.tokenizer));
    expect(await model.identity()).toEqual(expected);
  });

  it.skipIf(TINY_LLAMAS.some((n) => gguf.get(n) === undefined))('[MD-identity-kinds] every quantization of tiny-llama is its own model with the same tokenizer', async () => {
    const ids = await Promise.all(TINY_LLAMAS.map(async (n) => (await loadModel(gguf.get(n)!)).identity()));
    expect(new Set(ids.map((i) => i.modelId)).size).toBe(TINY_LLAMAS.length);
    expect(new Set(ids.map((i) => i.weightsId)).size).toBe(TINY_LLAMAS.length);
    expect(new Set(ids.map((i) => i.tokenizerId)).size).toBe(1);
    const moes = await Promise.all(TINY_MOES.map(async (n) => (await loadModel(gguf.get(n)!)).identity()));
    expect(new Set(moes.map((i) => i.modelId)).size).toBe(TINY_MOES.length);
  });

  it('[MD-identity-kinds] the same stored bytes read as F16 and as BF16 are two models (the lowering kind is part of the identity)', async () => {
    const dim = 32;
    const vocab = 8;
    const tokens = ['<unk>', '<s>', '</s>', 'a', 'b', 'c', 'd', 'e'];
    const write = (type: 'F16' | 'BF16'): Uint8Array => {
      const half = (rows: number, cols: number, seed: number): Uint8Array => {
        // 0x3c00-ish patterns are finite in both encodings.
        const out = new Uint8Array(rows * cols * 2);
        for (let i = 0; i < rows * cols; i++) {
          out[2 * i] = (i * 7 + seed) & 0xff;
          out[2 * i + 1] = 0x3c;
        }
        return out;
      };
      const f32 = (n: number): Uint8Array => new Uint8Array(new Float32Array(n).fill(1).buffer);
      const tensors = [
        { name: 'token_embd.weight', shape: [dim, vocab], type, data: half(vocab, dim, 1) },
        { name: 'output_norm.weight', shape: [dim], type: 'F32' as const, data: f32(dim) },
        { name: 'blk.0.attn_norm.weight', shape: [dim], type: 'F32' as const, data: f32(dim) },
        ...['attn_q', 'attn_k', 'attn_v', 'attn_output'].map((n, i) => ({ name: `blk.0.${n}.weight`, shape: [dim, dim], type, data: half(dim, dim, i + 2) })),
        { name: 'blk.0.ffn_norm.weight', shape: [dim], type: 'F32' as const, data: f32(dim) },
        ...['ffn_gate', 'ffn_up', 'ffn_down'].map((n, i) => ({ name: `blk.0.${n}.weight`, shape: [dim, dim], type, data: half(dim, dim, i + 9) })),
      ];
      return writeGguf({
        metadata: [
          ['general.architecture', gv.str('llama')],
          ['llama.embedding_length', gv.u32(dim)], ['llama.block_count', gv.u32(1)], ['llama.feed_forward_length', gv.u32(dim)],
          ['llama.attention.head_count', gv.u32(4)], ['llama.attention.layer_norm_rms_epsilon', gv.f32(1e-5)], ['llama.context_length', gv.u32(16)],
          ['tokenizer.ggml.model', gv.str('llama')], ['tokenizer.ggml.tokens', gv.strings(tokens)],
          ['tokenizer.ggml.scores', gv.f32s(tokens.map((_, i) => -i))], ['tokenizer.ggml.token_type', gv.i32s(tokens.map((_, i) => (i === 0 ? 2 : i < 3 ? 3 : 1)))],
        ],
        tensors,
      }).bytes;
    };
    const f16 = await loadModel(write('F16'));
    const bf16 = await loadModel(write('BF16'));
    expect(f16.tensors.map((t) => t.kind.name)).toContain('F16');
    expect(bf16.tensors.map((t) => t.kind.name)).toContain('BF16');
    // Same stored bytes, tensor by tensor.
    for (const t of f16.tensors) expect(await bf16.tensor(t.name).readRows(0, t.geometry.rows)).toEqual(await t.readRows(0, t.geometry.rows));
    const a = await f16.identity();
    const b = await bf16.identity();
    expect(a.tokenizerId).toBe(b.tokenizerId);
    expect(a.weightsId).not.toBe(b.weightsId);
    expect(a.modelId).not.toBe(b.modelId);
  });

  it.skipIf(gguf.get('tiny-llama-Q8_0.gguf') === undefined)('[MD-identity-sources] identity does not depend on the source or on materialising the weights on either provider', async () => {
    const bytes = gguf.get('tiny-llama-Q8_0.gguf')!;
    const base = await (await loadModel(bytes)).identity();
    expect(await (await loadModel(blobSource(new Blob([bytes as Uint8Array<ArrayBuffer>])))).identity()).toEqual(base);
    for (const pc of providerCases()) {
      const provider = await pc.make();
      try {
        const model = await loadModel(countingSource(blobSource(new Blob([bytes as Uint8Array<ArrayBuffer>]))));
        const weights = await materializeWeights(model, provider);
        expect(await model.identity()).toEqual(base);
        weights.dispose();
      } finally {
        if ('destroy' in provider) provider.destroy();
      }
    }
  });

  it.skipIf(noFixtures || gguf.get('stories260K-f32.gguf') === undefined)('[MD-identity-stories] stories260K.bin and stories260K-f32.gguf: same weights id, different model ids (context 512 vs 128, tok512.bin vs a GGUF vocabulary)', async () => {
    const bin = await loadModel(stories!, { tokenizer: tok512! });
    const conv = await loadModel(gguf.get('stories260K-f32.gguf')!);
    const a = await bin.identity();
    const b = await conv.identity();
    expect(a.weightsId).toBe(b.weightsId);
    expect(a.tokenizerId).not.toBe(b.tokenizerId);
    expect(a.modelId).not.toBe(b.modelId);
    expect([bin.config.contextLength, conv.config.contextLength]).toEqual([512, 128]);
    // Both tokenizers encode alike (so the different tokenizer ids are about the files, not behaviour).
    expect(conv.tokenizer.encode('Once upon a time')).toEqual(bin.tokenizer.encode('Once upon a time'));
    // The GGUF model with tok512.bin as its tokenizer differs from the checkpoint only by its context.
    const convTok512 = await (await loadModel(gguf.get('stories260K-f32.gguf')!, { tokenizer: tok512! })).identity();
    expect(convTok512.tokenizerId).toBe(a.tokenizerId);
    expect(convTok512.modelId).toBe((await expectedIdentity(llamaConfig({ dim: 64, layers: 5, ffnDim: 172, heads: 8, kvHeads: 4, contextLength: 128, vocabSize: 512 }), llama2cParts(parseLlamaModel(stories!)), a.tokenizerId)).modelId);
  });
});
