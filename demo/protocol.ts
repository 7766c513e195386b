// Messages between the demo page and its generation worker (demo/generate.worker.ts). Type-only.
// Calls are request/reply pairs matched by id; the worker also sends unsolicited events (load progress,
// device loss). Tokens do not travel here: they stream over a data-plane stream (see TokenRecord).

export interface WireError {
  readonly code: string;
  readonly reason?: string;
  readonly message: string;
  readonly op?: string;
  /** For a failed inference step: which phase failed and the step's outcome. */
  readonly phase?: string;
  readonly outcome?: string;
}

export interface LoadArgs {
  /** Data-plane path of the model blob (GGUF, or a llama2.c checkpoint). */
  readonly modelPath: string;
  /** Data-plane path of a llama2.c checkpoint's tokenizer; absent for GGUF. */
  readonly tokenizerPath?: string;
  /** 'auto': createProvider's choice (WebGPU on a hardware adapter, else the host provider); or forced. */
  readonly provider: 'auto' | 'webgpu' | 'host';
}

export interface AdapterSummary {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
  readonly isFallbackAdapter: boolean | undefined;
}

/** Weights of one lowering kind: tensors, bytes in the file, bytes on the provider (packed). */
export interface KindSummary {
  readonly kind: string;
  readonly tensors: number;
  readonly fileBytes: number;
  readonly deviceBytes: number;
}

export interface ModelSummary {
  /** 'gguf', or the llama2.c checkpoint version. */
  readonly format: string;
  readonly architecture: string;
  readonly name: string | undefined;
  /** The model has a chat template: the page shows the chat view. */
  readonly chat: boolean;
  readonly tokenizer: string;
  readonly dim: number;
  readonly layers: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly vocabSize: number;
  readonly contextLength: number;
  /** Bytes the model file holds. */
  readonly fileBytes: number;
  /** Reads of the model blob so far (header, then weights by rows): how many, bytes, the largest one. */
  readonly reads: { readonly count: number; readonly bytes: number; readonly largest: number };
}

export interface LoadResult {
  readonly provider: 'webgpu' | 'host';
  /** Why this provider runs (provider.selection). */
  readonly selection: { readonly requested: string; readonly reason: string; readonly message: string };
  /** Why the host provider runs although 'auto' was asked (no WebGPU here). */
  readonly fallback?: WireError;
  readonly adapter?: AdapterSummary;
  readonly model: ModelSummary;
  readonly maxSeq: number;
  readonly modelId: string;
  readonly memory: MemoryReport;
}

export interface GenerateArgs {
  readonly streamPath: string;
  readonly prompt: string;
  readonly maxTokens: number;
  readonly temperature: number;
  readonly promptCache: boolean;
  readonly speculative: boolean;
}

/** One turn of a conversation (a type literal, so it fits the model layer's open ChatMessage shape). */
export type ChatMessage = {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string;
};

export interface ChatArgs {
  readonly streamPath: string;
  /** The whole conversation so far, ending with the user's new message. */
  readonly messages: readonly ChatMessage[];
  readonly maxTokens: number;
  readonly temperature: number;
}

/** Why a reply or completion ended: an end-of-generation token, the token limit, or the stop button. */
export type StopReason = 'end-of-generation' | 'max-tokens' | 'stopped';

export interface GenerateResult {
  readonly promptTokens: number;
  /** The prompt as the session committed it (for a chat: the rendered template, encoded). */
  readonly promptIds: readonly number[];
  readonly generated: number;
  readonly ids: readonly number[];
  readonly stop: StopReason;
  /** Prompt-cache effect: off, loaded from OPFS (hit), or not there and saved afterwards (miss). */
  readonly cache: { readonly mode: 'off' | 'hit' | 'miss'; readonly reused: number; readonly prefilled: number; readonly saved: boolean; readonly path?: string };
  readonly speculation?: { readonly passes: number; readonly drafted: number; readonly accepted: number };
  /** Milliseconds in the worker from the call to the first token, and from the first to the last. */
  readonly firstTokenMs: number | undefined;
  readonly decodeMs: number;
  readonly memory: MemoryReport;
}

