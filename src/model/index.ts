// Public face of the model layer (DESIGN.md "src/model"): file formats, weight lowering kinds,
// architectures, tokenizers and chat templates. Session imports the model layer only through this file.
export { BOS_ID, BYTE_FALLBACK_BASE, EOS_ID, UNK_ID, parseTokenizer, tokenizerFileBytes } from './tokenizer/index.js';
export type { DecodeAllOptions, EncodeOptions, TokenTextStream, Tokenizer } from './tokenizer/index.js';
