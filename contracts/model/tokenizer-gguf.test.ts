// Tokenizers from GGUF metadata: validation, the real vocabularies' special tokens, streaming and work
// (both lanes).
// Plan: every check of tokenizerFromGguf fails with its own stable reason on metadata built in the test
// (one defect each, from a vocabulary that loads as a control), and a failed call leaves the caller's
// metadata as it was; an unknown model is ENOTSUP naming it. On the fixtures: the special ids, BOS
// defaults and end-of-generation sets llama.cpp derives for Qwen2 and Llama 3; control tokens parsed only
// when asked; Qwen's user-defined tokens always; streaming decode of emoji split across byte-level tokens
// and of tok512's `<0xXX>` fallback. Work: encoding a 10,000-token text counts pair lookups and merges
// linear in its bytes, and repeated pre-tokens come from the cache (counters, never time).
import { describe, expect, it } from 'vitest';
import { TokenType, parseTokenizer, tokenizerFromGguf } from '../../src/model/index.js';
import type { GgufValue, Tokenizer } from '../../src/model/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { readModelFixture } from '../support/models.js';
import { BYTE_CHARS, bool, bpeMetadata, f32s, fixtureTokenizer, i32s, metadata, str, strings, u32 } from './tokenizer-fixtures.js';

const qwen = await fixtureTokenizer('tiny-qwen2-Q4_K_M.gguf');
const llama3 = await fixtureTokenizer('llama3-vocab.gguf');
const stories = await fixtureTokenizer('stories260K-f32.gguf');
const tok512Bin = await readModelFixture('tok512.bin');

const K = {
  model: 'tokenizer.ggml.model',
  pre: 'tokenizer.ggml.pre',
  tokens: 'tokenizer.ggml.tokens',
  scores: 'tokenizer.ggml.scores',
  types: 'tokenizer.ggml.token_type',
  merges: 'tokenizer.ggml.merges',
  bos: 'tokenizer.ggml.bos_token_id',
  eos: 'tokenizer.ggml.eos_token_id',
  addBos: 'tokenizer.ggml.add_bos_token',
} as const;

/** A valid SentencePiece vocabulary: unk, BOS, EOS, 256 byte tokens, a few pieces. */
function spmMetadata(): Map<string, GgufValue> {
  const bytes = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  const pieces = ['▁', 'a', '▁a'];
  return metadata({
    [K.model]: str('llama'),
    [K.tokens]: strings(['<unk>', '<s>', '</s>', ...bytes, ...pieces]),
    [K.scores]: f32s([0, 0, 0, ...bytes.map(() => 0), -2, -3, -1]),
    [K.types]: i32s([TokenType.Unknown, TokenType.Control, TokenType.Control, ...bytes.map(() => TokenType.Byte), ...pieces.map(() => TokenType.Normal)]),
  });
}

/** Expects `meta` with one defect to be refused with code/reason, and to be left unchanged. */
function refused(meta: Map<string, GgufValue>, code: 'EINVAL' | 'ENOTSUP', reason: string): Record<string, string | number> | undefined {
  const before = [...meta.entries()].map(([k, v]) => [k, v.type, JSON.stringify(v.value, (_, x) => (ArrayBuffer.isView(x) ? Array.from(x as Float32Array) : x))]);
  let made: Tokenizer | undefined;
  const err = expectCode(() => {
    made = tokenizerFromGguf(meta);
  }, code, reason);
  expect(made).toBeUndefined();
  expect([...meta.entries()].map(([k, v]) => [k, v.type, JSON.stringify(v.value, (_, x) => (ArrayBuffer.isView(x) ? Array.from(x as Float32Array) : x))])).toEqual(before);
  return err.ids;
}

