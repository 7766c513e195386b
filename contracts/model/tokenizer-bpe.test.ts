// Tokenizer rules on synthetic vocabularies (both lanes; no fixtures needed).
// Plan: small GGUF vocabularies built in the test isolate one rule each, where the real vocabularies
// cannot show which rule produced an id. Byte-level BPE: merges by rank, not by position in the text;
// the leftmost pair on equal ranks; stale pairs dropped after a neighbour merges; no merge across a
// pre-token; characters split across bytes; the Llama 3 whole-token rule. Pre-tokenizers: the published
// splits of llama-bpe, qwen2, gpt-2 and smollm on contractions, digits and whitespace runs, and (a
// property) pieces that always concatenate back to the text. SentencePiece GGUF vocabularies: `▁` spaces,
// add_space_prefix, the unknown token without byte tokens, a space after each special token. Special
// tokens: control only with parseSpecial, user-defined always, the longest text first; BOS/EOS defaults
// and errors; decode of each token type. Streams hold partial UTF-8 characters.
import { describe, expect, it } from 'vitest';
import { TokenType, tokenizerFromGguf } from '../../src/model/index.js';
import { preTokenize, preTokenizer } from '../../src/model/tokenizer/pretokenize.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { BYTE_CHARS, bool, bpeMetadata, byteId, f32s, i32s, metadata, str, strings, u32, wordId } from './tokenizer-fixtures.js';
import type { BpeVocab } from './tokenizer-fixtures.js';

const bytesOf = (s: string): number[] => [...new TextEncoder().encode(s)];

describe('byte-level BPE merges', () => {
  it('[MD-tok-bpe] the pair with the lowest merge rank merges first, wherever it is in the piece', () => {
    // "abc": pairs (a,b) and (b,c). Ranked b+c first, the result is a | bc; ranked a+b first, ab | c.
    const bcFirst: BpeVocab = { words: ['ab', 'bc'], merges: [['b', 'c'], ['a', 'b']] };
    const abFirst: BpeVocab = { words: ['ab', 'bc'], merges: [['a', 'b'], ['b', 'c']] };
    expect(tokenizerFromGguf(bpeMetadata(bcFirst)).encode('abc')).toEqual([byteId(0x61), wordId(bcFirst, 'bc')]);
    expect(tokenizerFromGguf(bpeMetadata(abFirst)).encode('abc')).toEqual([wordId(abFirst, 'ab'), byteId(0x63)]);
    // The rank, not the text order: "cab" ranked b+c first still merges a+b (b+c does not occur).
    expect(tokenizerFromGguf(bpeMetadata(bcFirst)).encode('cab')).toEqual([byteId(0x63), wordId(bcFirst, 'ab')]);
  });

  it('[MD-tok-bpe] on equal ranks the leftmost pair merges first', () => {
    const v: BpeVocab = { words: ['aa'], merges: [['a', 'a']] };
    const t = tokenizerFromGguf(bpeMetadata(v));
    expect(t.encode('aaa')).toEqual([wordId(v, 'aa'), byteId(0x61)]);
    expect(t.encode('aaaa')).toEqual([wordId(v, 'aa'), wordId(v, 'aa')]);
  });

  it('[MD-tok-bpe] pairs queued before a neighbour merged are dropped; new neighbours are looked up', () => {
    // "abcd": b+c (rank 0) merges first; the queued a+b and c+d are stale; a+bc (rank 3) then merges.
    const v: BpeVocab = { words: ['bc', 'ab', 'cd', 'abc'], merges: [['b', 'c'], ['a', 'b'], ['c', 'd'], ['a', 'bc']] };
    const t = tokenizerFromGguf(bpeMetadata(v));
    expect(t.encode('abcd')).toEqual([wordId(v, 'abc'), byteId(0x64)]);
    const before = t.counters;
    t.encode('abcd xyz');
    const after = t.counters;
    // "abcd" comes from the cache; " xyz" has 4 bytes and no merges.
    expect(after.cacheHits - before.cacheHits).toBe(1);
    expect(after.merges - before.merges).toBe(0);
    expect(after.symbols - before.symbols).toBe(4);
  });

  it('[MD-tok-bpe] merges never cross a pre-token boundary', () => {
    // "a b" pre-tokenizes to "a" | " b": the rank-0 merge a+" " would cross it.
    const v: BpeVocab = { words: ['a ', ' b'], merges: [['a', ' '], [' ', 'b']] };
    expect(tokenizerFromGguf(bpeMetadata(v)).encode('a b')).toEqual([byteId(0x61), wordId(v, ' b')]);
  });

  it('[MD-tok-bpe] a character is its UTF-8 bytes: merged when the table says so, byte tokens otherwise; decode joins them', () => {
    const e = bytesOf('é');
    const v: BpeVocab = { words: ['é'], extra: {} };
    const meta = bpeMetadata(v);
    meta.set('tokenizer.ggml.merges', strings([`${BYTE_CHARS[e[0]!]} ${BYTE_CHARS[e[1]!]}`]));
    const t = tokenizerFromGguf(meta);
    expect(t.byteFallback).toBe(true);
    expect(t.encode('é')).toEqual([wordId(v, 'é')]);
    expect(t.encode('è€')).toEqual(bytesOf('è€').map(byteId));
    expect(t.decodeAll(t.encode('é è€ 😊'))).toBe('é è€ 😊');
  });

  it('[MD-tok-bpe] llama-bpe emits a pre-token that is itself a token whole; other pre-tokenizers merge', () => {
    // "abc" is a token but no merge chain reaches it.
    const v: BpeVocab = { words: ['ab', 'abc'], merges: [['a', 'b']] };
    expect(tokenizerFromGguf(bpeMetadata({ ...v, pre: 'llama-bpe', extra: { 'tokenizer.ggml.add_bos_token': bool(false) } })).encode('abc')).toEqual([wordId(v, 'abc')]);
    expect(tokenizerFromGguf(bpeMetadata({ ...v, pre: 'qwen2' })).encode('abc')).toEqual([wordId(v, 'ab'), byteId(0x63)]);
    expect(tokenizerFromGguf(bpeMetadata({ ...v, pre: 'gpt-2' })).encode('abc')).toEqual([wordId(v, 'ab'), byteId(0x63)]);
  });
});

