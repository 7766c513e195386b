// The inference demo's page. It is the data plane's authority (models and prompt caches live in OPFS
// under the plane "tenon-demo"), fetches model files into blobs (or reuses the blobs a previous visit
// left), and drives a generation worker (demo/generate.worker.ts) that owns the GPU. Tokens arrive over
// a data-plane stream; the worker's replies carry timings, cache and speculation effects and memory.
// Failure handling: a worker that dies mid-stream shows up as ECONNRESET on the stream (the data plane
// observes its loss), and the page starts a new worker that reloads the model from OPFS; a lost GPU
// device fences the session until "Reload model" builds a new provider and session; no WebGPU means the
// host provider; a bad model file shows its TenonError code. Uses only tenon's public API (the built
// ES module bundle, imported by package name).
// Fault seams for the e2e lane live on window.tenonDemo.faults; they use the same production paths
// (worker.terminate(), provider.faults.loseDevice()).
import { cacheModelSource, connectSession, createDataPlane, findCachedModelSource, isTenonError, readStream } from 'tenon';
import type { CachedModelSource, ModelSource, ModelSourceProgress, Session } from 'tenon';
import type { GenerateArgs, GenerateResult, LoadResult, MemoryReport, Method, Reply, TokenRecord, WireError, WorkerApi, WorkerEvent } from './protocol.js';

const DEFAULT_MODEL = 'https://huggingface.co/karpathy/tinyllamas/resolve/main/stories15M.bin';
const DEFAULT_TOKENIZER = 'https://raw.githubusercontent.com/karpathy/llama2.c/master/tokenizer.bin';
const PLANE = 'tenon-demo';
const ACCESS = { runId: 'demo', read: ['/'], write: ['/'] };
/** The token stream between the worker (writer) and this page (reader); a fresh incarnation per run. */
const STREAM = '/demo/tokens';

type State = 'starting' | 'idle' | 'loading' | 'ready' | 'generating' | 'device-lost' | 'recovering' | 'error';

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
let loaded: { modelPath: string; tokenizerPath: string; provider: 'auto' | 'host' } | undefined;
let runs = 0;
const faults = { killAfter: 0, loseAfter: 0 };

interface RunReport {
  readonly ids: number[];
  readonly text: string;
  readonly firstTokenMs: number | undefined;
  readonly tokensPerSecond: number | undefined;
  readonly result?: GenerateResult;
  readonly error?: WireError;
}

const demo = {
  state: (): State => state,
  lastLoad: undefined as (LoadResult & { fromCache: boolean }) | undefined,
  lastRun: undefined as RunReport | undefined,
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
  },
};
(window as unknown as { tenonDemo: typeof demo }).tenonDemo = demo;

function setState(next: State): void {
  state = next;
  document.body.dataset['state'] = next;
  $('state').textContent = `(${next})`;
  const busy = next === 'loading' || next === 'generating' || next === 'recovering' || next === 'starting';
  $<HTMLButtonElement>('load').disabled = busy;
  $<HTMLButtonElement>('generate').disabled = next !== 'ready';
}

function message(kind: 'info' | 'warn' | 'error' | 'none', text = ''): void {
  const m = $('message');
  m.className = kind === 'none' ? '' : kind;
  m.textContent = text;
}

