// The inference demo's page. It is the data plane's authority (models and prompt caches live in OPFS
// under the plane "tenon-demo"), fetches model files into blobs (or reuses the blobs a previous visit
// left), and drives a generation worker (demo/generate.worker.ts) that owns the GPU. Tokens arrive over
// a data-plane stream; the worker's replies carry timings, cache and speculation effects and memory.
// Models: a picker (demo/models.ts) with stories260K embedded in the demo (the offline default, loaded at
// once), llama2.c and GGUF instruct models by URL, and any URL or picked file. A download streams into a
// staged blob (cacheModelSource: a file of any size never becomes one buffer; the worker reads the model
// through the blob by ranges); progress shows bytes and rate. GGUF files carry their own vocabulary (the
// tokenizer field is then ignored); llama2.c checkpoints need their tokenizer file. A model with a chat
// template gets the chat view (messages, a streamed reply, stop), the others the completion view.
// Failure handling: a worker that dies mid-stream shows up as ECONNRESET on the stream (the data plane
// observes its loss), and the page starts a new worker that reloads the model from OPFS; a lost GPU
// device fences the session until "Reload model" builds a new provider and session; no WebGPU means the
// host provider; a bad model file shows its TenonError code. Uses only tenon's public API (the built
// ES module bundle, imported by package name).
// Fault and test seams for the e2e lane live on window.tenonDemo.faults; they use the same production
// paths (worker.terminate(), provider.faults.loseDevice(), the session's logits observer).
import { cacheModelSource, connectSession, createDataPlane, findCachedModelSource, isTenonError, readStream } from 'tenon';
import type { CachedModelSource, ModelSource, ModelSourceProgress, Session } from 'tenon';
import { CUSTOM_MODEL, EMBEDDED_MODEL, MODEL_CHOICES, modelChoice } from './models.js';
import type {
  ChatArgs,
  ChatMessage,
  ChatResult,
  ForceToken,
  GenerateArgs,
  GenerateResult,
  LoadArgs,
  LoadResult,
  MemoryReport,
  Method,
  Reply,
  StopReason,
  TeachArgs,
  TeachResult,
  TokenRecord,
  WireError,
  WorkerApi,
  WorkerEvent,
} from './protocol.js';

const PLANE = 'tenon-demo';
const ACCESS = { runId: 'demo', read: ['/'], write: ['/'] };
/** The token stream between the worker (writer) and this page (reader); a fresh incarnation per run. */
const STREAM = '/demo/tokens';
/** "GGUF": the first bytes of a GGUF file (anything else is taken for a llama2.c checkpoint). */
const GGUF_MAGIC = 'GGUF';
/** Bounds of the max-tokens field. */
const MAX_TOKENS_LIMIT = 1024;
const DEFAULT_MAX_TOKENS = 64;
/** Errors of these operations mean the file is not a model tenon can read. */
const MODEL_FILE_OPS = new Set(['session.parseLlamaModel', 'session.parseTokenizer', 'gguf.parse', 'model.load', 'model.tokenizerFromGguf', 'lowering.geometry']);

type State = 'starting' | 'idle' | 'loading' | 'ready' | 'generating' | 'teaching' | 'device-lost' | 'recovering' | 'error';

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T;
const query = new URLSearchParams(location.search);

/** A failure reported by the worker (or the stream), with its TenonError fields. */
class DemoError extends Error {
  readonly wire: WireError;
  constructor(wire: WireError) {
    super(wire.message);
    this.wire = wire;
  }
}

function wireOf(err: unknown): WireError {
  if (err instanceof DemoError) return err.wire;
  if (isTenonError(err)) return { code: err.code, message: err.message, op: err.op, ...(err.reason === undefined ? {} : { reason: err.reason }) };
  return { code: 'EIO', message: err instanceof Error ? err.message : String(err) };
}

function describe(w: WireError): string {
  return `${w.code}${w.reason === undefined ? '' : ` ${w.reason}`}: ${w.message}`;
}

// ---------------------------------------------------------------------------------------------------
// The generation worker, as a small request/reply client.

class GenerationWorker {
  readonly worker: Worker;
  #next = 1;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  #dead = false;

  constructor(onEvent: (e: WorkerEvent) => void) {
    this.worker = new Worker(new URL('./generate.worker.ts', import.meta.url), { type: 'module' });
    this.worker.onmessage = (e: MessageEvent<Reply | WorkerEvent>) => {
      const m = e.data;
      if ('event' in m) return onEvent(m);
      const p = this.#pending.get(m.id);
      if (p === undefined) return;
      this.#pending.delete(m.id);
      if (m.ok) p.resolve(m.value);
      else p.reject(new DemoError(m.error));
    };
    this.worker.onerror = (e) => this.fail({ code: 'EIO', reason: 'worker-error', message: e.message || 'the worker failed' });
  }

  get dead(): boolean {
    return this.#dead;
  }

