// The Tokenizer every vocabulary kind shares (src/model/tokenizer/types.ts states the contract): special
// tokens, encode's outer loop, decoding and streaming. What differs per kind is the engine that turns a run
// of plain text into ids (spm.ts for `llama`, bpe.ts for `gpt2`).
//
// Encoding: BOS when asked; the text is cut at special token texts (user-defined tokens always, control
// and unknown tokens only with parseSpecial), longest token text first, leftmost occurrence first, like
// llama.cpp; each remaining run of text goes to the engine (a `llama` engine puts a space before each run
// when add_space_prefix holds); EOS when asked.
//
// Decoding: normal tokens give their text (`▁` read as a space in GGUF `llama` vocabularies, byte-level
// characters read as their bytes in `gpt2` ones), byte tokens `<0xXX>` their byte, user-defined tokens
// their text, control and unknown tokens nothing unless `special` is asked, unused tokens nothing. In a
// `llama` vocabulary with add_space_prefix, a normal token right after BOS loses its leading space.
// Streams hold the bytes of an incomplete UTF-8 character until it completes.
import { TenonError } from '../../errors.js';
import { byteOfChar } from './byte-level.js';
import { TokenType } from './types.js';
import type { DecodeAllOptions, EncodeOptions, SpecialTokens, TokenTextStream, Tokenizer, TokenizerCounters, TokenizerModel } from './types.js';

export interface MutableCounters {
  encodes: number;
  pieces: number;
  cacheHits: number;
  symbols: number;
  pairLookups: number;
  merges: number;
}

/** Turns one run of text (no special tokens in it) into ids. */
export interface TextEngine {
  encodeFragment(text: string, prefixSpace: boolean, out: number[], counters: MutableCounters): void;
}

/** Everything a Tokenizer is made from, already validated by its reader (llama2c.ts, gguf-vocab.ts). */
export interface VocabularySpec {
  readonly model: TokenizerModel;
  readonly pre: string | undefined;
  /** Each token's text (UTF-8 decoded from the stored bytes). */
  readonly texts: readonly string[];
  /** Each token's stored bytes, when the reader has them; otherwise the UTF-8 encoding of `texts`. */
  readonly pieces: readonly Uint8Array[] | undefined;
  readonly scores: Float32Array;
  readonly types: Uint8Array;
  readonly special: SpecialTokens;
  readonly addBos: boolean;
  readonly addEos: boolean;
  readonly addSpacePrefix: boolean;
  /** Normal tokens spell a space as `▁` (GGUF `llama` vocabularies). */
  readonly escapedSpaces: boolean;
  readonly maxTokenLength: number;
  readonly byteFallback: boolean;
  readonly chatTemplate: string | undefined;
  readonly endOfGeneration: readonly number[];
  readonly engine: TextEngine;
  /** Id of the token whose stored bytes equal `text`'s UTF-8 encoding. */
  readonly lookup: (text: string) => number | undefined;
  /** Bytes that identify the tokenizer (identity.ts hashes them); computed on first use. */
  readonly identity: () => Uint8Array;
}

const EMPTY = new Uint8Array(0);
const SPACE = 0x20;
/** `▁` (U+2581) in UTF-8. */
const ESCAPED_SPACE = [0xe2, 0x96, 0x81] as const;
/** A byte token's text: `<0x` two hex digits `>` (llama.cpp and run.c read the two digits after `<0x`). */
const BYTE_TOKEN = /^<0x([0-9A-Fa-f]{2})>/;
const utf8 = new TextEncoder();

/** The byte a `<0xXX>` token stands for, or undefined. */
export function byteTokenValue(text: string): number | undefined {
  const m = BYTE_TOKEN.exec(text);
  return m === null ? undefined : parseInt(m[1]!, 16);
}

function invalid(op: string, reason: string, message: string, ids?: Record<string, string | number>): never {
  throw new TenonError('EINVAL', message, ids === undefined ? { op, reason } : { op, reason, ids });
}

interface SpecialText {
  readonly id: number;
  readonly text: string;
  readonly userDefined: boolean;
}

