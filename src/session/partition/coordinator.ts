// PartitionedSession: one model split across rank workers (seed 003 "partitioned sessions"; DESIGN.md
// "Partitioned ranks"). The coordinator (this object, on the caller's thread) owns the control block, the
// shared logits array, one SAB ring per link of the communication manifest, the rank workers, the
// committed history (length, epoch, tokens), the named checkpoints and the fence. Ranks own their weight
// shares and KV rows (rank.ts).
//
// Construction checks the partition against the model first (checkPartition: TS-dist-partition-authority);
// a refused partition starts no worker and allocates nothing. Each step is a transaction whose every phase
// boundary (checkpoint, execute, complete) is agreed by all ranks through the control block: a round
// proceeds only when every rank voted success for this phase and this step's epoch (the rank whose vote
// completes the round applies protocol.ts roundFailure and writes the decision; the coordinator stays off
// the step's path until its final decision); a vote naming another epoch, or a rank refusing a decision
// that names another epoch, aborts the step and every rank restores its step checkpoint
// (TS-txn-epoch-mismatch). The step's tokens, length and logits are published only after the 'complete'
// round agreed, and the coordinator re-reads that round's votes before it publishes. A greedy decode run
// (decode, TS-dist-decode-run) is one command for many one-token steps: the ranks run them back to back,
// each the same transaction, each fed the greedy id of the one before, and this thread sleeps until the
// run's last step or the first that does not commit, then publishes every committed step at once.
// Checkpoints and rollbacks are two-phase over messages: a checkpoint exists only when every rank captured
// its part (TS-dist-checkpoint); a rollback or reset changes a rank only after every rank prepared it with
// the same metadata (TS-dist-rollback). Sharded prompt caches: one shard per stateful rank, staged and
// verified before the manifest (the single commit point) is written (TS-dist-cache-save); a load checks the
// manifest's topology and identity and every shard's hash, then has every rank validate its shard before
// any rank installs one (TS-dist-cache-load). Stateless ranks own no KV and no shard
// (TS-dist-stateless-rank). Capture/observer callbacks are refused (TS-dist-capture-local).
// Rank loss: a worker that dies (Node: its exit event; browsers: the Web Lock it held becomes free, the data
// plane's peer-loss mechanism) fences the session: the fence word and a FENCED decision wake every rank,
// the dead rank's ring endpoints are settled LOST so no survivor waits on it, survivors restore their step
// checkpoint, the step ends 'aborted' (before the commit decision) or 'indeterminate' (after it), nothing is
// published, and every later call fails with EIO `fenced` until a new session is built.
// Thread: the caller's (any context with SharedArrayBuffer: cross-origin isolated pages, Node).
import { TenonError } from '../../errors.js';
import { ENDPOINT, createRing, settleEndpoint, wakeRing } from '../../dataplane/index.js';
import type { HostKernelChoice } from '../../submit/index.js';
import { checkPartition, communicationManifest } from './partition.js';
import type { ArchitecturePartition, CheckedPartition, CommunicationManifest } from './partition.js';
import { CMD, CTRL, DEFAULT_SPIN_MICROS, LIVENESS_MICROS, MAX_SPIN_MICROS, MAX_TRACE_STEPS, RANK_PHASES, RANK_WORD, TRACE_STEP, VERDICT, controlWords, phaseIndex, pickGreedy, rankBase, roundFailure, traceLayout } from './protocol.js';
import type { RankCounters, RankDevice, RankFaults, RankInit, RankPhase, RankReply, RankRequest, RankState, RankStepTrace } from './protocol.js';
import { rankWeights } from './weights.js';
import type { DenseWeights } from './weights.js';

/** How the coordinator talks to one rank worker. */
export interface RankWorkerHandle {
  post(message: unknown, transfer?: Transferable[]): void;
  onMessage(handler: (message: RankReply) => void): void;
  /** Calls `handler` once when the worker is gone without the session ending it. */
  watchLoss(lock: string | undefined, handler: () => void): void;
  terminate(): void;
}

/** Starts rank worker `rank`; returns its handle and the Web Lock name it must hold (browsers) or undefined. */
export type RankSpawner = (rank: number, lock: string) => Promise<{ readonly handle: RankWorkerHandle; readonly lock: string | undefined }>;

export interface PartitionedSessionOptions {
  readonly maxSeq: number;
  readonly maxBatch: number;
  /** The model identity stored with cache shards (e.g. ModelIdentity.modelId). */
  readonly identity: string;
  /** How rank workers are started (default: this environment's rank worker, see rank-spawn.ts). */
  readonly spawn: RankSpawner;
  /** Host kernels of every rank (default 'auto': WebAssembly SIMD where available). */
  readonly hostKernels?: HostKernelChoice;
  /** Where each rank computes (default: every rank on the host). WebGPU ranks take pipeline partitions only. */
  readonly devices?: readonly RankDevice[];
  /**
   * How long a rank polls for its peer (ring data, a decision, the next step) before it sleeps on the word
   * (µs, 0..10000; default 0: protocol.ts DEFAULT_SPIN_MICROS says why). Polling trades a core's idle time for the sleep/wake latency; 0 never polls.
   */
  readonly spinMicros?: number;
  /**
   * How long a waiting rank keeps polling past its spin bound after a peer last showed progress (µs,
   * 0..10000; default 0, off: protocol.ts LIVENESS_MICROS says why): a rank whose peer is computing what it waits for
   * polls until the peer delivers instead of sleeping; a dead, parked or descheduled peer stops the polling
   * within this long. 0 turns the rule off (the spin bound alone decides); ignored when spinMicros is 0.
   */
  readonly livenessMicros?: number;
  /**
   * Whether a rank whose own checkpoint vote is OK starts its forward pass before the checkpoint decision,
   * reading the decision at its first exchange, classifier claim or execute vote (true: the round's
   * hand-off overlaps the first segment). Default false, it waits for the decision first: on a quiet
   * 2-core machine bench:ranks ran two tensor ranks faster without the overlap in 3 of 3 runs (0.92 vs
   * 0.71x, 0.96 vs 0.87x, 0.74 vs 0.66x of one rank), while loaded runs were split. A boolean, else
   * EINVAL bad-option before any rank exists.
   */
  readonly overlapCheckpoint?: boolean;
  /**
   * Benchmarks: every rank records, for each of its last `traceSteps` committed steps, when it saw the
   * command, started and ended its forward pass, saw the commit decision, and entered and left each
   * activation exchange, into one shared buffer (no message per step); `exchangeTrace()` reads it. An
   * integer 0..4096; default 0 (off).
   */
  readonly traceSteps?: number;
  /** Refused on partitioned sessions (TS-dist-capture-local). */
  readonly observe?: unknown;
}