  call<M extends Method>(method: M, ...args: Parameters<WorkerApi[M]>): ReturnType<WorkerApi[M]> {
    if (this.#dead) return Promise.reject(new DemoError({ code: 'ECONNRESET', reason: 'worker-gone', message: 'the generation worker is gone' })) as ReturnType<WorkerApi[M]>;
    const id = this.#next++;
    const transfer = args.filter((a): a is MessagePort => a instanceof MessagePort);
    return new Promise<unknown>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, method, args }, transfer);
    }) as ReturnType<WorkerApi[M]>;
  }

  /** Ends the worker and fails every pending call with `error`. */
  fail(error: WireError): void {
    this.#dead = true;
    this.worker.terminate();
    for (const p of this.#pending.values()) p.reject(new DemoError(error));
    this.#pending.clear();
  }
}

// ---------------------------------------------------------------------------------------------------
// Page state

let store: Session;
let worker: GenerationWorker;
let state: State = 'starting';
let loaded: LoadArgs | undefined;
let runs = 0;
/** The conversation of the chat view (the system prompt is added per call from its field). */
let conversation: ChatMessage[] = [];
const faults = { killAfter: 0, loseAfter: 0 };

interface RunReport {
  readonly ids: number[];
  readonly text: string;
  readonly firstTokenMs: number | undefined;
  readonly tokensPerSecond: number | undefined;
  readonly result?: GenerateResult;
  readonly error?: WireError;
}

interface ChatReport {
  readonly ids: number[];
  readonly text: string;
  readonly firstTokenMs: number | undefined;
  readonly tokensPerSecond: number | undefined;
  readonly result?: ChatResult;
  readonly error?: WireError;
}

const demo = {
  state: (): State => state,
  lastLoad: undefined as (LoadResult & { fromCache: boolean }) | undefined,
  lastRun: undefined as RunReport | undefined,
  lastChat: undefined as ChatReport | undefined,
  /** Token ids of every streamed token of the current chat reply so far (for tests that watch the stream). */
  streamed: [] as number[],
  /** The teach panel: losses of the training in progress (or the last one), step by step, and its result. */
  teachLosses: [] as number[],
  lastTeach: undefined as { result?: TeachResult; error?: WireError } | undefined,
  faults: {
    /** Terminates the generation worker when the n-th token of the next run arrives. */
    killWorkerAfterTokens(n: number): void {
      faults.killAfter = n;
    },
    /** Loses the GPU device (provider.faults.loseDevice() in the worker) when the n-th token arrives. */
    loseDeviceAfterTokens(n: number): void {
      faults.loseAfter = n;
    },
    loseDevice: (): Promise<void> => worker.call('loseDevice'),
    /** Makes the next run's n-th token `token` (the worker's logits observer raises it to the top). */
    forceToken: (force: ForceToken): Promise<void> => worker.call('forceToken', force),
  },
};
(window as unknown as { tenonDemo: typeof demo }).tenonDemo = demo;

function setState(next: State): void {
  state = next;
  document.body.dataset['state'] = next;
  $('state').textContent = `(${next})`;
  const busy = next === 'loading' || next === 'generating' || next === 'teaching' || next === 'recovering' || next === 'starting';
  $<HTMLButtonElement>('load').disabled = busy;
  $<HTMLButtonElement>('generate').disabled = next !== 'ready';
  $<HTMLButtonElement>('send').disabled = next !== 'ready';
  $<HTMLButtonElement>('new-chat').disabled = next !== 'ready';
  $<HTMLButtonElement>('stop').disabled = next !== 'generating';
  $<HTMLButtonElement>('teach').disabled = next !== 'ready';
  $<HTMLButtonElement>('teach-stop').disabled = next !== 'teaching';
  $<HTMLButtonElement>('teach-base').disabled = next !== 'ready' || !adapted;
}

function message(kind: 'info' | 'warn' | 'error' | 'none', text = ''): void {
  const m = $('message');
  m.className = kind === 'none' ? '' : kind;
  m.textContent = text;
  if (kind === 'none') delete m.dataset['code'];
}

function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1 << 30) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  return `${(n / (1 << 30)).toFixed(2)} GiB`;
}

function fill(id: string, rows: readonly (readonly [string, string])[]): void {
  const dl = $(id);
  dl.replaceChildren();
  for (const [k, v] of rows) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = v;
    dl.append(dt, dd);
  }
}

function showMemory(m: MemoryReport | undefined): void {
  if (m === undefined) return;
  fill('memory', [
    ['weights', fmtBytes(m.weightBytes)],
    ['KV state', `${fmtBytes(m.stateBytes)} (${m.length} of ${m.maxSeq} positions used)`],
    ['activations', fmtBytes(m.activationBytes)],
    ['live roots', `${m.liveRoots} (${fmtBytes(m.liveBytes)})`],
    ['retained after loss', `${m.retainedAfterLoss} roots`],
    ...(m.hostKernels === undefined
      ? []
      : [['host kernels', `${m.hostKernels.kind} (${m.hostKernels.wasmDispatches} WebAssembly, ${m.hostKernels.scalarDispatches} scalar dispatches)`] as [string, string]]),
  ]);
  $('memory').dataset['liveRoots'] = String(m.liveRoots);
  if (m.hostKernels === undefined) {
    delete $('memory').dataset['hostKernels'];
    delete $('memory').dataset['wasmDispatches'];
  } else {
    $('memory').dataset['hostKernels'] = m.hostKernels.kind;
    $('memory').dataset['wasmDispatches'] = String(m.hostKernels.wasmDispatches);
  }
  $('memory').dataset['retainedAfterLoss'] = String(m.retainedAfterLoss);
  const body = $('weight-kinds');
  body.replaceChildren();
  for (const k of m.kinds) {
    const row = document.createElement('tr');
    row.dataset['kind'] = k.kind;
    row.dataset['deviceBytes'] = String(k.deviceBytes);
    for (const v of [k.kind, String(k.tensors), fmtBytes(k.fileBytes), fmtBytes(k.deviceBytes)]) {
      const td = document.createElement('td');
      td.textContent = v;
      row.append(td);
    }
    body.append(row);
  }
  $('weight-kinds').dataset['kinds'] = m.kinds.map((k) => k.kind).join(',');
}

