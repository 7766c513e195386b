// The demo's generation worker. It owns everything GPU: the provider (WebGPU, or the host provider when
// this browser has none), the runtime, the model description and the TextSession; a GPUDevice cannot
// leave the thread that made it, so none of it ever crosses to the page. The model file is a data-plane
// blob the page cached in OPFS: the worker keeps it open for read and loads it through the descriptor as
// a range source (GGUF or llama2.c; a file of any size is read range by range, never as one buffer); a
// llama2.c checkpoint's tokenizer blob is small and read whole. Generated tokens stream to the page over a
// data-plane stream (newline-delimited JSON); completions keep prompt caches in OPFS; chat replies render
// the model's template (session.chat). The page's calls and this worker's events are demo/protocol.ts.
// Ownership: `modelFile` (the open model descriptor) lives as long as `model` does: both are replaced
// together by the next successful load, after the old session and provider are retired. Uses only
// tenon's public API, from the built ES module bundle.
import {
  TenonError,
  TextSession,
  Trainer,
  connectSession,
  createProvider,
  createRuntime,
  descriptorSource,
  isTenonError,
  loadModel,
  parseLlamaModel,
  readModelSource,
  renderChat,
  sha256Hex,
  writeStream,
} from 'tenon';
import type { ByteSource, Descriptor, GeneratedToken, HostProvider, LoadedModel, MaterializeProgress, ProviderSelection, Runtime, Session, SessionObserver, StreamWriter, WebGPUProvider } from 'tenon';
import type {
  ChatArgs,
  ChatResult,
  ForceToken,
  GenerateArgs,
  GenerateResult,
  KindSummary,
  LoadArgs,
  LoadResult,
  MemoryReport,
  Reply,
  Request,
  StopReason,
  TeachArgs,
  TeachResult,
  TokenRecord,
  WireError,
  WorkerApi,
  WorkerEvent,
} from './protocol.js';

/** Longest KV cache the demo allocates (positions); the model's own context when smaller. */
const MAX_SEQ = 1024;
/** Prompt-lookup speculation settings for the "speculative decoding" toggle. */
const SPECULATION = { lookahead: 4, ngram: 2 } as const;
const CACHE_DIR = '/demo/prompt-caches';
/** Seed of the sampler (reproducible runs at temperature > 0). */
const SEED = 42;

type Provider = HostProvider | WebGPUProvider;

let store: Session | undefined;
let model: LoadedModel | undefined;
let modelFile: Descriptor | undefined;
/** Reads of the current model's blob (every range the model layer asked for). */
let modelReads = { count: 0, bytes: 0, largest: 0 };
let provider: Provider | undefined;
/** The runtime over `provider` (on the host provider: WebAssembly SIMD kernels where the engine has them). */
let runtime: Runtime | undefined;
let session: TextSession | undefined;
let modelId = '';
let choice: LoadArgs['provider'] = 'auto';
/** Roots retained forever by devices lost earlier in this worker (they are never freed or reused). */
let lostRetained = 0;
/** The generation in progress (the stop call aborts it). */
let running: AbortController | undefined;
/** Test seam: the next run's forced token, and how many logits the running generation has seen. */
let force: ForceToken | undefined;
let logitsSeen = 0;
const encoder = new TextEncoder();
/** The training in progress (the stopTeach call aborts it between steps). */
let teaching: AbortController | undefined;
/** Bounds of the teach panel's settings (the page clamps too; the worker refuses what is outside). */
const TEACH_MAX_STEPS = 2000;
const TEACH_SEED = 7;

function post(message: Reply | WorkerEvent): void {
  self.postMessage(message);
}

function toWire(err: unknown): WireError {
  if (isTenonError(err)) {
    const step = err as { phase?: string; outcome?: string };
    return {
      code: err.code,
      message: err.message,
      op: err.op,
      ...(err.reason === undefined ? {} : { reason: err.reason }),
      ...(typeof step.phase === 'string' ? { phase: step.phase } : {}),
      ...(typeof step.outcome === 'string' ? { outcome: step.outcome } : {}),
    };
  }
  return { code: 'EIO', message: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
}

function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw Object.assign(new Error(`${what} is not ready`), { name: 'NotReady' });
  return value;
}

/**
 * The session's logits observer: passes every row through, except the forced step of a run (test seam),
 * where the forced token gets the highest logit, so greedy and the stop rules see it as the model's choice.
 */
