// Public face of the inference layer (DESIGN.md "src/session"): the host reference forward pass, the
// op-library forward (LlamaForward), TextSession with its transactions, checkpoints, observers and
// prediction lanes (the lane is an interface: only a session makes one), prompt-cache encoding, and model
// sources cached in the data plane. File formats, tokenizers and model identity live in src/model
// (exported from src/index.ts).
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
export { ATTENTION_SPLIT_POSITIONS, DECODE_MODES, KERNEL_MODES, LlamaForward, defaultKernels } from './llama.js';
export type { ChainedStep, DecodeMode, KernelMode, LlamaForwardOptions, RunOptions, StepInput, StepResult } from './llama.js';
export { Sampler, argmaxOf } from './sampler.js';
export type { DeviceChoice, SamplerOptions } from './sampler.js';
export { DEFAULT_STEPS_AHEAD, STEPS_AHEAD_LIMIT, STEP_PHASES, StepError, TextSession } from './session.js';
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
  PredictionLane,
  SessionFaults,
  SessionObserver,
  SessionReport,
  StepOutcome,
  StepPhase,
  StepOptions,
  StepReport,
  TextSessionOptions,
} from './session.js';
export { MODEL_CACHE_DIRECTORY, cacheModelSource, findCachedModelSource, modelSourcePath, readModelSource } from './model-source.js';
export type { CacheModelSourceOptions, CachedModelSource, ModelSource, ModelSourceProgress } from './model-source.js';
// Layer residency (issue 13): resident or a bounded window of layer slots, chosen at construction.
export { LayerWindow, SLOT_OFFSET_ALIGNMENT, planWindow } from './residency.js';
export type { ResidencyKind, ResidencyPolicy, ResidencyReport, WindowFaults } from './residency.js';
// Partitioned sessions across rank workers (issue 14; src/session/partition).
export * from './partition/index.js';
export { EXPERT_ROLES, ExpertCache } from './residency.js';
export type { ExpertCacheReport } from './residency.js';
