// Tokenizer suite (llama2.c tokenizer format and run.c's encode/decode semantics).
// Plan: tok512.bin loads with the model's vocabulary size and encodes the documented prompt (control);
// synthetic tokenizers built in the test cover what tok512 cannot: a 32,000-token vocabulary, merge
// order by score (not position, not lowest score), leftmost choice on ties, code points present in the
// vocabulary, byte fallback for absent ones, and a vocabulary without byte tokens. Decoding drops the
// space after BOS, maps <0xXX> tokens to raw bytes, and rejoins characters split over tokens. Corrupt
// files (short header, record lengths past the end, negative or too-long lengths, NaN scores, a record
// count other than the model's vocabulary, trailing bytes) each give EINVAL with a stable reason and
// produce nothing; seeded properties truncate and flip bytes at random.
import { describe, expect, it } from 'vitest';
import { BOS_ID, BYTE_FALLBACK_BASE, EOS_ID, TenonError, parseTokenizer } from '../../src/index.js';
import type { Tokenizer } from '../../src/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { readModelFixture } from '../support/models.js';
import { buildTokenizer, specialAndByteTokens } from '../session/llama-files.js';
import type { TokenRecord } from '../session/llama-files.js';

const tok512 = await readModelFixture('tok512.bin');
const noTokenizer = tok512 === undefined;

const enc = new TextEncoder();
const bytesOf = (s: string): number[] => [...enc.encode(s)];
const byteIds = (s: string): number[] => bytesOf(s).map((b) => BYTE_FALLBACK_BASE + b);

function expectRejected(bytes: Uint8Array, vocabSize: number, reason: string): TenonError {
  const before = bytes.slice();
  let produced: Tokenizer | undefined;
  const err = expectCode(() => {
    produced = parseTokenizer(bytes, vocabSize);
  }, 'EINVAL', reason);
  expect(produced).toBeUndefined();
  expect([...bytes]).toEqual([...before]);
  return err;
}

/**
 * A 32,000-token vocabulary shaped like Llama 2's: unk, BOS, EOS, 256 byte tokens, then pieces with
 * decreasing scores (merges first), single characters, and filler up to 32,000.
 */
const MERGES: TokenRecord[] = [
  { score: -1, piece: ' t' },
  { score: -2, piece: 'he' },
  { score: -3, piece: ' the' },
  { score: -4, piece: 'bc' },
  { score: -5, piece: ' the cat' },
  { score: -6, piece: 'ab' },
  { score: -7, piece: ' c' },
  { score: -8, piece: 'at' },
  { score: -9, piece: ' cat' },
  { score: -10, piece: 'xy' },
  { score: -10, piece: 'yx' },
  { score: -11, piece: ' é' },
];
const CHARS = [' ', 't', 'h', 'e', 'c', 'a', 'b', 'x', 'y', 'é', '中'];
function llamaLikeRecords(size: number): TokenRecord[] {
  const records = [...specialAndByteTokens(), ...MERGES, ...CHARS.map((c, i) => ({ score: -1000 - i, piece: c }))];
  for (let i = records.length; i < size; i++) records.push({ score: -100_000 - i, piece: `▁filler${i}` });
  return records;
}
const LLAMA_SIZE = 32_000;
const llamaLike = buildTokenizer(llamaLikeRecords(LLAMA_SIZE));

describe('loading: tok512 and a 32,000-token tokenizer', () => {
  it.skipIf(noTokenizer)('[TS-tokenizer-load] tok512.bin loads with the model vocabulary size and keeps the caller bytes unchanged', () => {
    const before = tok512!.slice();
    const t = parseTokenizer(tok512!, 512);
    expect(t.vocabSize).toBe(512);
    expect(t.maxTokenLength).toBe(7);
    expect(t.byteFallback).toBe(true);
    expect(t.piece(BOS_ID)).toEqual(enc.encode('\n<s>\n'));
    expect(t.piece(BYTE_FALLBACK_BASE + 0x41)).toEqual(enc.encode('<0x41>'));
    expect(t.lookup(' Once')).toBe(403);
    expect(t.score(403)).toBe(-144);
    expect(t.lookup('no such token')).toBeUndefined();
    expect([...tok512!]).toEqual([...before]);
  });

  it('[TS-tokenizer-load] a 32,000-token tokenizer with byte fallback loads', () => {
    const t = parseTokenizer(llamaLike, LLAMA_SIZE);
    expect(t.vocabSize).toBe(LLAMA_SIZE);
    expect(t.byteFallback).toBe(true);
    expect(t.lookup(' the cat')).toBe(259 + 4);
    expect(t.lookup('▁filler31999')).toBe(31_999);
  });

  it('[TS-tokenizer-load] piece, score and decode reject ids outside the vocabulary with EINVAL bad-token', () => {
    const t = parseTokenizer(llamaLike, LLAMA_SIZE);
    for (const id of [-1, LLAMA_SIZE, 1.5, NaN]) {
      expectCode(() => t.piece(id), 'EINVAL', 'bad-token');
      expectCode(() => t.score(id), 'EINVAL', 'bad-token');
      expectCode(() => t.decode(BOS_ID, id), 'EINVAL', 'bad-token');
      expectCode(() => t.decodeAll([5, id]), 'EINVAL', 'bad-token');
      expectCode(() => t.textStream().push(id), 'EINVAL', 'bad-token');
    }
  });
});

