// TextSession: a llama model on tenon's runtime whose every step is a transaction (seed 003).
//
// State and ownership. The session owns a LlamaForward (weights, KV caches, activations in one group)
// and the committed history: `tokens` (length = committed positions). KV rows at and past the committed
// length are kept all-zero, so the state is exactly (tokens, KV rows 0..length-1).
// A step (prefill or decode) runs these phases in order: checkpoint (note the committed length), execute
// (submit the graph(s) and wait for proven completion), observe (observers see and may replace the final
// logits), publish (agree on the new length through the phase-agreement seam), complete (make it the
// committed state and record the outcome). Each step gets the next epoch. A failure in any phase zeroes
// the rows the step wrote and leaves tokens, length and KV bytes bit-identical to before; the error says
// which phase failed. If the outcome cannot be known (the device was lost mid-step) the session records
// `indeterminate` and fences every further step (ENODEV) until reset() proves a clean state again.
// Prediction lanes write rows past the committed length only; exchange commits a prefix of them, abandon
// zeroes them. Thread: the runtime's.
import { TenonError, isTenonError } from '../errors.js';
import { readBlob, writeBlob } from '../dataplane/index.js';
import type { Session as PlaneSession } from '../dataplane/index.js';
import type { Runtime } from '../submit/index.js';
import { modelIdentity } from '../model/index.js';
import type { ModelIdentity } from '../model/index.js';
import { PROMPT_CACHE_SCHEMA, decodePromptCache, encodePromptCache } from './prompt-cache.js';
import type { PromptCacheManifest } from './prompt-cache.js';
import { LlamaForward } from './llama.js';
import type { LlamaForwardOptions, StepResult } from './llama.js';
import type { LlamaModelFile } from '../model/index.js';
import { Sampler, argmaxOf } from './sampler.js';
import type { SamplerOptions } from './sampler.js';
import type { Tokenizer } from '../model/index.js';

export const STEP_PHASES = ['checkpoint', 'execute', 'observe', 'publish', 'complete'] as const;
export type StepPhase = (typeof STEP_PHASES)[number];
export type StepOutcome = 'committed' | 'aborted' | 'indeterminate';

/** A step that failed: the state is as it was before the step (unless `outcome` is indeterminate). */
export class StepError extends TenonError {
  readonly phase: StepPhase;
  readonly epoch: number;
  readonly outcome: Exclude<StepOutcome, 'committed'>;

  constructor(cause: unknown, phase: StepPhase, epoch: number, outcome: Exclude<StepOutcome, 'committed'>) {
    const base = isTenonError(cause) ? cause : undefined;
    super(base?.code ?? 'EIO', `step ${epoch} failed in ${phase}: ${base?.message ?? String(cause)}`, {
      op: 'session.step',
      reason: `${phase}-failed`,
      ids: { epoch, phase },
      cause,
    });
    this.name = 'StepError';
    this.phase = phase;
    this.epoch = epoch;
    this.outcome = outcome;
  }
}

export interface ObserveContext {
  readonly epoch: number;
  /** Committed length before this step, and the tokens the step processes. */
  readonly position: number;
  readonly tokens: readonly number[];
}

/** Optional hooks; `logits` may return replacement logits (an intervention) for the next-token choice. */
export interface SessionObserver {
  logits?(logits: Float32Array, context: ObserveContext): Float32Array | void;
}

/** Multi-rank agreement seam: every phase boundary of every step asks it. A single rank agrees with itself. */
export interface PhaseAgreement {
  agree(epoch: number, phase: StepPhase): boolean | Promise<boolean>;
}

const SINGLE_RANK: PhaseAgreement = { agree: () => true };

export interface StepReport {
  readonly epoch: number;
  /** Committed length after the step. */
  readonly length: number;
  readonly tokens: readonly number[];
  /** Final logits of the step (after any observer intervention). */
  readonly logits: Float32Array;
  /** Greedy choice from `logits`. */
  readonly argmax: number;
}

export interface Checkpoint {
  readonly length: number;
  readonly epoch: number;
}

export interface SessionReport {
  readonly provider: string;
  readonly residency: 'device' | 'host';
  readonly weightBytes: number;
  readonly stateBytes: number;
  readonly activationBytes: number;
  readonly length: number;
  readonly maxSeq: number;
  readonly epoch: number;
  readonly lastOutcome: StepOutcome | undefined;
}

