// llama2.c tokenizer files (`tokenizer.bin`, e.g. tok512.bin): parser. Encoding and decoding are the
// SentencePiece-style implementation GGUF `llama` vocabularies use too (spm.ts, vocab.ts), so
// stories260K-f32.gguf and tok512.bin give the same ids.
//
// Contract: `parseTokenizer(bytes, vocabSize)` checks the whole file before it builds anything: a
// positive max_token_length, then exactly `vocabSize` records of (float32 score, int32 length, bytes),
// each length within [0, max_token_length] and inside the file, each score finite, and nothing after the
// last record. The vocabulary size comes from the model, never from the file. A bad file throws a
// TenonError (EINVAL with a stable reason) and produces nothing. The tokenizer keeps its own copy of the
// file (its identity) and never writes the caller's bytes.
//
// What the file does not say, llama2.c's run.c fixes: unknown is id 0, BOS id 1 and EOS id 2 (control
// tokens: no text when decoded); byte fallback tokens `<0x00>`..`<0xFF>` sit at ids 3..258 when the file
// has them; pieces spell spaces as spaces; `encode` puts BOS first by default and a space before
// non-empty text; a character without a token becomes one byte token per UTF-8 byte, and without byte
// tokens it is EINVAL 'unencodable'. Pieces matching `<0xXX>` decode to their byte.
import { TenonError } from '../../errors.js';
import { binaryString } from './byte-level.js';
import { SentencePieceEngine } from './spm.js';
import { TokenType } from './types.js';
import type { Tokenizer } from './types.js';
import { VocabTokenizer, byteTokenValue } from './vocab.js';

const OP_PARSE = 'session.parseTokenizer';

/** llama2.c's fixed special ids (sentencepiece defaults): unknown, begin and end of sequence. */
export const UNK_ID = 0;
export const BOS_ID = 1;
export const EOS_ID = 2;
/** Byte fallback tokens `<0x00>`..`<0xFF>` sit at ids 3..258 (run.c: `(unsigned char)byte + 3`). */
export const BYTE_FALLBACK_BASE = 3;
/** Smallest vocabulary that holds unk, BOS and EOS. */
const MIN_VOCAB = 3;
const BYTE_VALUES = 256;
/** Header int32 plus each record's float32 score and int32 length. */
const HEADER_BYTES = 4;
const RECORD_HEAD_BYTES = 8;

function invalid(op: string, reason: string, message: string, ids?: Record<string, string | number>): never {
  throw new TenonError('EINVAL', message, ids === undefined ? { op, reason } : { op, reason, ids });
}

function asBytes(source: ArrayBufferLike | ArrayBufferView): Uint8Array {
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  if (source instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && source instanceof SharedArrayBuffer)) return new Uint8Array(source);
  return invalid(OP_PARSE, 'bad-argument', 'expected an ArrayBuffer, SharedArrayBuffer or ArrayBufferView');
}

function byteTokenText(byte: number): string {
  return `<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`;
}

/**
 * Parses a llama2.c tokenizer file for a model with `vocabSize` tokens. Throws TenonError EINVAL:
 * 'bad-argument' | 'bad-vocab-size' | 'truncated' | 'vocab-mismatch' | 'trailing-bytes' | 'bad-field' |
 * 'bad-length' | 'token-too-long' | 'non-finite'.
 */
