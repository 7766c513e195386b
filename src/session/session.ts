// TextSession: a llama model on tenon's runtime whose every step is a transaction (seed 003).
//
// Models. A session runs any LoadedModel of the model layer (GGUF or llama2.c: src/model loadModel) through
// the architecture-driven forward pass (llama.ts); a parsed llama2.c checkpoint with its tokenizer is
// accepted too and described by the model layer the same way. The cache identity is the model's identity
// (config, tensors with their lowering kinds, tokenizer). `chat()` renders the model's chat template,
// streams the assistant's reply and stops at the model's end-of-generation tokens.
//
// State and ownership. The session owns a LlamaForward (weights, KV caches, activations in one group)
// and the committed history: `tokens` (length = committed positions), the last epoch and the last
// outcome. KV rows at and past the committed length are kept all-zero, so the state is exactly (tokens,
// KV rows 0..length-1, epoch, outcome).
//
// Transactions. Every change of the committed history runs the same phases in order: checkpoint (note
// the committed length), execute (submit the graph(s) and wait for proven completion), observe (observers
// see the hidden state after every layer and the logits of every row that commits, and may replace the
// logits), publish (agree on the new length through the phase-agreement seam and zero rows that will not
// commit), complete (install the new history and record the outcome). Each phase first passes the
// agreement seam. Nothing of a step is visible through the public getters before `complete` succeeded.
// Prefill and decode commit every token; speculative verification (prompt-lookup drafts run in one
// batched pass) commits the next token plus the drafts the observed logits confirm; a prediction lane's
// exchange commits its first n tokens (its rows were written by earlier lane passes). A failure in any
// phase zeroes every row the transaction owns and leaves tokens, length, KV bytes and metadata as before,
// with the phase named in the error.
//
// Checkpoints and lineage. Each state the session passes through gets a fresh mark. checkpoint() records
// the current mark on the lineage: the checkpoints whose states the committed history still extends.
// rollback(cp) restores tokens, KV rows, epoch and last outcome of a checkpoint on the lineage; a rollback
// or truncation cuts the checkpoints past it off the lineage, and reset or importState start a new one, so
// a checkpoint whose history was replaced is refused (ESTALE), never "restored".
//
// Chained steps (the forward's default 'chained' mode; 'plain' keeps submit-and-wait as the baseline).
// A step is one chain member per prompt chunk or token on the live state group; its execute phase waits
// only for that member's proof, which brings back the chosen id (4 bytes); logits are downloaded only for
// a logits observer or a caller that asks (`{ logits: true }`, the default of prefill() and decode());
// layer observation runs the plain path. Greedy generation without observers pipelines: while step t runs,
// its execute phase submits step t+1, which reads its token from the buffer step t's argmax writes, so the
// host never waits for a token before the GPU can go on. Such a step runs ahead of its own transaction and
// owns the rows past the committed length it writes, like a prediction lane: its transaction opens (epoch,
// every phase, agreement) only once step t committed a token it may decode; a stop token, an abort, the
// token budget, a generator the caller left or any other session call discards it (its rows are zeroed
// after its proof, no epoch is used), and a failing transaction zeroes its rows with its own. Between
// yields the running member holds the state; anything that touches it takes it back first.
//
// Fences. A restoration of cache rows (rollback, reset, importState, the undo of a failed step or lane
// pass, a lane abandon) that fails part-way fences the session: every later call but reset() fails with
// EIO 'fenced' until a reset rewrites every row. A step whose outcome cannot be known is `indeterminate`
// and fences too; when the device was lost with the state, nothing (not even reset) runs again (ENODEV).
// Thread: the runtime's.
import { TenonError, isTenonError } from '../errors.js';
import { readBlob, sha256Hex, writeBlob } from '../dataplane/index.js';
import type { Session as PlaneSession } from '../dataplane/index.js';
import { READBACK_POOL_LIMIT } from '../submit/index.js';
import type { Readback, Runtime } from '../submit/index.js';
import { modelFromLlamaFile, renderChat } from '../model/index.js';
import type { ChatInput, ChatMessage, LoadedModel, LoweringKindName, ModelIdentity } from '../model/index.js';
import { PROMPT_CACHE_SCHEMA, decodePromptCache, encodePromptCache } from './prompt-cache.js';
import type { PromptCacheManifest } from './prompt-cache.js';
import { LlamaForward } from './llama.js';
import type { ChainedStep, DecodeMode, KernelMode, LlamaForwardOptions, StepResult } from './llama.js';
import type { ResidencyReport } from './residency.js';
import type { LlamaModelFile } from '../model/index.js';
import { Sampler, argmaxOf } from './sampler.js';
import type { DeviceChoice, SamplerOptions } from './sampler.js';
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
  /** Position of the first of `tokens` (the committed length before them). */
  readonly position: number;
  /** The tokens whose rows are observed: a logits call sees the row of the last of them. */
  readonly tokens: readonly number[];
}

/**
 * Optional hooks, called in the observe phase of every transaction (before anything is published).
 * `layer` sees the hidden state after each layer for the rows of `context.tokens` ([tokens, dim], row
 * after row); it only looks. `logits` sees the logits after each committed token (a prefill or decode
 * step: after its last token; a speculative pass or lane exchange: after each of its committed tokens, in
 * order) and may return replacement logits (an intervention) that choose the next token.
 */
export interface SessionObserver {
  layer?(layer: number, hidden: Float32Array, context: ObserveContext): void;
  logits?(logits: Float32Array, context: ObserveContext): Float32Array | void;
}

/** Multi-rank agreement seam: every phase boundary of every transaction asks it. A single rank agrees with itself. */
export interface PhaseAgreement {
  agree(epoch: number, phase: StepPhase): boolean | Promise<boolean>;
}

const SINGLE_RANK: PhaseAgreement = { agree: () => true };

export interface StepReport {
  readonly epoch: number;
  /** Committed length after the step. */
  readonly length: number;
  /** The tokens this step committed. */
  readonly tokens: readonly number[];
  /**
   * Logits after the last committed token (after any observer intervention); empty when the step ran
   * with `logits: false` (chained mode, no logits observer: only the chosen id was read back).
   */
  readonly logits: Float32Array;
  /** Greedy choice from `logits`. */
  readonly argmax: number;
}

/** A committed state to return to: only checkpoint() makes them (a hand-made object is refused). */
export interface Checkpoint {
  readonly length: number;
  /** The last epoch opened when it was taken; the next step after a rollback opens epoch + 1. */
  readonly epoch: number;
  readonly lastOutcome: StepOutcome | undefined;
}

/** Options of one prefill or decode call. */
export interface StepOptions {
  /**
   * Read the logits back (default true). With false, a chained step reads back only its argmax (4 bytes)
   * and the report's logits are empty, unless a logits observer needs them anyway.
   */
  readonly logits?: boolean;
}

