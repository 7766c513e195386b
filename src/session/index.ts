// Public face of the inference layer (DESIGN.md "src/session"). So far: the llama2.c checkpoint and
// tokenizer parsers (validate everything before building anything).
export { LLAMA_MAGIC, LLAMA_TENSOR_NAMES, LLAMA_V0_HEADER_BYTES, LLAMA_V1_HEADER_BYTES, parseLlamaModel } from './model-file.js';
export type { LlamaConfig, LlamaFileFormat, LlamaModelFile, LlamaTensorInfo, LlamaTensorName, LlamaWeights, ParseLlamaModelOptions } from './model-file.js';
export { BOS_ID, BYTE_FALLBACK_BASE, EOS_ID, UNK_ID, parseTokenizer } from './tokenizer.js';
export type { DecodeAllOptions, EncodeOptions, TokenTextStream, Tokenizer } from './tokenizer.js';