export function parseTokenizer(source: ArrayBufferLike | ArrayBufferView, vocabSize: number): Tokenizer {
  const bytes = asBytes(source);
  if (!Number.isSafeInteger(vocabSize) || vocabSize < MIN_VOCAB) {
    invalid(OP_PARSE, 'bad-vocab-size', `vocabSize must be an integer of at least ${MIN_VOCAB}`, { vocabSize: String(vocabSize) });
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < HEADER_BYTES) invalid(OP_PARSE, 'truncated', 'the file ends inside the header', { expected: HEADER_BYTES, actual: bytes.byteLength });
  const maxTokenLength = view.getInt32(0, true);
  if (maxTokenLength <= 0) invalid(OP_PARSE, 'bad-field', 'max_token_length must be positive', { field: 'maxTokenLength', value: maxTokenLength });

  // Pass 1: walk the records with reads only.
  let at = HEADER_BYTES;
  for (let id = 0; id < vocabSize; id++) {
    if (at === bytes.byteLength) invalid(OP_PARSE, 'vocab-mismatch', `the file holds ${id} tokens, the model ${vocabSize}`, { expected: vocabSize, actual: id });
    if (at + RECORD_HEAD_BYTES > bytes.byteLength) invalid(OP_PARSE, 'truncated', `the file ends inside token ${id}`, { token: id, offset: at });
    const score = view.getFloat32(at, true);
    const length = view.getInt32(at + 4, true);
    if (!Number.isFinite(score)) invalid(OP_PARSE, 'non-finite', `token ${id} has a non-finite score`, { token: id });
    if (length < 0) invalid(OP_PARSE, 'bad-length', `token ${id} has a negative length`, { token: id, length });
    if (length > maxTokenLength) invalid(OP_PARSE, 'token-too-long', `token ${id} is longer than max_token_length`, { token: id, length, maxTokenLength });
    at += RECORD_HEAD_BYTES;
    if (at + length > bytes.byteLength) invalid(OP_PARSE, 'truncated', `the file ends inside token ${id}`, { token: id, offset: at, length });
    at += length;
  }
  if (at !== bytes.byteLength) {
    const extra = countWholeRecords(view, at, maxTokenLength);
    if (extra !== undefined) invalid(OP_PARSE, 'vocab-mismatch', `the file holds ${vocabSize + extra} tokens, the model ${vocabSize}`, { expected: vocabSize, actual: vocabSize + extra });
    invalid(OP_PARSE, 'trailing-bytes', 'bytes follow the last token', { expected: at, actual: bytes.byteLength });
  }

  // Pass 2: build. The file is copied once (it is small) so the tokenizer owns what it was made from.
  return buildTokenizer(bytes.slice(), vocabSize, maxTokenLength);
}

function buildTokenizer(file: Uint8Array, vocabSize: number, maxTokenLength: number): Tokenizer {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const pieces = new Array<Uint8Array>(vocabSize);
  const keys = new Array<string>(vocabSize);
  const texts = new Array<string>(vocabSize);
  const scores = new Float32Array(vocabSize);
  const types = new Uint8Array(vocabSize);
  const decoder = new TextDecoder();
  let at = HEADER_BYTES;
  for (let id = 0; id < vocabSize; id++) {
    scores[id] = view.getFloat32(at, true);
    const length = view.getInt32(at + 4, true);
    at += RECORD_HEAD_BYTES;
    pieces[id] = file.subarray(at, at + length);
    at += length;
    keys[id] = binaryString(pieces[id]!);
    texts[id] = decoder.decode(pieces[id]!);
    types[id] = id === UNK_ID ? TokenType.Unknown : id === BOS_ID || id === EOS_ID ? TokenType.Control : byteTokenValue(texts[id]!) !== undefined ? TokenType.Byte : TokenType.Normal;
  }
  let byteFallback = vocabSize >= BYTE_FALLBACK_BASE + BYTE_VALUES;
  for (let b = 0; byteFallback && b < BYTE_VALUES; b++) byteFallback = texts[BYTE_FALLBACK_BASE + b] === byteTokenText(b);
  const byteIds = new Int32Array(BYTE_VALUES).fill(-1);
  if (byteFallback) for (let b = 0; b < BYTE_VALUES; b++) byteIds[b] = BYTE_FALLBACK_BASE + b;
  const engine = new SentencePieceEngine({ keys, scores, byteIds, unknownId: undefined, escapeSpaces: false });
  const utf8 = new TextEncoder();
  return new VocabTokenizer({
    model: 'llama',
    pre: undefined,
    texts,
    pieces,
    scores,
    types,
    special: { bos: BOS_ID, eos: EOS_ID, eot: undefined, eom: undefined, unk: UNK_ID, pad: undefined },
    addBos: true,
    addEos: false,
    addSpacePrefix: true,
    escapedSpaces: false,
    maxTokenLength,
    byteFallback,
    chatTemplate: undefined,
    endOfGeneration: [EOS_ID],
    engine,
    lookup: (text) => engine.lookupKey(binaryString(utf8.encode(text))),
    identity: () => file,
  });
}

/** Number of complete, plausible records from `at` to the end, or undefined when they do not tile it. */
function countWholeRecords(view: DataView, at: number, maxTokenLength: number): number | undefined {
  let count = 0;
  while (at < view.byteLength) {
    if (at + RECORD_HEAD_BYTES > view.byteLength) return undefined;
    const length = view.getInt32(at + 4, true);
    if (length < 0 || length > maxTokenLength || at + RECORD_HEAD_BYTES + length > view.byteLength) return undefined;
    at += RECORD_HEAD_BYTES + length;
    count++;
  }
  return count;
}