function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1 << 20)).toFixed(1)} MiB`;
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
  ]);
  $('memory').dataset['liveRoots'] = String(m.liveRoots);
  $('memory').dataset['retainedAfterLoss'] = String(m.retainedAfterLoss);
}

function showAdapter(info: LoadResult): void {
  const rows: [string, string][] = [['provider', info.provider === 'webgpu' ? 'WebGPU' : 'host (CPU)']];
  if (info.adapter !== undefined) {
    rows.push(['vendor', info.adapter.vendor || '–'], ['architecture', info.adapter.architecture || '–'], ['description', info.adapter.description || '–']);
    rows.push(['fallback adapter', info.adapter.isFallbackAdapter === undefined ? 'unknown' : String(info.adapter.isFallbackAdapter)]);
  }
  rows.push(['cross-origin isolated', String(crossOriginIsolated)]);
  rows.push(['model', `dim ${info.config.dim}, ${info.config.nLayers} layers, ${info.config.nHeads} heads, vocab ${info.config.vocabSize}, context ${info.maxSeq}`]);
  fill('adapter', rows);
  $('adapter').dataset['provider'] = info.provider;
}

function progress(file: 'model' | 'tokenizer', verb: string, p: { loaded: number; total: number | undefined }): void {
  const bar = $<HTMLProgressElement>('progress');
  if (p.total === undefined || p.total === 0) bar.removeAttribute('value');
  else {
    bar.max = p.total;
    bar.value = p.loaded;
  }
  $('load-status').textContent = `${verb} ${file}: ${fmtBytes(p.loaded)}${p.total === undefined ? '' : ` of ${fmtBytes(p.total)}`}`;
}

// ---------------------------------------------------------------------------------------------------
// Loading

function sourcesFromForm(): { model: ModelSource; tokenizer: ModelSource } {
  const mf = $<HTMLInputElement>('model-file').files?.[0];
  const tf = $<HTMLInputElement>('tokenizer-file').files?.[0];
  return {
    model: mf ?? $<HTMLInputElement>('model-url').value.trim(),
    tokenizer: tf ?? $<HTMLInputElement>('tokenizer-url').value.trim(),
  };
}

function startWorker(): GenerationWorker {
  return new GenerationWorker((e) => {
    if (e.event === 'progress') progress(e.file, 'reading from OPFS:', e);
    else if (e.event === 'device-lost') deviceLost({ code: 'ENODEV', reason: 'device-lost', message: `${e.reason}: ${e.message}` });
  });
}

async function attachWorker(): Promise<void> {
  worker = startWorker();
  const port = plane.createSessionPort(ACCESS);
  await worker.call('init', port);
}

async function load(sources: { model: ModelSource; tokenizer: ModelSource }): Promise<void> {
  setState('loading');
  message('none');
  $('reload').hidden = true;
  try {
    const onProgress = (file: 'model' | 'tokenizer') => (p: ModelSourceProgress) => progress(file, 'downloading', p);
    const m: CachedModelSource = await cacheModelSource(store, sources.model, { onProgress: onProgress('model') });
    const t: CachedModelSource = await cacheModelSource(store, sources.tokenizer, { onProgress: onProgress('tokenizer') });
    const provider = $<HTMLSelectElement>('provider').value === 'host' ? 'host' : 'auto';
    const info = await worker.call('load', { modelPath: m.path, tokenizerPath: t.path, provider });
    loaded = { modelPath: m.path, tokenizerPath: t.path, provider };
    const fromCache = m.fromCache && t.fromCache;
    demo.lastLoad = { ...info, fromCache };
    const status = $('load-status');
    status.dataset['source'] = fromCache ? 'opfs' : 'network';
    status.textContent = fromCache
      ? `Loaded from OPFS (cached by an earlier visit; nothing downloaded): ${fmtBytes(m.length)} model, ${fmtBytes(t.length)} tokenizer.`
      : `Downloaded and stored in OPFS (${fmtBytes(m.length)} model, ${fmtBytes(t.length)} tokenizer); the next visit loads from there.`;
    const bar = $<HTMLProgressElement>('progress');
    bar.max = 1;
    bar.value = 1;
    showAdapter(info);
    showMemory(info.memory);
    if (info.fallback !== undefined) {
      message('warn', `WebGPU is not available in this browser (${describe(info.fallback)}). Running on tenon's host provider (CPU) instead: same results, slower.`);
    }
    setState('ready');
  } catch (err) {
    const w = wireOf(err);
    const bad = w.op === 'session.parseLlamaModel' || w.op === 'session.parseTokenizer';
    message('error', bad ? `This is not a valid llama2.c model or tokenizer file (${describe(w)}).` : `Could not load the model (${describe(w)}).`);
    $('message').dataset['code'] = w.code;
    $('load-status').textContent = 'not loaded';
    setState('error');
  }
}

// ---------------------------------------------------------------------------------------------------
// Generation