const observer: SessionObserver = {
  logits(logits) {
    logitsSeen++;
    if (force === undefined || logitsSeen !== force.step) return undefined;
    const out = Float32Array.from(logits);
    let max = -Infinity;
    for (const v of out) max = Math.max(max, v);
    out[force.token] = max + 1;
    force = undefined;
    return out;
  },
};

/**
 * The provider of the page's choice: createProvider's auto-selection (WebGPU on a hardware adapter, the host
 * provider on a software adapter such as SwiftShader or without WebGPU), or the one forced. `fallback` is
 * set when auto found no WebGPU at all, so the page says that WebGPU is missing.
 */
async function makeProvider(): Promise<{ provider: Provider; selection: ProviderSelection; fallback?: WireError }> {
  const made = await createProvider(choice);
  if (made.kind === 'webgpu') {
    const gpu = made as WebGPUProvider;
    void gpu.lost.then((loss) => {
      // Only the provider in use matters; one replaced by a reload was lost (or destroyed) on purpose.
      if (gpu === provider) post({ event: 'device-lost', reason: loss.reason, message: loss.message });
    });
  }
  const { reason, message } = made.selection;
  const missing = reason === 'no-webgpu' || reason === 'no-adapter';
  return { provider: made, selection: made.selection, ...(missing ? { fallback: { code: 'ENOTSUP', reason, message } } : {}) };
}

/** Weights by lowering kind: tensor counts and file bytes from the model, device bytes from the session. */
function kinds(m: LoadedModel, s: TextSession): KindSummary[] {
  const byKind = new Map<string, { tensors: number; fileBytes: number }>();
  for (const t of m.tensors) {
    const k = byKind.get(t.kind.name) ?? { tensors: 0, fileBytes: 0 };
    k.tensors++;
    k.fileBytes += t.geometry.byteLength;
    byKind.set(t.kind.name, k);
  }
  const device = s.report().weightBytesByKind as Readonly<Record<string, number | undefined>>;
  return [...byKind].map(([kind, k]) => ({ kind, tensors: k.tensors, fileBytes: k.fileBytes, deviceBytes: device[kind] ?? 0 }));
}

function memory(): MemoryReport | undefined {
  if (session === undefined || provider === undefined || model === undefined) return undefined;
  const r = session.report();
  const c = provider.counters();
  const lostNow = provider.kind === 'webgpu' && (provider as WebGPUProvider).lossObserved;
  return {
    provider: r.provider,
    weightBytes: r.weightBytes,
    kinds: kinds(model, session),
    stateBytes: r.stateBytes,
    activationBytes: r.activationBytes,
    liveRoots: c.liveRoots,
    liveBytes: c.liveBytes,
    retainedRoots: c.rootsRetainedForever,
    retainedAfterLoss: lostRetained + (lostNow ? c.rootsRetainedForever : 0),
    length: r.length,
    maxSeq: r.maxSeq,
    ...hostKernels(),
  };
}

function hostKernels(): Pick<MemoryReport, 'hostKernels'> {
  const k = runtime?.hostKernels();
  return k === undefined ? {} : { hostKernels: { kind: k.kind, wasmDispatches: k.wasmDispatches, scalarDispatches: k.scalarDispatches } };
}

/** Ends the current session and provider (a lost device's retained roots are counted, never freed). */
function retire(): void {
  const oldSession = session;
  const old = provider;
  session = undefined;
  provider = undefined;
  runtime = undefined;
  try {
    oldSession?.dispose();
  } catch {
    // A session on a lost device may refuse to dispose cleanly; its roots are retained by the kernel.
  }
  if (old?.kind === 'webgpu') {
    const gpu = old as WebGPUProvider;
    if (gpu.lossObserved) lostRetained += gpu.counters().rootsRetainedForever;
    gpu.destroy();
  }
}

