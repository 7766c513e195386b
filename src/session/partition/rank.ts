// One rank of a partitioned session, as it runs inside its worker (workers/rank.worker.ts wires the port).
// The rank owns its RankForward (weights share and KV rows), its committed length and epoch, its named
// checkpoints and at most one pending cache shard or restore. It changes its state only on a decision that
// names its own phase and epoch (TS-txn-epoch-mismatch), and restores its step checkpoint on any other
// outcome, including a fence (a lost peer). The rank whose vote completes a round writes that round's
// decision from every rank's votes (protocol.ts roundFailure); the others, and the decider itself, then
// read it from the control block like any decision. Steps run synchronously on this thread (Atomics.wait on
// the control block and the rings, in slices that recheck the fence, so no rank waits forever on a dead
// peer); control requests are messages handled between steps. A decode run (CMD.DECODE) is that step
// repeated without the coordinator: each next token is the greedy id the deciding rank wrote into the ids
// buffer with the 'complete' decision.
// Thread: the rank's worker.
import { TenonError, isTenonError } from '../../errors.js';
import { RING_WORD, RingReader, RingWriter } from '../../dataplane/index.js';
import { argmax } from '../../submit/index.js';
import { DeviceRankForward } from './device-forward.js';
import { RankForward } from './rank-forward.js';
import type { RankLinks } from './rank-forward.js';
import { CLASSIFIER_CHUNK_ROWS, CMD, CTRL, RANK_PHASES, SPIN_FLOOR_MICROS, RANK_WORD, TRACE_STEP, VERDICT, VOTE, nextSpinBound, phaseIndex, pickGreedy, rankBase, roundFailure, traceExchangeBound, traceLayout } from './protocol.js';
import type { RankCounters, RankFaults, RankInit, RankMessage, RankPhase, RankReply, RankRequest, RankState, ShardHeader, WireError } from './protocol.js';

/** Longest single Atomics.wait before the fence is rechecked (ms). */
const WAIT_SLICE_MS = 20;
/** Polls between clock reads while spinning (RankInit.spinMicros bounds the spin). */
const SPIN_CHECK_EVERY = 64;
/**
 * A gap this long between two clock reads of one poll (µs; they are normally well under a microsecond
 * apart) means the thread lost its core while polling: other threads want the cores, and a thread that
 * polls through its time slice then waits for the scheduler instead of being woken at once. The bound
 * then drops to SPIN_FLOOR_MICROS (and grows back by nextSpinBound and caught polls).
 */
const PREEMPTED_MICROS = 50;
/**
 * Polling past the bound (the liveness rule) needs this many waits in a row without a preemption seen; each
 * preemption doubles the need (up to CALM_MAX) and each wait the liveness rule caught halves it back.
 */
const CALM_MIN = 16;
const CALM_MAX = 1024;
/**
 * Longest poll past the bound however busy the peer (µs): a tensor rank's segments take a few hundred µs,
 * while a pipeline rank can wait on its predecessor's whole forward pass; past this the rank sleeps.
 */
const LIVENESS_CAP_MICROS = 2000;
/**
 * After a step, how long a rank blocks on the command word for the next step (ms) before it goes back to
 * its event loop (where control requests are served): a decode loop issues the next step well within this.
 */
const NEXT_STEP_WAIT_MS = 4;

/**
 * Bounded, adaptive polling before a futex sleep (the way adaptive mutexes spin). The bound starts at the
 * session's spinMicros; a wait the poll caught doubles it back towards spinMicros; after a sleep,
 * protocol.ts nextSpinBound: a wait spinMicros would have caught grows it, a wait far longer (the peer was
 * off its core) halves it. Past the bound the rank keeps polling while a peer is visibly working (its
 * RANK_WORD.PROGRESS moved within the session's livenessMicros; at most LIVENESS_CAP_MICROS): on idle cores a
 * rank then never pays a futex wake-up while its peer computes what it waits for, and on a loaded machine,
 * where the peer is waiting for a core rather than computing, its counter stops and the rank stops holding
 * a core it cannot use. A poll that sees its thread preempted (PREEMPTED_MICROS) ends at once, and the
 * rule then waits for CALM_MIN or more waits in a row without one: on contended cores the ranks sleep and
 * are woken (with the scheduler's wake-up preference) instead of polling through their slices. The fence
 * is rechecked at every liveness check: a spin ends within one window of a fence or of a peer's death,
 * and the caller then sees the fence or sleeps in fence-checked slices.
 */
class Spinner {
  readonly #max: number;
  readonly #window: number;
  readonly #progress: () => number;
  readonly #fenced: () => boolean;
  #bound: number;
  #t0 = 0;
  /** The peers' progress last seen, and when it was last seen to move (ms). */
  #seen = 0;
  #moved = -Infinity;
  /** Waits in a row without a preemption seen, and how many the liveness rule needs. */
  #calm = 0;
  #need = CALM_MIN;
  /** The last spin that returned false ended on a preemption (not on its bound or the liveness window). */
  preempted = false;
  constructor(maxMicros: number, livenessMicros: number, progress: () => number, fenced: () => boolean) {
    this.#max = maxMicros;
    this.#bound = maxMicros;
    this.#window = livenessMicros / 1000;
    this.#progress = progress;
    this.#fenced = fenced;
  }