/** The outcome of the last step. */
export type PartitionOutcome = { readonly state: 'committed' | 'aborted' | 'indeterminate'; readonly epoch: number; readonly phase?: RankPhase };

export interface PartitionStep {
  readonly epoch: number;
  readonly pos: number;
  /** The last row's logits (a copy). */
  readonly logits: Float32Array;
  readonly argmax: number;
}

/** A greedy decode run (PartitionedSession.decode): its committed steps. */
export interface PartitionDecode {
  /** The epoch of the run's last step. */
  readonly epoch: number;
  /** The position of the run's first step. */
  readonly pos: number;
  /** The greedy id of each step, in order (the next step's token). */
  readonly ids: readonly number[];
  /** The last step's logits (a copy). */
  readonly logits: Float32Array;
}

export interface PartitionCheckpoint {
  readonly id: number;
  readonly length: number;
  readonly epoch: number;
}

/** Where cache shards and manifests live (OPFS through the data plane, memory in tests, ...). */
export interface ShardStore {
  write(name: string, bytes: Uint8Array): Promise<void>;
  read(name: string): Promise<Uint8Array | undefined>;
  remove(name: string): Promise<void>;
}

/** The cache manifest: topology, identity and every shard with its hash. */
export interface PartitionCacheManifest {
  readonly format: typeof PARTITION_CACHE_FORMAT;
  readonly identity: string;
  readonly topology: string;
  readonly length: number;
  readonly epoch: number;
  readonly tokens: readonly number[];
  readonly shards: readonly { readonly rank: number; readonly name: string; readonly bytes: number; readonly sha256: string }[];
}

export const PARTITION_CACHE_FORMAT = 'tenon-partition-cache-1';

/** Per-step counters (benchmarks): agreements (decided rounds) and activation bytes. */
export interface PartitionStats {
  readonly steps: number;
  readonly agreements: number;
  readonly activationBytes: number;
  /** Microseconds the coordinator spent between issuing a step and its final decision. */
  readonly stepMicros: number;
}

/** Coordinator-side fault seams (tests). */
export interface PartitionFaults {
  /** Added to the epoch of the commit decision of the next step (a foreign epoch: TS-txn-epoch-mismatch). */
  decisionEpochSkew: number;
  /** The staged shard of this rank is overwritten with a corrupted copy before verification. */
  corruptStagedShard: number | undefined;
}

const OP = 'partition.session';
const F32_BYTES = 4;
const RING_SLACK_BYTES = 64;
const MANIFEST_SUFFIX = '.manifest';

const nextPow2 = (n: number): number => 2 ** Math.ceil(Math.log2(Math.max(n, 16)));

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

type WaitAsync = (a: Int32Array, i: number, v: number) => { async: boolean; value: Promise<string> | string };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

/**
 * How long, per step, the coordinator may sleep in a blocking Atomics.wait on the decision word (ms) before
 * it returns to its event loop (where worker losses and replies arrive). A futex sleep: the thread takes no
 * core while ranks compute and agree, and wakes as soon as the final decision lands instead of a task
 * later. Only where blocking waits are allowed (Node, workers; never a browser page's main thread).
 */
const BLOCKING_STEP_MS = 8;
/** Whether this thread may block in Atomics.wait (a zero-timeout probe that never sleeps). */
const canBlock: boolean = (() => {
  try {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 1, 0);
    return true;
  } catch {
    return false;
  }
})();

let sessionSerial = 0;

interface Pending {
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

export class PartitionedSession {
  readonly checked: CheckedPartition;
  readonly maxSeq: number;
  readonly maxBatch: number;
  readonly identity: string;
  readonly faults: PartitionFaults = { decisionEpochSkew: 0, corruptStagedShard: undefined };
  readonly #handles: RankWorkerHandle[];
  readonly #ctrl: Int32Array;
  readonly #logits: Float32Array;
  /** The greedy id of each committed step by position, written by the ranks (RankInit.ids). */
  readonly #ids: Int32Array;
  /** CTRL.DECODED when the session was fenced, less a step whose 'complete' was the last decision (decode runs: steps committed before the one in flight). */
  #decodedAtFence = 0;
  /** Ring per link, with the ranks at its ends. */
  readonly #rings: { from: number; to: number; sab: SharedArrayBuffer }[];
  readonly #pending = new Map<number, Pending & { rank: number }>();
  #req = 0;
  #length = 0;
  #epoch = 0;
  #tokens: number[] = [];
  #checkpoints = new Map<number, PartitionCheckpoint & { tokens: readonly number[] }>();
  #cpSerial = 0;
  #outcome: PartitionOutcome | undefined;
  /** Set when a rank was lost (or a prepared change failed to apply); `committing`: the step's commit decision had proceeded. */
  #fence: { rank: number; phase: RankPhase | undefined; committing: boolean } | undefined;
  /** DECISION_SEQ when the current step was issued; undefined between steps. */
  #stepSeq: number | undefined;
  #disposed = false;
  #queue: Promise<unknown> = Promise.resolve();
  #stats = { steps: 0, agreements: 0, activationBytes: 0, stepMicros: 0 };
  readonly #manifest1: CommunicationManifest;
  /** Classifying ranks in vocabulary order (their candidates are compared in this order). */
  readonly #classifiers: readonly CheckedPartition['plans'][number][];
  readonly #trace: Float64Array | undefined;
  readonly #traceSteps: number;