async function start(): Promise<LoadResult> {
  const m = need(model, 'model');
  const made = await makeProvider();
  provider = made.provider;
  const maxSeq = Math.min(m.config.contextLength, MAX_SEQ);
  const onProgress = (p: MaterializeProgress): void => post({ event: 'progress', file: 'model', loaded: p.bytesDone, total: p.bytesTotal });
  runtime = createRuntime(provider);
  session = await TextSession.create({ runtime, model: m, maxSeq, observer, onProgress });
  modelId = (await session.identity()).modelId;
  const c = m.config;
  let adapter: LoadResult['adapter'];
  if (provider.kind === 'webgpu') {
    const info = (provider as WebGPUProvider).adapterInfo;
    adapter = {
      vendor: info.vendor,
      architecture: info.architecture,
      device: info.device,
      description: info.description,
      isFallbackAdapter: (info as GPUAdapterInfo & { isFallbackAdapter?: boolean }).isFallbackAdapter,
    };
  }
  return {
    provider: provider.kind === 'webgpu' ? 'webgpu' : 'host',
    selection: { requested: made.selection.requested, reason: made.selection.reason, message: made.selection.message },
    ...(made.fallback === undefined ? {} : { fallback: made.fallback }),
    ...(adapter === undefined ? {} : { adapter }),
    model: {
      format: m.format,
      architecture: m.architecture.id,
      name: m.name,
      chat: m.chatTemplate !== undefined,
      tokenizer: m.tokenizer.model === 'gpt2' ? `byte-level BPE (${m.tokenizer.pre ?? 'default'})` : 'SentencePiece',
      dim: c.dim,
      layers: c.layers,
      heads: c.heads,
      kvHeads: c.kvHeads,
      vocabSize: c.vocabSize,
      contextLength: c.contextLength,
      fileBytes: m.source?.size ?? m.storedBytes,
      reads: { ...modelReads },
    },
    maxSeq,
    modelId,
    memory: memory()!,
  };
}

function record(r: TokenRecord | { k: 'error'; error: WireError }): Uint8Array {
  return encoder.encode(`${JSON.stringify(r)}\n`);
}

/** `inner`, counting every read into `stats`. */
function counted(inner: ByteSource, stats: { count: number; bytes: number; largest: number }): ByteSource {
  return {
    size: inner.size,
    ...(inner.name === undefined ? {} : { name: inner.name }),
    async read(offset, length) {
      const bytes = await inner.read(offset, length);
      stats.count++;
      stats.bytes += length;
      stats.largest = Math.max(stats.largest, length);
      return bytes;
    },
  };
}

/** Closes the model blob a replaced model was read from. */
async function closeModelFile(d: Descriptor | undefined): Promise<void> {
  if (d !== undefined && d.info().state === 'open') await d.close().catch(() => undefined);
}

interface Streamed {
  readonly ids: number[];
  readonly promptIds: readonly number[];
  readonly stop: StopReason;
  readonly firstAt: number | undefined;
  readonly lastAt: number | undefined;
}

/**
 * Runs one generation (a completion or a chat reply) into the token stream at `streamPath`: opens the
 * write end first (the page is already waiting on the read end), writes a record per token and an end
 * record, and closes; a failure writes an error record and closes cleanly, so the page tells a failed run
 * (clean end) from a dead worker (the stream resets). The stop call ends the run between tokens.
 */
async function stream(streamPath: string, maxTokens: number, run: (signal: AbortSignal) => AsyncGenerator<GeneratedToken, void, undefined>): Promise<Streamed> {
  const files = need(store, 'data-plane session');
  const s = need(session, 'session');
  const out: StreamWriter = await writeStream(files, streamPath);
  const controller = new AbortController();
  running = controller;
  logitsSeen = 0;
  try {
    const ids: number[] = [];
    let promptIds: readonly number[] | undefined;
    let firstAt: number | undefined;
    let lastAt: number | undefined;
    let stop: StopReason = 'end-of-generation';
    try {
      for await (const t of run(controller.signal)) {
        // The committed history before the first token's position is the prompt as the session ran it.
        promptIds ??= s.tokens.slice(0, t.position);
        const now = performance.now();
        firstAt ??= now;
        lastAt = now;
        ids.push(t.token);
        await out.write(record({ k: 'token', id: t.token, text: t.text, pos: t.position }));
      }
    } catch (err) {
      if (!(isTenonError(err, 'ECANCELED') && controller.signal.aborted)) throw err;
      stop = 'stopped';
    }
    if (stop !== 'stopped' && ids.length >= maxTokens) stop = 'max-tokens';
    await out.write(record({ k: 'end', generated: ids.length }));
    await out.close();
    return { ids, promptIds: promptIds ?? s.tokens, stop, firstAt, lastAt };
  } catch (err) {
    if (out.descriptor.info().state === 'open') {
      await out.write(record({ k: 'error', error: toWire(err) })).catch(() => undefined);
      await out.close().catch(() => undefined);
    }
    throw err;
  } finally {
    running = undefined;
    force = undefined;
  }
}