  #watch(t: number): void {
    const p = this.#progress();
    if (p !== this.#seen) {
      this.#seen = p;
      this.#moved = t;
    }
  }

  /**
   * Polls `a[i]` while it holds `v`: within the current bound, then as long as a peer's progress moved
   * within the liveness window. True once the word moved or the session is fenced (the caller rechecks
   * both); false when the caller should sleep.
   */
  spin(a: Int32Array, i: number, v: number): boolean {
    const t0 = performance.now();
    this.#t0 = t0;
    this.preempted = false;
    if (this.#max <= 0) return Atomics.load(a, i) !== v;
    this.#watch(t0);
    const until = t0 + this.#bound / 1000;
    let last = t0;
    let extended = false;
    for (let n = 1; ; n++) {
      if (Atomics.load(a, i) !== v) {
        this.#bound = Math.min(this.#max, this.#bound * 2);
        this.#calm++;
        if (extended) this.#need = Math.max(CALM_MIN, this.#need / 2);
        return true;
      }
      if (n % SPIN_CHECK_EVERY === 0) {
        const t = performance.now();
        if ((t - last) * 1000 > PREEMPTED_MICROS) {
          this.#calm = 0;
          this.#need = Math.min(CALM_MAX, this.#need * 2);
          this.#bound = SPIN_FLOOR_MICROS;
          this.preempted = true;
          return false;
        }
        last = t;
        if (t > until) {
          if (this.#fenced()) return true;
          this.#watch(t);
          if (this.#calm < this.#need || t - this.#moved > this.#window || (t - until) * 1000 > LIVENESS_CAP_MICROS) {
            this.#calm++;
            return false;
          }
          extended = true;
        }
      }
    }
  }

  /** After a sleep that followed a failed spin: adapts the bound (`timedOut`: the slice ended, the word did not move). */
  slept(timedOut: boolean): void {
    if (this.#max <= 0) return;
    const waited = timedOut ? Infinity : (performance.now() - this.#t0) * 1000;
    this.#bound = nextSpinBound(this.#bound, this.#max, waited);
  }
}
const F32_BYTES = 4;
/** Rounds of votes a committed step casts (one per phase). */
const RANK_ROUNDS = RANK_PHASES.length;
const OP = 'partition.rank';
/** The trace clock (ms): one time line for every thread of the process (protocol.ts TRACE_STEP). */
const traceTime = (now: number): number => performance.timeOrigin + now;
const HEADER_LENGTH_BYTES = 4;

export interface RankPort {
  post(message: RankReply): void;
  onMessage(handler: (message: RankMessage) => void): void;
}

class Fenced extends Error {}
/**
 * The step's checkpoint round did not proceed, found by a rank that started its forward pass on its own OK
 * vote (Rank #settleCheckpoint): unwinds the forward pass like a fence, to the step checkpoint's restore.
 */
class CheckpointRefused extends Fenced {}

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

function wire(err: unknown): WireError {
  if (isTenonError(err)) return { code: err.code, reason: err.reason, message: err.message };
  return { code: 'EIO', reason: 'rank-internal', message: String(err) };
}

export class Rank implements RankLinks {
  readonly #init: RankInit;
  readonly #forward: RankForward | DeviceRankForward;
  readonly #ctrl: Int32Array;
  readonly #base: number;
  readonly #logits: Float32Array;
  readonly #writers = new Map<number, RingWriter>();
  readonly #readers = new Map<number, RingReader>();
  readonly #scratch: Float32Array;
  readonly #best = new Uint32Array(1);
  /** Shared classifier: the rank whose rows this rank claims next (an offset from its own, in rank order). */
  #claimFrom = 0;
  /** Shared classifier: the chunks this rank computed in the current step, as [start, end) pairs. */
  readonly #claimed: number[] = [];
  /** Counters (benchmarks): activation exchanges, microseconds inside them, microseconds in forward passes. */
  #exchanges = 0;
  #exchangeMicros = 0;
  #forwardMicros = 0;
  /** Futex sleeps inside exchanges (the spin ran out before the peer arrived). */
  #exchangeSleeps = 0;
  /** Shared classifier: chunks computed. */
  #classifierChunks = 0;
  /** Microseconds from casting a vote to seeing the decision, per phase. */
  readonly #decisionMicros = RANK_PHASES.map(() => 0);
  /** VOTES when the current step began (CTRL.VOTE_BASE, plus the rounds of a decode run's earlier steps). */
  #voteBase = 0;
  /** The current step's place in its run: the first (the coordinator's fault-seam skew applies), the last (its end wakes the coordinator). */
  #run = { first: true, last: true };
  /** The current step's position (where its greedy id goes in #ids). */
  #runPos = 0;
  /** RankInit.ids. */
  readonly #ids: Int32Array;
  /** The exchange trace (protocol.ts traceLayout): this rank's region, or undefined when off. */
  readonly #trace: Float64Array | undefined;
  readonly #traceStride: number;
  readonly #traceSteps: number;
  readonly #traceBound: number;
  /** Word of the current step's record in #trace; -1 outside a traced step. */
  #traceAt = -1;
  /** Polling for peers inside a step (rings, decisions). */
  readonly #spinner: Spinner;
  /** Polling for the coordinator's next step: adapts on its own, as the coordinator needs a core to issue it. */
  readonly #nextStep: Spinner;
  /** The last value stored into this rank's RANK_WORD.PROGRESS. */
  #progressCount = 0;
  /**
   * The epoch of the step whose checkpoint decision this rank has not read yet: it voted OK and started its
   * forward pass (undefined: none pending). Read at the first exchange, classifier claim or execute vote.
   */
  #pendingCheckpoint: number | undefined;
  #length = 0;
  #epoch = 0;
  #seenCmd = 0;
  #seenDecision = 0;
  #faults: RankFaults = {};
  readonly #checkpoints = new Map<number, { length: number; epoch: number }>();
  #pendingRestore: { id: number | 'reset'; length: number; epoch: number } | undefined;
  #pendingShard: { header: ShardHeader; rows: Float32Array } | undefined;

  static async create(init: RankInit): Promise<Rank> {
    const forward = init.device === 'webgpu' ? await DeviceRankForward.create(init.weights, init.maxSeq, init.maxBatch) : new RankForward(init.weights, init.maxSeq, init.maxBatch, init.kernels);
    return new Rank(init, forward);
  }

  private constructor(init: RankInit, forward: RankForward | DeviceRankForward) {
    this.#init = init;
    this.#forward = forward;
    this.#ctrl = new Int32Array(init.control);
    this.#base = rankBase(init.maxBatch, init.rank);
    this.#logits = new Float32Array(init.logits);
    this.#ids = new Int32Array(init.ids);
    for (const { to, ring } of init.outgoing) this.#writers.set(to, new RingWriter(ring, init.incarnation, 0));
    for (const { from, ring } of init.incoming) this.#readers.set(from, new RingReader(ring, init.incarnation, 0));
    this.#scratch = new Float32Array(init.maxBatch * init.weights.config.dim);
    const peers = Array.from({ length: init.ranks }, (_, r) => r)
      .filter((r) => r !== init.rank)
      .map((r) => rankBase(init.maxBatch, r) + RANK_WORD.PROGRESS);
    const progress = (): number => {
      let sum = 0;
      for (const w of peers) sum = (sum + Atomics.load(this.#ctrl, w)) | 0;
      return sum;
    };
    const fenced = (): boolean => this.#fenced();
    this.#spinner = new Spinner(init.spinMicros, init.livenessMicros, progress, fenced);
    // The next step comes from the coordinator, which bumps no progress word: the plain bounded poll.
    this.#nextStep = new Spinner(init.spinMicros, 0, () => 0, fenced);
    const layout = traceLayout(init.weights.config.layers, init.traceSteps, init.ranks);
    this.#trace = init.trace === undefined ? undefined : new Float64Array(init.trace, init.rank * layout.region * Float64Array.BYTES_PER_ELEMENT, layout.region);
    this.#traceStride = layout.stride;
    this.#traceSteps = init.traceSteps;
    this.#traceBound = traceExchangeBound(init.weights.config.layers);
  }

  // ----- the exchange trace (benchmarks; plain stores into this rank's region) -----

  /** Starts the record of a step (slot: the count of steps traced so far, modulo the ring). */
  #traceBegin(epoch: number, commandAt: number): void {
    const t = this.#trace;
    if (t === undefined) return;
    this.#traceAt = 1 + (t[0]! % this.#traceSteps) * this.#traceStride;
    t[this.#traceAt + TRACE_STEP.EPOCH] = epoch;
    t[this.#traceAt + TRACE_STEP.COMMAND] = traceTime(commandAt);
    t[this.#traceAt + TRACE_STEP.EXCHANGES] = 0;
  }

  #traceMark(word: number): void {
    if (this.#traceAt >= 0) this.#trace![this.#traceAt + word] = traceTime(performance.now());
  }

  #traceExchange(entry: number, exit: number): void {
    if (this.#traceAt < 0) return;
    const t = this.#trace!;
    const n = t[this.#traceAt + TRACE_STEP.EXCHANGES]!;
    if (n >= this.#traceBound) return;
    t[this.#traceAt + TRACE_STEP.FIRST + 2 * n] = traceTime(entry);
    t[this.#traceAt + TRACE_STEP.FIRST + 2 * n + 1] = traceTime(exit);
    t[this.#traceAt + TRACE_STEP.EXCHANGES] = n + 1;
  }

  /** Counts the current record (before the complete vote, so the coordinator sees it after the step). */
  #traceCommit(): void {
    if (this.#traceAt < 0) return;
    this.#trace![0]! += 1;
    this.#traceAt = -1;
  }

  /** One fence-checked futex slice on `a[i]` after a failed spin; adapts the spin once the word moved. */
  #sleep(a: Int32Array, i: number, v: number): void {
    if (!this.#spinner.preempted) Atomics.add(this.#ctrl, this.#base + RANK_WORD.SLEEPS, 1);
    this.#spinner.slept(Atomics.wait(a, i, v, WAIT_SLICE_MS) === 'timed-out');
  }

  get stateful(): boolean {
    return this.#init.weights.plan.stateful;
  }

  /** Bumps this rank's liveness counter (RANK_WORD.PROGRESS): before each dispatch, after each exchange, with each vote. */
  progress(): void {
    this.#progressCount = (this.#progressCount + 1) | 0;
    Atomics.store(this.#ctrl, this.#base + RANK_WORD.PROGRESS, this.#progressCount);
  }

  // ----- links (RankLinks): SAB rings, blocking in fence-checked slices -----

  #fenced(): boolean {
    return Atomics.load(this.#ctrl, CTRL.FENCE) !== 0;
  }

  #read(from: number, dst: Float32Array): void {
    const reader = this.#readers.get(from)!;
    const bytes = new Uint8Array(dst.buffer, dst.byteOffset, dst.byteLength);
    let off = 0;
    while (off < bytes.length) {
      const seq = reader.dataSeq();
      const n = reader.tryRead(bytes, off, bytes.length - off);
      if (n > 0) {
        off += n;
        continue;
      }
      if (reader.eof) throw new TenonError('ECONNRESET', 'a peer closed its stream mid-step', { op: OP, reason: 'peer-lost' });
      if (this.#fenced()) throw new Fenced();
      if (!this.#spinner.spin(reader.header, RING_WORD.DATA_SEQ, seq)) {
        this.#exchangeSleeps++;
        this.#sleep(reader.header, RING_WORD.DATA_SEQ, seq);
      }
    }
  }

  #write(to: number, src: Float32Array): void {
    const writer = this.#writers.get(to)!;
    const bytes = new Uint8Array(src.buffer, src.byteOffset, src.byteLength);
    let off = 0;
    while (off < bytes.length) {
      const seq = writer.spaceSeq();
      const n = writer.tryWrite(bytes, off, bytes.length - off);
      if (n > 0) {
        off += n;
        continue;
      }
      if (this.#fenced()) throw new Fenced();
      if (!this.#spinner.spin(writer.header, RING_WORD.SPACE_SEQ, seq)) {
        this.#exchangeSleeps++;
        this.#sleep(writer.header, RING_WORD.SPACE_SEQ, seq);
      }
    }
  }

  get sharedClassifier(): boolean {
    return this.#init.sharedClassifier.length > 0;
  }

  /**
   * Claims the next chunk of classifier rows: this rank's own rows first, then each other rank's in rank
   * order after it (one Atomics.add on that rank's CLAIMED word per claim, so every chunk goes to exactly one
   * rank, whichever rank gets there first).
   */
  claimClassifierRows(): readonly [number, number] | undefined {
    this.#settleCheckpoint();
    const ranges = this.#init.sharedClassifier;
    const n = ranges.length;
    if (this.#faults.classifierLast === true) this.#awaitPeersVoted();
    for (; this.#claimFrom < n; this.#claimFrom++) {
      const r = (this.#init.rank + this.#claimFrom) % n;
      const [start, end] = ranges[r]!;
      const chunk = Atomics.add(this.#ctrl, rankBase(this.#init.maxBatch, r) + RANK_WORD.CLAIMED, 1);
      const a = start + chunk * CLASSIFIER_CHUNK_ROWS;
      if (a < end) {
        const b = Math.min(end, a + CLASSIFIER_CHUNK_ROWS);
        this.#claimed.push(a, b);
        this.#classifierChunks++;
        return [a, b];
      }
    }
    return undefined;
  }

  /** Fault seam classifierLast: blocks (fence-checked slices) until every other rank voted on execute. */
  #awaitPeersVoted(): void {
    const c = this.#ctrl;
    const target = this.#voteBase + this.#init.ranks + (this.#init.ranks - 1);
    for (;;) {
      const votes = Atomics.load(c, CTRL.VOTES);
      if (votes >= target) return;
      if (this.#fenced()) throw new Fenced();
      Atomics.wait(c, CTRL.VOTES, votes, WAIT_SLICE_MS);
    }
  }

  receiveHidden(x: Float32Array): void {
    this.#settleCheckpoint();
    const t0 = performance.now();
    this.#read(this.#init.rank - 1, x);
    this.#counted(t0);
  }

  sendHidden(x: Float32Array): void {
    this.#settleCheckpoint();
    const t0 = performance.now();
    this.#write(this.#init.rank + 1, x);
    this.#counted(t0);
  }

  #counted(t0: number): void {
    this.progress();
    const t1 = performance.now();
    this.#exchanges++;
    this.#exchangeMicros += (t1 - t0) * 1000;
    this.#traceExchange(t0, t1);
  }

  allReduce(partial: Float32Array, out: Float32Array): void {
    this.#settleCheckpoint();
    const t0 = performance.now();
    this.#reduce(partial, out);
    this.#counted(t0);
  }

  #reduce(partial: Float32Array, out: Float32Array): void {
    const me = this.#init.rank;
    for (const to of this.#writers.keys()) this.#write(to, partial);
    const other = this.#scratch.subarray(0, partial.length);
    for (let r = 0; r < this.#init.ranks; r++) {
      const src = r === me ? partial : (this.#read(r, other), other);
      if (r === 0) out.set(src);
      else for (let i = 0; i < out.length; i++) out[i] = out[i]! + src[i]!;
    }
  }

  // ----- the step (hot path: control block only) -----

  #vote(phase: RankPhase, epoch: number, status: boolean | 'refused'): void {
    const c = this.#ctrl;
    this.progress();
    Atomics.store(c, this.#base + RANK_WORD.VOTE_PHASE, phaseIndex(phase));
    Atomics.store(c, this.#base + RANK_WORD.VOTE_EPOCH, epoch + (this.#faults.voteEpochSkew ?? 0));
    Atomics.store(c, this.#base + RANK_WORD.VOTE_OK, status === 'refused' ? VOTE.REFUSED : status ? VOTE.OK : VOTE.FAILED);
    const cast = Atomics.add(c, CTRL.VOTES, 1) + 1;
    if (cast === this.#voteBase + (phaseIndex(phase) + 1) * this.#init.ranks) this.#decideRound(phase, epoch);
  }

  /**
   * This rank's vote completed the round: decide it from every rank's vote (all are in) and publish the
   * decision. The commit decision (execute) names the step's epoch plus the coordinator's fault-seam skew.
   */
  #decideRound(phase: RankPhase, epoch: number): void {
    const c = this.#ctrl;
    const failed = roundFailure(c, this.#init.maxBatch, this.#init.ranks, phase, epoch);
    // The coordinator's skew applies to the step it issued: a decode run's first step.
    const skew = phase === 'execute' && this.#run.first ? Atomics.load(c, CTRL.DECISION_SKEW) : 0;
    if (phase === 'complete' && failed === undefined) {
      // Before the decision: every rank that sees it proceed reads the id (the next token of a decode run).
      Atomics.store(this.#ids, this.#runPos, pickGreedy(this.#init.classifiers.map((r) => Atomics.load(c, rankBase(this.#init.maxBatch, r) + RANK_WORD.BEST)), this.#logits));
      Atomics.add(c, CTRL.DECODED, 1);
    }
    Atomics.store(c, CTRL.DECISION_PHASE, phaseIndex(phase));
    Atomics.store(c, CTRL.DECISION_EPOCH, epoch + skew);
    Atomics.store(c, CTRL.DECISION_VERDICT, failed === undefined ? VERDICT.PROCEED : VERDICT.ABORT);
    Atomics.add(c, CTRL.DECISION_SEQ, 1);
    Atomics.notify(c, CTRL.DECISION_SEQ);
    if (failed !== undefined || (phase === 'complete' && this.#run.last)) {
      Atomics.add(c, CTRL.STEP_END, 1);
      Atomics.notify(c, CTRL.STEP_END);
    }
  }

  /**
   * Reads the pending checkpoint decision (if any) before anything leaves this rank or reaches it: the
   * forward pass ran ahead of it only on this rank's own state (its KV rows past the committed length, its
   * scratch), which the step checkpoint's restore puts back. Throws CheckpointRefused unless it proceeded.
   */
  #settleCheckpoint(): void {
    const epoch = this.#pendingCheckpoint;
    if (epoch === undefined) return;
    this.#pendingCheckpoint = undefined;
    if (this.#decision('checkpoint', epoch) !== 'proceed') throw new CheckpointRefused();
  }

  /** Waits for the next decision; 'proceed' only when it names this phase and this step's epoch. */
  #decision(phase: RankPhase, epoch: number): 'proceed' | 'abort' | 'refuse' {
    const t0 = performance.now();
    try {
      return this.#awaitDecision(phase, epoch);
    } finally {
      this.#decisionMicros[phaseIndex(phase)]! += (performance.now() - t0) * 1000;
    }
  }

  #awaitDecision(phase: RankPhase, epoch: number): 'proceed' | 'abort' | 'refuse' {
    const c = this.#ctrl;
    for (;;) {
      const seq = Atomics.load(c, CTRL.DECISION_SEQ);
      if (seq !== this.#seenDecision) {
        this.#seenDecision = seq;
        const verdict = Atomics.load(c, CTRL.DECISION_VERDICT);
        if (verdict === VERDICT.FENCED || this.#fenced()) throw new Fenced();
        if (verdict !== VERDICT.PROCEED) return 'abort';
        // A decision for another phase or epoch is not this step's: refuse it (TS-txn-epoch-mismatch).
        if (Atomics.load(c, CTRL.DECISION_PHASE) !== phaseIndex(phase) || Atomics.load(c, CTRL.DECISION_EPOCH) !== epoch) return 'refuse';
        return 'proceed';
      }
      if (this.#fenced()) throw new Fenced();
      // The decider is a peer rank that is running (its vote completes the round): poll briefly first.
      if (!this.#spinner.spin(c, CTRL.DECISION_SEQ, seq)) this.#sleep(c, CTRL.DECISION_SEQ, seq);
    }
  }

  /**
   * Writes this rank's greedy candidate (RANK_WORD.BEST) from the rows of the shared logits it computed (its
   * own rows, or the chunks it claimed): the largest, ties to the smallest index; -1 when it computed none.
   */
  #candidate(): void {
    const p = this.#init.weights.plan;
    if (!p.classifies) return;
    const rows = this.sharedClassifier ? this.#claimed : [p.vocabStart, p.vocabEnd];
    let best = -1;
    for (let i = 0; i < rows.length; i += 2) {
      const a = rows[i]!;
      const b = rows[i + 1]!;
      if (b <= a) continue;
      argmax.host({ rows: 1, cols: b - a }, [this.#logits.subarray(a, b), this.#best]);
      const j = a + this.#best[0]!;
      if (best < 0 || this.#logits[j]! > this.#logits[best]! || (this.#logits[j] === this.#logits[best] && j < best)) best = j;
    }
    Atomics.store(this.#ctrl, this.#base + RANK_WORD.BEST, best);
  }

  #park(phase: RankPhase): void {
    if (this.#faults.parkAt !== phase || (this.#faults.afterSteps ?? 0) > 0) return;
    Atomics.store(this.#ctrl, this.#base + RANK_WORD.PARKED, phaseIndex(phase) + 1);
    Atomics.notify(this.#ctrl, this.#base + RANK_WORD.PARKED);
    // Parked for good: the test terminates this worker here.
    const forever = new Int32Array(new SharedArrayBuffer(4));
    for (;;) Atomics.wait(forever, 0, 0);
  }

  #fails(phase: RankPhase): boolean {
    return this.#faults.failAt === phase && (this.#faults.afterSteps ?? 0) === 0;
  }

  #setLength(length: number, epoch: number): void {
    this.#length = length;
    this.#epoch = epoch;
    Atomics.store(this.#ctrl, this.#base + RANK_WORD.LENGTH, length);
  }

  /** The host forward, for cache-state operations (WebGPU ranks keep no shards: ENOTSUP). */
  #hostForward(op: string): RankForward {
    if (this.#forward instanceof RankForward) return this.#forward;
    throw new TenonError('ENOTSUP', 'cache shards are kept by host ranks only', { op, reason: 'device-rank-cache' });
  }

  /** The step the coordinator issued (CMD.STEP). */
  async #step(): Promise<void> {
    const c = this.#ctrl;
    const commandAt = performance.now();
    const count = Atomics.load(c, CTRL.CMD_COUNT);
    const tokens: number[] = [];
    for (let i = 0; i < count; i++) tokens.push(Atomics.load(c, CTRL.TOKENS + i));
    this.#run = { first: true, last: true };
    await this.#transaction(Atomics.load(c, CTRL.CMD_EPOCH), Atomics.load(c, CTRL.CMD_POS), tokens, Atomics.load(c, CTRL.VOTE_BASE), commandAt);
  }

  /**
   * A greedy decode run (CMD.DECODE): one-token steps back to back, each fed the greedy id the step before
   * committed (written by the rank that decided its 'complete' round), until the run's last step or the
   * first step that does not commit. Every committed step casts exactly 3 rounds of votes, so step s of
   * the run starts from VOTE_BASE + 3 * ranks * s. Between steps a rank zeroes its own classifier claim
   * word before its checkpoint vote: no peer claims from it until that round is decided, and every peer
   * finished claiming in the step before (its 'complete' vote came after its forward pass).
   */
  async #decode(): Promise<void> {
    const c = this.#ctrl;
    let commandAt = performance.now();
    const steps = Atomics.load(c, CTRL.CMD_COUNT);
    const epoch0 = Atomics.load(c, CTRL.CMD_EPOCH);
    const pos0 = Atomics.load(c, CTRL.CMD_POS);
    const base = Atomics.load(c, CTRL.VOTE_BASE);
    let token = Atomics.load(c, CTRL.TOKENS);
    for (let s = 0; s < steps; s++) {
      if (s > 0) Atomics.store(c, this.#base + RANK_WORD.CLAIMED, 0);
      this.#run = { first: s === 0, last: s === steps - 1 };
      if (!(await this.#transaction(epoch0 + s, pos0 + s, [token], base + RANK_ROUNDS * this.#init.ranks * s, commandAt))) return;
      token = this.#ids[pos0 + s]!;
      commandAt = performance.now();
    }
  }

  /** One step as a transaction of three agreed rounds; true when it committed on this rank. */
  async #transaction(epoch: number, pos: number, tokens: readonly number[], voteBase: number, commandAt: number): Promise<boolean> {
    const count = tokens.length;
    this.#voteBase = voteBase;
    this.#runPos = pos;
    const cp = { length: this.#length, epoch: this.#epoch };
    const restore = async (): Promise<false> => {
      if (this.stateful) await this.#forward.clearFrom(cp.length);
      this.#setLength(cp.length, cp.epoch);
      return false;
    };
    try {
      this.#park('checkpoint');
      const fits = pos === this.#length && epoch === this.#epoch + 1 && pos + count <= this.#init.maxSeq && count <= this.#init.maxBatch;
      const ready = fits && !this.#fails('checkpoint');
      this.#vote('checkpoint', epoch, ready);
      // With peers and an OK vote of its own, the rank starts its forward pass at once and reads the
      // checkpoint decision at its first exchange (#settleCheckpoint): the round's hand-off overlaps the
      // first segment. Otherwise (its own vote failed, so the round aborts; or a single rank, whose own vote
      // decided the round) it reads the decision now.
      if (ready && this.#init.ranks > 1 && this.#init.overlapCheckpoint) this.#pendingCheckpoint = epoch;
      else if (this.#decision('checkpoint', epoch) !== 'proceed') return await restore();
      this.#park('execute');
      let ok = true;
      this.#claimFrom = 0;
      this.#claimed.length = 0;
      const t0 = performance.now();
      this.#traceBegin(epoch, commandAt);
      this.#traceMark(TRACE_STEP.START);
      try {
        await this.#forward.run(tokens, pos, this, this.#logits);
      } catch (err) {
        if (err instanceof Fenced) throw err;
        ok = false;
      }
      // A forward pass that made no exchange (or failed before one) reads the decision here, before its vote.
      this.#settleCheckpoint();
      if (ok) this.#candidate();
      this.#forwardMicros += (performance.now() - t0) * 1000;
      this.#traceMark(TRACE_STEP.END);
      this.#vote('execute', epoch, ok && !this.#fails('execute'));
      const verdict = this.#decision('execute', epoch);
      this.#traceMark(TRACE_STEP.DECIDED);
      if (verdict === 'abort') return await restore();
      if (verdict === 'proceed') this.#traceCommit();
      // The commit decision: applied (provisionally, until 'complete' is agreed) only when it names our epoch.
      if (verdict === 'proceed') this.#setLength(cp.length + count, epoch);
      this.#park('complete');
      this.#vote('complete', epoch, verdict === 'proceed' ? !this.#fails('complete') : 'refused');
      if (this.#decision('complete', epoch) !== 'proceed') return await restore();
      return true;
    } catch (err) {
      if (!(err instanceof Fenced)) throw err;
      return await restore();
    } finally {
      this.#pendingCheckpoint = undefined;
      this.#traceAt = -1;
      // A delayed parkAt/failAt (afterSteps) waits for its step; every other seam fired in this one.
      const later = (this.#faults.afterSteps ?? 0) - 1;
      this.#faults = later >= 0 ? { ...(this.#faults.parkAt === undefined ? {} : { parkAt: this.#faults.parkAt }), ...(this.#faults.failAt === undefined ? {} : { failAt: this.#faults.failAt }), afterSteps: later } : {};
    }
  }

  /** Runs steps as the coordinator issues them, waiting between them without blocking this thread's messages. */
  async serve(): Promise<void> {
    const c = this.#ctrl;
    const waitAsync = (Atomics as unknown as { waitAsync(a: Int32Array, i: number, v: number): { async: boolean; value: Promise<string> | string } }).waitAsync;
    let stepped = false;
    for (;;) {
      const seq = Atomics.load(c, CTRL.CMD_SEQ);
      if (seq !== this.#seenCmd) {
        this.#seenCmd = seq;
        const kind = Atomics.load(c, CTRL.CMD_KIND);
        stepped = (kind === CMD.STEP || kind === CMD.DECODE) && !this.#fenced();
        if (stepped) await (kind === CMD.DECODE ? this.#decode() : this.#step());
        continue;
      }
      if (this.#fenced()) return;
      if (stepped) {
        // Right after a step the next one usually follows at once: poll for it within the spin bound, then
        // block briefly (the fence and every new command notify this word), then serve messages from the
        // event loop again.
        stepped = false;
        if (!this.#nextStep.spin(c, CTRL.CMD_SEQ, seq)) this.#nextStep.slept(Atomics.wait(c, CTRL.CMD_SEQ, seq, NEXT_STEP_WAIT_MS) === 'timed-out');
        continue;
      }
      const r = waitAsync(c, CTRL.CMD_SEQ, seq);
      if (r.async) await r.value;
    }
  }

  // ----- control requests (messages) -----

  #needsState(op: string): void {
    if (!this.stateful) throw new TenonError('EINVAL', `rank ${this.#init.rank} owns no state`, { op, reason: 'stateless-rank', ids: { rank: this.#init.rank } });
  }

  async #digest(): Promise<string> {
    if (!this.stateful) return '';
    if (this.#forward instanceof DeviceRankForward) return sha256Hex(await this.#forward.kvBytes());
    const f = this.#forward;
    const all = new Uint8Array(2 * f.kCache.length * f.maxSeq * f.kvWidth * F32_BYTES);
    let at = 0;
    for (let l = 0; l < f.kCache.length; l++) {
      for (const cache of [f.kCache[l]!, f.vCache[l]!]) {
        all.set(new Uint8Array(cache.buffer, cache.byteOffset, cache.byteLength), at);
        at += cache.byteLength;
      }
    }
    return sha256Hex(all);
  }

  #exportShard(): Uint8Array {
    this.#needsState('partition.cache.save');
    const f = this.#hostForward('partition.cache.save');
    const p = this.#init.weights.plan;
    const header: ShardHeader = {
      rank: this.#init.rank,
      topology: this.#init.topology,
      identity: this.#init.identity,
      length: this.#length,
      epoch: this.#epoch,
      layerStart: p.layerStart,
      layerEnd: p.layerEnd,
      kvWidth: f.kvWidth,
    };
    const json = new TextEncoder().encode(JSON.stringify(header));
    const headBytes = HEADER_LENGTH_BYTES + Math.ceil(json.length / F32_BYTES) * F32_BYTES;
    const rowFloats = this.#length * f.kvWidth;
    const out = new Uint8Array(headBytes + 2 * f.kCache.length * rowFloats * F32_BYTES);
    new DataView(out.buffer).setUint32(0, json.length, true);
    out.set(json, HEADER_LENGTH_BYTES);
    const body = new Float32Array(out.buffer, headBytes);
    let at = 0;
    for (let l = 0; l < f.kCache.length; l++) {
      body.set(f.kCache[l]!.subarray(0, rowFloats), at);
      at += rowFloats;
      body.set(f.vCache[l]!.subarray(0, rowFloats), at);
      at += rowFloats;
    }
    return out;
  }

  /** Checks a shard against this rank; keeps it pending (nothing changes until install). */
  #validateShard(shard: Uint8Array): void {
    this.#needsState('partition.cache.load');
    const op = 'partition.cache.load';
    const bad = (reason: string, message: string): never => {
      throw new TenonError('EINVAL', message, { op, reason, ids: { rank: this.#init.rank } });
    };
    if (this.#faults.failShardValidation === true) {
      this.#faults = {};
      bad('shard-refused', 'shard validation refused (fault seam)');
    }
    if (shard.byteLength < HEADER_LENGTH_BYTES) bad('shard-malformed', 'shard too short');
    const view = new DataView(shard.buffer, shard.byteOffset, shard.byteLength);
    const jsonLength = view.getUint32(0, true);
    const headBytes = HEADER_LENGTH_BYTES + Math.ceil(jsonLength / F32_BYTES) * F32_BYTES;
    if (headBytes > shard.byteLength) bad('shard-malformed', 'shard header overruns the shard');
    const f = this.#hostForward(op);
    let header: ShardHeader;
    try {
      header = JSON.parse(new TextDecoder().decode(shard.subarray(HEADER_LENGTH_BYTES, HEADER_LENGTH_BYTES + jsonLength))) as ShardHeader;
    } catch {
      return bad('shard-malformed', 'shard header is not JSON');
    }
    const p = this.#init.weights.plan;
    if (header.topology !== this.#init.topology) bad('topology-mismatch', 'shard belongs to another topology');
    if (header.identity !== this.#init.identity) bad('identity-mismatch', 'shard belongs to another model');
    if (header.rank !== this.#init.rank || header.layerStart !== p.layerStart || header.layerEnd !== p.layerEnd || header.kvWidth !== f.kvWidth) {
      bad('rank-mismatch', 'shard belongs to another rank');
    }
    if (!Number.isSafeInteger(header.length) || header.length < 0 || header.length > this.#init.maxSeq) bad('shard-malformed', 'shard length out of range');
    const rowFloats = header.length * f.kvWidth;
    if (shard.byteLength - headBytes !== 2 * f.kCache.length * rowFloats * F32_BYTES) bad('shard-malformed', 'shard body has the wrong size');
    const rows = new Float32Array(rowFloats * 2 * f.kCache.length);
    new Uint8Array(rows.buffer).set(shard.subarray(headBytes));
    this.#pendingShard = { header, rows };
  }

  #installShard(): void {
    const pending = this.#pendingShard;
    if (pending === undefined) throw new TenonError('EINVAL', 'no validated shard to install', { op: 'partition.cache.load', reason: 'not-validated' });
    this.#pendingShard = undefined;
    const f = this.#hostForward('partition.cache.load');
    const rowFloats = pending.header.length * f.kvWidth;
    f.clearFrom(0);
    let at = 0;
    for (let l = 0; l < f.kCache.length; l++) {
      f.kCache[l]!.set(pending.rows.subarray(at, at + rowFloats));
      at += rowFloats;
      f.vCache[l]!.set(pending.rows.subarray(at, at + rowFloats));
      at += rowFloats;
    }
    this.#setLength(pending.header.length, pending.header.epoch);
    this.#checkpoints.clear();
  }

  async handle(m: RankRequest): Promise<unknown> {
    switch (m.t) {
      case 'faults':
        this.#faults = m.faults;
        return undefined;
      case 'inspect': {
        const state: RankState = {
          rank: this.#init.rank,
          stateful: this.stateful,
          length: this.#length,
          epoch: this.#epoch,
          digest: await this.#digest(),
          checkpoints: [...this.#checkpoints.keys()],
        };
        return state;
      }
      case 'counters': {
        const k = this.#forward instanceof RankForward ? this.#forward.kernelStats() : { wasmDispatches: 0, scalarDispatches: 0 };
        const counters: RankCounters = {
          exchanges: this.#exchanges,
          exchangeMicros: this.#exchangeMicros,
          forwardMicros: this.#forwardMicros,
          exchangeSleeps: this.#exchangeSleeps,
          decisionMicros: [...this.#decisionMicros],
          wasmDispatches: k.wasmDispatches,
          scalarDispatches: k.scalarDispatches,
          gpuSubmits: this.#forward instanceof DeviceRankForward ? this.#forward.gpuSubmits() : 0,
          classifierChunks: this.#classifierChunks,
        };
        return counters;
      }
      case 'checkpoint':
        if (this.#faults.failCheckpoint === true) {
          this.#faults = {};
          throw new TenonError('EIO', 'checkpoint capture refused (fault seam)', { op: 'partition.checkpoint', reason: 'capture-failed' });
        }
        this.#checkpoints.set(m.id, { length: this.#length, epoch: this.#epoch });
        return { length: this.#length, epoch: this.#epoch };
      case 'discard':
        this.#checkpoints.delete(m.id);
        return undefined;
      case 'prepare-restore': {
        const op = 'partition.rollback';
        if (this.#faults.failPrepare === true) {
          this.#faults = {};
          throw new TenonError('EIO', 'restore preparation refused (fault seam)', { op, reason: 'prepare-failed' });
        }
        if (m.id !== 'reset') {
          const cp = this.#checkpoints.get(m.id);
          if (cp === undefined) throw new TenonError('ESTALE', 'this rank holds no such checkpoint', { op, reason: 'unknown-checkpoint' });
          if (cp.length !== m.length || cp.epoch !== m.epoch || cp.length > this.#length) {
            throw new TenonError('ESTALE', 'checkpoint metadata differs between ranks', { op, reason: 'inconsistent-checkpoint' });
          }
        }
        this.#pendingRestore = { id: m.id, length: m.length, epoch: m.epoch };
        return undefined;
      }
      case 'apply-restore': {
        const p = this.#pendingRestore;
        if (p === undefined || p.id !== m.id) throw new TenonError('EINVAL', 'restore not prepared', { op: 'partition.rollback', reason: 'not-prepared' });
        this.#pendingRestore = undefined;
        if (this.stateful) await this.#forward.clearFrom(p.length);
        this.#setLength(p.length, p.epoch);
        for (const [id, cp] of this.#checkpoints) if (cp.length > p.length || p.id === 'reset') this.#checkpoints.delete(id);
        return undefined;
      }
      case 'cancel-restore':
        this.#pendingRestore = undefined;
        return undefined;
      case 'export-shard':
        return this.#exportShard();
      case 'validate-shard':
        this.#validateShard(m.shard);
        return undefined;
      case 'install-shard':
        this.#needsState('partition.cache.load');
        this.#installShard();
        return undefined;
      case 'cancel-shard':
        this.#pendingShard = undefined;
        return undefined;
    }
  }
}

/** Runs a rank on `port`: waits for its init message, then serves steps and requests until the worker ends. */
export function startRank(port: RankPort, holdLock?: (name: string) => Promise<void>): void {
  let rank: Rank | undefined;
  port.onMessage((m) => {
    if (m.t === 'init') {
      void Rank.create(m).then(
        async (created) => {
          rank = created;
          if (m.lock !== undefined && holdLock !== undefined) await holdLock(m.lock);
          port.post({ t: 'ready', rank: m.rank });
          void created.serve();
        },
        (err: unknown) => port.post({ t: 'init-failed', rank: m.rank, error: wire(err) }),
      );
      return;
    }
    const r = rank;
    if (r === undefined) return;
    r.handle(m).then(
      (value) => port.post({ t: 'reply', req: m.req, ok: true, value }),
      (err: unknown) => port.post({ t: 'reply', req: m.req, ok: false, error: wire(err) }),
    );
  });
}

export { RANK_PHASES };
