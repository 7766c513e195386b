// Tokenizers (DESIGN.md "src/model"): the llama2.c tokenizer file and GGUF vocabularies share one
// SentencePiece-style implementation; GGUF byte-level BPE vocabularies have their own engine.
export { BOS_ID, BYTE_FALLBACK_BASE, EOS_ID, UNK_ID, parseTokenizer, tokenizerFileBytes } from './llama2c.js';
export type { DecodeAllOptions, EncodeOptions, TokenTextStream, Tokenizer } from './llama2c.js';
