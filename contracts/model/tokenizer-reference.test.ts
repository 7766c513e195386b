// Tokenizer reference suite (issue 10 acceptance point 1, tokenization; both lanes).
// Plan: llama.cpp's tokenization of a corpus of tricky strings (../shared/models/reference/tokenize-*.json:
// whitespace runs, tabs, newlines, numbers, contractions, punctuation, accents, CJK, emoji with ZWJ, code,
// URLs; no BOS, special tokens not parsed) must come out of tenon's tokenizers id for id, for every
// string: tok512 through both tok512.bin (llama2.c format) and stories260K-f32.gguf (GGUF `llama`), Qwen2
// through tiny-qwen2-Q4_K_M.gguf (`gpt2`, pre `qwen2`) and Llama 3 through llama3-vocab.gguf (`gpt2`, pre
// `llama-bpe`). The references are independent of tenon (llama.cpp produced them). Decoding the ids gives
// the string back (after BOS for SentencePiece vocabularies, which put a space before the text).
import { describe, expect, it } from 'vitest';
import { BOS_ID, parseTokenizer } from '../../src/model/index.js';
import type { Tokenizer } from '../../src/model/index.js';
import { readModelFixture } from '../support/models.js';
import { fixtureTokenizer, tokenizeReference } from './tokenizer-fixtures.js';
import type { TokenizeCase } from './tokenizer-fixtures.js';

const tok512Bin = await readModelFixture('tok512.bin');
const sources = {
  'tok512.bin': tok512Bin === undefined ? undefined : parseTokenizer(tok512Bin, 512),
  'stories260K-f32.gguf': await fixtureTokenizer('stories260K-f32.gguf'),
  'tiny-qwen2-Q4_K_M.gguf': await fixtureTokenizer('tiny-qwen2-Q4_K_M.gguf'),
  'llama3-vocab.gguf': await fixtureTokenizer('llama3-vocab.gguf'),
};
const references = {
  tok512: await tokenizeReference('tokenize-tok512.json'),
  qwen: await tokenizeReference('tokenize-qwen.json'),
  llama3: await tokenizeReference('tokenize-llama3.json'),
};

const CASES: readonly { source: keyof typeof sources; reference: keyof typeof references; model: string; pre: string | undefined }[] = [
  { source: 'tok512.bin', reference: 'tok512', model: 'llama', pre: undefined },
  { source: 'stories260K-f32.gguf', reference: 'tok512', model: 'llama', pre: undefined },
  { source: 'tiny-qwen2-Q4_K_M.gguf', reference: 'qwen', model: 'gpt2', pre: 'qwen2' },
  { source: 'llama3-vocab.gguf', reference: 'llama3', model: 'gpt2', pre: 'llama-bpe' },
];

/** Ids per string, with the strings that differ listed (so a failure names them). */
function mismatches(t: Tokenizer, cases: readonly TokenizeCase[]): string[] {
  return cases.filter((c) => JSON.stringify(t.encode(c.text, { bos: false, parseSpecial: false })) !== JSON.stringify(c.ids)).map((c) => c.text);
}

describe('tokenization equals llama.cpp for every reference string', () => {
  for (const { source, reference, model, pre } of CASES) {
    it.skipIf(sources[source] === undefined || references[reference] === undefined)(`[MD-tok-reference] ${source} tokenizes every string of tokenize-${reference}.json as llama.cpp does`, () => {
      const t = sources[source]!;
      const cases = references[reference]!;
      expect(t.model).toBe(model);
      expect(t.pre).toBe(pre);
      // The corpus is the documented one (19 strings, among them contractions, CJK and emoji).
      expect(cases.length).toBe(19);
      expect(cases.some((c) => c.text.includes("I'm"))).toBe(true);
      expect(cases.some((c) => c.text.includes('👨\u200d👩\u200d👧'))).toBe(true);
      expect(mismatches(t, cases)).toEqual([]);
    });

    it.skipIf(sources[source] === undefined || references[reference] === undefined)(`[MD-tok-reference] ${source} decodes the reference ids back to every string`, () => {
      const t = sources[source]!;
      for (const c of references[reference]!) {
        // SentencePiece vocabularies put a space before the text; after BOS, decoding drops it again.
        const text = model === 'llama' ? t.decodeAll(c.ids, { prev: t.special.bos }) : t.decodeAll(c.ids);
        expect(text).toBe(c.text);
      }
    });
  }

  it.skipIf(sources['tok512.bin'] === undefined || sources['stories260K-f32.gguf'] === undefined)(
    '[MD-tok-spm] stories260K-f32.gguf and tok512.bin are one tokenizer: same ids with BOS, same text for every token',
    () => {
      const bin = sources['tok512.bin']!;
      const gguf = sources['stories260K-f32.gguf']!;
      expect(gguf.vocabSize).toBe(bin.vocabSize);
      expect(gguf.special.bos).toBe(BOS_ID);
      expect(gguf.addBos).toBe(true);
      expect(gguf.addSpacePrefix).toBe(true);
      expect(gguf.byteFallback).toBe(true);
      // The documented prompt, with BOS as the model adds it.
      expect(gguf.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
      expect(bin.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
      const enc = new TextEncoder();
      for (let id = 3; id < bin.vocabSize; id++) {
        // Same bytes for every token after a normal token (GGUF spells the space `▁`, tok512.bin ' ').
        expect(gguf.decode(100, id)).toEqual(bin.decode(100, id));
        expect(gguf.score(id)).toBe(bin.score(id));
      }
      expect(gguf.lookup('▁Once')).toBe(403);
      expect(bin.lookup(' Once')).toBe(403);
      expect(enc.encode(gguf.tokenText(403))).toEqual(enc.encode('▁Once'));
    },
  );
});