describe('pre-tokenizers', () => {
  const split = (name: string, text: string): string[] => {
    const out: string[] = [];
    preTokenize(preTokenizer(name, 'test'), text, out);
    return out;
  };
  const SAMPLE = "I'M here, don't 12345 x";

  it('[MD-tok-pre] llama-bpe: case-insensitive contractions, a leading non-letter joins a word, digits in threes', () => {
    expect(split('llama-bpe', SAMPLE)).toEqual(['I', "'M", ' here', ',', ' don', "'t", ' ', '123', '45', ' x']);
    expect(split('llama3', "WE'LL")).toEqual(['WE', "'LL"]);
    // The contraction is its own pre-token even when letters follow it.
    expect(split('llama-bpe', "'tis we'dn't")).toEqual(["'t", 'is', ' we', "'d", 'n', "'t"]);
    expect(split('qwen2', "'TIS")).toEqual(["'T", 'IS']);
    expect(split('llama-bpe', 'a   b\n\n  c  ')).toEqual(['a', '  ', ' b', '\n\n', ' ', ' c', '  ']);
    expect(split('llama-bpe', '(x)\r\n')).toEqual(['(x', ')\r\n']);
  });

  it('[MD-tok-pre] qwen2: as llama-bpe, one digit per pre-token', () => {
    expect(split('qwen2', SAMPLE)).toEqual(['I', "'M", ' here', ',', ' don', "'t", ' ', '1', '2', '3', '4', '5', ' x']);
  });

  it('[MD-tok-pre] gpt-2: lower-case contractions only, numbers with one leading space, unmatched whitespace kept', () => {
    expect(split('gpt-2', SAMPLE)).toEqual(['I', "'", 'M', ' here', ',', ' don', "'t", ' 12345', ' x']);
    expect(split('gpt2', 'a\tb')).toEqual(['a', '\t', 'b']);
  });

  it('[MD-tok-pre] smollm: every digit apart first, then the gpt-2 rule', () => {
    expect(split('smollm', SAMPLE)).toEqual(['I', "'", 'M', ' here', ',', ' don', "'t", ' ', '1', '2', '3', '4', '5', ' x']);
  });

  it('[MD-tok-pre] Unicode letters, numbers and White_Space classes (not ASCII ones)', () => {
    expect(split('llama-bpe', 'naïve 日本語 ٣٤ x\u00a0y\u3000z')).toEqual(['naïve', ' 日本語', ' ', '٣٤', ' x', '\u00a0y', '\u3000z']);
    // U+0085 is White_Space (JavaScript's \s lacks it); U+FEFF is not (JavaScript's \s has it).
    expect(split('llama-bpe', 'a\u0085\u0085b')).toEqual(['a', '\u0085', '\u0085b']);
    expect(split('llama-bpe', 'a\ufeff!')).toEqual(['a', '\ufeff!']);
    expect(split('llama-bpe', 'x\u0085\ny')).toEqual(['x', '\u0085\n', 'y']);
  });

  it('[MD-tok-pre] every pre-tokenizer keeps every character: the pieces join back to the text', () => {
    const names = ['llama-bpe', 'qwen2', 'gpt-2', 'smollm'];
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), fc.constantFrom(...names), (text, name) => {
        const pieces = split(name, text);
        expect(pieces.join('')).toBe(text);
        for (const p of pieces) expect(p.length).toBeGreaterThan(0);
      }),
      fcParams(300),
    );
  });

  it('[MD-tok-pre] an unknown or missing pre-tokenizer is ENOTSUP naming it', () => {
    const err = expectCode(() => tokenizerFromGguf(bpeMetadata({ pre: 'falcon' })), 'ENOTSUP', 'unsupported-pre-tokenizer');
    expect(err.ids?.['pre']).toBe('falcon');
    const missing = bpeMetadata({});
    missing.delete('tokenizer.ggml.pre');
    expectCode(() => tokenizerFromGguf(missing), 'ENOTSUP', 'unsupported-pre-tokenizer');
  });
});