  private constructor(checked: CheckedPartition, options: PartitionedSessionOptions, handles: RankWorkerHandle[], ctrl: SharedArrayBuffer, logits: SharedArrayBuffer, ids: SharedArrayBuffer, rings: { from: number; to: number; sab: SharedArrayBuffer }[], trace: SharedArrayBuffer | undefined) {
    this.checked = checked;
    this.maxSeq = options.maxSeq;
    this.maxBatch = options.maxBatch;
    this.identity = options.identity;
    this.#handles = handles;
    this.#ctrl = new Int32Array(ctrl);
    this.#logits = new Float32Array(logits);
    this.#ids = new Int32Array(ids);
    this.#rings = rings;
    this.#manifest1 = communicationManifest(checked, 1);
    this.#classifiers = checked.plans.filter((p) => p.classifies).sort((a, b) => a.vocabStart - b.vocabStart);
    this.#trace = trace === undefined ? undefined : new Float64Array(trace);
    this.#traceSteps = options.traceSteps ?? 0;
  }

  /**
   * Checks `partition` against the weights, then builds one rank worker per plan. Refusals (EINVAL/ENOTSUP
   * from checkPartition, EINVAL `bad-size`, ENOTSUP `partitioned-capture`) happen before any worker or
   * buffer exists.
   */
  static async create(weights: DenseWeights, partition: ArchitecturePartition, options: PartitionedSessionOptions): Promise<PartitionedSession> {
    if (options.observe !== undefined) {
      throw new TenonError('ENOTSUP', 'capture callbacks are refused on partitioned sessions', { op: OP, reason: 'partitioned-capture' });
    }
    const checked = checkPartition(weights.config, partition);
    const { maxSeq, maxBatch } = options;
    if (!Number.isSafeInteger(maxSeq) || maxSeq < 1 || maxSeq > weights.config.contextLength || !Number.isSafeInteger(maxBatch) || maxBatch < 1 || maxBatch > maxSeq) {
      throw new TenonError('EINVAL', `maxSeq ${maxSeq} / maxBatch ${maxBatch} out of range`, { op: OP, reason: 'bad-size' });
    }
    const n = checked.plans.length;
    const devices = options.devices ?? checked.plans.map((): RankDevice => 'host');
    if (devices.length !== n || !devices.every((d) => d === 'host' || d === 'webgpu')) {
      throw new TenonError('EINVAL', 'devices must name host or webgpu for every rank', { op: OP, reason: 'bad-devices' });
    }
    const spinMicros = options.spinMicros ?? DEFAULT_SPIN_MICROS;
    if (typeof spinMicros !== 'number' || !Number.isFinite(spinMicros) || spinMicros < 0 || spinMicros > MAX_SPIN_MICROS) {
      throw new TenonError('EINVAL', `spinMicros must be 0..${MAX_SPIN_MICROS}`, { op: OP, reason: 'bad-option' });
    }
    const livenessMicros = options.livenessMicros ?? LIVENESS_MICROS;
    if (typeof livenessMicros !== 'number' || !Number.isFinite(livenessMicros) || livenessMicros < 0 || livenessMicros > MAX_SPIN_MICROS) {
      throw new TenonError('EINVAL', `livenessMicros must be 0..${MAX_SPIN_MICROS}`, { op: OP, reason: 'bad-option' });
    }
    const overlapCheckpoint = options.overlapCheckpoint ?? false;
    if (typeof overlapCheckpoint !== 'boolean') throw new TenonError('EINVAL', 'overlapCheckpoint must be a boolean', { op: OP, reason: 'bad-option' });
    const traceSteps = options.traceSteps ?? 0;
    if (!Number.isSafeInteger(traceSteps) || traceSteps < 0 || traceSteps > MAX_TRACE_STEPS) {
      throw new TenonError('EINVAL', `traceSteps must be an integer 0..${MAX_TRACE_STEPS}`, { op: OP, reason: 'bad-option' });
    }
    if (partition.kind !== 'pipeline' && devices.includes('webgpu')) {
      throw new TenonError('ENOTSUP', 'WebGPU ranks take pipeline partitions only', { op: OP, reason: 'device-rank-tensor' });
    }
    const serial = ++sessionSerial;
    const manifest = communicationManifest(checked, maxBatch);
    const ringBytes = nextPow2(2 * (maxBatch * weights.config.dim * F32_BYTES + RING_SLACK_BYTES));
    const rings = manifest.links.map(([from, to]) => ({ from, to, sab: createRing(ringBytes, serial, 0) }));
    const ctrl = new SharedArrayBuffer(controlWords(maxBatch, n) * 4);
    const logits = new SharedArrayBuffer(weights.config.vocabSize * F32_BYTES);
    const ids = new SharedArrayBuffer(maxSeq * Int32Array.BYTES_PER_ELEMENT);
    const trace = traceSteps === 0 ? undefined : new SharedArrayBuffer(traceLayout(weights.config.layers, traceSteps, n).words * Float64Array.BYTES_PER_ELEMENT);
    const handles: RankWorkerHandle[] = [];
    const lockBase = `tenon-rank:${serial}:${Math.random().toString(36).slice(2)}`;
    try {
      const started = await Promise.all(checked.plans.map((_, r) => options.spawn(r, `${lockBase}:${r}`)));
      for (const s of started) handles.push(s.handle);
      const session = new PartitionedSession(checked, options, handles, ctrl, logits, ids, rings, trace);
      await Promise.all(
        checked.plans.map((plan, r) => {
          // A tensor rank may compute any rank's classifier rows (claimed in chunks): it holds all of them.
          const shared = partition.kind === 'tensor' && n > 1;
          const w = shared ? { ...rankWeights(weights, plan), classifier: weights.classifier.slice() } : rankWeights(weights, plan);
          const init: RankInit = {
            t: 'init',
            rank: r,
            ranks: n,
            weights: w,
            maxSeq,
            maxBatch,
            control: ctrl,
            logits,
            incarnation: serial,
            outgoing: rings.filter((x) => x.from === r).map((x) => ({ to: x.to, ring: x.sab })),
            incoming: rings.filter((x) => x.to === r).map((x) => ({ from: x.from, ring: x.sab })),
            lock: started[r]!.lock,
            identity: options.identity,
            topology: checked.topology,
            kernels: options.hostKernels ?? 'auto',
            device: devices[r]!,
            spinMicros,
            livenessMicros,
            overlapCheckpoint,
            sharedClassifier: shared ? checked.plans.map((p) => [p.vocabStart, p.vocabEnd] as const) : [],
            trace,
            traceSteps,
            ids,
            classifiers: session.#classifiers.map((p) => p.rank),
          };
          const transfer = [w.embedding, w.outputNorm, w.classifier, ...w.layers.flatMap((L) => Object.values(L) as Float32Array[])]
            .map((a) => a.buffer as ArrayBuffer)
            .filter((b, i, all) => b.byteLength > 0 && all.indexOf(b) === i);
          return new Promise<void>((ready, failed) => {
            let done = false;
            handles[r]!.onMessage((m) => {
              if (m.t === 'init-failed') {
                done = true;
                failed(new TenonError(m.error.code as TenonError['code'], m.error.message, { op: OP, reason: m.error.reason, ids: { rank: r } }));
                return;
              }
              if (m.t === 'ready') {
                done = true;
                handles[r]!.watchLoss(started[r]!.lock, () => session.#lost(r));
                ready();
                return;
              }
              session.#reply(m);
            });
            handles[r]!.watchLoss(undefined, () => {
              if (!done) failed(new TenonError('ECONNRESET', `rank ${r} died during construction`, { op: OP, reason: 'rank-lost', ids: { rank: r } }));
            });
            handles[r]!.post(init, transfer);
          });
        }),
      );
      return session;
    } catch (err) {
      for (const h of handles) h.terminate();
      throw err;
    }
  }

  /** What crosses between ranks in a step of `tokens` tokens. */
  manifest(tokens: number): CommunicationManifest {
    return communicationManifest(this.checked, tokens);
  }

  get length(): number {
    return this.#length;
  }

  get epoch(): number {
    return this.#epoch;
  }

  get tokens(): readonly number[] {
    return this.#tokens;
  }

  get lastOutcome(): PartitionOutcome | undefined {
    return this.#outcome;
  }

  get fenced(): boolean {
    return this.#fence !== undefined;
  }

  stats(): PartitionStats {
    return { ...this.#stats };
  }

  /** Capture callbacks have no multi-rank publication contract: refused (TS-dist-capture-local). */
  capture(_hook: unknown): never {
    throw new TenonError('ENOTSUP', 'capture callbacks are refused on partitioned sessions', { op: OP, reason: 'partitioned-capture' });
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  #guard(op: string): void {
    if (this.#disposed) throw new TenonError('EINVAL', 'the session was disposed', { op, reason: 'disposed' });
    if (this.#fence !== undefined) {
      throw new TenonError('EIO', `the session is fenced: rank ${this.#fence.rank} was lost`, { op, reason: 'fenced', ids: { rank: this.#fence.rank } });
    }
  }

  // ----- rank loss -----

  #lost(rank: number): void {
    if (this.#disposed || this.#fence !== undefined) return;
    const c = this.#ctrl;
    Atomics.store(c, CTRL.FENCE, 1);
    const inStep = this.#stepSeq !== undefined;
    // Decode runs: a 'complete' decided last is the step in flight (its ranks may not all have applied it).
    const last = inStep ? this.#lastDecision() : undefined;
    this.#decodedAtFence = Atomics.load(c, CTRL.DECODED) - (last !== undefined && last.verdict === VERDICT.PROCEED && last.phase === phaseIndex('complete') ? 1 : 0);
    this.#fence = { rank, phase: inStep ? this.#pendingPhase() : undefined, committing: inStep && this.#commitDecided() };
    Atomics.store(c, CTRL.DECISION_VERDICT, VERDICT.FENCED);
    Atomics.add(c, CTRL.DECISION_SEQ, 1);
    for (const w of [CTRL.DECISION_SEQ, CTRL.CMD_SEQ, CTRL.STEP_END]) Atomics.notify(c, w);
    for (const ring of this.#rings) {
      if (ring.from === rank) settleEndpoint(ring.sab, 'writer', ENDPOINT.LOST);
      if (ring.to === rank) settleEndpoint(ring.sab, 'reader', ENDPOINT.LOST);
      wakeRing(ring.sab);
    }
    const err = this.#lossError('partition.rank');
    for (const [req, p] of this.#pending) {
      this.#pending.delete(req);
      p.reject(err);
    }
  }

  #lossError(op: string): TenonError {
    const f = this.#fence!;
    return new TenonError('ECONNRESET', `rank ${f.rank} was lost`, { op, reason: 'rank-lost', ids: { rank: f.rank, ...(f.phase === undefined ? {} : { phase: f.phase }) } });
  }

  // ----- control requests -----

  #reply(m: RankReply): void {
    if (m.t !== 'reply') return;
    const p = this.#pending.get(m.req);
    if (p === undefined) return;
    this.#pending.delete(m.req);
    if (m.ok) p.resolve(m.value);
    else p.reject(new TenonError(m.error.code as TenonError['code'], m.error.message, { op: 'partition.rank', reason: m.error.reason, ids: { rank: p.rank } }));
  }

  #request<T>(rank: number, request: RankRequest): Promise<T> {
    if (this.#fence !== undefined) return Promise.reject(this.#lossError('partition.rank'));
    const req = ++this.#req;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(req, { rank, resolve: resolve as (v: unknown) => void, reject });
      this.#handles[rank]!.post({ ...request, req });
    });
  }

  /** Every rank's own view of its state (tests and reports). Works on a fenced session for surviving ranks. */
  inspect(ranks?: readonly number[]): Promise<RankState[]> {
    const which = ranks ?? this.checked.plans.map((p) => p.rank);
    return Promise.all(
      which.map((r) => {
        const req = ++this.#req;
        return new Promise<RankState>((resolve, reject) => {
          this.#pending.set(req, { rank: r, resolve: resolve as (v: unknown) => void, reject });
          this.#handles[r]!.post({ t: 'inspect', req });
        });
      }),
    );
  }

  /** Every rank's benchmark counters (exchanges, µs in them, µs in forward passes). */
  counters(): Promise<RankCounters[]> {
    return Promise.all(this.#handles.map((_, r) => this.#request<RankCounters>(r, { t: 'counters' })));
  }

  /**
   * The exchange trace (options.traceSteps): per rank, its last committed steps (at most traceSteps, oldest
   * first). Read between steps. EINVAL `trace-off` when the session records none.
   */
  exchangeTrace(): RankStepTrace[][] {
    const t = this.#trace;
    if (t === undefined) throw new TenonError('EINVAL', 'this session records no exchange trace (traceSteps 0)', { op: OP, reason: 'trace-off' });
    const steps = this.#traceSteps;
    const layout = traceLayout(this.checked.model.layers, steps, this.#handles.length);
    return this.#handles.map((_, r) => {
      const base = r * layout.region;
      const count = t[base]!;
      const out: RankStepTrace[] = [];
      for (let i = Math.max(0, count - steps); i < count; i++) {
        const at = base + 1 + (i % steps) * layout.stride;
        const exchanges = t[at + TRACE_STEP.EXCHANGES]!;
        out.push({
          epoch: t[at + TRACE_STEP.EPOCH]!,
          command: t[at + TRACE_STEP.COMMAND]!,
          start: t[at + TRACE_STEP.START]!,
          end: t[at + TRACE_STEP.END]!,
          decided: t[at + TRACE_STEP.DECIDED]!,
          exchanges: Array.from({ length: exchanges }, (_, k) => ({ entry: t[at + TRACE_STEP.FIRST + 2 * k]!, exit: t[at + TRACE_STEP.FIRST + 2 * k + 1]! })),
        });
      }
      return out;
    });
  }

  /** Fault seams of one rank for its next step or control operation. */
  setRankFaults(rank: number, faults: RankFaults): Promise<void> {
    return this.#request(rank, { t: 'faults', faults });
  }

  /** Test seam: terminates rank `rank`'s worker from outside (the session learns of it like any loss). */
  killRank(rank: number): void {
    this.#handles[rank]!.terminate();
  }

  /** Test seam: futex sleeps rank `rank` began inside steps so far (RANK_WORD.SLEEPS; read without a message). */
  rankSleeps(rank: number): number {
    return Atomics.load(this.#ctrl, rankBase(this.maxBatch, rank) + RANK_WORD.SLEEPS);
  }

  /** Resolves with the phase where rank `rank` parked itself (RankFaults.parkAt). */
  async parked(rank: number): Promise<RankPhase> {
    const word = rankBase(this.maxBatch, rank) + RANK_WORD.PARKED;
    for (;;) {
      const v = Atomics.load(this.#ctrl, word);
      if (v !== 0) return RANK_PHASES[v - 1]!;
      const r = waitAsync(this.#ctrl, word, v);
      if (r.async) await r.value;
    }
  }

  // ----- the step transaction -----

  /** Runs one step of `tokens` (1..maxBatch) as a transaction agreed by every rank. */
  step(tokens: readonly number[]): Promise<PartitionStep> {
    return this.#serial(() => this.#step(tokens));
  }

  /** The last decision written since the current step was issued (phase index, verdict), if any. */
  #lastDecision(): { phase: number; verdict: number } | undefined {
    const c = this.#ctrl;
    for (;;) {
      const seq = Atomics.load(c, CTRL.DECISION_SEQ);
      if (seq === this.#stepSeq) return undefined;
      const phase = Atomics.load(c, CTRL.DECISION_PHASE);
      const verdict = Atomics.load(c, CTRL.DECISION_VERDICT);
      if (Atomics.load(c, CTRL.DECISION_SEQ) === seq) return { phase, verdict };
    }
  }

  /** The round being agreed now: the one after the last round that proceeded ('checkpoint' before any). */
  #pendingPhase(): RankPhase {
    const d = this.#lastDecision();
    if (d === undefined) return 'checkpoint';
    if (d.verdict !== VERDICT.PROCEED) return RANK_PHASES[d.phase]!;
    return RANK_PHASES[Math.min(d.phase + 1, RANK_PHASES.length - 1)]!;
  }

  /** Whether the current step's commit (execute) decision proceeded, so ranks may have committed. */
  #commitDecided(): boolean {
    const d = this.#lastDecision();
    return d !== undefined && d.verdict === VERDICT.PROCEED && d.phase >= phaseIndex('execute');
  }

  /**
   * Waits for the final decision of what #issue started (an abort, or a 'complete' round decided once
   * `runEnded`: a decode run's last step), sleeping on STEP_END.
   */
  async #awaitEnd(runEnded: () => boolean): Promise<{ phase: RankPhase; verdict: number }> {
    const c = this.#ctrl;
    const blockUntil = canBlock ? performance.now() + BLOCKING_STEP_MS : 0;
    for (;;) {
      if (this.#fence !== undefined) throw this.#lossError('partition.step');
      if (this.#disposed) throw new TenonError('EINVAL', 'the session was disposed mid-step', { op: 'partition.step', reason: 'disposed' });
      const seq = Atomics.load(c, CTRL.STEP_END);
      const d = this.#lastDecision();
      if (d !== undefined && (d.verdict !== VERDICT.PROCEED || (d.phase === phaseIndex('complete') && runEnded()))) return { phase: RANK_PHASES[d.phase]!, verdict: d.verdict };
      const left = blockUntil - performance.now();
      if (left > 0) {
        Atomics.wait(c, CTRL.STEP_END, seq, left);
        continue;
      }
      const r = waitAsync(c, CTRL.STEP_END, seq);
      if (r.async) await r.value;
    }
  }

  /**
   * Runs a greedy decode of `steps` one-token steps, the first fed `first` (1 <= steps, within maxSeq):
   * the ranks run the steps back to back, each the same transaction as step() at the next epoch, each next
   * token the greedy id of the step before, without this thread between steps (it sleeps until the run
   * ends). Resolves with every step's greedy id and the last step's logits. A step that does not commit
   * ends the run: the steps before it stay committed and published (length, tokens), that step is the
   * last outcome, and the call fails as step() would.
   */
  decode(first: number, steps: number): Promise<PartitionDecode> {
    return this.#serial(() => this.#decode(first, steps));
  }

  /** Writes a command (CMD.STEP of `tokens`, or CMD.DECODE of `count` steps from tokens[0]) and wakes the ranks. */
  #issue(kind: number, epoch: number, pos: number, count: number, tokens: readonly number[]): void {
    const c = this.#ctrl;
    Atomics.store(c, CTRL.CMD_KIND, kind);
    Atomics.store(c, CTRL.CMD_EPOCH, epoch);
    Atomics.store(c, CTRL.CMD_POS, pos);
    Atomics.store(c, CTRL.CMD_COUNT, count);
    tokens.forEach((t, i) => Atomics.store(c, CTRL.TOKENS + i, t));
    Atomics.store(c, CTRL.VOTE_BASE, Atomics.load(c, CTRL.VOTES));
    for (let r = 0; r < this.#handles.length; r++) Atomics.store(c, rankBase(this.maxBatch, r) + RANK_WORD.CLAIMED, 0);
    // The commit decision names epoch + skew (fault seam); whichever rank decides that round applies it.
    Atomics.store(c, CTRL.DECISION_SKEW, this.faults.decisionEpochSkew);
    this.faults.decisionEpochSkew = 0;
    this.#stepSeq = Atomics.load(c, CTRL.DECISION_SEQ);
    Atomics.add(c, CTRL.CMD_SEQ, 1);
    Atomics.notify(c, CTRL.CMD_SEQ);
  }

  /**
   * Waits for the end of what #issue started; on an abort records the outcome for `epoch` (the step that
   * did not commit) and throws; on a loss records 'aborted' or 'indeterminate' and rethrows.
   */
  async #settle(op: string, epochOf: () => number, runEnded: () => boolean): Promise<void> {
    const c = this.#ctrl;
    const stepSeq = this.#stepSeq!;
    const t0 = performance.now();
    try {
      const end = await this.#awaitEnd(runEnded);
      const epoch = epochOf();
      if (end.verdict !== VERDICT.PROCEED) {
        // The aborted round's votes are the last any rank cast this step: name the first failing rank.
        const failed = roundFailure(c, this.maxBatch, this.#handles.length, end.phase, epoch);
        this.#outcome = { state: 'aborted', epoch, phase: end.phase };
        const ids = { rank: failed?.rank ?? -1, phase: end.phase, epoch };
        if (failed?.refused === true) throw new TenonError('ESTALE', `rank ${failed.rank} named another epoch at ${end.phase}`, { op, reason: 'epoch-mismatch', ids });
        throw new TenonError('EIO', `rank ${ids.rank} failed at ${end.phase}`, { op, reason: 'rank-failed', ids });
      }
    } catch (err) {
      if (this.#fence !== undefined) {
        this.#outcome = { state: this.#fence.committing ? 'indeterminate' : 'aborted', epoch: epochOf(), ...(this.#fence.phase === undefined ? {} : { phase: this.#fence.phase }) };
      }
      throw err;
    } finally {
      this.#stepSeq = undefined;
      this.#stats.agreements += Atomics.load(c, CTRL.DECISION_SEQ) - stepSeq;
      this.#stats.stepMicros += (performance.now() - t0) * 1000;
    }
  }

  async #step(tokens: readonly number[]): Promise<PartitionStep> {
    const op = 'partition.step';
    this.#guard(op);
    const T = tokens.length;
    if (T < 1 || T > this.maxBatch || this.#length + T > this.maxSeq) {
      throw new TenonError('EINVAL', `a step takes 1..${this.maxBatch} tokens within ${this.maxSeq} positions`, { op, reason: 'bad-size' });
    }
    this.#checkTokens(op, tokens);
    const epoch = this.#epoch + 1;
    const pos = this.#length;
    this.#issue(CMD.STEP, epoch, pos, T, tokens);
    await this.#settle(op, () => epoch, () => true);
    // Publish: every rank agreed 'complete' for this epoch.
    this.#publish(tokens, 1);
    const logits = this.#logits.slice();
    return { epoch, pos, logits, argmax: this.#greedy(logits) };
  }

  #checkTokens(op: string, tokens: readonly number[]): void {
    const vocab = this.checked.model.vocabSize;
    if (!tokens.every((t) => Number.isSafeInteger(t) && t >= 0 && t < vocab)) throw new TenonError('EINVAL', 'token id out of the vocabulary', { op, reason: 'bad-token' });
  }

  /** Appends `steps` committed steps of `tokens` (every rank agreed 'complete' for each). */
  #publish(tokens: readonly number[], steps: number): void {
    this.#length += tokens.length;
    this.#epoch += steps;
    this.#tokens = [...this.#tokens, ...tokens];
    this.#outcome = { state: 'committed', epoch: this.#epoch };
    this.#stats.steps += steps;
    this.#stats.activationBytes += this.#manifest1.bytesPerStep * tokens.length;
  }

  /** Steps of the current decode run committed so far (on a fenced session: before the step in flight). */
  #decodedSince(decoded0: number): number {
    return (this.#fence !== undefined ? this.#decodedAtFence : Atomics.load(this.#ctrl, CTRL.DECODED)) - decoded0;
  }

  async #decode(first: number, steps: number): Promise<PartitionDecode> {
    const op = 'partition.decode';
    this.#guard(op);
    if (!Number.isSafeInteger(steps) || steps < 1 || this.#length + steps > this.maxSeq) {
      throw new TenonError('EINVAL', `a decode run takes 1..${this.maxSeq - this.#length} steps`, { op, reason: 'bad-size' });
    }
    this.#checkTokens(op, [first]);
    const c = this.#ctrl;
    const epoch0 = this.#epoch + 1;
    const pos0 = this.#length;
    const decoded0 = Atomics.load(c, CTRL.DECODED);
    this.#issue(CMD.DECODE, epoch0, pos0, steps, [first]);
    // Steps whose 'complete' round proceeded, and the tokens they were fed (each the id of the one before).
    const committed = (n: number): void => {
      const fed = [first, ...Array.from({ length: Math.max(0, n - 1) }, (_, s) => this.#ids[pos0 + s]!)];
      if (n > 0) this.#publish(fed.slice(0, n), n);
    };
    try {
      await this.#settle(op, () => epoch0 + this.#decodedSince(decoded0), () => this.#decodedSince(decoded0) === steps);
    } catch (err) {
      const outcome = this.#outcome;
      committed(this.#decodedSince(decoded0));
      this.#outcome = outcome;
      throw err;
    }
    committed(steps);
    return { epoch: this.#epoch, pos: pos0, ids: Array.from(this.#ids.subarray(pos0, pos0 + steps)), logits: this.#logits.slice() };
  }

  /**
   * The greedy id of the step: among the classifying ranks' candidates (each the first largest logit of the
   * rows it computed, on its thread), the largest, ties to the smallest index; the same index a scan of the
   * whole row (argmax: ties go to the smallest index) gives for rows without NaN.
   */
  #greedy(logits: Float32Array): number {
    return pickGreedy(
      this.#classifiers.map((p) => Atomics.load(this.#ctrl, rankBase(this.maxBatch, p.rank) + RANK_WORD.BEST)),
      logits,
    );
  }

  // ----- checkpoints, rollback, reset -----

  /** Captures a checkpoint on every rank; none exists unless all captured (TS-dist-checkpoint). */
  checkpoint(): Promise<PartitionCheckpoint> {
    return this.#serial(async () => {
      const op = 'partition.checkpoint';
      this.#guard(op);
      const id = ++this.#cpSerial;
      const ranks = this.#handles.map((_, r) => r);
      const results = await Promise.allSettled(ranks.map((r) => this.#request<{ length: number; epoch: number }>(r, { t: 'checkpoint', id })));
      const failed = results.findIndex((x) => x.status === 'rejected' || x.value.length !== this.#length || x.value.epoch !== this.#epoch);
      if (failed >= 0) {
        await Promise.allSettled(ranks.map((r) => this.#request(r, { t: 'discard', id })));
        const cause = results[failed]!.status === 'rejected' ? (results[failed] as PromiseRejectedResult).reason : undefined;
        throw new TenonError('EIO', `rank ${failed} did not capture its part`, { op, reason: 'checkpoint-incomplete', ids: { rank: failed }, cause });
      }
      const cp = { id, length: this.#length, epoch: this.#epoch, tokens: this.#tokens };
      this.#checkpoints.set(id, cp);
      return { id, length: cp.length, epoch: cp.epoch };
    });
  }

  /** Restores `cp` on every rank, or on none (TS-dist-rollback). */
  rollback(cp: PartitionCheckpoint): Promise<void> {
    return this.#serial(async () => {
      const known = this.#checkpoints.get(cp.id);
      this.#guard('partition.rollback');
      if (known === undefined) throw new TenonError('ESTALE', 'no such checkpoint in this history', { op: 'partition.rollback', reason: 'unknown-checkpoint' });
      await this.#restore(cp.id, known.length, known.epoch, known.tokens);
    });
  }

  /** Empties every rank's state, on all ranks or none (TS-dist-rollback). */
  reset(): Promise<void> {
    return this.#serial(async () => {
      this.#guard('partition.reset');
      await this.#restore('reset', 0, 0, []);
    });
  }

  async #restore(id: number | 'reset', length: number, epoch: number, tokens: readonly number[]): Promise<void> {
    const op = id === 'reset' ? 'partition.reset' : 'partition.rollback';
    const ranks = this.#handles.map((_, r) => r);
    const prepared = await Promise.allSettled(ranks.map((r) => this.#request(r, { t: 'prepare-restore', id, length, epoch })));
    const failed = prepared.findIndex((x) => x.status === 'rejected');
    if (failed >= 0) {
      await Promise.allSettled(ranks.map((r) => this.#request(r, { t: 'cancel-restore' })));
      const cause = (prepared[failed] as PromiseRejectedResult).reason as TenonError;
      throw new TenonError(cause.code ?? 'EIO', `rank ${failed} could not prepare the restore`, { op, reason: cause.reason ?? 'prepare-failed', ids: { rank: failed }, cause });
    }
    const applied = await Promise.allSettled(ranks.map((r) => this.#request(r, { t: 'apply-restore', id, length, epoch })));
    if (applied.some((x) => x.status === 'rejected')) {
      this.#fence = { rank: applied.findIndex((x) => x.status === 'rejected'), phase: undefined, committing: false };
      throw new TenonError('EIO', 'a prepared restore failed to apply: fenced', { op, reason: 'fenced' });
    }
    this.#length = length;
    this.#epoch = epoch;
    this.#tokens = [...tokens];
    for (const [k, cp] of this.#checkpoints) if (id === 'reset' || cp.length > length) this.#checkpoints.delete(k);
  }

  // ----- sharded prompt caches -----

  /** One rank's cache-state bytes (its shard); a stateless rank refuses with EINVAL `stateless-rank`. */
  rankShard(rank: number): Promise<Uint8Array> {
    return this.#serial(async () => {
      this.#guard('partition.cache.save');
      return this.#request<Uint8Array>(rank, { t: 'export-shard' });
    });
  }

  #statefulRanks(): number[] {
    return this.checked.plans.filter((p) => p.stateful).map((p) => p.rank);
  }

  /**
   * Saves the committed state as one shard per stateful rank plus `${name}.manifest`, all or nothing
   * (TS-dist-cache-save): shards are staged under fresh names and each is read back and verified before the
   * manifest, the single commit point, is written; any failure removes every staged shard.
   */
  saveCache(store: ShardStore, name: string): Promise<PartitionCacheManifest> {
    return this.#serial(async () => {
      const op = 'partition.cache.save';
      this.#guard(op);
      const ranks = this.#statefulRanks();
      const shards = await Promise.all(ranks.map((r) => this.#request<Uint8Array>(r, { t: 'export-shard' })));
      const saveId = Math.random().toString(36).slice(2, 10);
      const staged = ranks.map((r) => `${name}.${saveId}.rank${r}`);
      const previous = await this.#readManifest(store, name).catch(() => undefined);
      try {
        const entries = [];
        for (let i = 0; i < ranks.length; i++) {
          await store.write(staged[i]!, shards[i]!);
          if (this.faults.corruptStagedShard === ranks[i]) {
            const bad = shards[i]!.slice();
            bad[bad.length - 1]! ^= 1;
            await store.write(staged[i]!, bad);
          }
          entries.push({ rank: ranks[i]!, name: staged[i]!, bytes: shards[i]!.byteLength, sha256: await sha256Hex(shards[i]!) });
        }
        this.faults.corruptStagedShard = undefined;
        const manifest: PartitionCacheManifest = {
          format: PARTITION_CACHE_FORMAT,
          identity: this.identity,
          topology: this.checked.topology,
          length: this.#length,
          epoch: this.#epoch,
          tokens: this.#tokens,
          shards: entries,
        };
        // Every staged shard is read back and verified before the manifest (the commit point) exists.
        for (const e of entries) {
          const back = await store.read(e.name);
          if (back === undefined || (await sha256Hex(back)) !== e.sha256) {
            throw new TenonError('EIO', `staged shard of rank ${e.rank} does not verify`, { op, reason: 'shard-corrupt', ids: { rank: e.rank } });
          }
        }
        await store.write(`${name}${MANIFEST_SUFFIX}`, new TextEncoder().encode(JSON.stringify(manifest)));
        if (previous !== undefined) for (const s of previous.shards) await store.remove(s.name).catch(() => undefined);
        return manifest;
      } catch (err) {
        for (const s of staged) await store.remove(s).catch(() => undefined);
        throw err;
      }
    });
  }

  async #readManifest(store: ShardStore, name: string): Promise<PartitionCacheManifest> {
    const op = 'partition.cache.load';
    const bytes = await store.read(`${name}${MANIFEST_SUFFIX}`);
    if (bytes === undefined) throw new TenonError('ENOENT', `no cache named ${name}`, { op, reason: 'no-cache' });
    let m: PartitionCacheManifest;
    try {
      m = JSON.parse(new TextDecoder().decode(bytes)) as PartitionCacheManifest;
    } catch {
      throw new TenonError('EIO', 'cache manifest is not JSON', { op, reason: 'manifest-malformed' });
    }
    if (m.format !== PARTITION_CACHE_FORMAT || !Array.isArray(m.shards) || !Array.isArray(m.tokens)) {
      throw new TenonError('EIO', 'cache manifest has another format', { op, reason: 'manifest-malformed' });
    }
    return m;
  }

  /**
   * Loads a sharded cache (TS-dist-cache-load): the manifest's topology and identity must be this
   * session's, every shard must hash to its manifest entry, and every rank must validate its shard before
   * any rank installs one; any refusal leaves every rank unchanged.
   */
  loadCache(store: ShardStore, name: string): Promise<void> {
    return this.#serial(async () => {
      const op = 'partition.cache.load';
      this.#guard(op);
      const m = await this.#readManifest(store, name);
      if (m.topology !== this.checked.topology) throw new TenonError('EINVAL', `cache topology ${m.topology} is not ${this.checked.topology}`, { op, reason: 'topology-mismatch' });
      if (m.identity !== this.identity) throw new TenonError('EINVAL', 'cache belongs to another model', { op, reason: 'identity-mismatch' });
      const ranks = this.#statefulRanks();
      if (m.shards.length !== ranks.length || !m.shards.every((s, i) => s.rank === ranks[i])) {
        throw new TenonError('EINVAL', 'cache shards do not match the stateful ranks', { op, reason: 'topology-mismatch' });
      }
      if (!Number.isSafeInteger(m.length) || m.length > this.maxSeq || m.tokens.length !== m.length) throw new TenonError('EIO', 'cache length out of range', { op, reason: 'manifest-malformed' });
      const shards: Uint8Array[] = [];
      for (const s of m.shards) {
        const bytes = await store.read(s.name);
        if (bytes === undefined || bytes.byteLength !== s.bytes || (await sha256Hex(bytes)) !== s.sha256) {
          throw new TenonError('EIO', `shard of rank ${s.rank} is missing or corrupt`, { op, reason: 'shard-corrupt', ids: { rank: s.rank } });
        }
        shards.push(bytes);
      }
      const validated = await Promise.allSettled(ranks.map((r, i) => this.#request(r, { t: 'validate-shard', shard: shards[i]! })));
      const failed = validated.findIndex((x) => x.status === 'rejected');
      if (failed >= 0) {
        await Promise.allSettled(ranks.map((r) => this.#request(r, { t: 'cancel-shard' })));
        const cause = (validated[failed] as PromiseRejectedResult).reason as TenonError;
        throw new TenonError(cause.code ?? 'EINVAL', `rank ${ranks[failed]} refused its shard`, { op, reason: cause.reason ?? 'shard-refused', ids: { rank: ranks[failed]! }, cause });
      }
      const installed = await Promise.allSettled(ranks.map((r) => this.#request(r, { t: 'install-shard' })));
      if (installed.some((x) => x.status === 'rejected')) {
        this.#fence = { rank: ranks[installed.findIndex((x) => x.status === 'rejected')]!, phase: undefined, committing: false };
        throw new TenonError('EIO', 'a validated shard failed to install: fenced', { op, reason: 'fenced' });
      }
      // Stateless ranks follow the loaded history's length and epoch too (they hold no rows).
      const stateless = this.checked.plans.filter((p) => !p.stateful).map((p) => p.rank);
      await Promise.all(stateless.map((r) => this.#request(r, { t: 'prepare-restore', id: 'reset', length: m.length, epoch: m.epoch })));
      await Promise.all(stateless.map((r) => this.#request(r, { t: 'apply-restore', id: 'reset', length: m.length, epoch: m.epoch })));
      this.#length = m.length;
      this.#epoch = m.epoch;
      this.#tokens = [...m.tokens];
      this.#checkpoints.clear();
    });
  }

  /** Ends every rank worker. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const h of this.#handles) h.terminate();
    Atomics.notify(this.#ctrl, CTRL.STEP_END);
    const err = new TenonError('EINVAL', 'the session was disposed', { op: OP, reason: 'disposed' });
    for (const [req, p] of this.#pending) {
      this.#pending.delete(req);
      p.reject(err);
    }
  }
}

/** An in-memory ShardStore (tests, or a caller that persists the bytes itself). */
export function memoryShardStore(): ShardStore & { readonly files: Map<string, Uint8Array> } {
  const files = new Map<string, Uint8Array>();
  return {
    files,
    async write(name, bytes) {
      files.set(name, bytes.slice());
    },
    async read(name) {
      return files.get(name)?.slice();
    },
    async remove(name) {
      files.delete(name);
    },
  };
}