function showAdapter(info: LoadResult): void {
  const rows: [string, string][] = [['provider', info.provider === 'webgpu' ? 'WebGPU' : 'host (CPU)'], ['chosen', `${info.selection.requested}: ${info.selection.message}`]];
  if (info.adapter !== undefined) {
    rows.push(['vendor', info.adapter.vendor || '–'], ['architecture', info.adapter.architecture || '–'], ['description', info.adapter.description || '–']);
    rows.push(['fallback adapter', info.adapter.isFallbackAdapter === undefined ? 'unknown' : String(info.adapter.isFallbackAdapter)]);
  }
  rows.push(['cross-origin isolated', String(crossOriginIsolated)]);
  const m = info.model;
  rows.push(['model', `${m.name ?? 'unnamed'} (${m.format === 'gguf' ? 'GGUF' : `llama2.c ${m.format}`}, ${m.architecture})`]);
  rows.push(['shape', `dim ${m.dim}, ${m.layers} layers, ${m.heads} heads (${m.kvHeads} KV), vocab ${m.vocabSize}, context ${info.maxSeq} of ${m.contextLength}`]);
  rows.push(['tokenizer', `${m.tokenizer}${m.chat ? ', chat template' : ''}`]);
  rows.push(['file', `${fmtBytes(m.fileBytes)} in OPFS, read in ${m.reads.count} ranges of at most ${fmtBytes(m.reads.largest)}`]);
  fill('adapter', rows);
  $('adapter').dataset['provider'] = info.provider;
  $('adapter').dataset['providerReason'] = info.selection.reason;
}

/** Bytes and rate of the download in progress (the rate over the whole download so far). */
let downloadStart: { file: string; at: number } | undefined;

function progress(file: 'model' | 'tokenizer', verb: string, p: { loaded: number; total: number | undefined }, withRate: boolean): void {
  const bar = $<HTMLProgressElement>('progress');
  if (p.total === undefined || p.total === 0) bar.removeAttribute('value');
  else {
    bar.max = p.total;
    bar.value = p.loaded;
  }
  let rate = '';
  if (withRate) {
    if (downloadStart?.file !== file || p.loaded === 0) downloadStart = { file, at: performance.now() };
    const seconds = (performance.now() - downloadStart.at) / 1000;
    if (seconds > 0 && p.loaded > 0) rate = ` at ${fmtBytes(Math.round(p.loaded / seconds))}/s`;
  }
  const status = $('load-status');
  status.textContent = `${verb} ${file}: ${fmtBytes(p.loaded)}${p.total === undefined ? '' : ` of ${fmtBytes(p.total)}`}${rate}`;
  status.dataset['loaded'] = String(p.loaded);
}

// ---------------------------------------------------------------------------------------------------
// The model picker

function pick(id: string): void {
  const choice = modelChoice(id);
  $<HTMLSelectElement>('model-pick').value = choice === undefined ? CUSTOM_MODEL : id;
  if (choice !== undefined) {
    $<HTMLInputElement>('model-url').value = choice.model;
    $<HTMLInputElement>('tokenizer-url').value = choice.tokenizer ?? '';
  }
  $('model-note').textContent = choice?.note ?? 'Any GGUF file (its vocabulary and chat template come with it), or a llama2.c checkpoint with its tokenizer file, by URL or picked from disk.';
}

function sourcesFromForm(): { model: ModelSource; tokenizer: ModelSource | undefined } {
  const mf = $<HTMLInputElement>('model-file').files?.[0];
  const tf = $<HTMLInputElement>('tokenizer-file').files?.[0];
  const tokenizerUrl = $<HTMLInputElement>('tokenizer-url').value.trim();
  return {
    model: mf ?? $<HTMLInputElement>('model-url').value.trim(),
    tokenizer: tf ?? (tokenizerUrl === '' ? undefined : tokenizerUrl),
  };
}

// ---------------------------------------------------------------------------------------------------
// Loading

function startWorker(): GenerationWorker {
  return new GenerationWorker((e) => {
    if (e.event === 'progress') progress(e.file, e.file === 'model' ? 'uploading weights of' : 'reading from OPFS:', e, false);
    else if (e.event === 'device-lost') deviceLost({ code: 'ENODEV', reason: 'device-lost', message: `${e.reason}: ${e.message}` });
    else if (e.event === 'teach-progress') teachProgress(e.step, e.steps, e.loss);
  });
}