describe('SentencePiece GGUF vocabularies', () => {
  // unk, BOS, EOS, then pieces with scores; no byte tokens.
  const PIECES = ['▁', 'a', 'b', '▁a', 'ab', '▁ab', '▁b'];
  const SCORES = [-5, -6, -7, -3, -2, -1, -4];
  const spm = (extra: Record<string, ReturnType<typeof bool> | undefined> = {}): ReturnType<typeof metadata> =>
    metadata({
      'tokenizer.ggml.model': str('llama'),
      'tokenizer.ggml.tokens': strings(['<unk>', '<s>', '</s>', ...PIECES]),
      'tokenizer.ggml.scores': f32s([0, 0, 0, ...SCORES]),
      'tokenizer.ggml.token_type': i32s([TokenType.Unknown, TokenType.Control, TokenType.Control, ...PIECES.map(() => TokenType.Normal)]),
      ...extra,
    });
  const id = (piece: string): number => 3 + PIECES.indexOf(piece);

  it('[MD-tok-spm] spaces match `▁` pieces, a space goes before the text, BOS by default; decode reads `▁` as a space', () => {
    const t = tokenizerFromGguf(spm());
    expect(t.model).toBe('llama');
    expect(t.byteFallback).toBe(false);
    expect(t.encode('ab')).toEqual([1, id('▁ab')]);
    expect(t.encode('ab b', { bos: false })).toEqual([id('▁ab'), id('▁b')]);
    expect(t.decodeAll([1, id('▁ab'), id('▁b')])).toBe('ab b');
    expect(t.decodeAll([id('▁ab'), id('▁b')])).toBe(' ab b');
  });

  it('[MD-tok-spm] add_space_prefix false puts no space before the text', () => {
    const t = tokenizerFromGguf(spm({ 'tokenizer.ggml.add_space_prefix': bool(false) }));
    expect(t.addSpacePrefix).toBe(false);
    expect(t.encode('ab', { bos: false })).toEqual([id('ab')]);
    expect(t.decodeAll([1, id('▁ab')])).toBe(' ab');
  });

  it('[MD-tok-spm] a character missing from a vocabulary without byte tokens becomes the unknown token', () => {
    const t = tokenizerFromGguf(spm());
    expect(t.encode('azb', { bos: false })).toEqual([id('▁a'), 0, id('b')]);
    // Without an unknown token it cannot be encoded.
    const noUnk = spm({ 'tokenizer.ggml.unknown_token_id': u32(0xffffffff) });
    expectCode(() => tokenizerFromGguf(noUnk).encode('z'), 'EINVAL', 'unencodable');
  });

  it('[MD-tok-special] with parseSpecial a control text is its token and the text after it gets its own space', () => {
    const t = tokenizerFromGguf(spm());
    expect(t.encode('<s>ab', { bos: false, parseSpecial: true })).toEqual([1, id('▁ab')]);
    expect(t.encode('a</s>b', { bos: false, parseSpecial: true })).toEqual([id('▁a'), 2, id('▁b')]);
    expect(t.encode('<s>', { bos: false }).includes(1)).toBe(false);
  });
});