export interface GenerateOptions extends SamplerOptions {
  /** Tokens to generate at most (default 64). */
  readonly maxTokens?: number;
  /** Stop after producing any of these ids (default: BOS = 1, as llama2.c does). The stop id is not yielded. */
  readonly stopTokens?: readonly number[];
  readonly signal?: AbortSignal;
  /** Prompt-lookup speculative decoding (greedy only): draft up to `lookahead` tokens from n-gram matches. */
  readonly speculative?: { readonly lookahead?: number; readonly ngram?: number };
}

export interface GeneratedToken {
  readonly token: number;
  /** Text completed by this token (may be empty while a multi-byte character is pending). */
  readonly text: string;
  readonly position: number;
}

export interface TextSessionOptions extends LlamaForwardOptions {
  readonly runtime: Runtime;
  readonly model: LlamaModelFile;
  readonly tokenizer: Tokenizer;
  readonly observer?: SessionObserver;
  readonly agreement?: PhaseAgreement;
}

/** Named fault seam: makes the next step fail at the chosen phase through the production rollback path. */
export interface SessionFaults {
  failNextStepAt(phase: StepPhase): void;
  /** Makes the next prompt-cache save fail right after its blob was published (exercises the rollback). */
  failNextCacheSaveAfterPublish(): void;
}

export interface SavePromptCacheOptions {
  /** Positions to save (default: the whole committed history). */
  readonly length?: number;
}

export interface LoadPromptCacheOptions {
  /** The prompt the cache is for: the cache's prefix must be a prefix of it (or equal). */
  readonly prompt?: readonly number[];
}

const DEFAULT_MAX_TOKENS = 64;
const BOS = 1;

/** Publishes `bytes` as the next revision of the blob at `path` (staged invisibly, then one atomic commit). */
async function publish(store: PlaneSession, path: string, bytes: Uint8Array): Promise<void> {
  const writer = await writeBlob(store, path, bytes.byteLength);
  try {
    await writer.write(bytes);
    await writer.seal();
  } catch (err) {
    await writer.abort().catch(() => undefined);
    throw err;
  }
}

export class TextSession {
  readonly tokenizer: Tokenizer;
  readonly faults: SessionFaults;
  readonly #forward: LlamaForward;
  readonly #model: LlamaModelFile;
  readonly #observer: SessionObserver | undefined;
  readonly #agreement: PhaseAgreement;
  #tokens: number[] = [];
  #epoch = 0;
  #lastOutcome: StepOutcome | undefined;
  #fenced: TenonError | undefined;
  #busy = false;
  #lane: PredictionLane | undefined;
  #failAt: StepPhase | undefined;
  readonly #speculation = { passes: 0, drafted: 0, accepted: 0 };
  #identity: Promise<ModelIdentity> | undefined;
  #failCacheAfterPublish = false;

  private constructor(forward: LlamaForward, options: TextSessionOptions) {
    this.#forward = forward;
    this.#model = options.model;
    this.tokenizer = options.tokenizer;
    this.#observer = options.observer;
    this.#agreement = options.agreement ?? SINGLE_RANK;
    this.faults = Object.freeze({
      failNextStepAt: (phase: StepPhase) => {
        if (!STEP_PHASES.includes(phase)) throw new TenonError('EINVAL', `unknown phase ${String(phase)}`, { op: 'session.faults', reason: 'bad-phase' });
        this.#failAt = phase;
      },
      failNextCacheSaveAfterPublish: () => {
        this.#failCacheAfterPublish = true;
      },
    });
  }

  /** Validates the model against the runtime and tokenizer, uploads it, and only then returns a session. */
  static async create(options: TextSessionOptions): Promise<TextSession> {
    const op = 'TextSession.create';
    if (options.tokenizer.vocabSize !== options.model.config.vocabSize) {
      throw new TenonError('EINVAL', 'tokenizer and model vocabularies differ', { op, reason: 'vocab-mismatch' });
    }
    const forward = await LlamaForward.create(options.runtime, options.model, options);
    return new TextSession(forward, options);
  }

  get length(): number {
    return this.#tokens.length;
  }

