// Public face of the inference layer (DESIGN.md "src/session"): the text session, prompt caches, model
// sources and the host reference forward pass that the op-library forward is checked against. File
// formats, tokenizers and model identity live in src/model (exported from src/index.ts).
export { BOS_ID, BYTE_FALLBACK_BASE, EOS_ID, UNK_ID, parseTokenizer } from '../model/index.js';
export type { DecodeAllOptions, EncodeOptions, TokenTextStream, Tokenizer } from '../model/index.js';
export {
  REFERENCE_MAX_CACHE_BYTES,
  RMSNORM_EPS as REFERENCE_RMSNORM_EPS,
  ROPE_BASE as REFERENCE_ROPE_BASE,
  argmax as referenceArgmax,
  createReferenceModel,
  matvec as referenceMatvec,
  referenceGreedy,
  rmsnorm as referenceRmsnorm,
  rope as referenceRope,
  ropeFrequencies as referenceRopeFrequencies,
  softmax as referenceSoftmax,
} from './reference.js';
export type { ReferenceForwardOptions, ReferenceModel, ReferenceOptions } from './reference.js';
export { LlamaForward } from './llama.js';
export type { LlamaForwardOptions, RunOptions, StepResult } from './llama.js';
export { Sampler, argmaxOf } from './sampler.js';
export type { SamplerOptions } from './sampler.js';
export { PredictionLane, STEP_PHASES, StepError, TextSession } from './session.js';
export { PROMPT_CACHE_FORMAT, PROMPT_CACHE_MAGIC, PROMPT_CACHE_SCHEMA, decodePromptCache, encodePromptCache } from './prompt-cache.js';
export type { PromptCacheExpectation, PromptCacheManifest } from './prompt-cache.js';
export type {
  Checkpoint,
  GenerateOptions,
  GeneratedToken,
  LoadPromptCacheOptions,
  SavePromptCacheOptions,
  ObserveContext,
  PhaseAgreement,
  SessionFaults,
  SessionObserver,
  SessionReport,
  StepOutcome,
  StepPhase,
  StepReport,
  TextSessionOptions,
} from './session.js';
export { MODEL_CACHE_DIRECTORY, cacheModelSource, findCachedModelSource, modelSourcePath, readModelSource } from './model-source.js';
export type { CacheModelSourceOptions, CachedModelSource, ModelSource, ModelSourceProgress } from './model-source.js';