describe('tokenizerFromGguf validates every field before building', () => {
  it('[MD-tok-gguf-validate] the control vocabularies load', () => {
    expect(tokenizerFromGguf(spmMetadata()).vocabSize).toBe(262);
    expect(tokenizerFromGguf(spmMetadata()).byteFallback).toBe(true);
    expect(tokenizerFromGguf(bpeMetadata({ words: ['ab'], merges: [['a', 'b']] })).vocabSize).toBe(257);
  });

  it('[MD-tok-gguf-validate] an unknown tokenizer model is ENOTSUP naming it; a missing or mistyped key is EINVAL bad-metadata naming it', () => {
    const m = spmMetadata();
    m.set(K.model, str('bert'));
    expect(refused(m, 'ENOTSUP', 'unsupported-tokenizer')).toEqual({ model: 'bert' });
    const missing = spmMetadata();
    missing.delete(K.tokens);
    expect(refused(missing, 'EINVAL', 'bad-metadata')).toEqual({ key: K.tokens, expected: 'array<string>', found: 'missing' });
    const wrong = spmMetadata();
    wrong.set(K.scores, strings(['x']));
    expect(refused(wrong, 'EINVAL', 'bad-metadata')?.['key']).toBe(K.scores);
    const bos = spmMetadata();
    bos.set(K.bos, str('1'));
    expect(refused(bos, 'EINVAL', 'bad-metadata')?.['key']).toBe(K.bos);
    const flag = spmMetadata();
    flag.set(K.addBos, u32(1));
    expect(refused(flag, 'EINVAL', 'bad-metadata')?.['key']).toBe(K.addBos);
    expectCode(() => tokenizerFromGguf(null as never), 'EINVAL', 'bad-argument');
  });

  it('[MD-tok-gguf-validate] tokens: not empty, none empty, none repeated', () => {
    const empty = spmMetadata();
    empty.set(K.tokens, strings([]));
    refused(empty, 'EINVAL', 'empty-vocabulary');
    const blank = spmMetadata();
    const tokens = [...(blank.get(K.tokens)!.value as unknown as { items: readonly string[] }).items];
    tokens[100] = '';
    blank.set(K.tokens, strings(tokens));
    expect(refused(blank, 'EINVAL', 'empty-token')).toEqual({ token: 100 });
    const twice = spmMetadata();
    const dup = [...(twice.get(K.tokens)!.value as unknown as { items: readonly string[] }).items];
    dup[261] = 'a';
    twice.set(K.tokens, strings(dup));
    expect(refused(twice, 'EINVAL', 'duplicate-token')).toEqual({ token: 261, first: 260 });
  });

  it('[MD-tok-gguf-validate] scores and types: one per token, finite scores, types 0..6, byte tokens spelled <0xXX>', () => {
    const short = spmMetadata();
    short.set(K.scores, f32s([0, 0]));
    expect(refused(short, 'EINVAL', 'length-mismatch')).toEqual({ key: K.scores, expected: 262, actual: 2 });
    const types = spmMetadata();
    types.set(K.types, i32s(new Array<number>(263).fill(1)));
    expect(refused(types, 'EINVAL', 'length-mismatch')).toEqual({ key: K.types, expected: 262, actual: 263 });
    for (const bad of [NaN, Infinity]) {
      const m = spmMetadata();
      const s = Array.from((m.get(K.scores)!.value as unknown as { items: Float32Array }).items);
      s[7] = bad;
      m.set(K.scores, f32s(s));
      expect(refused(m, 'EINVAL', 'non-finite')).toEqual({ key: K.scores, token: 7 });
    }
    for (const bad of [7, -1]) {
      const m = spmMetadata();
      const t = Array.from((m.get(K.types)!.value as unknown as { items: Int32Array }).items);
      t[260] = bad;
      m.set(K.types, i32s(t));
      expect(refused(m, 'EINVAL', 'bad-token-type')).toEqual({ token: 260, value: String(bad) });
    }
    const byte = spmMetadata();
    const t = Array.from((byte.get(K.types)!.value as unknown as { items: Int32Array }).items);
    t[260] = TokenType.Byte;
    byte.set(K.types, i32s(t));
    expect(refused(byte, 'EINVAL', 'bad-byte-token')).toEqual({ token: 260 });
  });

  it('[MD-tok-gguf-validate] special ids must be in range (u32 -1 means none); add_bos_token needs a BOS token', () => {
    const far = spmMetadata();
    far.set(K.eos, u32(262));
    expect(refused(far, 'EINVAL', 'bad-token-id')).toEqual({ key: K.eos, value: '262', vocabSize: 262 });
    const none = spmMetadata();
    none.set(K.eos, u32(0xffffffff));
    expect(tokenizerFromGguf(none).special.eos).toBeUndefined();
    const noBos = spmMetadata();
    noBos.set(K.bos, u32(0xffffffff));
    refused(noBos, 'EINVAL', 'no-bos-token');
    noBos.set(K.addBos, bool(false));
    expect(tokenizerFromGguf(noBos).encode('a')).toEqual([261]);
  });

  it('[MD-tok-gguf-validate] merges: "left right" over tokens whose concatenation is a token', () => {
    // No separator; a separator only before the first character; a part that is no token.
    for (const merge of ['ab', ' ab', 'a zz']) {
      const m = bpeMetadata({ words: ['ab'], merges: [['a', 'b']] });
      m.set(K.merges, strings(['a b', merge]));
      expect(refused(m, 'EINVAL', 'bad-merge')).toEqual({ merge: 1 });
    }
    // Both parts are tokens but their concatenation is not.
    const m = bpeMetadata({ words: ['ab'], merges: [] });
    m.set(K.merges, strings([`${BYTE_CHARS[0x62]} ${BYTE_CHARS[0x61]}`]));
    expect(refused(m, 'EINVAL', 'bad-merge')).toEqual({ merge: 0 });
    const missing = bpeMetadata({});
    missing.delete(K.merges);
    expect(refused(missing, 'EINVAL', 'bad-metadata')?.['key']).toBe(K.merges);
  });
});