const api: WorkerApi = {
  async init(port) {
    store = await connectSession(port);
    return { runId: store.runId };
  },

  async load(args) {
    const files = need(store, 'data-plane session');
    choice = args.provider;
    // The model blob stays open while the model is in use: its tensors are read by range from it.
    const d = await files.open(args.modelPath, { access: 'read', kind: 'blob' });
    let next: LoadedModel;
    const reads = { count: 0, bytes: 0, largest: 0 };
    try {
      const tokenizer =
        args.tokenizerPath === undefined
          ? undefined
          : await readModelSource(files, args.tokenizerPath, { onProgress: (p) => post({ event: 'progress', file: 'tokenizer', loaded: p.loaded, total: p.total }) });
      // Described (and checked) before touching the running session: a bad file leaves the current model in place.
      next = await loadModel(counted(descriptorSource(d), reads), tokenizer === undefined ? {} : { tokenizer });
    } catch (err) {
      await closeModelFile(d);
      throw err;
    }
    retire();
    const old = modelFile;
    model = next;
    modelFile = d;
    modelReads = reads;
    await closeModelFile(old);
    return start();
  },

  async generate(args: GenerateArgs): Promise<GenerateResult> {
    const files = need(store, 'data-plane session');
    const s = need(session, 'session');
    const t0 = performance.now();
    const ids = s.tokenizer.encode(args.prompt);
    let cache: GenerateResult['cache'] = { mode: 'off', reused: 0, prefilled: ids.length, saved: false };
    let cachePath: string | undefined;
    // Without a prompt cache every run prefills its whole prompt; with one, a cache saved in OPFS by an
    // earlier run (this visit or an earlier one) restores the prompt's KV rows instead.
    await s.reset();
    if (args.promptCache) {
      const key = (await sha256Hex(new Uint8Array(Int32Array.from(ids).buffer))).slice(0, 16);
      cachePath = `${CACHE_DIR}/${modelId.slice(0, 16)}-${key}.bin`;
      try {
        const manifest = await s.loadPromptCache(files, cachePath, { prompt: ids });
        // generate() re-runs the last prompt token to get its logits; everything before it is reused.
        const reused = Math.min(manifest.tokens.length, ids.length - 1);
        cache = { mode: 'hit', reused, prefilled: ids.length - reused, saved: false, path: cachePath };
      } catch (err) {
        if (!isTenonError(err) || !['ENOENT', 'EINVAL'].includes(err.code)) throw err;
        cache = { mode: 'miss', reused: 0, prefilled: ids.length, saved: false, path: cachePath };
      }
    }
    const speculate = args.speculative && args.temperature === 0;
    const before = s.speculationStats();
    const options = { maxTokens: args.maxTokens, temperature: args.temperature, seed: SEED, ...(speculate ? { speculative: SPECULATION } : {}) };
    const r = await stream(args.streamPath, args.maxTokens, (signal) => s.generate(ids, { ...options, signal }));
    if (cache.mode === 'miss' && cachePath !== undefined) {
      await s.savePromptCache(files, cachePath, { length: ids.length });
      cache = { ...cache, saved: true };
    }
    const after = s.speculationStats();
    return {
      promptTokens: ids.length,
      promptIds: ids,
      generated: r.ids.length,
      ids: r.ids,
      stop: r.stop,
      cache,
      ...(speculate ? { speculation: { passes: after.passes - before.passes, drafted: after.drafted - before.drafted, accepted: after.accepted - before.accepted } } : {}),
      firstTokenMs: r.firstAt === undefined ? undefined : r.firstAt - t0,
      decodeMs: r.firstAt === undefined || r.lastAt === undefined ? 0 : r.lastAt - r.firstAt,
      memory: memory()!,
    };
  },

  async chat(args: ChatArgs): Promise<ChatResult> {
    const s = need(session, 'session');
    const t0 = performance.now();
    // Shown to the user; session.chat renders the same template with the same variables.
    const renderedPrompt = renderChat(s.tokenizer, { messages: args.messages, add_generation_prompt: true });
    const held = s.tokens;
    const r = await stream(args.streamPath, args.maxTokens, (signal) => s.chat(args.messages, { maxTokens: args.maxTokens, temperature: args.temperature, seed: SEED, signal }));
    let reused = 0;
    while (reused < held.length && reused < r.promptIds.length && held[reused] === r.promptIds[reused]) reused++;
    return {
      promptTokens: r.promptIds.length,
      promptIds: r.promptIds,
      renderedPrompt,
      reused,
      generated: r.ids.length,
      ids: r.ids,
      stop: r.stop,
      firstTokenMs: r.firstAt === undefined ? undefined : r.firstAt - t0,
      decodeMs: r.firstAt === undefined || r.lastAt === undefined ? 0 : r.lastAt - r.firstAt,
      memory: memory()!,
    };
  },

  async stop() {
    if (running === undefined) return false;
    running.abort();
    return true;
  },

  async memory() {
    return memory();
  },

  async loseDevice() {
    const p = need(provider, 'provider');
    if (p.kind !== 'webgpu') throw Object.assign(new Error('the host provider has no device to lose'), { name: 'NotSupported' });
    (p as WebGPUProvider).faults.loseDevice();
  },

  async forceToken(f) {
    force = f;
  },

  async reload() {
    retire();
    return start();
  },

  /**
   * Fine-tunes the loaded llama2.c model on `args.text` (Trainer, full fine-tune, AdamW) on the session's
   * runtime, one step at a time with a 'teach-progress' event per step and a turn of the event loop in
   * between (so a stopTeach call is seen); then the trained weights (Trainer.exportModel) replace the
   * session's model: generate runs them, under their own model identity (prompt caches are per model).
   * The trainer is disposed either way; `model` (the base) stays, and reload returns to it.
   */
  async teach(args: TeachArgs): Promise<TeachResult> {
    const op = 'demo.teach';
    const m = need(model, 'model');
    const r = need(runtime, 'runtime');
    const d = need(modelFile, 'model file');
    if (teaching !== undefined || running !== undefined) throw new TenonError('EBUSY', 'a run is in progress', { op, reason: 'busy' });
    if (m.format === 'gguf') throw new TenonError('ENOTSUP', 'teaching runs on llama2.c checkpoints (such as stories260K) only', { op, reason: 'not-llama2c' });
    if (typeof args.text !== 'string' || args.text.trim() === '') throw new TenonError('EINVAL', 'paste some text to learn from', { op, reason: 'no-text' });
    if (!Number.isInteger(args.steps) || args.steps < 1 || args.steps > TEACH_MAX_STEPS) throw new TenonError('EINVAL', `steps must be 1..${TEACH_MAX_STEPS}`, { op, reason: 'bad-param', ids: { param: 'steps' } });
    const tokens = m.tokenizer.encode(args.text);
    if (tokens.length < args.seqLen + 1) throw new TenonError('EINVAL', `the text is ${tokens.length} tokens; it needs at least ${args.seqLen + 1} (paste a few more sentences)`, { op, reason: 'text-too-short' });
    // The checkpoint is small enough to read whole (the trainer copies its weights onto the provider).
    const source = descriptorSource(d);
    const file = parseLlamaModel(await source.read(0, source.size));
    const controller = new AbortController();
    teaching = controller;
    const trainer = await Trainer.create(r, file, { seqLen: args.seqLen, seed: TEACH_SEED, optimizer: { lr: args.lr } }).catch((err: unknown) => {
      teaching = undefined;
      throw err;
    });
    const losses: number[] = [];
    try {
      while (losses.length < args.steps && !controller.signal.aborted) {
        const [loss] = await trainer.train(tokens, 1);
        losses.push(loss!);
        post({ event: 'teach-progress', step: losses.length, steps: args.steps, loss: loss! });
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      if (losses.length > 0) {
        const trained = await trainer.exportModel();
        const maxSeq = Math.min(m.config.contextLength, MAX_SEQ);
        const next = await TextSession.create({ runtime: r, model: trained, tokenizer: m.tokenizer, maxSeq, observer });
        const old = session;
        session = next;
        modelId = (await next.identity()).modelId;
        old?.dispose();
      }
    } finally {
      trainer.dispose();
      teaching = undefined;
    }
    return { steps: losses.length, losses, stopped: controller.signal.aborted, tokens: tokens.length, modelId, memory: memory()! };
  },

  async stopTeach() {
    if (teaching === undefined) return false;
    teaching.abort();
    return true;
  },
};

self.onmessage = (e: MessageEvent<Request>) => {
  const { id, method, args } = e.data;
  const call = api[method] as (...a: readonly unknown[]) => Promise<unknown>;
  call(...args).then(
    (value) => post({ id, ok: true, value }),
    (err: unknown) => post({ id, ok: false, error: toWire(err) }),
  );
};