async function generate(): Promise<void> {
  setState('generating');
  message('none');
  const run = ++runs;
  const prompt = $<HTMLTextAreaElement>('prompt').value;
  const args: GenerateArgs = {
    streamPath: STREAM,
    prompt,
    maxTokens: Math.max(1, Math.min(1024, Number($<HTMLInputElement>('max-tokens').value) || 64)),
    temperature: Math.max(0, Number($<HTMLInputElement>('temperature').value) || 0),
    promptCache: $<HTMLInputElement>('prompt-cache').checked,
    speculative: $<HTMLInputElement>('speculative').checked,
  };
  $('prompt-echo').textContent = prompt;
  const out = $('generated');
  out.textContent = '';
  for (const id of ['ttft', 'tps', 'cache-effect', 'spec-effect']) $(id).textContent = '…';
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
  const call = w.call('generate', args).finally(() => {
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
          out.textContent = text;
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
    // Its call will never be answered, so fail it now.
    if (!settled) {
      workerGone = wireOf(err);
      w.fail(workerGone);
    }
    throw err;
  });
  const [callResult] = await Promise.allSettled([call, reading]);
  const tokensPerSecond = firstAt !== undefined && lastAt !== undefined && lastAt > firstAt ? ((ids.length - 1) * 1000) / (lastAt - firstAt) : undefined;
  const firstTokenMs = firstAt === undefined ? undefined : firstAt - t0;

  if (workerGone !== undefined || callResult.status === 'rejected') {
    for (const id of ['ttft', 'tps', 'cache-effect', 'spec-effect']) $(id).textContent = '–';
  }
  if (workerGone !== undefined) {
    const cause = workerGone;
    demo.lastRun = { ids, text, firstTokenMs, tokensPerSecond, error: cause };
    await recover(`The generation worker stopped in the middle of the stream (${describe(cause)}) after ${ids.length} tokens.`);
    return;
  }
  if (callResult.status === 'rejected') {
    const e = wireOf(callResult.reason);
    demo.lastRun = { ids, text, firstTokenMs, tokensPerSecond, error: e };
    if (e.code === 'ENODEV' || e.outcome === 'indeterminate') deviceLost(e);
    else {
      message('error', `Generation failed (${describe(e)}${e.phase === undefined ? '' : `, in phase ${e.phase}`}).`);
      $('message').dataset['code'] = e.code;
      setState('ready');
    }
    void refreshMemory();
    return;
  }
  const result = callResult.value;
  if (streamError !== undefined) message('warn', `The stream ended with an error record: ${describe(streamError)}`);
  demo.lastRun = { ids, text, firstTokenMs, tokensPerSecond, result };
  $('ttft').textContent = firstTokenMs === undefined ? '–' : `${firstTokenMs.toFixed(0)} ms (worker: ${result.firstTokenMs?.toFixed(0) ?? '–'} ms)`;
  $('tps').textContent = tokensPerSecond === undefined ? '–' : `${tokensPerSecond.toFixed(1)} tokens/s over ${ids.length} tokens`;
  const c = result.cache;
  const cacheText =
    c.mode === 'off'
      ? `off: prefilled all ${c.prefilled} prompt tokens`
      : c.mode === 'hit'
        ? `hit: ${c.reused} of ${result.promptTokens} prompt tokens restored from OPFS, ${c.prefilled} prefilled`
        : `miss: prefilled ${c.prefilled} prompt tokens${c.saved ? ', saved the prompt cache to OPFS for next time' : ''}`;
  $('cache-effect').textContent = cacheText;
  $('cache-effect').dataset['mode'] = c.mode;
  const s = result.speculation;
  $('spec-effect').textContent =
    s === undefined
      ? args.speculative
        ? 'off (needs temperature 0)'
        : 'off'
      : `${s.accepted} of ${s.drafted} drafted tokens accepted in ${s.passes} verification passes (output identical to greedy)`;
  const row = document.createElement('tr');
  for (const v of [
    String(run),
    c.mode,
    s === undefined ? 'off' : `${s.accepted}/${s.drafted}`,
    firstTokenMs === undefined ? '–' : `${firstTokenMs.toFixed(0)} ms`,
    tokensPerSecond === undefined ? '–' : tokensPerSecond.toFixed(1),
    String(ids.length),
  ]) {
    const td = document.createElement('td');
    td.textContent = v;
    row.append(td);
  }
  $('runs').prepend(row);
  showMemory(result.memory);
  setState('ready');
}

async function refreshMemory(): Promise<void> {
  if (worker.dead) return;
  showMemory(await worker.call('memory').catch(() => undefined));
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

async function main(): Promise<void> {
  setState('starting');
  $<HTMLInputElement>('model-url').value = query.get('model') ?? DEFAULT_MODEL;
  $<HTMLInputElement>('tokenizer-url').value = query.get('tokenizer') ?? DEFAULT_TOKENIZER;
  if (query.get('provider') === 'host') $<HTMLSelectElement>('provider').value = 'host';
  if (query.has('prompt')) $<HTMLTextAreaElement>('prompt').value = query.get('prompt')!;
  if (query.has('maxTokens')) $<HTMLInputElement>('max-tokens').value = query.get('maxTokens')!;
  if (query.has('promptCache')) $<HTMLInputElement>('prompt-cache').checked = query.get('promptCache') === '1';
  if (query.has('speculative')) $<HTMLInputElement>('speculative').checked = query.get('speculative') === '1';
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
  $('reload').addEventListener('click', () => void reloadModel());
  setState('idle');
  // Load at once when the address names the files, or when an earlier visit cached the default ones.
  const sources = sourcesFromForm();
  const named = query.has('model') || query.has('tokenizer');
  const cached = named ? undefined : await Promise.all([findCachedModelSource(store, sources.model), findCachedModelSource(store, sources.tokenizer)]);
  if (named || (cached !== undefined && cached.every((c) => c !== undefined))) await load(sources);
  else $('load-status').textContent = 'Press "Load model" to download the model into OPFS (stories15M: 58 MiB, once).';
}

void main().catch((err: unknown) => {
  message('error', `The demo failed to start (${describe(wireOf(err))}).`);
  setState('error');
});