async function attachWorker(): Promise<void> {
  worker = startWorker();
  const port = plane.createSessionPort(ACCESS);
  await worker.call('init', port);
}

/** Whether the blob at `path` starts with the GGUF magic (reads four bytes). */
async function isGgufBlob(path: string): Promise<boolean> {
  const d = await store.open(path, { access: 'read', kind: 'blob' });
  try {
    const head = new Uint8Array(GGUF_MAGIC.length);
    const n = await d.read(head);
    return n === GGUF_MAGIC.length && new TextDecoder().decode(head) === GGUF_MAGIC;
  } finally {
    await d.close();
  }
}

function showView(chat: boolean): void {
  $('chat-view').hidden = !chat;
  $('completion-view').hidden = chat;
  document.body.dataset['view'] = chat ? 'chat' : 'completion';
}

async function load(sources: { model: ModelSource; tokenizer: ModelSource | undefined }): Promise<void> {
  setState('loading');
  message('none');
  $('reload').hidden = true;
  try {
    const onProgress = (file: 'model' | 'tokenizer') => (p: ModelSourceProgress) => progress(file, 'downloading', p, true);
    if (sources.model === '') throw new DemoError({ code: 'EINVAL', reason: 'no-model', message: 'pick a model, or give a URL or file' });
    const m: CachedModelSource = await cacheModelSource(store, sources.model, { onProgress: onProgress('model') });
    const gguf = await isGgufBlob(m.path);
    let t: CachedModelSource | undefined;
    if (!gguf) {
      if (sources.tokenizer === undefined) throw new DemoError({ code: 'EINVAL', reason: 'no-tokenizer', op: 'demo.load', message: 'this is not a GGUF file, and a llama2.c checkpoint needs its tokenizer file (give its URL or pick it)' });
      t = await cacheModelSource(store, sources.tokenizer, { onProgress: onProgress('tokenizer') });
    }
    const picked = $<HTMLSelectElement>('provider').value;
    const provider = picked === 'host' || picked === 'webgpu' ? picked : 'auto';
    const args: LoadArgs = { modelPath: m.path, ...(t === undefined ? {} : { tokenizerPath: t.path }), provider };
    const info = await worker.call('load', args);
    loaded = args;
    const fromCache = m.fromCache && (t?.fromCache ?? true);
    demo.lastLoad = { ...info, fromCache };
    const status = $('load-status');
    status.dataset['source'] = fromCache ? 'opfs' : 'network';
    const files = `${fmtBytes(m.length)} model${t === undefined ? '' : `, ${fmtBytes(t.length)} tokenizer`}`;
    status.textContent = fromCache
      ? `Loaded from OPFS (cached by an earlier visit; nothing downloaded): ${files}.`
      : `Downloaded and stored in OPFS (${files}); the next visit loads from there.`;
    const bar = $<HTMLProgressElement>('progress');
    bar.max = 1;
    bar.value = 1;
    showAdapter(info);
    showMemory(info.memory);
    newChat();
    showView(info.model.chat);
    $('teach-view').hidden = info.model.format === 'gguf';
    resetTeach('–');
    if (info.fallback !== undefined) {
      message('warn', `WebGPU is not available in this browser (${describe(info.fallback)}). Running on tenon's host provider (CPU) instead: same results, slower.`);
    } else if (info.selection.reason === 'fallback-adapter' || info.selection.reason === 'software-adapter') {
      message('info', `Running on tenon's host provider (CPU): this browser's WebGPU adapter is emulated on the CPU (${info.selection.reason}), and the host provider is faster there. Pick "WebGPU (forced)" to run on it anyway.`);
    }
    setState('ready');
  } catch (err) {
    const w = wireOf(err);
    const bad = w.op !== undefined && MODEL_FILE_OPS.has(w.op);
    message('error', bad ? `This is not a valid llama2.c model or tokenizer file, nor a GGUF model tenon can run (${describe(w)}).` : `Could not load the model (${describe(w)}).`);
    $('message').dataset['code'] = w.code;
    $('load-status').textContent = 'not loaded';
    setState('error');
  }
}

// ---------------------------------------------------------------------------------------------------
// Streaming (shared by the completion and chat views)

interface Streamed<R> {
  readonly ids: number[];
  readonly text: string;
  readonly firstTokenMs: number | undefined;
  readonly tokensPerSecond: number | undefined;
  readonly call: PromiseSettledResult<R>;
  readonly workerGone: WireError | undefined;
  readonly streamError: WireError | undefined;
}

/**
 * Starts `start` in the worker and reads the token stream it writes until it ends, calling `onText`
 * with the text so far. A stream that breaks before the worker answered means the worker is gone: its
 * call is failed at once (it would never be answered).
 */