export interface SessionReport {
  readonly provider: string;
  /** How steps are submitted, the per-layer dispatch list, and the dispatches of one decode step (once its graph exists). */
  readonly decode: { readonly mode: DecodeMode; readonly kernels: KernelMode; readonly dispatchesPerToken: number | undefined };
  readonly residency: 'device' | 'host';
  /** Packed weight bytes on the provider, in all and by lowering kind. */
  readonly weightBytes: number;
  readonly weightBytesByKind: Readonly<Partial<Record<LoweringKindName, number>>>;
  readonly stateBytes: number;
  /** Activation buffers, plus the layer-observation buffer once a layer observer needed it. */
  readonly activationBytes: number;
  readonly length: number;
  readonly maxSeq: number;
  readonly epoch: number;
  readonly lastOutcome: StepOutcome | undefined;
  /** Layer residency (residency.ts): which policy runs, the window's bytes, bytes uploaded per token. */
  readonly layerResidency: ResidencyReport;
}

export interface GenerateOptions extends SamplerOptions {
  /** Tokens to generate at most (default 64). */
  readonly maxTokens?: number;
  /**
   * Stop after producing any of these ids (default: a llama2.c model stops at BOS = 1, as llama2.c does; a
   * GGUF model at its end-of-generation tokens). The stop id is not yielded.
   */
  readonly stopTokens?: readonly number[];
  readonly signal?: AbortSignal;
  /** Prompt-lookup speculative decoding (greedy only): draft up to `lookahead` tokens from n-gram matches. */
  readonly speculative?: { readonly lookahead?: number; readonly ngram?: number };
  /**
   * Pipelined greedy generation (chained mode, no observers): decode steps kept submitted ahead of the one
   * whose token is being read back (default DEFAULT_STEPS_AHEAD, at most STEPS_AHEAD_LIMIT; 0 submits
   * each step only after the previous one's token arrived). Work ahead of a stop token is discarded.
   */
  readonly stepsAhead?: number;
}

export interface GeneratedToken {
  readonly token: number;
  /** Text completed by this token (may be empty while a multi-byte character is pending). */
  readonly text: string;
  readonly position: number;
}

/** chat(): generation options, plus template variables beside `messages` (e.g. `tools`). */
export interface ChatOptions extends GenerateOptions {
  /**
   * More variables for the template (`apply_chat_template`'s extra arguments). `messages` and
   * `add_generation_prompt` (always true) are set by chat().
   */
  readonly variables?: Readonly<Record<string, unknown>>;
}

export interface TextSessionOptions extends LlamaForwardOptions {
  readonly runtime: Runtime;
  /**
   * The model: a LoadedModel (loadModel: GGUF, or llama2.c with its tokenizer), or a parsed llama2.c
   * checkpoint (then `tokenizer` is required).
   */
  readonly model: LoadedModel | LlamaModelFile;
  /**
   * A parsed llama2.c checkpoint's tokenizer (required for one). For a LoadedModel it may only be the
   * model's own (`model.tokenizer`): load the model with another tokenizer to replace it.
   */
  readonly tokenizer?: Tokenizer;
  readonly observer?: SessionObserver;
  readonly agreement?: PhaseAgreement;
}

/** Named fault seams: each drives the production failure path of the session. */
export interface SessionFaults {
  /** Makes the next transaction fail at the start of the chosen phase. */
  failNextStepAt(phase: StepPhase): void;
  /**
   * Makes the next rewrite of cache rows (rollback, reset, importState, the undo of a failed step or lane
   * pass, a lane abandon or exchange) fail after it rewrote `buffers` of the K/V cache buffers.
   */
  failNextRestoreAfter(buffers: number): void;
  /** Makes the next prompt-cache save write its blob with one byte flipped after the digest was declared. */
  corruptNextCacheSave(): void;
  /**
   * Bounded residency: the next fill of `layer`'s window slot fails after its first tensor part, without
   * asking the source (the window's own seam; a failing source read goes through the source's
   * `faults.failReadAt`). EINVAL `not-bounded` when the session runs resident layers.
   */
  failLayerRead(layer: number): void;
}

export interface SavePromptCacheOptions {
  /** Positions to save (default: the whole committed history). */
  readonly length?: number;
}

export interface LoadPromptCacheOptions {
  /** The prompt the cache is for: the cache's prefix must be a prefix of it (or equal). */
  readonly prompt?: readonly number[];
}

/** A prediction lane: positions past the committed length, run without committing them (see Lane). */
export interface PredictionLane {
  readonly closed: boolean;
  /** Tokens run in this lane so far (not committed). */
  readonly tokens: readonly number[];
  /** Runs `tokens` after the lane's previous ones; returns per-row argmax and logits. */
  run(tokens: readonly number[]): Promise<StepResult>;
  /** Commits the first `n` lane tokens through one transaction and zeroes the rest; closes the lane. */
  exchange(n: number): Promise<void>;
  /** Zeroes every lane row and closes the lane; the canonical state is untouched. */
  abandon(): Promise<void>;
}

const DEFAULT_MAX_TOKENS = 64;
/**
 * Decode steps a pipelined generation keeps in flight ahead of the one being read: enough to cover the
 * round trip of a readback (map latency and thread hand-offs) with GPU work; each one is a step wasted
 * when a stop token turns up.
 */
export const DEFAULT_STEPS_AHEAD = 3;
/** Refusals that only end the topping-up of steps ahead (runtime.chain's reasons). */
const TOP_UP_REFUSALS: ReadonlySet<string> = new Set(['readback-pool-exhausted', 'chain-failed', 'chain-unproven']);
/** Each step in flight holds one pooled readback staging buffer until its map ends (READBACK_POOL_LIMIT). */
export const STEPS_AHEAD_LIMIT = READBACK_POOL_LIMIT - 1;
const DEFAULT_LOOKAHEAD = 4;
const DEFAULT_NGRAM = 2;
const BOS = 1;
/** The bit the cache-corruption seam flips. */
const CORRUPT_BIT = 0x01;

/**
 * Decode steps a pipelined generation (`owner`) submitted ahead of their transactions, in chain order:
 * `steps[i]` decodes, at `position + i`, the token its predecessor chose on the device. They own those
 * rows until their transactions adopt them (first to last) or they are discarded.
 */
interface Ahead {
  readonly owner: object;
  position: number;
  readonly steps: ChainedStep[];
}

const NO_LOGITS = new Float32Array(0);

/** What a transaction's execute phase leaves for the observe phase. */
interface Executed {
  /** Logits of the last row and its provider-side argmax ('all' commits). */
  readonly logits: Float32Array;
  readonly argmax: number;
  /** Logits and argmax of every row the transaction owns (row-wise commits). */
  readonly rowLogits: Float32Array;
  readonly argmaxRows: readonly number[];
  /** Hidden state after each layer for the rows of `layerTokens` (only when a layer hook exists). */
  readonly layers: readonly Float32Array[] | undefined;
  readonly layerTokens: readonly number[];
}

