// Tokenizer contract shared by every vocabulary kind (DESIGN.md "src/model": tokenizers).
//
// A Tokenizer is immutable after construction and safe to share between callers on one thread: the only
// state that changes is its work counters and its per-piece encoding cache, neither of which changes a
// result. Every method that takes a token id checks it (EINVAL 'bad-token'); text that cannot be encoded
// is EINVAL 'unencodable'. Bytes handed out are copies.

/** Token types as GGUF stores them (`tokenizer.ggml.token_type`, llama.cpp's llama_token_type). */
export const TokenType = {
  Undefined: 0,
  Normal: 1,
  Unknown: 2,
  Control: 3,
  UserDefined: 4,
  Unused: 5,
  Byte: 6,
} as const;
export type TokenType = (typeof TokenType)[keyof typeof TokenType];
/** Largest valid token type value. */
export const MAX_TOKEN_TYPE = TokenType.Byte;

/** The vocabulary kinds tenon implements (`tokenizer.ggml.model`). */
export type TokenizerModel = 'llama' | 'gpt2';

export interface EncodeOptions {
  /** Prepend BOS (default: the vocabulary's add_bos_token; true for llama2.c tokenizers). */
  readonly bos?: boolean;
  /** Append EOS (default: the vocabulary's add_eos_token; false for llama2.c tokenizers). */
  readonly eos?: boolean;
  /**
   * Recognise control (and unknown) token texts in `text` as those tokens (default false). User-defined
   * tokens are always recognised as whole strings, with or without this option.
   */
  readonly parseSpecial?: boolean;
}

export interface DecodeAllOptions {
  /** The token before ids[0] (e.g. BOS when ids continue a prompt that started with it). */
  readonly prev?: number;
  /** Render control and unknown tokens as their text instead of nothing (default false). */
  readonly special?: boolean;
}

/** Incremental detokenizer: `push` returns the text completed so far, `flush` the rest. */
export interface TokenTextStream {
  push(token: number): string;
  flush(): string;
}

/** Special token ids; undefined where the vocabulary has none. */
export interface SpecialTokens {
  readonly bos: number | undefined;
  readonly eos: number | undefined;
  /** End of turn (`tokenizer.ggml.eot_token_id`, else the first of the well-known end-of-turn texts present). */
  readonly eot: number | undefined;
  /** End of message (`tokenizer.ggml.eom_token_id`, else `<|eom_id|>` when present). */
  readonly eom: number | undefined;
  readonly unk: number | undefined;
  readonly pad: number | undefined;
}

/** Work done by `encode` since the tokenizer was made (tests assert these, never wall-clock time). */
export interface TokenizerCounters {
  /** encode calls. */
  readonly encodes: number;
  /** Pieces handed to the merge engine (pre-tokens for gpt2, text fragments for llama). */
  readonly pieces: number;
  /** Pieces answered from the per-piece cache without merging. */
  readonly cacheHits: number;
  /** Initial symbols the merge engine started from (bytes for gpt2, characters for llama). */
  readonly symbols: number;
  /** Candidate pairs looked up in the vocabulary or merge table. */
  readonly pairLookups: number;
  /** Merges performed. */
  readonly merges: number;
}

export interface Tokenizer {
  readonly model: TokenizerModel;
  /** The pre-tokenizer (`tokenizer.ggml.pre`) for gpt2 vocabularies; undefined for llama. */
  readonly pre: string | undefined;
  readonly vocabSize: number;
  /** Bytes of the longest token as stored. */
  readonly maxTokenLength: number;
  /** True when every byte has a token to fall back to (`<0xXX>` tokens, or the byte-level alphabet). */
  readonly byteFallback: boolean;
  readonly special: SpecialTokens;
  /** Defaults of `encode`'s bos/eos options. */
  readonly addBos: boolean;
  readonly addEos: boolean;
  /** llama vocabularies: a space is put before the text (and after each special token). */
  readonly addSpacePrefix: boolean;
  /** Ids that end a generated turn (eos, eot, eom and the well-known end-of-turn tokens), ascending. */
  readonly endOfGeneration: readonly number[];
  /** `tokenizer.chat_template`, when the vocabulary carries one. */
  readonly chatTemplate: string | undefined;
  /** A snapshot of the work counters. */
  readonly counters: TokenizerCounters;
  tokenType(id: number): TokenType;
  /** The token's text as the vocabulary stores it (UTF-8 decoded; `▁`/`Ġ` left as they are). */
  tokenText(id: number): string;
  /** Bytes of token `id` as stored (a copy). */
  piece(id: number): Uint8Array;
  /** Score of token `id` (0 for vocabularies without scores). */
  score(id: number): number;
  /** Id of the token whose stored bytes are the UTF-8 encoding of `text`, if there is one (lowest id on duplicates). */
  lookup(text: string): number | undefined;
  isEndOfGeneration(id: number): boolean;
  encode(text: string, options?: EncodeOptions): number[];
  /** Bytes `token` contributes after `prev` (control tokens: none unless `special`). */
  decode(prev: number, token: number, options?: { readonly special?: boolean }): Uint8Array;
  /** Text of a whole id sequence; characters split across tokens come out whole. */
  decodeAll(ids: readonly number[], options?: DecodeAllOptions): string;
  /** A streaming decoder that holds incomplete UTF-8 sequences until their last byte arrives. */
  textStream(options?: DecodeAllOptions): TokenTextStream;
}
