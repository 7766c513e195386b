// The demo's generation worker. It owns everything GPU: the provider (WebGPU, or the host provider when
// this browser has none), the runtime, the parsed model and the TextSession; a GPUDevice cannot leave the
// thread that made it, so none of it ever crosses to the page. It reads the model and tokenizer from
// data-plane blobs the page cached in OPFS, streams generated tokens to the page over a data-plane
// stream (newline-delimited JSON), keeps prompt caches in OPFS, and answers the page's calls
// (demo/protocol.ts). Uses only tenon's public API, from the built ES module bundle.
import {
  TextSession,
  connectSession,
  createHostProvider,
  createRuntime,
  createWebGPUProvider,
  isTenonError,
  parseLlamaModel,
  parseTokenizer,
  readModelSource,
  sha256Hex,
  writeStream,
} from 'tenon';
import type { HostProvider, LlamaModelFile, Session, StreamWriter, Tokenizer, WebGPUProvider } from 'tenon';
import type { GenerateArgs, GenerateResult, LoadArgs, LoadResult, MemoryReport, Reply, Request, TokenRecord, WireError, WorkerApi, WorkerEvent } from './protocol.js';

/** Longest KV cache the demo allocates (positions); the model's own seq_len when smaller. */
const MAX_SEQ = 1024;
/** Prompt-lookup speculation settings for the "speculative decoding" toggle. */
const SPECULATION = { lookahead: 4, ngram: 2 } as const;
const CACHE_DIR = '/demo/prompt-caches';

type Provider = HostProvider | WebGPUProvider;

let store: Session | undefined;
let model: LlamaModelFile | undefined;
let tokenizer: Tokenizer | undefined;
let provider: Provider | undefined;
let session: TextSession | undefined;
let modelId = '';
let choice: LoadArgs['provider'] = 'auto';
/** Roots retained forever by devices lost earlier in this worker (they are never freed or reused). */
let lostRetained = 0;
const encoder = new TextEncoder();

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

async function makeProvider(): Promise<{ provider: Provider; fallback?: WireError }> {
  if (choice === 'host') return { provider: createHostProvider() };
  try {
    const gpu = await createWebGPUProvider();
    void gpu.lost.then((loss) => {
      // Only the provider in use matters; one replaced by a reload was lost (or destroyed) on purpose.
      if (gpu === provider) post({ event: 'device-lost', reason: loss.reason, message: loss.message });
    });
    return { provider: gpu };
  } catch (err) {
    if (isTenonError(err, 'ENOTSUP')) return { provider: createHostProvider(), fallback: toWire(err) };
    throw err;
  }
}

function memory(): MemoryReport | undefined {
  if (session === undefined || provider === undefined) return undefined;
  const r = session.report();
  const c = provider.counters();
  const lostNow = provider.kind === 'webgpu' && (provider as WebGPUProvider).lossObserved;
  return {
    provider: r.provider,
    weightBytes: r.weightBytes,
    stateBytes: r.stateBytes,
    activationBytes: r.activationBytes,
    liveRoots: c.liveRoots,
    liveBytes: c.liveBytes,
    retainedRoots: c.rootsRetainedForever,
    retainedAfterLoss: lostRetained + (lostNow ? c.rootsRetainedForever : 0),
    length: r.length,
    maxSeq: r.maxSeq,
  };
}

/** Ends the current session and provider (a lost device's retained roots are counted, never freed). */
function retire(): void {
  const oldSession = session;
  const old = provider;
  session = undefined;
  provider = undefined;
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
  const t = need(tokenizer, 'tokenizer');
  const made = await makeProvider();
  provider = made.provider;
  const maxSeq = Math.min(m.config.seqLen, MAX_SEQ);
  session = await TextSession.create({ runtime: createRuntime(provider), model: m, tokenizer: t, maxSeq });
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
    ...(made.fallback === undefined ? {} : { fallback: made.fallback }),
    ...(adapter === undefined ? {} : { adapter }),
    config: { dim: c.dim, nLayers: c.nLayers, nHeads: c.nHeads, vocabSize: c.vocabSize, seqLen: c.seqLen },
    maxSeq,
    modelId,
    memory: memory()!,
  };
}

function record(r: TokenRecord | { k: 'error'; error: WireError }): Uint8Array {
  return encoder.encode(`${JSON.stringify(r)}\n`);
}

const api: WorkerApi = {
  async init(port) {
    store = await connectSession(port);
    return { runId: store.runId };
  },

  async load(args) {
    const files = need(store, 'data-plane session');
    choice = args.provider;
    const progress = (file: 'model' | 'tokenizer') => (p: { loaded: number; total: number | undefined }) =>
      post({ event: 'progress', file, loaded: p.loaded, total: p.total });
    const modelBytes = await readModelSource(files, args.modelPath, { onProgress: progress('model') });
    const tokenizerBytes = await readModelSource(files, args.tokenizerPath, { onProgress: progress('tokenizer') });
    // Parse both before touching the running session: a bad file leaves the current model in place.
    const nextModel = parseLlamaModel(modelBytes);
    const nextTokenizer = parseTokenizer(tokenizerBytes, nextModel.config.vocabSize);
    retire();
    model = nextModel;
    tokenizer = nextTokenizer;
    return start();
  },

  async generate(args: GenerateArgs): Promise<GenerateResult> {
    const files = need(store, 'data-plane session');
    const t0 = performance.now();
    // The page is already waiting on the read end; open the write end first so it never waits in vain.
    const out: StreamWriter = await writeStream(files, args.streamPath);
    try {
      const s = need(session, 'session');
      const tok = need(tokenizer, 'tokenizer');
      const ids = tok.encode(args.prompt, { bos: true });
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
      const generated: number[] = [];
      let first: number | undefined;
      for await (const t of s.generate(ids, { maxTokens: args.maxTokens, temperature: args.temperature, seed: 42, ...(speculate ? { speculative: SPECULATION } : {}) })) {
        first ??= performance.now();
        generated.push(t.token);
        await out.write(record({ k: 'token', id: t.token, text: t.text, pos: t.position }));
      }
      const decodeMs = first === undefined ? 0 : performance.now() - first;
      await out.write(record({ k: 'end', generated: generated.length }));
      await out.close();
      if (cache.mode === 'miss' && cachePath !== undefined) {
        await s.savePromptCache(files, cachePath, { length: ids.length });
        cache = { ...cache, saved: true };
      }
      const after = s.speculationStats();
      return {
        promptTokens: ids.length,
        generated: generated.length,
        ids: generated,
        cache,
        ...(speculate ? { speculation: { passes: after.passes - before.passes, drafted: after.drafted - before.drafted, accepted: after.accepted - before.accepted } } : {}),
        firstTokenMs: first === undefined ? undefined : first - t0,
        decodeMs,
        memory: memory()!,
      };
    } catch (err) {
      // The failure travels in the reply; the stream ends cleanly with an error record, so the page can
      // tell a failed generation (clean end) from a dead worker (the stream resets).
      if (out.descriptor.info().state === 'open') {
        await out.write(record({ k: 'error', error: toWire(err) })).catch(() => undefined);
        await out.close().catch(() => undefined);
      }
      throw err;
    }
  },

  async memory() {
    return memory();
  },

  async loseDevice() {
    const p = need(provider, 'provider');
    if (p.kind !== 'webgpu') throw Object.assign(new Error('the host provider has no device to lose'), { name: 'NotSupported' });
    (p as WebGPUProvider).faults.loseDevice();
  },

  async reload() {
    retire();
    return start();
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