async function streamRun<R>(start: (w: GenerationWorker) => Promise<R>, onText: (text: string, ids: readonly number[]) => void): Promise<Streamed<R>> {
  const ids: number[] = [];
  let text = '';
  let firstAt: number | undefined;
  let lastAt: number | undefined;
  let streamError: WireError | undefined;
  const w = worker;
  // A fresh incarnation: a writer left behind by a dead worker can never feed this run.
  await store.ensureStream(STREAM);
  await store.replaceStream(STREAM);
  const opened = new AbortController();
  const t0 = performance.now();
  let settled = false;
  let workerGone: WireError | undefined;
  const call = start(w).finally(() => {
    settled = true;
  });
  call.catch(() => opened.abort());
  const reading = (async () => {
    const reader = await readStream(store, STREAM, { signal: opened.signal });
    const decoder = new TextDecoder();
    let pending = '';
    for (;;) {
      const chunk = await reader.read();
      if (chunk === null) break;
      pending += decoder.decode(chunk, { stream: true });
      for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
        const r = JSON.parse(pending.slice(0, nl)) as TokenRecord | { k: 'error'; error: WireError };
        pending = pending.slice(nl + 1);
        if (r.k === 'token') {
          const now = performance.now();
          firstAt ??= now;
          lastAt = now;
          ids.push(r.id);
          text += r.text;
          onText(text, ids);
          if (faults.killAfter > 0 && ids.length === faults.killAfter) {
            faults.killAfter = 0;
            w.worker.terminate();
          }
          if (faults.loseAfter > 0 && ids.length === faults.loseAfter) {
            faults.loseAfter = 0;
            void w.call('loseDevice').catch(() => undefined);
          }
        } else if (r.k === 'error') streamError = r.error;
      }
    }
    await reader.close();
  })().catch((err: unknown) => {
    // The stream broke while the worker had not answered: the worker is gone (terminated or crashed).
    if (!settled) {
      workerGone = wireOf(err);
      w.fail(workerGone);
    }
    throw err;
  });
  const [callResult] = await Promise.allSettled([call, reading]);
  const tokensPerSecond = firstAt !== undefined && lastAt !== undefined && lastAt > firstAt ? ((ids.length - 1) * 1000) / (lastAt - firstAt) : undefined;
  return { ids, text, firstTokenMs: firstAt === undefined ? undefined : firstAt - t0, tokensPerSecond, call: callResult, workerGone, streamError };
}

/** What the page does when a run failed; true when it handled a failure. */
async function runFailed(s: Streamed<unknown>, statsIds: readonly string[]): Promise<boolean> {
  if (s.workerGone === undefined && s.call.status === 'fulfilled') return false;
  for (const id of statsIds) $(id).textContent = '–';
  if (s.workerGone !== undefined) {
    await recover(`The generation worker stopped in the middle of the stream (${describe(s.workerGone)}) after ${s.ids.length} tokens.`);
    return true;
  }
  const e = wireOf((s.call as PromiseRejectedResult).reason);
  if (e.code === 'ENODEV' || e.outcome === 'indeterminate') deviceLost(e);
  else {
    message('error', `Generation failed (${describe(e)}${e.phase === undefined ? '' : `, in phase ${e.phase}`}).`);
    $('message').dataset['code'] = e.code;
    setState('ready');
  }
  void refreshMemory();
  return true;
}

function failureOf(s: Streamed<unknown>): WireError | undefined {
  if (s.workerGone !== undefined) return s.workerGone;
  return s.call.status === 'rejected' ? wireOf(s.call.reason) : undefined;
}

/** The max-tokens field `id` (completion or chat), clamped. */
function maxTokens(id: string): number {
  return Math.max(1, Math.min(MAX_TOKENS_LIMIT, Number($<HTMLInputElement>(id).value) || DEFAULT_MAX_TOKENS));
}

function temperature(id: string): number {
  return Math.max(0, Number($<HTMLInputElement>(id).value) || 0);
}

function stopText(stop: StopReason): string {
  return stop === 'end-of-generation' ? 'the model ended its turn' : stop === 'max-tokens' ? 'token limit reached' : 'stopped';
}

// ---------------------------------------------------------------------------------------------------
// Completion view

const COMPLETION_STATS = ['ttft', 'tps', 'cache-effect', 'spec-effect'];