export interface ChatResult extends Omit<GenerateResult, 'cache' | 'speculation'> {
  /** The chat template's output for this turn (what was encoded). */
  readonly renderedPrompt: string;
  /** Prompt tokens the session already held from earlier turns (not prefilled again). */
  readonly reused: number;
}

export interface MemoryReport {
  readonly provider: string;
  readonly weightBytes: number;
  /** Weights by lowering kind (F32, Q8_0, Q4_K, ...). */
  readonly kinds: readonly KindSummary[];
  readonly stateBytes: number;
  readonly activationBytes: number;
  readonly liveRoots: number;
  readonly liveBytes: number;
  /** Roots kept forever because their completion could not be proven (device lost mid-submission). */
  readonly retainedRoots: number;
  /** The same, summed over devices lost earlier in this worker. */
  readonly retainedAfterLoss: number;
  readonly length: number;
  readonly maxSeq: number;
  /** Host provider only: which kernels its runtime runs and how many dispatches took each path so far. */
  readonly hostKernels?: { readonly kind: string; readonly wasmDispatches: number; readonly scalarDispatches: number };
}

/** Test seam: makes the reply choose `token` at its n-th step (1-based) through the session's logits observer. */
export interface ForceToken {
  readonly step: number;
  readonly token: number;
}

/** The "teach it" panel: fine-tune the loaded llama2.c model on `text` in the worker (Trainer). */
export interface TeachArgs {
  readonly text: string;
  readonly steps: number;
  /** AdamW learning rate. */
  readonly lr: number;
  /** Tokens per training window. */
  readonly seqLen: number;
}

export interface TeachResult {
  /** Steps run (fewer than asked when stopped). */
  readonly steps: number;
  readonly losses: readonly number[];
  readonly stopped: boolean;
  /** Tokens the text encodes to. */
  readonly tokens: number;
  /** Identity of the adapted model the session now runs (the base's when no step ran). */
  readonly modelId: string;
  readonly memory: MemoryReport;
}

export interface WorkerApi {
  init(port: MessagePort): Promise<{ readonly runId: string }>;
  load(args: LoadArgs): Promise<LoadResult>;
  generate(args: GenerateArgs): Promise<GenerateResult>;
  chat(args: ChatArgs): Promise<ChatResult>;
  /** Ends the generation in progress after the token being produced (its call resolves with stop 'stopped'). */
  stop(): Promise<boolean>;
  memory(): Promise<MemoryReport | undefined>;
  /** Fault seam: loses the GPU device now (provider.faults.loseDevice()). */
  loseDevice(): Promise<void>;
  /** Test seam (see ForceToken); applies to the next chat or generate call only. */
  forceToken(force: ForceToken): Promise<void>;
  /** After a device loss: a new provider, runtime and session over the same model. */
  reload(): Promise<LoadResult>;
  /** Trains the loaded llama2.c model on a text (progress as 'teach-progress' events); the session then runs the trained weights. */
  teach(args: TeachArgs): Promise<TeachResult>;
  /** Ends the training in progress after the step being run (its call resolves with stopped: true). */
  stopTeach(): Promise<boolean>;
}

export type Method = keyof WorkerApi;

export interface Request {
  readonly id: number;
  readonly method: Method;
  readonly args: readonly unknown[];
}

export type Reply = { readonly id: number; readonly ok: true; readonly value: unknown } | { readonly id: number; readonly ok: false; readonly error: WireError };

export type WorkerEvent =
  | { readonly event: 'progress'; readonly file: 'model' | 'tokenizer'; readonly loaded: number; readonly total: number | undefined }
  | { readonly event: 'device-lost'; readonly reason: string; readonly message: string }
  | { readonly event: 'teach-progress'; readonly step: number; readonly steps: number; readonly loss: number };

/** One line of the token stream (newline-delimited JSON). */
export type TokenRecord =
  | { readonly k: 'token'; readonly id: number; readonly text: string; readonly pos: number }
  | { readonly k: 'end'; readonly generated: number };