export class VocabTokenizer implements Tokenizer {
  readonly model: TokenizerModel;
  readonly pre: string | undefined;
  readonly vocabSize: number;
  readonly maxTokenLength: number;
  readonly byteFallback: boolean;
  readonly special: SpecialTokens;
  readonly addBos: boolean;
  readonly addEos: boolean;
  readonly addSpacePrefix: boolean;
  readonly endOfGeneration: readonly number[];
  readonly chatTemplate: string | undefined;
  readonly #spec: VocabularySpec;
  readonly #endSet: ReadonlySet<number>;
  /** Special token texts in matching order: longest first, then lowest id. */
  readonly #specials: readonly SpecialText[];
  /** Normal-mode bytes of each token, filled on first use. */
  readonly #decoded: (Uint8Array | undefined)[];
  readonly #counters: MutableCounters = { encodes: 0, pieces: 0, cacheHits: 0, symbols: 0, pairLookups: 0, merges: 0 };
  #identity: Uint8Array | undefined;

  constructor(spec: VocabularySpec) {
    this.#spec = spec;
    this.model = spec.model;
    this.pre = spec.pre;
    this.vocabSize = spec.texts.length;
    this.maxTokenLength = spec.maxTokenLength;
    this.byteFallback = spec.byteFallback;
    this.special = Object.freeze({ ...spec.special });
    this.addBos = spec.addBos;
    this.addEos = spec.addEos;
    this.addSpacePrefix = spec.addSpacePrefix;
    this.endOfGeneration = Object.freeze([...spec.endOfGeneration]);
    this.#endSet = new Set(spec.endOfGeneration);
    this.chatTemplate = spec.chatTemplate;
    this.#decoded = new Array<Uint8Array | undefined>(this.vocabSize);
    const specials: SpecialText[] = [];
    for (let id = 0; id < this.vocabSize; id++) {
      const type = spec.types[id];
      if (type !== TokenType.Control && type !== TokenType.UserDefined && type !== TokenType.Unknown) continue;
      const text = spec.texts[id]!;
      if (text.length > 0) specials.push({ id, text, userDefined: type === TokenType.UserDefined });
    }
    specials.sort((a, b) => b.text.length - a.text.length || a.id - b.id);
    this.#specials = specials;
  }

  get counters(): TokenizerCounters {
    return Object.freeze({ ...this.#counters });
  }

  /** Bytes that identify the tokenizer (see VocabularySpec.identity). */
  identityBytes(): Uint8Array {
    this.#identity ??= this.#spec.identity();
    return this.#identity;
  }

  #checkId(op: string, id: number, what = 'token'): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) invalid(op, 'bad-token', `${what} ${id} is not a token id`, { [what]: String(id), vocabSize: this.vocabSize });
  }

  tokenType(id: number): TokenType {
    this.#checkId('tokenizer.tokenType', id);
    return this.#spec.types[id] as TokenType;
  }

  tokenText(id: number): string {
    this.#checkId('tokenizer.tokenText', id);
    return this.#spec.texts[id]!;
  }

  #stored(id: number): Uint8Array {
    return this.#spec.pieces?.[id] ?? utf8.encode(this.#spec.texts[id]!);
  }

  piece(id: number): Uint8Array {
    this.#checkId('tokenizer.piece', id);
    return this.#stored(id).slice();
  }

  score(id: number): number {
    this.#checkId('tokenizer.score', id);
    return this.#spec.scores[id]!;
  }

  lookup(text: string): number | undefined {
    if (typeof text !== 'string') invalid('tokenizer.lookup', 'bad-argument', 'text must be a string');
    return this.#spec.lookup(text);
  }

  isEndOfGeneration(id: number): boolean {
    return this.#endSet.has(id);
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    const op = 'tokenizer.encode';
    if (typeof text !== 'string') invalid(op, 'bad-argument', 'text must be a string');
    const bos = options.bos ?? this.addBos;
    const eos = options.eos ?? this.addEos;
    if (bos && this.special.bos === undefined) invalid(op, 'no-bos-token', 'BOS was asked for but the vocabulary has no BOS token');
    if (eos && this.special.eos === undefined) invalid(op, 'no-eos-token', 'EOS was asked for but the vocabulary has no EOS token');
    this.#counters.encodes++;
    const out: number[] = [];
    if (bos) out.push(this.special.bos!);
    for (const fragment of this.#partition(text, options.parseSpecial ?? false)) {
      if (typeof fragment === 'number') out.push(fragment);
      else this.#spec.engine.encodeFragment(fragment, this.addSpacePrefix, out, this.#counters);
    }
    if (eos) out.push(this.special.eos!);
    return out;
  }

