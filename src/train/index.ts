// Public face of the autodiff layer (src/train, seed 000 G7): eager tapes and checkpoint stores that own
// retained values through their own groups, read-only value handles, and the gradients bundle.
// Imports storage, submit and model only; nothing below imports this layer.
export { Tape, createTape } from './tape.js';
export type { BackwardContext, BackwardOptions, CheckpointInfo, CustomRule, LeafOptions, RegionFn, TapeOptions } from './tape.js';
export { Gradients } from './gradients.js';
export { IntoValueError, ValueHandle } from './retention.js';
export type { IntoValueFailure, ValueKey } from './retention.js';
// The explicit llama backward and trainer (issue 15, backward-ops part): LlamaGrad runs forward, loss and
// backward of a llama2.c model as one compiled graph on any provider; it does not use the tape.
export { ADAMW_DEFAULTS, LORA_TARGETS, LlamaGrad, llamaDims, loraNames, parameterNames, parameterShape } from './llama-grad.js';
export type { AdamWConfig, LlamaDims, LlamaGradOptions, LoraConfig, TrainStepResult } from './llama-grad.js';
export { adamwConfig } from './adamw.js';
export { Trainer } from './trainer.js';
export type { TrainProgress, TrainerOptions } from './trainer.js';
export { ADAPTER_FORMAT, ADAPTER_MAGIC, ADAPTER_SCHEMA, decodeAdapters, encodeAdapters } from './trainer-adapters.js';
export type { AdapterExpectation, AdapterManifest } from './trainer-adapters.js';
// Generating with a trained model (issue 15): a Trainer's weights as a llama2.c checkpoint or parsed model.
export { exportCheckpoint, exportModel } from './trainer-export.js';
export type { ExportSource } from './trainer-export.js';