/** How the observe phase decides how many of the transaction's tokens commit. */
type CommitRule =
  | { readonly kind: 'all' }
  /** Row by row: the next token commits while the observed choice after the previous row equals it. */
  | { readonly kind: 'verified' }
  | { readonly kind: 'prefix'; readonly count: number };

interface TransactionPlan {
  /** Rows past the committed length this transaction owns (zeroed on failure, the uncommitted ones on success). */
  readonly rows: number;
  readonly commit: CommitRule;
  execute(start: number): Promise<Executed>;
}

/** What a lane needs from its session: module-private, so nothing outside can commit or zero rows. */
interface LaneHost {
  readonly forward: LlamaForward;
  readonly vocab: number;
  committedLength(): number;
  wantsLayers(): boolean;
  /** Runs lane work under the session's exclusion (refused while fenced or busy). */
  exclusive<T>(op: string, work: () => Promise<T>): Promise<T>;
  /** Zeroes rows from..to-1; a failure part-way fences the session and is thrown. */
  discard(op: string, from: number, to: number): Promise<void>;
  /** Runs the exchange transaction over rows the lane wrote. */
  commit(tokens: readonly number[], count: number, executed: Executed): Promise<void>;
  usable(op: string): void;
  close(lane: Lane): void;
}

/** The LoadedModel a session runs (see TextSessionOptions), validated before anything is allocated. */
function describeModel(options: TextSessionOptions): LoadedModel {
  const op = 'TextSession.create';
  const model = options?.model as Partial<LoadedModel & LlamaModelFile> | undefined;
  if (model === null || typeof model !== 'object') throw new TenonError('EINVAL', 'options.model must be a model', { op, reason: 'bad-argument' });
  const tokenizer = options.tokenizer;
  if (typeof model.identity === 'function' && model.architecture !== undefined) {
    const loaded = model as LoadedModel;
    if (tokenizer !== undefined && tokenizer !== loaded.tokenizer) {
      throw new TenonError('EINVAL', tokenizer.vocabSize === loaded.config.vocabSize ? 'a LoadedModel runs with its own tokenizer' : 'tokenizer and model vocabularies differ', {
        op,
        reason: tokenizer.vocabSize === loaded.config.vocabSize ? 'tokenizer-mismatch' : 'vocab-mismatch',
      });
    }
    return loaded;
  }
  if (model.weights === undefined || model.config === undefined) throw new TenonError('EINVAL', 'options.model must be a LoadedModel or a parsed llama2.c checkpoint', { op, reason: 'bad-argument' });
  if (tokenizer === undefined) throw new TenonError('EINVAL', 'a llama2.c checkpoint needs its tokenizer', { op, reason: 'no-tokenizer' });
  if (tokenizer.vocabSize !== model.config.vocabSize) throw new TenonError('EINVAL', 'tokenizer and model vocabularies differ', { op, reason: 'vocab-mismatch' });
  return modelFromLlamaFile(model as LlamaModelFile, tokenizer);
}

/** Checkpoints made by checkpoint(), with the session and lineage mark they belong to. */
const CHECKPOINTS = new WeakMap<Checkpoint, { readonly owner: TextSession; readonly mark: number }>();

function concatRows(parts: readonly Float32Array[]): Float32Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** What a chained step without logits leaves: the id it read back, nothing else. */
function chosenOnly(readback: Readback, tokens: readonly number[]): Executed {
  const chosen = readback[0]?.[0];
  if (chosen === undefined) throw new TenonError('EIO', 'the step read back no token', { op: 'session.step', reason: 'readback-lost' });
  return { logits: NO_LOGITS, argmax: chosen, rowLogits: NO_LOGITS, argmaxRows: [chosen], layers: undefined, layerTokens: tokens };
}

/** Per-layer rows of several passes, joined layer by layer. */
function concatLayers(passes: readonly (readonly Float32Array[])[]): Float32Array[] {
  return passes[0]!.map((_, l) => concatRows(passes.map((p) => p[l]!)));
}

export class TextSession {
  readonly tokenizer: Tokenizer;
  readonly faults: SessionFaults;
  readonly #forward: LlamaForward;
  readonly #model: LoadedModel;
  readonly #observer: SessionObserver | undefined;
  readonly #agreement: PhaseAgreement;
  #tokens: number[] = [];
  #epoch = 0;
  #lastOutcome: StepOutcome | undefined;
  /** Why the session is fenced (a restoration stopped part-way, or a step's outcome is unknown). */
  #fenced: TenonError | undefined;
  #busy = false;
  #lane: Lane | undefined;
  /** The step a pipelined generation submitted ahead of its transaction (see the module comment). */
  #ahead: Ahead | undefined;
  /** Mark of the current state, and the last mark handed out. */
  #mark = 0;
  #marks = 0;
  /** Checkpointed states the committed history extends, oldest first (marks increase). */
  #lineage: { readonly mark: number; readonly length: number }[] = [];
  #failAt: StepPhase | undefined;
  #failRestoreAfter: number | undefined;
  #corruptCacheSave = false;
  readonly #speculation = { passes: 0, drafted: 0, accepted: 0 };
  #identity: Promise<ModelIdentity> | undefined;

  private constructor(forward: LlamaForward, model: LoadedModel, options: TextSessionOptions) {
    this.#forward = forward;
    this.#model = model;
    this.tokenizer = model.tokenizer;
    this.#observer = options.observer;
    this.#agreement = options.agreement ?? SINGLE_RANK;
    this.faults = Object.freeze({
      failNextStepAt: (phase: StepPhase) => {
        if (!STEP_PHASES.includes(phase)) throw new TenonError('EINVAL', `unknown phase ${String(phase)}`, { op: 'session.faults', reason: 'bad-phase' });
        this.#failAt = phase;
      },
      failNextRestoreAfter: (buffers: number) => {
        if (!Number.isSafeInteger(buffers) || buffers < 0) throw new TenonError('EINVAL', 'buffers must be a non-negative integer', { op: 'session.faults', reason: 'bad-count' });
        this.#failRestoreAfter = buffers;
      },
      corruptNextCacheSave: () => {
        this.#corruptCacheSave = true;
      },
      failLayerRead: (layer: number) => {
        const seam = this.#forward.residencyFaults;
        if (seam === undefined) throw new TenonError('EINVAL', 'the session runs resident layers', { op: 'session.faults', reason: 'not-bounded' });
        seam.failLayerRead(layer);
      },
    });
  }

  /**
   * Validates the model against the runtime and tokenizer, uploads it, and only then returns a session.
   * EINVAL `vocab-mismatch` (a tokenizer of another size), `tokenizer-mismatch` (a LoadedModel with a
   * tokenizer that is not its own), `no-tokenizer` (a llama2.c checkpoint without one), `bad-argument`;
   * then LlamaForward.create's refusals. Nothing stays allocated on failure.
   */
  static async create(options: TextSessionOptions): Promise<TextSession> {
    const model = describeModel(options);
    const forward = await LlamaForward.create(options.runtime, model, options);
    return new TextSession(forward, model, options);
  }

