// llama2.c tokenizer: parser, encoder and decoder (DESIGN.md "src/session — Model").
//
// Contract: `parseTokenizer(bytes, vocabSize)` checks the whole file before it builds anything: a
// positive max_token_length, then exactly `vocabSize` records of (float32 score, int32 length, bytes),
// each length within [0, max_token_length] and inside the file, each score finite, and nothing after the
// last record. The vocabulary size comes from the model, never from the file. A bad file throws a
// TenonError (EINVAL with a stable reason) and produces nothing. The tokenizer keeps its own copy of the
// file (for identity) and never writes the caller's bytes.
//
// Semantics follow llama2.c run.c: `encode` prepends BOS (id 1) when asked, a dummy " " token when the
// text is not empty, looks each UTF-8 code point up as a token (falling back to one `<0xXX>` token per
// byte, id 3 + byte), then repeatedly merges the adjacent pair whose concatenation is a token with the
// highest score (first such pair on ties), and appends EOS (id 2) when asked. `decode(prev, token)` gives
// the bytes of one token: the leading space is dropped after BOS and `<0xXX>` gives its raw byte. Bytes of
// one character may arrive in several tokens, so text is produced by `decodeAll` or a `textStream`, which
// join bytes before turning them into text.
import { TenonError } from '../../errors.js';

const OP_PARSE = 'session.parseTokenizer';

/** llama2.c's fixed special ids (sentencepiece defaults): unknown, begin and end of sequence. */
export const UNK_ID = 0;
export const BOS_ID = 1;
export const EOS_ID = 2;
/** Byte fallback tokens `<0x00>`..`<0xFF>` sit at ids 3..258 (run.c: `(unsigned char)byte + 3`). */
export const BYTE_FALLBACK_BASE = 3;
/** Smallest vocabulary that holds unk, BOS and EOS. */
const MIN_VOCAB = 3;
/** run.c starts its best-merge search at this score: pairs scoring at or below it never merge. */
const MERGE_SCORE_FLOOR = -1e10;
/** Header int32 plus each record's float32 score and int32 length. */
const HEADER_BYTES = 4;
const RECORD_HEAD_BYTES = 8;

export interface EncodeOptions {
  /** Prepend BOS (default true). */
  readonly bos?: boolean;
  /** Append EOS (default false). */
  readonly eos?: boolean;
}

export interface DecodeAllOptions {
  /** The token before ids[0] (e.g. BOS when ids continue a prompt that started with it). */
  readonly prev?: number;
}

/** Incremental detokenizer: `push` returns the text completed so far, `flush` the rest. */
export interface TokenTextStream {
  push(token: number): string;
  flush(): string;
}

export interface Tokenizer {
  readonly vocabSize: number;
  /** The file's max_token_length (bytes of the longest token). */
  readonly maxTokenLength: number;
  /** True when ids 3..258 are the 256 `<0xXX>` byte tokens. */
  readonly byteFallback: boolean;
  /** Bytes of token `id` (a copy). */
  piece(id: number): Uint8Array;
  /** Merge score of token `id`. */
  score(id: number): number;
  /** Id of the token whose bytes are the UTF-8 encoding of `text`, if there is one (lowest id on duplicates). */
  lookup(text: string): number | undefined;
  encode(text: string, options?: EncodeOptions): number[];
  /** Bytes `token` contributes after `prev`; BOS and EOS contribute none. */
  decode(prev: number, token: number): Uint8Array;
  /** Text of a whole id sequence; control tokens give no text. */
  decodeAll(ids: readonly number[], options?: DecodeAllOptions): string;
  textStream(options?: DecodeAllOptions): TokenTextStream;
}

function invalid(op: string, reason: string, message: string, ids?: Record<string, string | number>): never {
  throw new TenonError('EINVAL', message, ids === undefined ? { op, reason } : { op, reason, ids });
}

function asBytes(source: ArrayBufferLike | ArrayBufferView): Uint8Array {
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  if (source instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && source instanceof SharedArrayBuffer)) return new Uint8Array(source);
  return invalid(OP_PARSE, 'bad-argument', 'expected an ArrayBuffer, SharedArrayBuffer or ArrayBufferView');
}