  /** The text cut at special token texts: strings are plain runs, numbers are special tokens. */
  #partition(text: string, parseSpecial: boolean): (string | number)[] {
    let fragments: (string | number)[] = text.length > 0 ? [text] : [];
    for (const special of this.#specials) {
      if (!parseSpecial && !special.userDefined) continue;
      if (!text.includes(special.text)) continue;
      const next: (string | number)[] = [];
      for (const fragment of fragments) {
        if (typeof fragment === 'number') {
          next.push(fragment);
          continue;
        }
        const parts = fragment.split(special.text);
        for (let i = 0; i < parts.length; i++) {
          if (i > 0) next.push(special.id);
          if (parts[i]!.length > 0) next.push(parts[i]!);
        }
      }
      fragments = next;
    }
    return fragments;
  }

  /** A view of the bytes `token` contributes after `prev` (callers copy it). */
  #bytesOf(prev: number, token: number, special: boolean): Uint8Array {
    switch (this.#spec.types[token]) {
      case TokenType.Normal: {
        const bytes = this.#normalBytes(token);
        // After BOS, SentencePiece drops the space it put before the text.
        const dropSpace = this.model === 'llama' && this.addSpacePrefix && prev === this.special.bos && bytes[0] === SPACE;
        return dropSpace ? bytes.subarray(1) : bytes;
      }
      case TokenType.Byte:
        return BYTE_PIECES[byteTokenValue(this.#spec.texts[token]!)!]!;
      case TokenType.UserDefined:
        return this.#stored(token);
      case TokenType.Control:
      case TokenType.Unknown:
        return special ? this.#stored(token) : EMPTY;
      default:
        return EMPTY;
    }
  }

  #normalBytes(token: number): Uint8Array {
    let bytes = this.#decoded[token];
    if (bytes === undefined) {
      bytes = this.model === 'gpt2' ? byteLevelBytes(this.#spec.texts[token]!) : this.#spec.escapedSpaces ? unescapeSpaces(this.#stored(token)) : this.#stored(token);
      this.#decoded[token] = bytes;
    }
    return bytes;
  }

  decode(prev: number, token: number, options: { readonly special?: boolean } = {}): Uint8Array {
    this.#checkId('tokenizer.decode', token);
    return this.#bytesOf(prev, token, options.special ?? false).slice();
  }

  decodeAll(ids: readonly number[], options: DecodeAllOptions = {}): string {
    for (const id of ids) this.#checkId('tokenizer.decodeAll', id);
    const special = options.special ?? false;
    const pieces: Uint8Array[] = [];
    let total = 0;
    let prev = options.prev ?? -1;
    for (const id of ids) {
      const piece = this.#bytesOf(prev, id, special);
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
    const special = options.special ?? false;
    let prev = options.prev ?? -1;
    return {
      push: (token: number): string => {
        this.#checkId('tokenizer.textStream', token);
        const piece = this.#bytesOf(prev, token, special);
        prev = token;
        // stream: true keeps the bytes of an unfinished character for the next push.
        return decoder.decode(piece, { stream: true });
      },
      flush: (): string => decoder.decode(),
    };
  }
}

const BYTE_PIECES: readonly Uint8Array[] = Array.from({ length: 256 }, (_, b) => Uint8Array.of(b));

/** Bytes of a byte-level token text: each alphabet character is its byte; other characters stay as UTF-8. */
function byteLevelBytes(text: string): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const b = byteOfChar(text.charCodeAt(i));
    if (b !== undefined) out.push(b);
    else {
      const cp = text.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      for (const x of utf8.encode(ch)) out.push(x);
      i += ch.length - 1;
    }
  }
  return Uint8Array.from(out);
}

/** Stored bytes with every `▁` read as a space. */
function unescapeSpaces(bytes: Uint8Array): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === ESCAPED_SPACE[0] && bytes[i + 1] === ESCAPED_SPACE[1] && bytes[i + 2] === ESCAPED_SPACE[2]) {
      out.push(SPACE);
      i += ESCAPED_SPACE.length - 1;
    } else out.push(bytes[i]!);
  }
  return Uint8Array.from(out);
}

/**
 * Bytes that identify a tokenizer (identity.ts hashes them): a llama2.c tokenizer's file, or a canonical
 * encoding of a GGUF vocabulary (gguf-vocab.ts).
 */
export function tokenizerIdentityBytes(tokenizer: Tokenizer): Uint8Array {
  if (!(tokenizer instanceof VocabTokenizer)) invalid('session.tokenizerIdentity', 'bad-argument', 'not a tokenizer made by parseTokenizer or tokenizerFromGguf');
  return tokenizer.identityBytes();
}