  /** The model this session runs. */
  get model(): LoadedModel {
    return this.#model;
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
  prefill(tokens: readonly number[], options: StepOptions = {}): Promise<StepReport> {
    return this.#step(tokens, 'session.prefill', options);
  }

  /** Processes one token after the committed ones. */
  decode(token: number, options: StepOptions = {}): Promise<StepReport> {
    return this.#step([token], 'session.decode', options);
  }

  /** Captures the committed state (length, epoch, last outcome; the KV rows are kept by the append-only cache). */
  checkpoint(): Checkpoint {
    this.#usable('session.checkpoint');
    const top = this.#lineage[this.#lineage.length - 1];
    if (top?.mark !== this.#mark) this.#lineage.push({ mark: this.#mark, length: this.length });
    const cp: Checkpoint = Object.freeze({ length: this.length, epoch: this.#epoch, lastOutcome: this.#lastOutcome });
    CHECKPOINTS.set(cp, { owner: this, mark: this.#mark });
    return cp;
  }

  /**
   * Restores tokens, KV rows, epoch and last outcome of `cp`. Refused with EINVAL for anything checkpoint()
   * of this session did not return, and with ESTALE when the committed history no longer extends the
   * checkpoint's (a later rollback past it, a truncation below it, a reset or a load replaced it).
   */
  async rollback(cp: Checkpoint): Promise<void> {
    const op = 'session.rollback';
    await this.#exclusive(op, async () => {
      const entry = typeof cp === 'object' && cp !== null ? CHECKPOINTS.get(cp) : undefined;
      if (entry === undefined || entry.owner !== this) throw new TenonError('EINVAL', 'not a checkpoint of this session', { op, reason: 'bad-checkpoint' });
      const at = this.#lineage.findIndex((e) => e.mark === entry.mark);
      if (at < 0) {
        throw new TenonError('ESTALE', 'the checkpoint\'s history is no longer the committed one', { op, reason: 'stale-checkpoint', ids: { length: cp.length, epoch: cp.epoch } });
      }
      await this.#rewrite(op, () => this.#zeroRows(cp.length, this.length));
      this.#tokens.length = cp.length;
      this.#epoch = cp.epoch;
      this.#lastOutcome = cp.lastOutcome;
      this.#lineage.length = at + 1;
      this.#mark = entry.mark;
    });
  }

  /**
   * Empties the history and zeroes every cache row; every earlier checkpoint becomes stale. This is the
   * way back after a fence (if the state still exists); a reset that fails part-way leaves the fence up.
   */
  async reset(): Promise<void> {
    const op = 'session.reset';
    if (this.#forward.lost) throw new TenonError('ENODEV', 'the model state was lost with its device; create a new session', { op, reason: 'state-lost' });
    if (this.#busy) throw new TenonError('EBUSY', 'a step is running', { op, reason: 'step-running' });
    this.#lane?.closeForReset();
    this.#busy = true;
    try {
      // Every row is rewritten, those of a step submitted ahead included (zeroRows takes the state back
      // after it): nothing of it survives, so whatever it reported is moot.
      this.#ahead = undefined;
      await this.#rewrite(op, () => this.#zeroRows(0, this.maxSeq));
      this.#tokens = [];
      this.#fenced = undefined;
      this.#lastOutcome = undefined;
      this.#newLineage();
    } finally {
      this.#busy = false;
    }
  }

  /** The model and tokenizer identity prompt caches are bound to (SHA-256, computed once). */
  identity(): Promise<ModelIdentity> {
    this.#identity ??= this.#model.identity();
    return this.#identity;
  }

  /**
   * Saves the committed state of the first `length` positions as one blob at `path` of a data plane.
   * The blob's SHA-256 is declared when the staging is opened; the data plane publishes the staged bytes
   * only if they hash to it, and that publication is the single commit point: before it readers see the
   * previous revision, after it the verified new one; nothing runs after it that could need undoing. Any
   * failure publishes nothing. The session itself is never changed by a save.
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
      layout: { layers: c.layers, kvDim: c.kvDim, dtype: 'f32', order: 'layer-k-v' },
      tokens: this.#tokens.slice(0, length),
      epoch: this.#epoch,
      lastOutcome: this.#lastOutcome ?? null,
    };
    const bytes = await encodePromptCache(manifest, await this.exportState(length));
    const digest = await sha256Hex(bytes);
    const writer = await writeBlob(store, path, bytes.byteLength, { digest });
    try {
      let staged = bytes;
      if (this.#corruptCacheSave) {
        this.#corruptCacheSave = false;
        staged = bytes.slice();
        staged[staged.byteLength >> 1]! ^= CORRUPT_BIT;
      }
      await writer.write(staged);
      await writer.seal();
    } catch (err) {
      if (writer.descriptor.info().state === 'open') await writer.abort();
      throw err;
    }
    return manifest;
  }

  /**
   * Loads a prompt cache saved by this model and tokenizer: validates digest, manifest, identity, layout,
   * sizes and (with `prompt`) that its prefix starts the prompt, all before touching the session. On
   * success the session's history is the cache's prefix, its epoch continues after the cache's, its last
   * outcome is the cache's, and earlier checkpoints are stale. Any refusal leaves the session exactly as
   * it was; a failure while the rows are being written fences it.
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
      layers: c.layers,
      kvDim: c.kvDim,
      maxSeq: this.maxSeq,
    });
    if (manifest.tokens.some((t) => t >= c.vocabSize)) throw new TenonError('EINVAL', 'prefix holds ids outside the vocabulary', { op, reason: 'manifest' });
    const prompt = options.prompt;
    if (prompt !== undefined && (manifest.tokens.length > prompt.length || manifest.tokens.some((t, i) => prompt[i] !== t))) {
      throw new TenonError('EINVAL', 'the cache prefix does not start this prompt', { op, reason: 'prefix-mismatch' });
    }
    await this.#import(op, manifest.tokens, kv, { epoch: Math.max(this.#epoch, manifest.epoch), lastOutcome: manifest.lastOutcome ?? undefined });
    return manifest;
  }

  /** Prompt-lookup speculation so far: verification passes, draft tokens proposed and accepted. */
  speculationStats(): { readonly passes: number; readonly drafted: number; readonly accepted: number } {
    return { ...this.#speculation };
  }

  report(): SessionReport {
    const c = this.#model.config;
    const f32 = 4;
    const state = 2 * c.layers * this.maxSeq * c.kvDim * f32;
    const provider = this.#forward.runtime.provider;
    return {
      provider: provider.id,
      decode: { mode: this.#forward.mode, kernels: this.#forward.kernels, dispatchesPerToken: this.#forward.decodeDispatches },
      residency: provider.kind === 'webgpu' ? 'device' : 'host',
      weightBytes: this.#forward.weightBytes,
      weightBytesByKind: this.#forward.weightBytesByKind,
      stateBytes: state,
      activationBytes: this.#forward.activationBytes,
      length: this.length,
      maxSeq: this.maxSeq,
      epoch: this.#epoch,
      lastOutcome: this.#lastOutcome,
      layerResidency: this.#forward.residency(),
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
    await this.#settled(op);
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

  /**
   * Replaces the whole state with `tokens` and their K/V rows (layout of exportState). Bad input changes
   * nothing; a failure while the rows are written fences the session. Earlier checkpoints become stale.
   */
  async importState(tokens: readonly number[], kv: Float32Array): Promise<void> {
    await this.#import('session.importState', tokens, kv, undefined);
  }

  /**
   * Generates tokens after `prompt` (text is encoded with the vocabulary's defaults: BOS where the model
   * adds one, special tokens not parsed; ids are used as given). The prompt is prefilled only past the
   * longest committed prefix it shares with the history.
   */
  async *generate(prompt: string | readonly number[], options: GenerateOptions = {}): AsyncGenerator<GeneratedToken, void, undefined> {
    const op = 'session.generate';
    const ids = typeof prompt === 'string' ? this.tokenizer.encode(prompt) : [...prompt];
    if (ids.length === 0) throw new TenonError('EINVAL', 'empty prompt', { op, reason: 'empty-prompt' });
    const sampler = new Sampler(options);
    const maxTokens = options.maxTokens ?? DEFAULT_MAX_TOKENS;
    const stop = new Set(options.stopTokens ?? (this.#model.format === 'gguf' ? this.#model.endOfGeneration : [BOS]));
    const signal = options.signal;
    const speculative = options.speculative;
    if (speculative !== undefined && sampler.temperature !== 0) {
      throw new TenonError('EINVAL', 'speculative decoding is greedy only', { op, reason: 'speculative-needs-greedy' });
    }
    const stepsAhead = options.stepsAhead ?? DEFAULT_STEPS_AHEAD;
    if (!Number.isSafeInteger(stepsAhead) || stepsAhead < 0 || stepsAhead > STEPS_AHEAD_LIMIT) {
      throw new TenonError('EINVAL', `stepsAhead must be an integer in 0..${STEPS_AHEAD_LIMIT}`, { op, reason: 'bad-steps-ahead' });
    }
    // Greedy choices (and deviceSampling draws) without observers are made on the device, so the steps can
    // be pipelined.
    const observer = this.#observer;
    const choice = sampler.deviceChoice();
    const pipelined = this.#forward.mode === 'chained' && choice !== undefined && speculative === undefined && observer?.logits === undefined && observer?.layer === undefined;
    // Longest-prefix reuse: keep the committed prefix shared with the prompt, prefill the rest.
    let shared = 0;
    while (shared < this.length && shared < ids.length - 1 && this.#tokens[shared] === ids[shared]) shared++;
    if (shared < this.length) await this.#truncate(op, shared);
    const text = this.tokenizer.textStream({ prev: ids[ids.length - 1]! });
    if (pipelined) {
      yield* this.#generatePipelined(op, ids.slice(shared), { maxTokens, depth: stepsAhead, stop, signal, text, choice: choice! });
      return;
    }
    let report = await this.prefill(ids.slice(shared));
    let produced = 0;
    let next = sampler.sample(report.logits, this.length);
    while (produced < maxTokens) {
      if (signal?.aborted) throw new TenonError('ECANCELED', 'generation aborted', { op, cause: signal.reason });
      if (stop.has(next)) return;
      if (speculative !== undefined) {
        // Drafts never include a stop token, so an accepted draft is always a token greedy would emit.
        const budget = Math.min(maxTokens - produced - 1, this.#forward.maxBatch - 1);
        const drafts = this.#draft(next, speculative.ngram ?? DEFAULT_NGRAM, Math.min(speculative.lookahead ?? DEFAULT_LOOKAHEAD, budget));
        const firstStop = drafts.findIndex((t) => stop.has(t));
        if (firstStop >= 0) drafts.length = firstStop;
        if (drafts.length > 0) {
          const verified = await this.#verify(next, drafts);
          const base = verified.length - verified.tokens.length;
          for (let i = 0; i < verified.tokens.length; i++) {
            produced++;
            yield { token: verified.tokens[i]!, text: text.push(verified.tokens[i]!), position: base + i };
          }
          next = verified.argmax;
          continue;
        }
      }
      report = await this.decode(next);
      produced++;
      yield { token: next, text: text.push(next), position: this.length - 1 };
      next = sampler.sample(report.logits, this.length);
    }
  }

  /**
   * Greedy (or deviceSampling) generation as generate() does it, pipelined (see the module comment): each
   * transaction submits the next decode step before it waits for its own proof, and that step decodes the
   * token this one chose on the device (`choice`: argmax, or the sample op). The only readback per token is the chosen id, which decides stop and yield.
   */
  async *#generatePipelined(
    op: string,
    prompt: readonly number[],
    run: { readonly maxTokens: number; readonly depth: number; readonly stop: ReadonlySet<number>; readonly signal: AbortSignal | undefined; readonly text: { push(token: number): string }; readonly choice: DeviceChoice },
  ): AsyncGenerator<GeneratedToken, void, undefined> {
    const owner = {};
    const { maxTokens, stop, signal, text, depth, choice } = run;
    // Decode i (0-based) runs once token i is known; steps ahead cover decodes up to i + depth, never past maxTokens.
    const aheadAfter = (decoded: number): number => Math.max(0, Math.min(depth, maxTokens - decoded));
    try {
      let next = (await this.#pipelinedStep('session.prefill', prompt, owner, aheadAfter(0), choice)).argmax;
      let produced = 0;
      while (produced < maxTokens) {
        if (signal?.aborted) throw new TenonError('ECANCELED', 'generation aborted', { op, cause: signal.reason });
        if (stop.has(next)) return;
        const report = await this.#pipelinedStep('session.decode', [next], owner, aheadAfter(produced + 1), choice);
        produced++;
        yield { token: next, text: text.push(next), position: this.length - 1 };
        next = report.argmax;
      }
    } finally {
      // A step still ahead (a stop token, an abort, a caller that left) is discarded: its rows are zeroed.
      if (this.#ahead?.owner === owner) await this.#exclusive(op, async () => undefined);
    }
  }

  /**
   * Streams the assistant's reply to `messages`: renders the model's chat template (renderChat with
   * add_generation_prompt true and `options.variables`), encodes the text with special tokens parsed (BOS
   * prepended where the vocabulary adds one, unless the rendered text already starts with it), prefills
   * past the longest committed prefix it shares with the history (a conversation that goes on reuses the
   * earlier turns), then generates as `generate` does and stops at the model's end-of-generation tokens
   * (and any `options.stopTokens`), which are never yielded. A model without a template: ENOTSUP
   * `no-chat-template`, a template that fails: EINVAL (renderChat's reasons); both before any step.
   */
  async *chat(messages: readonly ChatMessage[], options: ChatOptions = {}): AsyncGenerator<GeneratedToken, void, undefined> {
    const { variables, ...generate } = options;
    const input: ChatInput = { ...variables, messages, add_generation_prompt: true };
    const text = renderChat(this.tokenizer, input);
    const bosId = this.tokenizer.special.bos;
    const templateHasBos = bosId !== undefined && text.startsWith(this.tokenizer.tokenText(bosId));
    const ids = this.tokenizer.encode(text, { bos: this.tokenizer.addBos && !templateHasBos, parseSpecial: true });
    const stopTokens = [...this.#model.endOfGeneration, ...(options.stopTokens ?? [])];
    yield* this.generate(ids, { ...generate, stopTokens });
  }

  /** Opens the one prediction lane: work past the committed length that is committed or abandoned later. */
  forkLane(): PredictionLane {
    const op = 'session.forkLane';
    this.#usable(op);
    if (this.#lane !== undefined) throw new TenonError('EBUSY', 'a lane is open', { op, reason: 'lane-open' });
    const host: LaneHost = {
      forward: this.#forward,
      vocab: this.#model.config.vocabSize,
      committedLength: () => this.length,
      wantsLayers: () => this.#observer?.layer !== undefined,
      exclusive: async (laneOp, work) => {
        this.#usable(laneOp);
        this.#busy = true;
        try {
          await this.#dropAhead(laneOp);
          return await work();
        } finally {
          this.#busy = false;
        }
      },
      discard: (laneOp, from, to) => this.#rewrite(laneOp, () => this.#zeroRows(from, to)),
      commit: async (tokens, count, executed) => {
        await this.#transact('lane.exchange', tokens, { rows: tokens.length, commit: { kind: 'prefix', count }, execute: async () => executed });
      },
      usable: (laneOp) => this.#usable(laneOp),
      close: (lane) => {
        if (this.#lane === lane) this.#lane = undefined;
      },
    };
    this.#lane = new Lane(host);
    return this.#lane;
  }

  dispose(): void {
    this.#forward.dispose();
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

  /**
   * Verifies drafts in one batched transaction: `next` and the drafts run together; the observe phase
   * commits `next` plus each draft the observed choice after its predecessor confirms; the rest is zeroed.
   */
  async #verify(next: number, drafts: readonly number[]): Promise<StepReport> {
    const tokens = [next, ...drafts];
    const layers = this.#observer?.layer !== undefined;
    const report = await this.#transact('session.speculate', tokens, {
      rows: tokens.length,
      commit: { kind: 'verified' },
      execute: async (start) => {
        const r = await this.#forward.run(tokens, start, { allRows: true, layers });
        return { ...r, layers: r.layers, layerTokens: tokens };
      },
    });
    this.#speculation.passes++;
    this.#speculation.drafted += drafts.length;
    this.#speculation.accepted += report.tokens.length - 1;
    return report;
  }

  #usable(op: string): void {
    if (this.#forward.lost) throw new TenonError('ENODEV', 'the model state was lost with its device', { op, reason: 'state-lost' });
    if (this.#fenced !== undefined) throw new TenonError('EIO', 'an earlier failure left the state unknown; reset() first', { op, reason: 'fenced', cause: this.#fenced });
    if (this.#busy) throw new TenonError('EBUSY', 'a step is running', { op, reason: 'step-running' });
  }

  /** Runs `work` alone: refused while unusable or a lane is open; a step run ahead by another than `keep` is discarded first. */
  async #exclusive<T>(op: string, work: () => Promise<T>, keep?: object): Promise<T> {
    this.#usable(op);
    if (this.#lane !== undefined) throw new TenonError('EBUSY', 'a prediction lane is open', { op, reason: 'lane-open' });
    this.#busy = true;
    try {
      // Most steps have nothing ahead to drop: no extra async hop then.
      const ahead = this.#ahead;
      if (ahead !== undefined && ahead.owner !== keep) await this.#dropAhead(op, keep);
      return await work();
    } finally {
      this.#busy = false;
    }
  }

  /**
   * Discards the step a pipelined generation submitted ahead (unless `keep` owns it): waits for its proof,
   * takes the state back and zeroes its rows (a failure part-way fences, as any rewrite). A failure the
   * discarded work reported is thrown after its rows were zeroed; a lost state throws ENODEV.
   */
  async #dropAhead(op: string, keep?: object): Promise<void> {
    const ahead = this.#ahead;
    if (ahead === undefined || ahead.owner === keep) return;
    this.#ahead = undefined;
    const failure = await this.#forward.reclaim();
    await this.#rewrite(op, () => this.#zeroRows(ahead.position, ahead.position + ahead.steps.length));
    if (failure !== undefined) throw failure;
  }

  /** For calls that read the state outside a transaction: no step ahead, the state in hand. */
  async #settled(op: string): Promise<void> {
    this.#busy = true;
    try {
      await this.#dropAhead(op);
      const failure = await this.#forward.reclaim();
      if (failure !== undefined) throw failure;
    } finally {
      this.#busy = false;
    }
  }

  /** A new state: a fresh mark (checkpoints on the lineage stay valid: the history extends them). */
  #advance(): void {
    this.#mark = ++this.#marks;
  }

  /** A replaced history: every earlier checkpoint is stale. */
  #newLineage(): void {
    this.#lineage = [];
    this.#advance();
  }

  /** Installs a committed transaction: the only place a step's result becomes visible. */
  #publish(tokens: readonly number[], count: number): void {
    // Appended in place (the history is never handed out by reference): no copy of it per step.
    for (let i = 0; i < count; i++) this.#tokens.push(tokens[i]!);
    this.#lastOutcome = 'committed';
    this.#advance();
  }

  /**
   * Runs a rewrite of cache rows; if it fails the rows may be half rewritten, so the session is fenced
   * (later calls fail EIO 'fenced' until reset() succeeds) and the failure is thrown.
   */
  async #rewrite(op: string, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (err) {
      const cause = isTenonError(err) ? err : new TenonError('EIO', String(err), { op, reason: 'restore-failed', cause: err });
      this.#fenced = cause;
      this.#lastOutcome = 'indeterminate';
      throw cause;
    }
  }

  /** The restore-fault seam: counts cache buffers rewritten and fails the chosen one. */
  #beforeBufferRewrite(op: string): void {
    if (this.#failRestoreAfter === undefined) return;
    if (this.#failRestoreAfter === 0) {
      this.#failRestoreAfter = undefined;
      throw new TenonError('EIO', 'injected failure part-way through a restore', { op, reason: 'injected' });
    }
    this.#failRestoreAfter--;
  }

  /** Cuts the history back to `length` (prompt-prefix reuse); checkpoints past it become stale. */
  async #truncate(op: string, length: number): Promise<void> {
    await this.#exclusive(op, async () => {
      await this.#rewrite(op, () => this.#zeroRows(length, this.length));
      this.#tokens.length = length;
      this.#lineage = this.#lineage.filter((e) => e.length <= length);
      this.#advance();
    });
  }

  async #import(op: string, tokens: readonly number[], kv: Float32Array, meta: { epoch: number; lastOutcome: StepOutcome | undefined } | undefined): Promise<void> {
    this.#usable(op);
    const width = this.#model.config.kvDim;
    const length = tokens.length;
    if (!Array.isArray(tokens) || !(kv instanceof Float32Array) || length > this.maxSeq || kv.length !== 2 * this.#forward.layers * length * width) {
      throw new TenonError('EINVAL', 'state does not fit this session', { op, reason: 'state-mismatch' });
    }
    const vocab = this.#model.config.vocabSize;
    for (const t of tokens) {
      if (!Number.isSafeInteger(t) || t < 0 || t >= vocab) throw new TenonError('EINVAL', `token ${String(t)} is outside the vocabulary`, { op, reason: 'bad-token' });
    }
    await this.#exclusive(op, async () => {
      await this.#rewrite(op, async () => {
        await this.#forward.reclaim();
        const group = this.#forward.group;
        let at = 0;
        for (let l = 0; l < this.#forward.layers; l++) {
          const slots = this.#forward.cacheSlots(l);
          for (const slot of [slots.k, slots.v]) {
            this.#beforeBufferRewrite(op);
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
      });
      this.#tokens = [...tokens];
      if (meta !== undefined) {
        this.#epoch = meta.epoch;
        this.#lastOutcome = meta.lastOutcome;
      }
      this.#newLineage();
    });
  }

  async #step(tokens: readonly number[], op: string, options: StepOptions): Promise<StepReport> {
    if (!Array.isArray(tokens) || tokens.length === 0) throw new TenonError('EINVAL', 'a step needs at least one token', { op, reason: 'empty-step' });
    const vocab = this.#model.config.vocabSize;
    for (const t of tokens) {
      if (!Number.isSafeInteger(t) || t < 0 || t >= vocab) throw new TenonError('EINVAL', `token ${String(t)} is outside the vocabulary`, { op, reason: 'bad-token' });
    }
    if (this.length + tokens.length > this.maxSeq) {
      throw new TenonError('ENOSPC', `the context holds ${this.maxSeq} positions`, { op, reason: 'context-full' });
    }
    const layers = this.#observer?.layer !== undefined;
    const logits = options.logits !== false || this.#observer?.logits !== undefined;
    const forward = this.#forward;
    return this.#transact(op, tokens, {
      rows: tokens.length,
      commit: { kind: 'all' },
      execute: async (start) => {
        // Layer observation reads the observation buffer the plain graphs write.
        if (forward.mode === 'chained' && !layers) {
          const step = await forward.enqueue({ kind: 'tokens', tokens }, start, { readback: !logits });
          const readback = await forward.settle(step);
          if (logits) {
            const r = await forward.readLogits();
            return { logits: r.logits, argmax: r.argmax, rowLogits: r.rowLogits, argmaxRows: r.argmaxRows, layers: undefined, layerTokens: tokens };
          }
          return chosenOnly(readback, tokens);
        }
        let result: StepResult | undefined;
        const passes: (readonly Float32Array[])[] = [];
        const batch = this.#forward.maxBatch;
        for (let at = 0; at < tokens.length; at += batch) {
          // Only the last chunk's logits are used: earlier chunks read nothing back.
          result = await this.#forward.run(tokens.slice(at, at + batch), start + at, { layers, logits: at + batch >= tokens.length });
          if (result.layers !== undefined) passes.push(result.layers);
        }
        return { ...result!, layers: layers ? concatLayers(passes) : undefined, layerTokens: tokens };
      },
    });
  }

  /**
   * The transaction every change of the committed history goes through (see the module comment). `keep`:
   * the pipelined generation whose step ahead this transaction adopts (any other is discarded first).
   */
  async #transact(op: string, tokens: readonly number[], plan: TransactionPlan, keep?: object): Promise<StepReport> {
    return this.#exclusive(op, async () => {
      const epoch = ++this.#epoch;
      const start = this.length;
      let phase: StepPhase = 'checkpoint';
      const refuse = (p: StepPhase): never => {
        throw new TenonError('ECANCELED', `no agreement on ${p}`, { op, reason: 'no-agreement' });
      };
      // A synchronous answer (a single rank's) is taken as it is: no promise per phase.
      const gate = (p: StepPhase): Promise<void> | undefined => {
        phase = p;
        if (this.#failAt === p) {
          this.#failAt = undefined;
          throw new TenonError('EIO', `injected failure in ${p}`, { op, reason: 'injected' });
        }
        const agreed = this.#agreement.agree(epoch, p);
        if (agreed === true) return undefined;
        if (agreed === false) refuse(p);
        return Promise.resolve(agreed).then((ok) => {
          if (!ok) refuse(p);
        });
      };
      try {
        // A gate answered synchronously is not awaited: no promise and no microtask per phase then.
        let wait = gate('checkpoint');
        if (wait !== undefined) await wait;
        wait = gate('execute');
        if (wait !== undefined) await wait;
        const executed = await plan.execute(start);
        wait = gate('observe');
        if (wait !== undefined) await wait;
        const observed = this.#observe(epoch, start, tokens, executed, plan.commit);
        wait = gate('publish');
        if (wait !== undefined) await wait;
        if (observed.count < plan.rows) await this.#zeroRows(start + observed.count, start + plan.rows);
        wait = gate('complete');
        if (wait !== undefined) await wait;
        this.#publish(tokens, observed.count);
        return { epoch, length: this.#tokens.length, tokens: tokens.slice(0, observed.count), logits: observed.logits, argmax: observed.argmax };
      } catch (err) {
        // A step submitted ahead (this transaction's own, not adopted yet, or the next one) goes with it.
        const ahead = this.#ahead;
        this.#ahead = undefined;
        if (this.#forward.lost) {
          this.#lastOutcome = 'indeterminate';
          this.#fenced = isTenonError(err) ? err : new TenonError('EIO', String(err), { op });
          throw new StepError(err, phase, epoch, 'indeterminate');
        }
        const end = Math.max(start + plan.rows, ahead === undefined ? 0 : ahead.position + ahead.steps.length);
        try {
          await this.#rewrite(op, () => this.#zeroRows(start, end));
        } catch {
          throw new StepError(err, phase, epoch, 'indeterminate');
        }
        this.#lastOutcome = 'aborted';
        this.#advance();
        throw new StepError(err, phase, epoch, 'aborted');
      }
    }, keep);
  }