async function generate(): Promise<void> {
  setState('generating');
  message('none');
  const run = ++runs;
  const prompt = $<HTMLTextAreaElement>('prompt').value;
  const args: GenerateArgs = {
    streamPath: STREAM,
    prompt,
    maxTokens: maxTokens('max-tokens'),
    temperature: temperature('temperature'),
    promptCache: $<HTMLInputElement>('prompt-cache').checked,
    speculative: $<HTMLInputElement>('speculative').checked,
  };
  $('prompt-echo').textContent = prompt;
  const out = $('generated');
  out.textContent = '';
  for (const id of COMPLETION_STATS) $(id).textContent = '…';
  const s = await streamRun((w) => w.call('generate', args), (text) => {
    out.textContent = text;
  });
  const error = failureOf(s);
  if (error !== undefined) demo.lastRun = { ids: s.ids, text: s.text, firstTokenMs: s.firstTokenMs, tokensPerSecond: s.tokensPerSecond, error };
  if (await runFailed(s, COMPLETION_STATS)) return;
  const result = (s.call as PromiseFulfilledResult<GenerateResult>).value;
  if (s.streamError !== undefined) message('warn', `The stream ended with an error record: ${describe(s.streamError)}`);
  demo.lastRun = { ids: s.ids, text: s.text, firstTokenMs: s.firstTokenMs, tokensPerSecond: s.tokensPerSecond, result };
  $('ttft').textContent = s.firstTokenMs === undefined ? '–' : `${s.firstTokenMs.toFixed(0)} ms (worker: ${result.firstTokenMs?.toFixed(0) ?? '–'} ms)`;
  $('tps').textContent = s.tokensPerSecond === undefined ? '–' : `${s.tokensPerSecond.toFixed(1)} tokens/s over ${s.ids.length} tokens`;
  const c = result.cache;
  const cacheText =
    c.mode === 'off'
      ? `off: prefilled all ${c.prefilled} prompt tokens`
      : c.mode === 'hit'
        ? `hit: ${c.reused} of ${result.promptTokens} prompt tokens restored from OPFS, ${c.prefilled} prefilled`
        : `miss: prefilled ${c.prefilled} prompt tokens${c.saved ? ', saved the prompt cache to OPFS for next time' : ''}`;
  $('cache-effect').textContent = cacheText;
  $('cache-effect').dataset['mode'] = c.mode;
  const sp = result.speculation;
  $('spec-effect').textContent =
    sp === undefined
      ? args.speculative
        ? 'off (needs temperature 0)'
        : 'off'
      : `${sp.accepted} of ${sp.drafted} drafted tokens accepted in ${sp.passes} verification passes (output identical to greedy)`;
  const row = document.createElement('tr');
  for (const v of [
    String(run),
    c.mode,
    sp === undefined ? 'off' : `${sp.accepted}/${sp.drafted}`,
    s.firstTokenMs === undefined ? '–' : `${s.firstTokenMs.toFixed(0)} ms`,
    s.tokensPerSecond === undefined ? '–' : s.tokensPerSecond.toFixed(1),
    String(s.ids.length),
  ]) {
    const td = document.createElement('td');
    td.textContent = v;
    row.append(td);
  }
  $('runs').prepend(row);
  showMemory(result.memory);
  setState('ready');
}

// ---------------------------------------------------------------------------------------------------
// Chat view

const CHAT_STATS = ['chat-stats'];

function bubble(role: ChatMessage['role'], text: string): HTMLElement {
  const div = document.createElement('div');
  div.className = `msg ${role}`;
  div.dataset['role'] = role;
  const who = document.createElement('span');
  who.className = 'who';
  who.textContent = role;
  const body = document.createElement('span');
  body.className = 'body';
  body.textContent = text;
  div.append(who, body);
  $('messages').append(div);
  div.scrollIntoView({ block: 'end' });
  return body;
}

function newChat(): void {
  conversation = [];
  $('messages').replaceChildren();
  $('chat-stats').textContent = '–';
}

async function sendChat(): Promise<void> {
  const input = $<HTMLTextAreaElement>('chat-input');
  const text = input.value.trim();
  if (text === '') return;
  setState('generating');
  message('none');
  input.value = '';
  conversation.push({ role: 'user', content: text });
  bubble('user', text);
  const reply = bubble('assistant', '');
  reply.parentElement!.dataset['streaming'] = 'true';
  const system = $<HTMLInputElement>('system-prompt').value.trim();
  const args: ChatArgs = {
    streamPath: STREAM,
    messages: [...(system === '' ? [] : [{ role: 'system' as const, content: system }]), ...conversation],
    maxTokens: maxTokens('chat-max-tokens'),
    temperature: temperature('chat-temperature'),
  };
  $('chat-stats').textContent = '…';
  demo.streamed = [];
  const s = await streamRun((w) => w.call('chat', args), (t, ids) => {
    reply.textContent = t;
    demo.streamed = [...ids];
  });
  delete reply.parentElement!.dataset['streaming'];
  // The reply so far stays in the conversation (a stopped or failed reply too), so the next turn follows it.
  conversation.push({ role: 'assistant', content: s.text });
  const error = failureOf(s);
  if (error !== undefined) demo.lastChat = { ids: s.ids, text: s.text, firstTokenMs: s.firstTokenMs, tokensPerSecond: s.tokensPerSecond, error };
  if (await runFailed(s, CHAT_STATS)) return;
  const result = (s.call as PromiseFulfilledResult<ChatResult>).value;
  if (s.streamError !== undefined) message('warn', `The stream ended with an error record: ${describe(s.streamError)}`);
  demo.lastChat = { ids: s.ids, text: s.text, firstTokenMs: s.firstTokenMs, tokensPerSecond: s.tokensPerSecond, result };
  reply.parentElement!.dataset['stop'] = result.stop;
  $('rendered-prompt').textContent = result.renderedPrompt;
  $('chat-stats').textContent = [
    `${s.ids.length} tokens (${stopText(result.stop)})`,
    `prompt ${result.promptTokens} tokens, ${result.reused} reused from earlier turns`,
    s.firstTokenMs === undefined ? 'no tokens' : `first token ${s.firstTokenMs.toFixed(0)} ms`,
    s.tokensPerSecond === undefined ? '' : `${s.tokensPerSecond.toFixed(1)} tokens/s`,
  ]
    .filter((x) => x !== '')
    .join(' · ');
  $('chat-stats').dataset['stop'] = result.stop;
  showMemory(result.memory);
  setState('ready');
}