/** One byte per char (latin1): token bytes as a Map key, so lookups compare bytes like run.c's strcmp. */
function binaryString(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]!);
  return s;
}

const HEX = '0123456789ABCDEF';
function byteTokenText(byte: number): string {
  return `<0x${HEX[byte >> 4]}${HEX[byte & 15]}>`;
}
/** run.c decodes with sscanf("<0x%02hhX>"): two hex digits of either case. */
const RAW_BYTE_PIECE = /^<0x([0-9A-Fa-f]{2})>/;

const utf8 = new TextEncoder();

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
  const file = bytes.slice();
  return new LlamaTokenizer(file, vocabSize, maxTokenLength);
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

/** The file a tokenizer was parsed from (identity.ts hashes it). Not part of the public face. */
export function tokenizerFileBytes(tokenizer: Tokenizer): Uint8Array {
  if (!(tokenizer instanceof LlamaTokenizer)) invalid('session.tokenizerIdentity', 'bad-argument', 'not a tokenizer made by parseTokenizer');
  return tokenizer.file;
}

class LlamaTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly maxTokenLength: number;
  readonly byteFallback: boolean;
  /** The whole tokenizer file (owned copy; never handed out). */
  readonly file: Uint8Array;
  readonly #pieces: Uint8Array[];
  readonly #keys: string[];
  readonly #scores: Float32Array;
  readonly #ids = new Map<string, number>();
  /** Raw byte of each `<0xXX>` token (run.c's decode), undefined for ordinary tokens. */
  readonly #rawByte: (number | undefined)[];

  constructor(file: Uint8Array, vocabSize: number, maxTokenLength: number) {
    this.file = file;
    this.vocabSize = vocabSize;
    this.maxTokenLength = maxTokenLength;
    const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
    this.#pieces = new Array<Uint8Array>(vocabSize);
    this.#keys = new Array<string>(vocabSize);
    this.#rawByte = new Array<number | undefined>(vocabSize);
    this.#scores = new Float32Array(vocabSize);
    let at = HEADER_BYTES;
    for (let id = 0; id < vocabSize; id++) {
      this.#scores[id] = view.getFloat32(at, true);
      const length = view.getInt32(at + 4, true);
      at += RECORD_HEAD_BYTES;
      const piece = file.subarray(at, at + length);
      at += length;
      const key = binaryString(piece);
      this.#pieces[id] = piece;
      this.#keys[id] = key;
      if (!this.#ids.has(key)) this.#ids.set(key, id);
      const raw = RAW_BYTE_PIECE.exec(key);
      this.#rawByte[id] = raw === null ? undefined : parseInt(raw[1]!, 16);
    }
    let fallback = vocabSize >= BYTE_FALLBACK_BASE + 256;
    for (let b = 0; fallback && b < 256; b++) fallback = this.#keys[BYTE_FALLBACK_BASE + b] === byteTokenText(b);
    this.byteFallback = fallback;
  }

  #checkId(op: string, id: number, what: string): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) invalid(op, 'bad-token', `${what} ${id} is not a token id`, { [what]: String(id), vocabSize: this.vocabSize });
  }

  piece(id: number): Uint8Array {
    this.#checkId('tokenizer.piece', id, 'token');
    return this.#pieces[id]!.slice();
  }

  score(id: number): number {
    this.#checkId('tokenizer.score', id, 'token');
    return this.#scores[id]!;
  }

  lookup(text: string): number | undefined {
    return this.#ids.get(binaryString(utf8.encode(text)));
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    const op = 'tokenizer.encode';
    if (typeof text !== 'string') invalid(op, 'bad-argument', 'text must be a string');
    const tokens: number[] = [];
    if (options.bos ?? true) tokens.push(BOS_ID);
    const data = utf8.encode(text);
    // Sentencepiece's add_dummy_prefix: a leading " " token, only for non-empty text.
    if (data.length > 0) this.#pushCodepoint(op, tokens, ' ', Uint8Array.of(0x20));
    // One lookup per code point (a lead byte and its continuation bytes), byte fallback otherwise.
    for (let i = 0; i < data.length; ) {
      let end = i + 1;
      while (end < data.length && (data[end]! & 0xc0) === 0x80 && end - i < 4) end++;
      const cp = data.subarray(i, end);
      this.#pushCodepoint(op, tokens, binaryString(cp), cp);
      i = end;
    }
    this.#merge(tokens);
    if (options.eos ?? false) tokens.push(EOS_ID);
    return tokens;
  }

  #pushCodepoint(op: string, tokens: number[], key: string, bytes: Uint8Array): void {
    const id = this.#ids.get(key);
    if (id !== undefined) {
      tokens.push(id);
      return;
    }
    if (!this.byteFallback) invalid(op, 'unencodable', 'a character is not in the vocabulary and the tokenizer has no byte tokens', { bytes: binaryString(bytes).length });
    for (const b of bytes) tokens.push(BYTE_FALLBACK_BASE + b);
  }

  /**
   * run.c's merge loop: while some adjacent pair concatenates to a token, replace the pair with the
   * best-scoring such token (the leftmost on ties). Pair candidates are cached and only the two pairs
   * next to a merge are looked up again, which is the same choice as run.c's full rescan.
   */
  #merge(tokens: number[]): void {
    const pairId: (number | undefined)[] = [];
    const lookupPair = (i: number): number | undefined => this.#ids.get(this.#keys[tokens[i]!]! + this.#keys[tokens[i + 1]!]!);
    for (let i = 0; i + 1 < tokens.length; i++) pairId.push(lookupPair(i));
    for (;;) {
      let best = MERGE_SCORE_FLOOR;
      let bestIndex = -1;
      for (let i = 0; i < pairId.length; i++) {
        const id = pairId[i];
        if (id !== undefined && this.#scores[id]! > best) {
          best = this.#scores[id]!;
          bestIndex = i;
        }
      }
      if (bestIndex < 0) return;
      tokens[bestIndex] = pairId[bestIndex]!;
      tokens.splice(bestIndex + 1, 1);
      pairId.splice(bestIndex, 1);
      if (bestIndex > 0) pairId[bestIndex - 1] = lookupPair(bestIndex - 1);
      if (bestIndex < pairId.length) pairId[bestIndex] = lookupPair(bestIndex);
    }
  }

  decode(prev: number, token: number): Uint8Array {
    this.#checkId('tokenizer.decode', token, 'token');
    return this.#decodePiece(prev, token).slice();
  }

  /** A view of the token's bytes after run.c's decode rules (callers copy it). */
  #decodePiece(prev: number, token: number): Uint8Array {
    if (token === BOS_ID || token === EOS_ID) return EMPTY;
    const raw = this.#rawByte[token];
    if (raw !== undefined) return BYTE_PIECES[raw]!;
    const piece = this.#pieces[token]!;
    // After BOS, sentencepiece drops the leading space of the first word.
    return prev === BOS_ID && piece[0] === 0x20 ? piece.subarray(1) : piece;
  }

  decodeAll(ids: readonly number[], options: DecodeAllOptions = {}): string {
    for (const id of ids) this.#checkId('tokenizer.decodeAll', id, 'token');
    const pieces: Uint8Array[] = [];
    let total = 0;
    let prev = options.prev ?? -1;
    for (const id of ids) {
      const piece = this.#decodePiece(prev, id);
      pieces.push(piece);
      total += piece.length;
      prev = id;
    }
    const joined = new Uint8Array(total);
    let at = 0;
    for (const piece of pieces) {
      joined.set(piece, at);
      at += piece.length;
    }
    return new TextDecoder().decode(joined);
  }

  textStream(options: DecodeAllOptions = {}): TokenTextStream {
    const decoder = new TextDecoder();
    let prev = options.prev ?? -1;
    return {
      push: (token: number): string => {
        this.#checkId('tokenizer.textStream', token, 'token');
        const piece = this.#decodePiece(prev, token);
        prev = token;
        return decoder.decode(piece, { stream: true });
      },
      flush: (): string => decoder.decode(),
    };
  }
}

const EMPTY = new Uint8Array(0);
const BYTE_PIECES: readonly Uint8Array[] = Array.from({ length: 256 }, (_, b) => Uint8Array.of(b));