  /**
   * One transaction of a pipelined greedy generation (`owner`): runs `tokens` (adopting the first step
   * `owner` submitted ahead, which decodes them, or submitting them now), then tops the steps ahead up to
   * `ahead` (each decodes its predecessor's choice, read on the device) before it waits for its own proof.
   */
  #pipelinedStep(op: string, tokens: readonly number[], owner: object, ahead: number, choice: DeviceChoice): Promise<StepReport> {
    const forward = this.#forward;
    return this.#transact(
      op,
      tokens,
      {
        rows: tokens.length,
        commit: { kind: 'all' },
        execute: async (start) => {
          let queue = this.#ahead;
          let step: ChainedStep;
          if (queue !== undefined && queue.owner === owner && queue.steps.length > 0) {
            step = queue.steps.shift()!;
            queue.position++;
          } else {
            step = await forward.enqueue({ kind: 'tokens', tokens }, start, { readback: true, choice });
          }
          queue ??= this.#ahead = { owner, position: start + tokens.length, steps: [] };
          while (queue.steps.length < ahead && queue.position + queue.steps.length < this.maxSeq) {
            try {
              queue.steps.push(await forward.enqueue({ kind: 'device' }, queue.position + queue.steps.length, { readback: true, choice }));
            } catch (err) {
              // Steps ahead are optional: with every readback buffer in flight (other work on this runtime)
              // the pipeline is simply shallower this time; a chain that failed or could not be proven
              // takes no more members, and the steps in it report that when they settle.
              if (isTenonError(err) && TOP_UP_REFUSALS.has(err.reason ?? '')) break;
              throw err;
            }
          }
          if (queue.steps.length === 0) this.#ahead = undefined;
          return chosenOnly(await forward.settle(step), tokens);
        },
      },
      owner,
    );
  }

  /**
   * The observe phase: layer hooks, then logits hooks, and the decision how many tokens commit. Row-wise
   * rules look at row i's logits (possibly replaced) to decide whether token i+1 commits.
   */
  #observe(epoch: number, start: number, tokens: readonly number[], executed: Executed, rule: CommitRule): { count: number; logits: Float32Array; argmax: number } {
    const observer = this.#observer;
    if (observer?.layer !== undefined && executed.layers !== undefined) {
      const context = { epoch, position: start, tokens: executed.layerTokens };
      executed.layers.forEach((hidden, l) => observer.layer!(l, hidden, context));
    }
    if (rule.kind === 'all') {
      const replaced = observer?.logits?.(executed.logits, { epoch, position: start, tokens });
      if (replaced instanceof Float32Array) return { count: tokens.length, logits: replaced, argmax: argmaxOf(replaced) };
      return { count: tokens.length, logits: executed.logits, argmax: executed.argmax };
    }
    const vocab = this.#model.config.vocabSize;
    for (let i = 0; ; i++) {
      const row = executed.rowLogits.subarray(i * vocab, (i + 1) * vocab);
      const replaced = observer?.logits?.(row, { epoch, position: start + i, tokens: [tokens[i]!] });
      const logits = replaced instanceof Float32Array ? replaced : row;
      const choice = replaced instanceof Float32Array ? argmaxOf(replaced) : executed.argmaxRows[i]!;
      const last = rule.kind === 'prefix' ? i + 1 === rule.count : i + 1 === tokens.length || choice !== tokens[i + 1];
      if (last) return { count: i + 1, logits, argmax: choice };
    }
  }

  /** Restores the invariant that rows from..to-1 of every cache are zero (writes only those rows). */
  async #zeroRows(from: number, to: number): Promise<void> {
    if (to <= from) return;
    // The state comes back from a running chain first; a failure its members reported belongs to the
    // steps that settle them (this runs as their undo, or after they were discarded).
    await this.#forward.reclaim();
    const width = this.#model.config.kvDim;
    const group = this.#forward.group;
    for (let l = 0; l < this.#forward.layers; l++) {
      const slots = this.#forward.cacheSlots(l);
      for (const slot of [slots.k, slots.v]) {
        this.#beforeBufferRewrite('session.zeroRows');
        using m = group.viewMut<'f32'>(slot);
        await m.fillRange(0, from * width, to * width);
      }
    }
  }
}