describe('special tokens', () => {
  const v: BpeVocab = {
    words: ['ab'],
    merges: [['a', 'b']],
    specials: [
      { text: '<|start|>', type: TokenType.Control },
      { text: '<|end|>', type: TokenType.Control },
      { text: '<x>', type: TokenType.UserDefined },
      { text: '<x>y', type: TokenType.UserDefined },
      { text: '[unused]', type: TokenType.Unused },
    ],
  };
  const base = BYTE_CHARS.length + 1;
  const [START, END, X, XY, UNUSED] = [base, base + 1, base + 2, base + 3, base + 4];
  const make = (extra: BpeVocab['extra'] = {}) => tokenizerFromGguf(bpeMetadata({ ...v, extra }));

  it('[MD-tok-special] control texts are tokens only with parseSpecial; user-defined texts always; unused never', () => {
    const t = make();
    const plain = t.encode('<|start|>ab');
    expect(plain).not.toContain(START);
    expect(t.decodeAll(plain)).toBe('<|start|>ab');
    expect(t.encode('<|start|>ab<|end|>', { parseSpecial: true })).toEqual([START, wordId(v, 'ab'), END]);
    expect(t.encode('ab<x>ab')).toEqual([wordId(v, 'ab'), X, wordId(v, 'ab')]);
    expect(t.encode('ab<x>ab', { parseSpecial: true })).toEqual([wordId(v, 'ab'), X, wordId(v, 'ab')]);
    expect(t.encode('[unused]', { parseSpecial: true })).not.toContain(UNUSED);
  });

  it('[MD-tok-special] the longest special text wins where two overlap', () => {
    const t = make();
    expect(t.encode('<x>y<x>')).toEqual([XY, X]);
    expect(t.encode('<x><x>y')).toEqual([X, XY]);
  });

  it('[MD-tok-special] decode: control tokens give nothing unless asked, user-defined tokens their text, unused nothing', () => {
    const t = make();
    expect(t.decodeAll([START, wordId(v, 'ab'), X, END, UNUSED])).toBe('ab<x>');
    expect(t.decodeAll([START, wordId(v, 'ab'), X, END, UNUSED], { special: true })).toBe('<|start|>ab<x><|end|>');
    expect([...t.decode(0, START, { special: true })]).toEqual(bytesOf('<|start|>'));
    expect(t.tokenType(START)).toBe(TokenType.Control);
    expect(t.tokenType(X)).toBe(TokenType.UserDefined);
  });

  it('[MD-tok-special] BOS and EOS follow add_bos_token/add_eos_token and the options; asking for a missing one is EINVAL', () => {
    const t = make({ 'tokenizer.ggml.bos_token_id': u32(START), 'tokenizer.ggml.eos_token_id': u32(END), 'tokenizer.ggml.add_bos_token': bool(true) });
    expect(t.addBos).toBe(true);
    expect(t.addEos).toBe(false);
    expect(t.encode('ab')).toEqual([START, wordId(v, 'ab')]);
    expect(t.encode('ab', { bos: false, eos: true })).toEqual([wordId(v, 'ab'), END]);
    expect(t.encode('')).toEqual([START]);
    const none = make();
    expect(none.special.bos).toBeUndefined();
    expect(none.encode('ab')).toEqual([wordId(v, 'ab')]);
    expectCode(() => none.encode('ab', { bos: true }), 'EINVAL', 'no-bos-token');
    expectCode(() => none.encode('ab', { eos: true }), 'EINVAL', 'no-eos-token');
    expectCode(() => none.encode(7 as unknown as string), 'EINVAL', 'bad-argument');
  });

  it('[MD-tok-eog] end of generation: eos, eot and the well-known end-of-turn tokens', () => {
    const t = make({ 'tokenizer.ggml.eos_token_id': u32(START) });
    // <|end|> is a well-known end-of-turn text; the file's eos is START.
    expect(t.special.eot).toBe(END);
    expect(t.endOfGeneration).toEqual([START, END]);
    expect(t.isEndOfGeneration(END)).toBe(true);
    expect(t.isEndOfGeneration(X)).toBe(false);
    const explicit = make({ 'tokenizer.ggml.eot_token_id': u32(X) });
    expect(explicit.special.eot).toBe(X);
    expect(explicit.endOfGeneration).toEqual([END, X]);
  });
});

describe('streaming decode', () => {
  it('[MD-tok-stream] a character split across byte tokens comes out once, whole, when its last byte arrives', () => {
    const t = tokenizerFromGguf(bpeMetadata({}));
    const text = 'aé€😊b';
    const ids = t.encode(text);
    expect(ids).toEqual(bytesOf(text));
    const stream = t.textStream();
    const parts = ids.map((id) => stream.push(id));
    expect(parts).toEqual(['a', '', 'é', '', '', '€', '', '', '', '😊', 'b']);
    expect(stream.flush()).toBe('');
    // Cut inside a character, flush gives the replacement character, never an exception.
    const cut = t.textStream();
    expect(cut.push(0xf0)).toBe('');
    expect(cut.flush()).toBe('\ufffd');
  });

  it('[MD-tok-stream] streamed text equals decodeAll for every split of a multi-byte text', () => {
    const t = tokenizerFromGguf(bpeMetadata({ words: ['é€'], merges: [] }));
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 24 }), (text) => {
        const ids = t.encode(text);
        const stream = t.textStream();
        const parts = ids.map((id) => stream.push(id));
        // No part ever holds a replacement character for half a character.
        if (!text.includes('\ufffd')) for (const p of parts) expect(p).not.toContain('\ufffd');
        expect(parts.join('') + stream.flush()).toBe(text);
        expect(t.decodeAll(ids)).toBe(text);
      }),
      fcParams(200),
    );
  });
});