describe('the real vocabularies', () => {
  it.skipIf(qwen === undefined)('[MD-tok-special] Qwen2: no BOS added, control tokens only with parseSpecial, user-defined tokens always', () => {
    const t = qwen!;
    expect(t.vocabSize).toBe(151_936);
    expect(t.addBos).toBe(false);
    expect(t.special.bos).toBe(151_643);
    expect(t.special.eos).toBe(151_645);
    expect(t.tokenText(151_644)).toBe('<|im_start|>');
    expect(t.tokenType(151_644)).toBe(TokenType.Control);
    expect(t.encode('<|im_start|>user', { parseSpecial: true })).toEqual([151_644, 872]);
    const literal = t.encode('<|im_start|>user');
    expect(literal).not.toContain(151_644);
    expect(t.decodeAll(literal)).toBe('<|im_start|>user');
    // <think> is user-defined: a token with or without parseSpecial, and its text when decoded.
    expect(t.tokenType(151_667)).toBe(TokenType.UserDefined);
    expect(t.encode('a<think>b')).toEqual([...t.encode('a'), 151_667, ...t.encode('b')]);
    expect(t.decodeAll([151_644, 872, 151_667])).toBe('user<think>');
    expect(t.decodeAll([151_644, 872], { special: true })).toBe('<|im_start|>user');
  });

  it.skipIf(qwen === undefined || llama3 === undefined || stories === undefined)('[MD-tok-eog] end-of-generation sets: Qwen <|endoftext|> and <|im_end|>, Llama 3 <|end_of_text|> and <|eot_id|>, tok512 </s>', () => {
    expect(qwen!.endOfGeneration).toEqual([151_643, 151_645]);
    expect(qwen!.special.eot).toBe(151_645);
    expect(llama3!.endOfGeneration).toEqual([128_001, 128_009]);
    expect(llama3!.tokenText(128_009)).toBe('<|eot_id|>');
    expect(llama3!.special.eot).toBe(128_009);
    expect(stories!.endOfGeneration).toEqual([2]);
    expect(llama3!.isEndOfGeneration(128_006)).toBe(false);
  });

  it.skipIf(llama3 === undefined)('[MD-tok-special] Llama 3 adds BOS by default (llama-bpe) and parses its header tokens when asked', () => {
    const t = llama3!;
    expect(t.addBos).toBe(true);
    expect(t.encode('Hello world')).toEqual([128_000, 9906, 1917]);
    expect(t.encode('<|start_header_id|>user<|end_header_id|>', { bos: false, parseSpecial: true })).toEqual([128_006, 882, 128_007]);
  });

  it.skipIf(qwen === undefined || llama3 === undefined)('[MD-tok-stream] emoji split across byte-level tokens stream out whole', () => {
    for (const t of [qwen!, llama3!]) {
      const text = 'Emoji: 🙂🚀👍🏽 and a family 👨‍👩‍👧 — ok';
      const ids = t.encode(text, { bos: false });
      const stream = t.textStream();
      const parts = ids.map((id) => stream.push(id));
      for (const p of parts) expect(p).not.toContain('\ufffd');
      expect(parts.join('') + stream.flush()).toBe(text);
      // Some token ended inside a character (the stream held it back): more tokens than whole-text parts.
      expect(parts.filter((p) => p === '').length).toBeGreaterThan(0);
    }
  });

  it.skipIf(stories === undefined || tok512Bin === undefined)('[MD-tok-stream] <0xXX> byte fallback tokens of tok512 stream a character once it is complete', () => {
    for (const t of [stories!, parseTokenizer(tok512Bin!, 512)]) {
      const ids = t.encode('hi 😊!');
      const stream = t.textStream();
      const parts = ids.map((id) => stream.push(id));
      const first = ids.indexOf(3 + 0xf0);
      expect(first).toBeGreaterThan(0);
      expect(parts.slice(first, first + 4)).toEqual(['', '', '', '😊']);
      expect(parts.join('') + stream.flush()).toBe('hi 😊!');
    }
  });
});

