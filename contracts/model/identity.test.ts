// Identity suite (DESIGN.md: the model identity is a SHA-256 over config, weights and tokenizer).
// Plan: the tokenizer id of tok512.bin is the published file SHA-256 (control); the model id equals the
// documented construction recomputed here with WebCrypto, and a pinned value for stories260K + tok512;
// changing one weight bit, one tokenizer score, the classifier sharing or the config changes the model
// id; re-exporting the same weights as version 1 or loading from a misaligned copy does not; a tokenizer
// for another vocabulary size is EINVAL vocab-mismatch.
import { describe, expect, it } from 'vitest';
import { modelIdentity, parseLlamaModel, parseTokenizer, tokenizerIdentity } from '../../src/index.js';
import type { LlamaModelFile, LlamaTensorName } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { MODEL_FIXTURES, readModelFixture } from '../support/models.js';
import { buildTokenizer, buildV0, specialAndByteTokens, v0Offset, v0ToV1 } from '../session/llama-files.js';
import type { HeaderFields } from '../session/llama-files.js';

const stories = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');
const noFixtures = stories === undefined || tok512 === undefined;

/** modelId of stories260K.bin with tok512.bin, pinned (the definition is in src/model/identity.ts). */
const STORIES260K_MODEL_ID = 'f90396002212a3fa94b64a974f5d2a46fa8ec7aa736bd44d968408b1118bc5dc';

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

/** The documented construction, written out independently. */
async function expectedModelId(model: LlamaModelFile, tokenizerFile: Uint8Array): Promise<string> {
  const c = model.config;
  const parts: Uint8Array[] = [new TextEncoder().encode('tenon/llama2c-model/1'), Uint8Array.of(0)];
  const cfg = new DataView(new ArrayBuffer(32));
  [c.dim, c.hiddenDim, c.nLayers, c.nHeads, c.nKvHeads, c.vocabSize, c.seqLen, model.sharedClassifier ? 1 : 0].forEach((v, i) => cfg.setInt32(4 * i, v, true));
  parts.push(new Uint8Array(cfg.buffer));
  const names: LlamaTensorName[] = ['tokenEmbedding', 'rmsAtt', 'wq', 'wk', 'wv', 'wo', 'rmsFfn', 'w1', 'w2', 'w3', 'rmsFinal', ...(model.sharedClassifier ? [] : ['wcls' as const])];
  for (const name of names) {
    const w = model.weights[name];
    parts.push(await sha256(new Uint8Array(w.buffer, w.byteOffset, w.byteLength)));
  }
  parts.push(await sha256(tokenizerFile));
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) (all.set(p, at), (at += p.length));
  return hex(await sha256(all));
}

describe('model and tokenizer identity', () => {
  it.skipIf(noFixtures)('[TS-model-identity] stories260K + tok512: tokenizer id is the file SHA-256, model id follows the documented construction', async () => {
    const model = parseLlamaModel(stories!);
    const tokenizer = parseTokenizer(tok512!, model.config.vocabSize);
    const id = await modelIdentity(model, tokenizer);
    expect(id.tokenizerId).toBe(MODEL_FIXTURES['tok512.bin']);
    expect(await tokenizerIdentity(tokenizer)).toBe(MODEL_FIXTURES['tok512.bin']);
    expect(id.modelId).toMatch(/^[0-9a-f]{64}$/);
    expect(id.modelId).toBe(await expectedModelId(model, tok512!));
    expect(id.modelId).toBe(STORIES260K_MODEL_ID);
    // Same inputs, same ids; the version 1 export of the same weights has the same model id.
    expect(await modelIdentity(parseLlamaModel(stories!.slice()), tokenizer)).toEqual(id);
    expect((await modelIdentity(parseLlamaModel(v0ToV1(stories!)), tokenizer)).modelId).toBe(id.modelId);
  });

  it.skipIf(noFixtures)('[TS-model-identity] one flipped weight bit changes the model id but not the tokenizer id', async () => {
    const tokenizer = parseTokenizer(tok512!, 512);
    const base = await modelIdentity(parseLlamaModel(stories!), tokenizer);
    const flipped = stories!.slice();
    const at = v0Offset({ dim: 64, hiddenDim: 172, nLayers: 5, nHeads: 8, nKvHeads: 4, vocabSize: 512, seqLen: 512 }, 'w2', 1234);
    flipped[at] = flipped[at]! ^ 1;
    const id = await modelIdentity(parseLlamaModel(flipped), tokenizer);
    expect(id.modelId).not.toBe(base.modelId);
    expect(id.tokenizerId).toBe(base.tokenizerId);
  });

  it('[TS-model-identity] changing the tokenizer, the config or the classifier sharing changes the model id', async () => {
    const file = buildV0(SMALL);
    const model = parseLlamaModel(file);
    const tokA = smallTokenizer(-1);
    const tokB = smallTokenizer(-1.5);
    const a = await modelIdentity(model, parseTokenizer(tokA, 300));
    expect(a.modelId).toBe(await expectedModelId(model, tokA));
    const b = await modelIdentity(model, parseTokenizer(tokB, 300));
    expect(b.tokenizerId).not.toBe(a.tokenizerId);
    expect(b.modelId).not.toBe(a.modelId);
    // seq_len is part of the config (a legacy file's RoPE tables grow with it, but they are not hashed).
    const longer = parseLlamaModel(buildV0({ ...SMALL, seqLen: 8 }));
    expect((await modelIdentity(longer, parseTokenizer(tokA, 300))).modelId).not.toBe(a.modelId);
    // A separate classifier equal to the embedding is still a different model (one more tensor).
    const separate = parseLlamaModel(buildV0({ ...SMALL, vocabSize: -300 }, (name, i) => (name === 'wcls' ? model.weights.tokenEmbedding[i]! : name.startsWith('freq') ? 0 : model.weights[name as 'wq'][i]!)));
    expect((await modelIdentity(separate, parseTokenizer(tokA, 300))).modelId).not.toBe(a.modelId);
  });

  it('[TS-model-identity] a misaligned (copied) load and a SharedArrayBuffer load have the same ids', async () => {
    const file = buildV0(SMALL);
    const tok = parseTokenizer(smallTokenizer(), 300);
    const base = await modelIdentity(parseLlamaModel(file), tok);
    const holder = new Uint8Array(file.byteLength + 1);
    holder.set(file, 1);
    const misaligned = parseLlamaModel(holder.subarray(1));
    expect(misaligned.zeroCopy).toBe(false);
    expect(await modelIdentity(misaligned, tok)).toEqual(base);
    const shared = new Uint8Array(new SharedArrayBuffer(file.byteLength));
    shared.set(file);
    expect(await modelIdentity(parseLlamaModel(shared), tok)).toEqual(base);
  });

  it('[TS-model-identity] a tokenizer parsed for another vocabulary size is EINVAL vocab-mismatch', async () => {
    const model = parseLlamaModel(buildV0({ ...SMALL, vocabSize: 301 }));
    const err = await expectCodeAsync(() => modelIdentity(model, parseTokenizer(smallTokenizer(), 300)), 'EINVAL', 'vocab-mismatch');
    expect(err.ids).toEqual({ model: 301, tokenizer: 300 });
    await expectCodeAsync(() => tokenizerIdentity({} as never), 'EINVAL', 'bad-argument');
  });
});
