// Tokenizers (DESIGN.md "src/model"): llama2.c tokenizer files and GGUF `llama` vocabularies share one
// SentencePiece-style implementation; GGUF `gpt2` vocabularies are byte-level BPE with the pre-tokenizer
// the file names. Every kind is the same Tokenizer (types.ts).
export { BOS_ID, BYTE_FALLBACK_BASE, EOS_ID, UNK_ID, parseTokenizer } from './llama2c.js';
export { GGUF_TOKENIZER_KEYS, tokenizerFromGguf } from './gguf-vocab.js';
export type { TokenizerMetadata, TokenizerMetadataValue } from './gguf-vocab.js';
export { PRE_TOKENIZER_NAMES } from './pretokenize.js';
export { BPE_CACHE_ENTRIES } from './bpe.js';
export { TokenType } from './types.js';
export type { DecodeAllOptions, EncodeOptions, SpecialTokens, TokenTextStream, Tokenizer, TokenizerCounters, TokenizerModel } from './types.js';
export { tokenizerIdentityBytes } from './vocab.js';