describe('lossless round trips on the real vocabularies', () => {
  it.skipIf(qwen === undefined || llama3 === undefined)('[MD-tok-bpe] byte-level vocabularies give any text back: decodeAll(encode(s)) = s, and encoding again (from the cache) gives the same ids', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 48 }), fc.constantFrom(qwen!, llama3!), (text, t) => {
        const ids = t.encode(text, { bos: false });
        expect(t.decodeAll(ids)).toBe(text);
        expect(t.encode(text, { bos: false })).toEqual(ids);
      }),
      fcParams(300),
    );
  });

  it.skipIf(stories === undefined)('[MD-tok-spm] byte fallback makes tok512 lossless too: after BOS, decodeAll(encode(s)) = s', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 48 }), (text) => {
        const ids = stories!.encode(text);
        expect(stories!.decodeAll(ids)).toBe(text);
      }),
      fcParams(300),
    );
  });
});

describe('encoding work is linear in the text', () => {
  /** About 10,000 tokens of varied text: prose, code, numbers, CJK and emoji, some of it repeated. */
  function longText(): string {
    const parts: string[] = [];
    for (let i = 0; parts.join('').length < 42_000; i++) {
      parts.push(`Paragraph ${i}: Once upon a time, there were ${i * 7919} GPUs named café-${i % 13}.\n`);
      parts.push(`def f${i}(x):\n    return x * ${i} + ${(i * 31) % 97}  # 你好 ${i % 5} 🙂\n\n`);
    }
    return parts.join('');
  }

  for (const [name, tokenizer] of [
    ['tiny-qwen2-Q4_K_M.gguf', qwen],
    ['llama3-vocab.gguf', llama3],
    ['stories260K-f32.gguf', stories],
  ] as const) {
    it.skipIf(tokenizer === undefined)(`[MD-tok-fast] ${name}: a 10,000-token text costs at most 3 pair lookups per byte-or-character and fewer merges than symbols`, () => {
      const t = tokenizer!;
      const text = longText();
      const before = t.counters;
      const ids = t.encode(text, { bos: false });
      const after = t.counters;
      const symbols = after.symbols - before.symbols;
      const lookups = after.pairLookups - before.pairLookups;
      const merges = after.merges - before.merges;
      expect(ids.length).toBeGreaterThan(9_000);
      expect(t.decodeAll(ids, { prev: t.special.bos })).toBe(text);
      expect(symbols).toBeGreaterThan(0);
      // Each merge looks up at most two new pairs, after one initial lookup per adjacent pair.
      expect(lookups).toBeLessThanOrEqual(3 * symbols);
      expect(merges).toBeLessThan(symbols);
      if (t.model === 'gpt2') {
        // Repeated pre-tokens ("Paragraph", " GPUs", ...) are merged once, then served from the cache.
        expect(after.cacheHits - before.cacheHits).toBeGreaterThan((after.pieces - before.pieces) / 2);
        expect(symbols).toBeLessThan(new TextEncoder().encode(text).length / 2);
      }
    });
  }
});