async function stopGeneration(): Promise<void> {
  if (state !== 'generating' || worker.dead) return;
  await worker.call('stop').catch(() => undefined);
}

async function refreshMemory(): Promise<void> {
  if (worker.dead) return;
  showMemory(await worker.call('memory').catch(() => undefined));
}

// ---------------------------------------------------------------------------------------------------
// Teach it: fine-tune the loaded llama2.c model in the worker, with a live loss plot

/** Plot size in SVG units (the viewBox of #loss-plot). */
const PLOT_WIDTH = 300;
const PLOT_HEIGHT = 100;
/** Tokens per training window. */
const TEACH_SEQ_LEN = 16;
const TEACH_DEFAULT_STEPS = 100;
const TEACH_MAX_STEPS = 2000;
const TEACH_DEFAULT_LR = 3e-3;
/** The session runs trained weights (Back to the base model reloads the base). */
let adapted = false;

function drawLoss(losses: readonly number[], steps: number): void {
  const top = Math.max(...losses, Number.MIN_VALUE);
  const dx = PLOT_WIDTH / Math.max(1, steps - 1);
  $('loss-line').setAttribute('points', losses.map((l, i) => `${(i * dx).toFixed(2)},${(PLOT_HEIGHT - (l / top) * PLOT_HEIGHT).toFixed(2)}`).join(' '));
  $('loss-plot').dataset['points'] = String(losses.length);
}

/** Back on the base model: no trained weights, an empty plot. */
function resetTeach(status: string): void {
  adapted = false;
  delete $('teach-view').dataset['adapted'];
  clearPlot(status);
}

/** An empty plot (a new training, or the base model); whether the session runs trained weights is unchanged. */
function clearPlot(status: string): void {
  demo.teachLosses = [];
  $('loss-line').setAttribute('points', '');
  $('loss-plot').dataset['points'] = '0';
  $('teach-status').textContent = status;
  delete $('teach-status').dataset['step'];
  delete $('teach-status').dataset['done'];
}

function teachProgress(step: number, steps: number, loss: number): void {
  demo.teachLosses.push(loss);
  drawLoss(demo.teachLosses, steps);
  const first = demo.teachLosses[0]!;
  $('teach-status').textContent = `step ${step} of ${steps}: loss ${loss.toFixed(3)} (started at ${first.toFixed(3)})`;
  $('teach-status').dataset['step'] = String(step);
}

async function teach(): Promise<void> {
  setState('teaching');
  message('none');
  clearPlot('starting…');
  const rawSteps = Number($<HTMLInputElement>('teach-steps').value);
  const steps = Number.isInteger(rawSteps) ? Math.max(1, Math.min(TEACH_MAX_STEPS, rawSteps)) : TEACH_DEFAULT_STEPS;
  const rawLr = Number($<HTMLInputElement>('teach-lr').value);
  const args: TeachArgs = { text: $<HTMLTextAreaElement>('teach-text').value, steps, lr: rawLr > 0 && Number.isFinite(rawLr) ? rawLr : TEACH_DEFAULT_LR, seqLen: TEACH_SEQ_LEN };
  try {
    const result = await worker.call('teach', args);
    demo.lastTeach = { result };
    // No step run (stopped at once): the session keeps the weights it had.
    if (result.steps > 0) {
      adapted = true;
      $('teach-view').dataset['adapted'] = result.modelId;
    }
    const first = result.losses[0];
    const last = result.losses[result.losses.length - 1];
    $('teach-status').textContent =
      first === undefined || last === undefined
        ? 'Stopped before the first step: the base model is unchanged.'
        : `${result.stopped ? 'Stopped after' : 'Trained'} ${result.steps} steps on ${result.tokens} tokens: loss ${first.toFixed(3)} → ${last.toFixed(3)}. Generate now runs the trained weights (model ${result.modelId.slice(0, 12)}…).`;
    $('teach-status').dataset['done'] = String(result.steps);
    showMemory(result.memory);
    setState('ready');
  } catch (err) {
    const w = wireOf(err);
    demo.lastTeach = { error: w };
    message('error', `Training failed (${describe(w)}).`);
    $('message').dataset['code'] = w.code;
    $('teach-status').textContent = `failed: ${describe(w)}`;
    if (w.code === 'ENODEV') deviceLost(w);
    else setState(worker.dead ? 'error' : 'ready');
  }
}

async function stopTeach(): Promise<void> {
  if (state !== 'teaching' || worker.dead) return;
  await worker.call('stopTeach').catch(() => undefined);
}

async function backToBase(): Promise<void> {
  setState('recovering');
  try {
    const info = await worker.call('reload');
    showMemory(info.memory);
    resetTeach('Back on the base model.');
    setState('ready');
  } catch (err) {
    message('error', `Reloading the base model failed (${describe(wireOf(err))}).`);
    setState('error');
  }
}

// ---------------------------------------------------------------------------------------------------
// Recovery

function deviceLost(e: WireError): void {
  if (state === 'device-lost' || state === 'recovering') return;
  message('error', `The GPU device was lost (${describe(e)}). The session is fenced: nothing it held is reused. Reload the model to continue on a new device.`);
  $('message').dataset['code'] = 'ENODEV';
  $('reload').hidden = false;
  setState('device-lost');
}