/**
 * A prediction lane: positions past the committed length, run without committing them. `exchange(n)`
 * commits the first n lane tokens through the session's transaction (agreement seam and observers
 * included; their rows are already written) and zeroes the rest; `abandon()` zeroes every lane row. A
 * failed lane pass zeroes its rows and leaves the canonical state as it was; a failure while zeroing
 * fences the session and is thrown. One lane at a time; the session refuses steps while it is open.
 * Module-private: sessions make lanes, nothing else can.
 */
class Lane implements PredictionLane {
  readonly #host: LaneHost;
  #tokens: number[] = [];
  /** What each pass returned, kept for the exchange transaction's observe phase. */
  #passes: StepResult[] = [];
  #closed = false;

  constructor(host: LaneHost) {
    this.#host = host;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get tokens(): readonly number[] {
    return [...this.#tokens];
  }

  async run(tokens: readonly number[]): Promise<StepResult> {
    const op = 'lane.run';
    this.#open(op);
    const forward = this.#host.forward;
    return this.#host.exclusive(op, async () => {
      const start = this.#host.committedLength() + this.#tokens.length;
      if (start + tokens.length > forward.maxSeq) throw new TenonError('ENOSPC', 'the lane runs past the context', { op, reason: 'context-full' });
      try {
        const result = await forward.run(tokens, start, { allRows: true, layers: this.#host.wantsLayers() });
        this.#tokens.push(...tokens);
        this.#passes.push(result);
        return result;
      } catch (err) {
        if (!forward.lost) await this.#host.discard(op, start, start + tokens.length);
        throw err;
      }
    });
  }

  async exchange(n: number): Promise<void> {
    const op = 'lane.exchange';
    this.#open(op);
    if (!Number.isSafeInteger(n) || n < 0 || n > this.#tokens.length) throw new TenonError('EINVAL', 'n must be within the lane', { op, reason: 'bad-count' });
    if (n === 0) {
      await this.abandon();
      return;
    }
    this.#host.usable(op);
    const tokens = this.#tokens;
    const passes = this.#passes;
    const last = passes[passes.length - 1]!;
    const vocab = this.#host.vocab;
    const layered = passes.every((p) => p.layers !== undefined);
    const executed: Executed = {
      logits: last.logits,
      argmax: last.argmax,
      rowLogits: concatRows(passes.map((p) => p.rowLogits.subarray(0, p.argmaxRows.length * vocab))),
      argmaxRows: passes.flatMap((p) => p.argmaxRows),
      layers: layered ? concatLayers(passes.map((p) => p.layers!)) : undefined,
      layerTokens: tokens,
    };
    // From here the exchange transaction owns every lane row: it commits n and zeroes the rest, or on
    // failure zeroes them all.
    this.#finish();
    await this.#host.commit(tokens, n, executed);
  }

  async abandon(): Promise<void> {
    const op = 'lane.abandon';
    this.#open(op);
    await this.#host.exclusive(op, async () => {
      const base = this.#host.committedLength();
      const rows = this.#tokens.length;
      this.#finish();
      await this.#host.discard(op, base, base + rows);
    });
  }

  /** reset(): the reset zeroes every row itself. */
  closeForReset(): void {
    if (!this.#closed) this.#finish();
  }

  #open(op: string): void {
    if (this.#closed) throw new TenonError('ERELEASED', 'lane is closed', { op, reason: 'lane-closed' });
  }

  #finish(): void {
    this.#closed = true;
    this.#tokens = [];
    this.#passes = [];
    this.#host.close(this);
  }
}