describe('encode: llama2.c semantics', () => {
  it.skipIf(noTokenizer)('[TS-tokenizer-encode] "Once upon a time" encodes to [1, 403, 407, 261, 378] with tok512.bin', () => {
    const t = parseTokenizer(tok512!, 512);
    expect(t.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
    expect(t.encode('Once upon a time', { bos: true, eos: false })).toEqual([1, 403, 407, 261, 378]);
    expect(t.encode('Once upon a time', { bos: false, eos: true })).toEqual([403, 407, 261, 378, 2]);
    expect(t.encode('')).toEqual([BOS_ID]);
    expect(t.encode('', { bos: false })).toEqual([]);
    expect(t.encode('', { eos: true })).toEqual([BOS_ID, EOS_ID]);
  });

  it.skipIf(noTokenizer)('[TS-tokenizer-encode] characters missing from tok512 fall back to one byte token per UTF-8 byte', () => {
    const t = parseTokenizer(tok512!, 512);
    const ids = t.encode('Once upon a time 😊');
    expect(ids.slice(0, 5)).toEqual([1, 403, 407, 261, 378]);
    // " " then the four bytes of U+1F60A (no pair of byte-token texts is itself a token).
    expect(ids.slice(5)).toEqual([t.lookup(' ')!, ...byteIds('😊')]);
    expect(t.decodeAll(ids)).toBe('Once upon a time 😊');
  });

  it('[TS-tokenizer-encode] merges take the best-scoring pair first, not the leftmost or the lowest-scoring one', () => {
    const t = parseTokenizer(llamaLike, LLAMA_SIZE);
    // " abc": pairs "ab" (-6) and "bc" (-4): bc merges first; "abc" is not a token, so a + bc stays.
    expect(t.encode('abc', { bos: false })).toEqual([t.lookup(' ')!, t.lookup('a')!, t.lookup('bc')!]);
    // " the cat": ' t'(-1), 'he'(-2), ' the'(-3), then ' c'(-7), 'at'(-8), ' cat'(-9)? no: ' the cat'(-5)
    // needs ' the' + ' cat', which exists only after ' cat' forms; the final merge joins them.
    expect(t.encode('the cat', { bos: false })).toEqual([t.lookup(' the cat')!]);
    // BOS takes part in the pair scan like in run.c, but "\n<s>\n " is not a token.
    expect(t.encode('the cat')).toEqual([BOS_ID, t.lookup(' the cat')!]);
  });

  it('[TS-tokenizer-encode] on equal scores the leftmost pair merges first', () => {
    const t = parseTokenizer(llamaLike, LLAMA_SIZE);
    // " xyx": "xy" and "yx" both score -10; "xy" is leftmost.
    expect(t.encode('xyx', { bos: false })).toEqual([t.lookup(' ')!, t.lookup('xy')!, t.lookup('x')!]);
    expect(t.encode('yxy', { bos: false })).toEqual([t.lookup(' ')!, t.lookup('yx')!, t.lookup('y')!]);
  });

  it('[TS-tokenizer-encode] a code point in the vocabulary is one token; others become byte tokens (32k-style fallback)', () => {
    const t = parseTokenizer(llamaLike, LLAMA_SIZE);
    expect(t.encode('中', { bos: false })).toEqual([t.lookup(' ')!, t.lookup('中')!]);
    expect(t.encode('é', { bos: false })).toEqual([t.lookup(' é')!]);
    // "€" (E2 82 AC) and "𝄞" (4 bytes) are not tokens.
    expect(t.encode('a€𝄞', { bos: false })).toEqual([t.lookup(' ')!, t.lookup('a')!, ...byteIds('€'), ...byteIds('𝄞')]);
    // A lone surrogate is encoded as U+FFFD first (TextEncoder), then falls back to bytes.
    expect(t.encode('\ud800', { bos: false })).toEqual([t.lookup(' ')!, ...byteIds('\ufffd')]);
    expect(t.decodeAll(t.encode('a€𝄞 the cat'))).toBe('a€𝄞 the cat');
  });

  it('[TS-tokenizer-encode] without byte tokens an unknown character is EINVAL unencodable', () => {
    const records: TokenRecord[] = [{ score: 0, piece: '<unk>' }, { score: 0, piece: '\n<s>\n' }, { score: 0, piece: '\n</s>\n' }, { score: -1, piece: ' ' }, { score: -2, piece: 'a' }];
    const t = parseTokenizer(buildTokenizer(records), records.length);
    expect(t.byteFallback).toBe(false);
    expect(t.encode('a a')).toEqual([1, 3, 4, 3, 4]);
    expectCode(() => t.encode('ab'), 'EINVAL', 'unencodable');
    expectCode(() => t.encode(42 as unknown as string), 'EINVAL', 'bad-argument');
  });

  it('[TS-tokenizer-encode] a 2,000-character prompt encodes with work linear in its characters and decodes back', () => {
    const t = parseTokenizer(llamaLike, LLAMA_SIZE);
    const text = 'the cat abc xyx é 中 '.repeat(100);
    const ids = t.encode(text);
    expect(t.decodeAll(ids)).toBe(text);
    // One symbol per character plus the leading space; each merge looks up at most two new pairs
    // (a rescan of every pair after each merge would look up thousands of times more).
    const work = t.counters;
    expect(work.symbols).toBe([...text].length + 1);
    expect(work.merges).toBeLessThan(work.symbols);
    expect(work.pairLookups).toBeLessThanOrEqual(work.symbols - 1 + 2 * work.merges);
  });
});

describe('decode: llama2.c semantics, streaming-safe text', () => {
  it.skipIf(noTokenizer)('[TS-tokenizer-decode] the prompt and the known continuation decode to the documented text', () => {
    const t = parseTokenizer(tok512!, 512);
    expect(t.decodeAll([1, 403, 407, 261, 378])).toBe('Once upon a time');
    expect(t.decodeAll([1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317])).toMatch(/^Once upon a time, there was a little girl named Lily/);
    expect(t.decodeAll([403, 407])).toBe(' Once upon');
    expect(t.decodeAll([407], { prev: BOS_ID })).toBe('upon');
  });

  it('[TS-tokenizer-decode] decode drops the leading space only after BOS, maps <0xXX> to its byte and gives nothing for BOS/EOS', () => {
    const t = parseTokenizer(llamaLike, LLAMA_SIZE);
    const cat = t.lookup(' cat')!;
    expect([...t.decode(BOS_ID, cat)]).toEqual(bytesOf('cat'));
    expect([...t.decode(cat, cat)]).toEqual(bytesOf(' cat'));
    expect([...t.decode(BOS_ID, BYTE_FALLBACK_BASE + 0x20)]).toEqual([0x20]);
    expect([...t.decode(7, BYTE_FALLBACK_BASE + 0xe2)]).toEqual([0xe2]);
    expect([...t.decode(7, BOS_ID)]).toEqual([]);
    expect([...t.decode(7, EOS_ID)]).toEqual([]);
    // The result is a copy: writing it changes nothing inside the tokenizer.
    t.decode(cat, cat).fill(0);
    expect([...t.decode(cat, cat)]).toEqual(bytesOf(' cat'));
    t.piece(cat).fill(0);
    expect([...t.piece(cat)]).toEqual(bytesOf(' cat'));
  });

  it('[TS-tokenizer-decode] characters split over byte tokens come out whole from decodeAll and from a text stream', () => {
    const t = parseTokenizer(llamaLike, LLAMA_SIZE);
    const ids = [BOS_ID, t.lookup(' cat')!, ...byteIds(' €'), ...byteIds('𝄞'), t.lookup('at')!, EOS_ID];
    expect(t.decodeAll(ids)).toBe('cat €𝄞at');
    const stream = t.textStream();
    const parts = ids.map((id) => stream.push(id));
    expect(parts.join('') + stream.flush()).toBe('cat €𝄞at');
    // No part holds half a character: the three bytes of € give '', '', '€'.
    const euroAt = ids.indexOf(BYTE_FALLBACK_BASE + 0xe2);
    expect(parts.slice(euroAt, euroAt + 3)).toEqual(['', '', '€']);
    // A stream cut inside a character flushes a replacement character, never throws.
    const cut = t.textStream({ prev: BOS_ID });
    cut.push(BYTE_FALLBACK_BASE + 0xe2);
    expect(cut.flush()).toBe('\ufffd');
  });
});

describe('corrupt tokenizer files: EINVAL with a stable reason, nothing produced', () => {
  const small = (): Uint8Array => buildTokenizer(llamaLikeRecords(300));

  it('[TS-tokenizer-load] a short header, a zero max_token_length or a bad vocabSize argument are rejected', () => {
    expectRejected(new Uint8Array(0), 300, 'truncated');
    expectRejected(new Uint8Array(3), 300, 'truncated');
    const file = small();
    const zeroMax = file.slice();
    new DataView(zeroMax.buffer).setInt32(0, 0, true);
    expectRejected(zeroMax, 300, 'bad-field');
    for (const bad of [0, 2, -5, 2.5, NaN, 2 ** 60]) expectRejected(file, bad, 'bad-vocab-size');
    // Control.
    expect(parseTokenizer(file, 300).vocabSize).toBe(300);
  });

  it('[TS-tokenizer-load] record lengths that run past the end, are negative or exceed max_token_length are rejected', () => {
    const file = small();
    const lastLength = file.byteLength - enc.encode('▁filler299').length - 4;
    const past = file.slice();
    new DataView(past.buffer).setInt32(0, 100, true); // room for a long token
    new DataView(past.buffer).setInt32(lastLength, 50, true); // but the file ends sooner
    const err = expectRejected(past, 300, 'truncated');
    expect(err.ids?.['token']).toBe(299);
    const negative = file.slice();
    new DataView(negative.buffer).setInt32(4 + 4, -1, true); // token 0's length
    expect(expectRejected(negative, 300, 'bad-length').ids).toEqual({ token: 0, length: -1 });
    const tooLong = file.slice();
    new DataView(tooLong.buffer).setInt32(0, 5, true); // EOS "\n</s>\n" is 6 bytes
    expect(expectRejected(tooLong, 300, 'token-too-long').ids).toEqual({ token: 2, length: 6, maxTokenLength: 5 });
  });

  it.skipIf(noTokenizer)('[TS-tokenizer-load] tok512 with another vocabulary size is vocab-mismatch; extra or missing bytes are trailing-bytes / truncated', () => {
    expect(expectRejected(tok512!, 511, 'vocab-mismatch').ids).toEqual({ expected: 511, actual: 512 });
    expect(expectRejected(tok512!, 513, 'vocab-mismatch').ids).toEqual({ expected: 513, actual: 512 });
    expect(expectRejected(tok512!, 32_000, 'vocab-mismatch').ids).toEqual({ expected: 32_000, actual: 512 });
    const longer = new Uint8Array(tok512!.byteLength + 3);
    longer.set(tok512!);
    expectRejected(longer, 512, 'trailing-bytes');
    expectRejected(tok512!.subarray(0, tok512!.byteLength - 1), 512, 'truncated');
  });

  it('[TS-tokenizer-load] a NaN or infinite score is EINVAL non-finite naming the token', () => {
    for (const score of [NaN, Infinity, -Infinity]) {
      const records = llamaLikeRecords(300);
      records[260] = { score, piece: 'he' };
      expect(expectRejected(buildTokenizer(records), 300, 'non-finite').ids).toEqual({ token: 260 });
    }
  });

  it.skipIf(noTokenizer)('[TS-load-no-partial] every strict prefix of tok512.bin is a coded error (truncated or vocab-mismatch)', () => {
    fc.assert(
      fc.property(fc.nat(tok512!.byteLength - 1), (cut) => {
        const err = expectCode(() => parseTokenizer(tok512!.subarray(0, cut), 512), 'EINVAL');
        expect(['truncated', 'vocab-mismatch']).toContain(err.reason);
      }),
      fcParams(300),
    );
  });

  it('[TS-load-no-partial] random byte flips in a tokenizer give a working tokenizer or a coded EINVAL, never another exception', () => {
    const file = small();
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(file.byteLength - 1), fc.nat(255)), { minLength: 1, maxLength: 4 }), (flips) => {
        const bytes = file.slice();
        for (const [at, value] of flips) bytes[at] = value;
        let t: Tokenizer | undefined;
        try {
          t = parseTokenizer(bytes, 300);
        } catch (err) {
          expect(err).toBeInstanceOf(TenonError);
          expect((err as TenonError).code).toBe('EINVAL');
          return;
        }
        // A tokenizer that loads works: encode/decode of plain text never throws anything but a TenonError.
        try {
          t.decodeAll(t.encode('the cat'));
        } catch (err) {
          expect(err).toBeInstanceOf(TenonError);
        }
      }),
      fcParams(300),
    );
  });
});
