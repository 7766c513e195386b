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
  readonly modelPath: string;
  readonly tokenizerPath: string;
  /** 'auto': WebGPU when this browser has it, else the host provider. */
  readonly provider: 'auto' | 'host';
}

export interface AdapterSummary {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
  readonly isFallbackAdapter: boolean | undefined;
}

export interface LoadResult {
  readonly provider: 'webgpu' | 'host';
  /** Why the host provider runs although 'auto' was asked (no WebGPU here). */
  readonly fallback?: WireError;
  readonly adapter?: AdapterSummary;
  readonly config: { readonly dim: number; readonly nLayers: number; readonly nHeads: number; readonly vocabSize: number; readonly seqLen: number };
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

export interface GenerateResult {
  readonly promptTokens: number;
  readonly generated: number;
  readonly ids: readonly number[];
  /** Prompt-cache effect: off, loaded from OPFS (hit), or not there and saved afterwards (miss). */
  readonly cache: { readonly mode: 'off' | 'hit' | 'miss'; readonly reused: number; readonly prefilled: number; readonly saved: boolean; readonly path?: string };
  readonly speculation?: { readonly passes: number; readonly drafted: number; readonly accepted: number };
  /** Milliseconds in the worker from the call to the first token, and from the first to the last. */
  readonly firstTokenMs: number | undefined;
  readonly decodeMs: number;
  readonly memory: MemoryReport;
}

export interface MemoryReport {
  readonly provider: string;
  readonly weightBytes: number;
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
}

export interface WorkerApi {
  init(port: MessagePort): Promise<{ readonly runId: string }>;
  load(args: LoadArgs): Promise<LoadResult>;
  generate(args: GenerateArgs): Promise<GenerateResult>;
  memory(): Promise<MemoryReport | undefined>;
  /** Fault seam: loses the GPU device now (provider.faults.loseDevice()). */
  loseDevice(): Promise<void>;
  /** After a device loss: a new provider, runtime and session over the same parsed model. */
  reload(): Promise<LoadResult>;
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
  | { readonly event: 'device-lost'; readonly reason: string; readonly message: string };

/** One line of the token stream (newline-delimited JSON). */
export type TokenRecord =
  | { readonly k: 'token'; readonly id: number; readonly text: string; readonly pos: number }
  | { readonly k: 'end'; readonly generated: number };