  get tokens(): readonly number[] {
    return [...this.#tokens];
  }

  get epoch(): number {
    return this.#epoch;
  }

  get lastOutcome(): StepOutcome | undefined {
    return this.#lastOutcome;
  }

  get maxSeq(): number {
    return this.#forward.maxSeq;
  }

  /** Prefills `tokens` after the committed ones (chunks of maxBatch, one transaction). */
  prefill(tokens: readonly number[]): Promise<StepReport> {
    return this.#step(tokens, 'session.prefill');
  }

  /** Processes one token after the committed ones. */
  decode(token: number): Promise<StepReport> {
    return this.#step([token], 'session.decode');
  }

  checkpoint(): Checkpoint {
    this.#usable('session.checkpoint');
    return Object.freeze({ length: this.length, epoch: this.#epoch });
  }

  /** Truncates the committed history back to `cp` (rows past it are zeroed). */
  async rollback(cp: Checkpoint): Promise<void> {
    const op = 'session.rollback';
    this.#usable(op);
    if (cp === null || typeof cp !== 'object' || !Number.isSafeInteger(cp.length) || cp.length < 0 || cp.length > this.length) {
      throw new TenonError('EINVAL', 'checkpoint does not lie within the committed history', { op, reason: 'bad-checkpoint' });
    }
    await this.#exclusive(op, async () => {
      await this.#zeroRows(cp.length, this.length);
      this.#tokens.length = cp.length;
    });
  }

  /** Empties the history. After an indeterminate step this is the way back (if the state still exists). */
  async reset(): Promise<void> {
    const op = 'session.reset';
    if (this.#forward.lost) throw new TenonError('ENODEV', 'the model state was lost with its device; create a new session', { op, reason: 'state-lost' });
    if (this.#busy) throw new TenonError('EBUSY', 'a step is running', { op, reason: 'step-running' });
    this.#lane?.abandonSync();
    this.#busy = true;
    try {
      await this.#zeroRows(0, this.maxSeq);
      this.#tokens = [];
      this.#fenced = undefined;
      this.#lastOutcome = undefined;
    } finally {
      this.#busy = false;
    }
  }

  /** The model and tokenizer identity prompt caches are bound to (SHA-256, computed once). */
  identity(): Promise<ModelIdentity> {
    this.#identity ??= modelIdentity(this.#model, this.tokenizer);
    return this.#identity;
  }

  /**
   * Saves the committed state of the first `length` positions as one blob at `path` of a data plane.
   * Transactional: the new blob is staged and checked while invisible, then published (the plane's atomic
   * commit point) and read back; if anything fails after publication, the previous revision's bytes are
   * published again, so readers see the old cache (as a new revision with identical content). The
   * session itself is never changed by a save.
   */
  async savePromptCache(store: PlaneSession, path: string, options: SavePromptCacheOptions = {}): Promise<PromptCacheManifest> {
    const op = 'session.savePromptCache';
    this.#usable(op);
    const length = options.length ?? this.length;
    if (!Number.isSafeInteger(length) || length < 1 || length > this.length) {
      throw new TenonError('EINVAL', 'length must be within the committed history', { op, reason: 'bad-length' });
    }
    const id = await this.identity();
    const c = this.#model.config;
    const manifest: PromptCacheManifest = {
      schema: PROMPT_CACHE_SCHEMA,
      modelId: id.modelId,
      tokenizerId: id.tokenizerId,
      layout: { layers: c.nLayers, kvDim: c.kvDim, dtype: 'f32', order: 'layer-k-v' },
      tokens: this.#tokens.slice(0, length),
      epoch: this.#epoch,
      lastOutcome: this.#lastOutcome ?? null,
    };
    const bytes = await encodePromptCache(manifest, await this.exportState(length));
    // Prepare: keep the previous revision's bytes so a failure after publication can restore them.
    const previous = await readBlob(store, path).catch((err: unknown) => {
      if (isTenonError(err, 'ENOENT')) return undefined;
      throw err;
    });
    await publish(store, path, bytes);
    try {
      if (this.#failCacheAfterPublish) {
        this.#failCacheAfterPublish = false;
        throw new TenonError('EIO', 'injected failure after publication', { op, reason: 'injected' });
      }
      const back = await readBlob(store, path);
      if (back.byteLength !== bytes.byteLength || !back.every((b, i) => b === bytes[i])) {
        throw new TenonError('EIO', 'published cache does not read back identically', { op, reason: 'verify-failed' });
      }
    } catch (err) {
      if (previous !== undefined) await publish(store, path, previous);
      throw err;
    }
    return manifest;
  }

  /**
   * Loads a prompt cache saved by this model and tokenizer: validates digest, manifest, identity, layout,
   * sizes and (with `prompt`) that its prefix starts the prompt, all before touching the session. On
   * success the session's history is the cache's prefix, its epoch continues after the cache's, and its
   * last outcome is the cache's. Any refusal leaves the session exactly as it was.
   */
  async loadPromptCache(store: PlaneSession, path: string, options: LoadPromptCacheOptions = {}): Promise<PromptCacheManifest> {
    const op = 'session.loadPromptCache';
    this.#usable(op);
    const bytes = await readBlob(store, path);
    const id = await this.identity();
    const c = this.#model.config;
    const { manifest, kv } = await decodePromptCache(bytes, {
      modelId: id.modelId,
      tokenizerId: id.tokenizerId,
      layers: c.nLayers,
      kvDim: c.kvDim,
      maxSeq: this.maxSeq,
    });
    if (manifest.tokens.some((t) => t >= c.vocabSize)) throw new TenonError('EINVAL', 'prefix holds ids outside the vocabulary', { op, reason: 'manifest' });
    const prompt = options.prompt;
    if (prompt !== undefined && (manifest.tokens.length > prompt.length || manifest.tokens.some((t, i) => prompt[i] !== t))) {
      throw new TenonError('EINVAL', 'the cache prefix does not start this prompt', { op, reason: 'prefix-mismatch' });
    }
    await this.importState(manifest.tokens, kv);
    this.#epoch = Math.max(this.#epoch, manifest.epoch);
    this.#lastOutcome = manifest.lastOutcome ?? undefined;
    return manifest;
  }

  /** Prompt-lookup speculation so far: verification passes, draft tokens proposed and accepted. */
  speculationStats(): { readonly passes: number; readonly drafted: number; readonly accepted: number } {
    return { ...this.#speculation };
  }

  report(): SessionReport {
    const c = this.#model.config;
    const f32 = 4;
    const layerWeights = 2 * c.dim + 2 * c.dim * c.dim + 2 * c.kvDim * c.dim + 3 * c.hiddenDim * c.dim;
    const weights = (c.vocabSize * c.dim + c.nLayers * layerWeights + c.dim + (this.#model.sharedClassifier ? 0 : c.vocabSize * c.dim)) * f32;
    const state = 2 * c.nLayers * this.maxSeq * c.kvDim * f32;
    const b = this.#forward.maxBatch;
    const activations = (b * (6 * c.dim + 2 * c.kvDim + 3 * c.hiddenDim) + b + (b + 1) * c.vocabSize + b + 1) * f32;
    const provider = this.#forward.runtime.provider;
    return {
      provider: provider.id,
      residency: provider.kind === 'webgpu' ? 'device' : 'host',
      weightBytes: weights,
      stateBytes: state,
      activationBytes: activations,
      length: this.length,
      maxSeq: this.maxSeq,
      epoch: this.#epoch,
      lastOutcome: this.#lastOutcome,
    };
  }

  /**
   * Bytes of the K and V caches for positions 0..length-1 (layer by layer, K then V), copied to the host.
   * Used by prompt caches and to compare states.
   */
  async exportState(length = this.length): Promise<Float32Array> {
    const op = 'session.exportState';
    this.#usable(op);
    if (!Number.isSafeInteger(length) || length < 0 || length > this.maxSeq) throw new TenonError('EINVAL', 'length outside the cache', { op, reason: 'bad-length' });
    const width = this.#model.config.kvDim;
    const out = new Float32Array(2 * this.#forward.layers * length * width);
    let at = 0;
    const group = this.#forward.group;
    for (let l = 0; l < this.#forward.layers; l++) {
      const slots = this.#forward.cacheSlots(l);
      for (const slot of [slots.k, slots.v]) {
        using v = group.view<'f32'>(slot);
        using p = await v.prepareHost();
        if (p.kind !== 'contiguous') throw new TenonError('EIO', 'cache is not contiguous', { op });
        out.set(p.asArray().subarray(0, length * width), at);
        at += length * width;
      }
    }
    return out;
  }

  /** Replaces the whole state with `tokens` and their K/V rows (validated by the caller). */
  async importState(tokens: readonly number[], kv: Float32Array): Promise<void> {
    const op = 'session.importState';
    this.#usable(op);
    const width = this.#model.config.kvDim;
    const length = tokens.length;
    if (length > this.maxSeq || kv.length !== 2 * this.#forward.layers * length * width) {
      throw new TenonError('EINVAL', 'state does not fit this session', { op, reason: 'state-mismatch' });
    }
    await this.#exclusive(op, async () => {
      const group = this.#forward.group;
      let at = 0;
      for (let l = 0; l < this.#forward.layers; l++) {
        const slots = this.#forward.cacheSlots(l);
        for (const slot of [slots.k, slots.v]) {
          using m = group.viewMut<'f32'>(slot);
          // Every byte is overwritten (the rows, then zeros), so nothing needs to be downloaded first.
          using p = await m.prepareHostMut({ discard: true });
          if (p.kind !== 'contiguous') throw new TenonError('EIO', 'cache is not contiguous', { op });
          const rows = p.asArray();
          rows.fill(0);
          rows.set(kv.subarray(at, at + length * width), 0);
          at += length * width;
        }
      }
      this.#tokens = [...tokens];
    });
  }

  /**
   * Generates tokens after `prompt` (text is encoded with BOS; ids are used as given). The prompt is
   * prefilled only past the longest committed prefix it shares with the history.
   */
  async *generate(prompt: string | readonly number[], options: GenerateOptions = {}): AsyncGenerator<GeneratedToken, void, undefined> {
    const op = 'session.generate';
    const ids = typeof prompt === 'string' ? this.tokenizer.encode(prompt, { bos: true }) : [...prompt];
    if (ids.length === 0) throw new TenonError('EINVAL', 'empty prompt', { op, reason: 'empty-prompt' });
    const sampler = new Sampler(options);
    const maxTokens = options.maxTokens ?? DEFAULT_MAX_TOKENS;
    const stop = new Set(options.stopTokens ?? [BOS]);
    const signal = options.signal;
    const speculative = options.speculative;
    if (speculative !== undefined && sampler.temperature !== 0) {
      throw new TenonError('EINVAL', 'speculative decoding is greedy only', { op, reason: 'speculative-needs-greedy' });
    }
    // Longest-prefix reuse: keep the committed prefix shared with the prompt, prefill the rest.
    let shared = 0;
    while (shared < this.length && shared < ids.length - 1 && this.#tokens[shared] === ids[shared]) shared++;
    if (shared < this.length) await this.rollback({ length: shared, epoch: this.#epoch });
    let report = await this.prefill(ids.slice(shared));
    const text = this.tokenizer.textStream({ prev: ids[ids.length - 1]! });
    let produced = 0;
    let next = sampler.sample(report.logits);
    while (produced < maxTokens) {
      if (signal?.aborted) throw new TenonError('ECANCELED', 'generation aborted', { op, cause: signal.reason });
      if (stop.has(next)) return;
      if (speculative !== undefined) {
        // Drafts never include a stop token, so an accepted draft is always a token greedy would emit.
        const budget = maxTokens - produced - 1;
        const drafts = this.#draft(next, speculative.ngram ?? 2, Math.min(speculative.lookahead ?? 4, budget));
        const firstStop = drafts.findIndex((t) => stop.has(t));
        if (firstStop >= 0) drafts.length = firstStop;
        if (drafts.length > 0) {
          const { accepted, following } = await this.#verify(next, drafts);
          const emitted = [next, ...accepted];
          const base = this.length - emitted.length;
          for (let i = 0; i < emitted.length; i++) {
            produced++;
            yield { token: emitted[i]!, text: text.push(emitted[i]!), position: base + i };
          }
          next = following;
          continue;
        }
      }
      report = await this.decode(next);
      produced++;
      yield { token: next, text: text.push(next), position: this.length - 1 };
      next = sampler.sample(report.logits);
    }
  }

  /** Opens the one prediction lane: work past the committed length that is committed or abandoned later. */
  forkLane(): PredictionLane {
    const op = 'session.forkLane';
    this.#usable(op);
    if (this.#lane !== undefined) throw new TenonError('EBUSY', 'a lane is open', { op, reason: 'lane-open' });
    this.#lane = new PredictionLane(this, this.#forward, (lane) => {
      if (this.#lane === lane) this.#lane = undefined;
    });
    return this.#lane;
  }

  dispose(): void {
    this.#forward.dispose();
  }

  /** Kernel of the lane API. @internal */
  async zeroRowsForLane(from: number, to: number): Promise<void> {
    await this.#zeroRows(from, to);
  }

  /** Kernel of the lane API: commits tokens whose rows a lane already wrote. @internal */
  commitFromLane(tokens: readonly number[]): void {
    this.#epoch++;
    this.#tokens.push(...tokens);
    this.#lastOutcome = 'committed';
  }

  /** @internal */
  get committedTokens(): readonly number[] {
    return this.#tokens;
  }

  /** Prompt-lookup drafts: the tokens that followed the latest earlier occurrence of the last n-gram. */
  #draft(next: number, n: number, lookahead: number): number[] {
    const context = [...this.#tokens, next];
    if (context.length <= n || lookahead <= 0) return [];
    const tail = context.slice(-n);
    for (let start = context.length - n - 1; start >= 0; start--) {
      let match = true;
      for (let j = 0; j < n; j++) if (context[start + j] !== tail[j]) match = false;
      if (match) {
        const from = start + n;
        const room = this.maxSeq - this.length - 1;
        return context.slice(from, Math.min(from + lookahead, context.length - 1, from + room));
      }
    }
    return [];
  }

  /** Verifies drafts in one batched lane pass; commits `next` plus the accepted drafts. */
  async #verify(next: number, drafts: readonly number[]): Promise<{ accepted: number[]; following: number }> {
    const lane = this.forkLane();
    try {
      const result = await lane.run([next, ...drafts]);
      let a = 0;
      while (a < drafts.length && result.argmaxRows[a] === drafts[a]) a++;
      await lane.exchange(a + 1);
      this.#speculation.passes++;
      this.#speculation.drafted += drafts.length;
      this.#speculation.accepted += a;
      return { accepted: drafts.slice(0, a), following: result.argmaxRows[a]! };
    } catch (err) {
      if (!lane.closed) await lane.abandon().catch(() => undefined);
      throw err;
    }
  }

  #usable(op: string): void {
    if (this.#forward.lost) throw new TenonError('ENODEV', 'the model state was lost with its device', { op, reason: 'state-lost' });
    if (this.#fenced !== undefined) throw new TenonError('ENODEV', 'the last step is indeterminate; reset() first', { op, reason: 'fenced' });
    if (this.#busy) throw new TenonError('EBUSY', 'a step is running', { op, reason: 'step-running' });
  }

  async #exclusive<T>(op: string, work: () => Promise<T>): Promise<T> {
    this.#usable(op);
    if (this.#lane !== undefined) throw new TenonError('EBUSY', 'a prediction lane is open', { op, reason: 'lane-open' });
    this.#busy = true;
    try {
      return await work();
    } finally {
      this.#busy = false;
    }
  }

  async #step(tokens: readonly number[], op: string): Promise<StepReport> {
    if (!Array.isArray(tokens) || tokens.length === 0) throw new TenonError('EINVAL', 'a step needs at least one token', { op, reason: 'empty-step' });
    const vocab = this.#model.config.vocabSize;
    for (const t of tokens) {
      if (!Number.isSafeInteger(t) || t < 0 || t >= vocab) throw new TenonError('EINVAL', `token ${String(t)} is outside the vocabulary`, { op, reason: 'bad-token' });
    }
    if (this.length + tokens.length > this.maxSeq) {
      throw new TenonError('ENOSPC', `the context holds ${this.maxSeq} positions`, { op, reason: 'context-full' });
    }
    return this.#exclusive(op, async () => {
      const epoch = ++this.#epoch;
      const start = this.length;
      let phase: StepPhase = 'checkpoint';
      const gate = async (p: StepPhase): Promise<void> => {
        phase = p;
        if (this.#failAt === p) {
          this.#failAt = undefined;
          throw new TenonError('EIO', `injected failure in ${p}`, { op, reason: 'injected' });
        }
        if (!(await this.#agreement.agree(epoch, p))) throw new TenonError('ECANCELED', `no agreement on ${p}`, { op, reason: 'no-agreement' });
      };
      try {
        await gate('checkpoint');
        await gate('execute');
        let result: StepResult | undefined;
        const batch = this.#forward.maxBatch;
        for (let at = 0; at < tokens.length; at += batch) result = await this.#forward.run(tokens.slice(at, at + batch), start + at);
        await gate('observe');
        const replaced = this.#observer?.logits?.(result!.logits, { epoch, position: start, tokens });
        const logits = replaced instanceof Float32Array ? replaced : result!.logits;
        await gate('publish');
        const committed = [...this.#tokens, ...tokens];
        await gate('complete');
        this.#tokens = committed;
        this.#lastOutcome = 'committed';
        return { epoch, length: committed.length, tokens: [...tokens], logits, argmax: replaced instanceof Float32Array ? argmaxOf(logits) : result!.argmax };
      } catch (err) {
        if (this.#forward.lost) {
          this.#lastOutcome = 'indeterminate';
          this.#fenced = isTenonError(err) ? err : new TenonError('EIO', String(err), { op });
          throw new StepError(err, phase, epoch, 'indeterminate');
        }
        try {
          await this.#zeroRows(start, start + tokens.length);
        } catch (rollbackError) {
          this.#lastOutcome = 'indeterminate';
          this.#fenced = isTenonError(rollbackError) ? rollbackError : new TenonError('EIO', String(rollbackError), { op });
          throw new StepError(err, phase, epoch, 'indeterminate');
        }
        this.#lastOutcome = 'aborted';
        throw new StepError(err, phase, epoch, 'aborted');
      }
    });
  }

  /** Restores the invariant that rows from..to-1 of every cache are zero (writes only those rows). */
  async #zeroRows(from: number, to: number): Promise<void> {
    if (to <= from) return;
    const width = this.#model.config.kvDim;
    const group = this.#forward.group;
    for (let l = 0; l < this.#forward.layers; l++) {
      const slots = this.#forward.cacheSlots(l);
      for (const slot of [slots.k, slots.v]) {
        using m = group.viewMut<'f32'>(slot);
        await m.fillRange(0, from * width, to * width);
      }
    }
  }
}

/**
 * A prediction lane: positions past the committed length, run without committing them. `exchange(n)`
 * makes the first n lane tokens part of the committed history (their rows are already written);
 * `abandon()` zeroes every lane row. A failed lane pass zeroes its rows and leaves the canonical state as
 * it was. One lane at a time; the session refuses steps while it is open.
 */
export class PredictionLane {
  readonly #session: TextSession;
  readonly #forward: LlamaForward;
  readonly #close: (lane: PredictionLane) => void;
  #tokens: number[] = [];
  #closed = false;

  constructor(session: TextSession, forward: LlamaForward, close: (lane: PredictionLane) => void) {
    this.#session = session;
    this.#forward = forward;
    this.#close = close;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Tokens run in this lane so far (not committed). */
  get tokens(): readonly number[] {
    return [...this.#tokens];
  }

  /** Runs `tokens` after the lane's previous ones; returns per-row argmax and last logits. */
  async run(tokens: readonly number[]): Promise<StepResult> {
    const op = 'lane.run';
    this.#open(op);
    const start = this.#session.length + this.#tokens.length;
    if (start + tokens.length > this.#forward.maxSeq) throw new TenonError('ENOSPC', 'the lane runs past the context', { op, reason: 'context-full' });
    try {
      const result = await this.#forward.run(tokens, start, { allRows: true });
      this.#tokens.push(...tokens);
      return result;
    } catch (err) {
      if (!this.#forward.lost) await this.#session.zeroRowsForLane(start, start + tokens.length);
      throw err;
    }
  }

  /** Commits the first `n` lane tokens (0 <= n <= lane length) and zeroes the rest; closes the lane. */
  async exchange(n: number): Promise<void> {
    const op = 'lane.exchange';
    this.#open(op);
    if (!Number.isSafeInteger(n) || n < 0 || n > this.#tokens.length) throw new TenonError('EINVAL', 'n must be within the lane', { op, reason: 'bad-count' });
    const base = this.#session.length;
    await this.#session.zeroRowsForLane(base + n, base + this.#tokens.length);
    this.#session.commitFromLane(this.#tokens.slice(0, n));
    this.#finish();
  }

  /** Zeroes every lane row and closes the lane; the canonical state is untouched. */
  async abandon(): Promise<void> {
    this.#open('lane.abandon');
    const base = this.#session.length;
    await this.#session.zeroRowsForLane(base, base + this.#tokens.length);
    this.#finish();
  }

  /** @internal reset(): the rows are zeroed by the reset itself. */
  abandonSync(): void {
    if (!this.#closed) this.#finish();
  }

  #open(op: string): void {
    if (this.#closed) throw new TenonError('ERELEASED', 'lane is closed', { op, reason: 'lane-closed' });
  }

  #finish(): void {
    this.#closed = true;
    this.#tokens = [];
    this.#close(this);
  }
}