async function reloadModel(): Promise<void> {
  setState('recovering');
  try {
    const info = worker.dead ? undefined : await worker.call('reload');
    if (info === undefined) return recover('The generation worker is gone.');
    showAdapter(info);
    showMemory(info.memory);
    $('reload').hidden = true;
    resetTeach('–');
    message('info', 'Model reloaded on a new device: a new provider, runtime and session over the same weights (nothing downloaded).');
    setState('ready');
  } catch (err) {
    message('error', `Reloading failed (${describe(wireOf(err))}).`);
    setState('device-lost');
  }
}

async function recover(why: string): Promise<void> {
  setState('recovering');
  message('error', `${why} Starting a new worker and reloading the model from OPFS…`);
  $('message').dataset['code'] = 'ECONNRESET';
  try {
    await attachWorker();
    if (loaded !== undefined) {
      const info = await worker.call('load', loaded);
        showAdapter(info);
      showMemory(info.memory);
      resetTeach('–');
    }
    message('warn', `${why} Recovered: a new worker loaded the model from OPFS. Generate again.`);
    setState(loaded === undefined ? 'idle' : 'ready');
  } catch (err) {
    message('error', `${why} Recovery failed (${describe(wireOf(err))}).`);
    setState('error');
  }
}

// ---------------------------------------------------------------------------------------------------
// Start

let plane: Awaited<ReturnType<typeof createDataPlane>>;

function fillPicker(): void {
  const select = $<HTMLSelectElement>('model-pick');
  for (const c of MODEL_CHOICES) select.append(new Option(c.label, c.id));
  select.append(new Option('Another URL or a file…', CUSTOM_MODEL));
  select.addEventListener('change', () => pick(select.value));
}

async function main(): Promise<void> {
  setState('starting');
  fillPicker();
  const named = query.has('model');
  if (named) {
    pick(CUSTOM_MODEL);
    $<HTMLInputElement>('model-url').value = query.get('model')!;
    $<HTMLInputElement>('tokenizer-url').value = query.get('tokenizer') ?? '';
  } else pick(query.get('pick') ?? EMBEDDED_MODEL);
  const forced = query.get('provider');
  if (forced === 'host' || forced === 'webgpu') $<HTMLSelectElement>('provider').value = forced;
  if (query.has('prompt')) $<HTMLTextAreaElement>('prompt').value = query.get('prompt')!;
  if (query.has('maxTokens')) {
    $<HTMLInputElement>('max-tokens').value = query.get('maxTokens')!;
    $<HTMLInputElement>('chat-max-tokens').value = query.get('maxTokens')!;
  }
  if (query.has('promptCache')) $<HTMLInputElement>('prompt-cache').checked = query.get('promptCache') === '1';
  if (query.has('speculative')) $<HTMLInputElement>('speculative').checked = query.get('speculative') === '1';
  if (query.has('teachSteps')) $<HTMLInputElement>('teach-steps').value = query.get('teachSteps')!;
  showView(false);
  if (!crossOriginIsolated) {
    message('error', 'This page is not cross-origin isolated, so SharedArrayBuffer is unavailable and tenon\'s data plane cannot run. Serve it with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp (npm run demo does).');
    setState('error');
    return;
  }
  try {
    plane = await createDataPlane({ name: PLANE });
  } catch (err) {
    const w = wireOf(err);
    message('error', w.code === 'EBUSY' ? 'The demo is open in another tab of this browser; close it and reload this one.' : `Could not open the data plane (${describe(w)}).`);
    setState('error');
    return;
  }
  store = await connectSession(plane.createSessionPort(ACCESS));
  await attachWorker();
  $('load').addEventListener('click', () => void load(sourcesFromForm()));
  $('generate').addEventListener('click', () => void generate());
  $('send').addEventListener('click', () => void sendChat());
  $('chat-input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && state === 'ready') {
      e.preventDefault();
      void sendChat();
    }
  });
  $('stop').addEventListener('click', () => void stopGeneration());
  $('new-chat').addEventListener('click', () => newChat());
  $('reload').addEventListener('click', () => void reloadModel());
  $('teach').addEventListener('click', () => void teach());
  $('teach-stop').addEventListener('click', () => void stopTeach());
  $('teach-base').addEventListener('click', () => void backToBase());
  setState('idle');
  // Load at once: the embedded model (1 MB, offline), a model the address names, or one an earlier
  // visit cached. A model picked by URL that is not cached yet waits for "Load model" (it may be large).
  const sources = sourcesFromForm();
  const embedded = !named && $<HTMLSelectElement>('model-pick').value === EMBEDDED_MODEL;
  const cached = named || embedded ? undefined : await findCachedModelSource(store, sources.model);
  if (named || embedded || cached !== undefined) await load(sources);
  else $('load-status').textContent = 'Press "Load model" to download the model into OPFS (once; later visits load it from there).';
}

void main().catch((err: unknown) => {
  message('error', `The demo failed to start (${describe(wireOf(err))}).`);
  setState('error');
});
