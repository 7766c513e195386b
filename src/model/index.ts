// Public face of the model layer (DESIGN.md "src/model"): file formats, weight lowering kinds,
// architectures, tokenizers and chat templates. Session imports the model layer only through this file.
export { BOS_ID, BYTE_FALLBACK_BASE, BPE_CACHE_ENTRIES, EOS_ID, GGUF_TOKENIZER_KEYS, PRE_TOKENIZER_NAMES, TokenType, UNK_ID, parseTokenizer, tokenizerFromGguf, tokenizerIdentityBytes } from './tokenizer/index.js';
export type { DecodeAllOptions, EncodeOptions, SpecialTokens, TokenTextStream, Tokenizer, TokenizerCounters, TokenizerMetadata, TokenizerMetadataValue, TokenizerModel } from './tokenizer/index.js';
export { renderChat } from './chat.js';
// llama2.c checkpoints and model identity (moved from src/session; issue 10, engineer D).
export { LLAMA_MAGIC, LLAMA_MAX_HEADER_BYTES, LLAMA_TENSOR_NAMES, LLAMA_V0_HEADER_BYTES, LLAMA_V1_HEADER_BYTES, parseLlamaModel, planLlamaModel } from './llama2c-checkpoint.js';
export type { LlamaConfig, LlamaFileFormat, LlamaModelFile, LlamaModelPlan, LlamaTensorInfo, LlamaTensorName, LlamaWeights, ParseLlamaModelOptions } from './llama2c-checkpoint.js';
export { IDENTITY_CONFIG_FIELDS, canonicalConfig, tokenizerIdentity } from './identity.js';
export type { ModelIdentity } from './identity.js';
// Architecture table, model descriptions and weight materialisation (issue 10, engineer D).
export { ARCHITECTURES, DEFAULT_ROPE_THETA, MAX_CONTEXT_LENGTH, architectureById, architectureFor, checkCatalog, checkConfig, expectedTensors, layerTensorName } from './architecture.js';
export type {
  ArchitectureEntry,
  ArchitectureId,
  CatalogSlot,
  CatalogTensor,
  ConfigFacts,
  ExpertRouting,
  FfnKind,
  GlobalRole,
  HyperparameterField,
  HyperparameterSpec,
  HyperparameterValues,
  LayerRole,
  ModelConfig,
  TensorRole,
  TensorSpec,
} from './architecture.js';
export { LLAMA2C_RMS_EPS, LLAMA2C_ROPE_THETA, loadModel, modelFromLlamaFile, modelIdentity } from './model.js';
export type { GlobalTensors, LayerTensors, LoadModelOptions, LoadedModel, ModelFormat, ModelTensor } from './model.js';
export { DEFAULT_CHUNK_BYTES, bindingLimit, materializeWeights, planWeights } from './materialize.js';
export type { GlobalWeights, LayerWeights, MaterializeOptions, MaterializeProgress, MaterializedWeights, WeightPart, WeightTensor } from './materialize.js';
export type { ChatInput, ChatMessage } from './chat.js';
// GGUF reader and the range sources it reads through (issue 10, engineer A).
export { GGML_TYPES, LOWERING_TYPE_NAMES, ggmlByteLength, ggmlTypeById, ggmlTypeByName, isLoweringType, requireLoweringType } from './ggml-types.js';
export type { GgmlType, GgmlTypeName, LoweringTypeName } from './ggml-types.js';
export { blobSource, bytesSource, countingSource, descriptorSource, fileHandleSource } from './source.js';
export type { ByteSource, CountingSource, FaultableSource, FileHandleLike, FileHandleSourceOptions, ReadCounters, SourceFaults } from './source.js';
export {
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_FIRST_HEADER_CHUNK,
  GGUF_MAX_ARRAY_DEPTH,
  GGUF_MAX_ARRAY_ITEMS,
  GGUF_MAX_DIMS,
  GGUF_MAX_HEADER_BYTES,
  GGUF_MAX_HEADER_CHUNK,
  GGUF_MAX_KEY_BYTES,
  GGUF_MAX_METADATA_ENTRIES,
  GGUF_MAX_STRING_BYTES,
  GGUF_MAX_TENSOR_NAME_BYTES,
  GGUF_MAX_TENSORS,
  GGUF_VALUE_TYPES,
  parseGguf,
} from './gguf.js';
export type { GgufArray, GgufFile, GgufMetadata, GgufNumberArray, GgufTensorInfo, GgufValue, GgufValueType, ParseGgufOptions } from './gguf.js';
// Weight lowering kinds: geometry, exact dequantizers, repacking into the qmatmul layout (issue 10, engineer C).
export { LOWERING_KINDS, MAX_RANK as LOWERING_MAX_RANK, loweringKind, loweringKindById, tensorGeometry } from './lowering/index.js';
export type { KindCodec, LoweredGeometry, LoweredTensorInfo, LoweringKind, LoweringKindName } from './lowering/index.js';
