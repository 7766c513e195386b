// Wire shapes between the coordinator (coordinator.ts) and its rank workers (rank.ts), and the one rule that
// turns a round of votes into a decision (roundFailure).
//
// Two channels. The hot path of a step never posts a message: the coordinator writes the step (epoch,
// position, tokens, the vote count it starts from) into the shared control block and bumps CMD_SEQ; every
// rank votes at each phase boundary by writing its vote words and bumping VOTES. The rank whose vote
// completes a round (the last of the round's votes to land) evaluates every rank's vote with roundFailure and
// writes the decision (DECISION_* words, then DECISION_SEQ); every rank acts only on a decision naming its
// phase and its epoch. The coordinator does not sit on the step's path: it waits for the step's final
// decision (an abort, or 'complete' agreed), re-reads the same votes for its report, and publishes. So a
// round costs one hand-off between ranks instead of a round trip through the coordinator's thread.
// Activations go over SAB rings (one per link of the communication manifest) and logits into the shared
// logits array. Everything else (construction, checkpoint, rollback, cache shards, inspection, fault
// seams) is a request/reply message: control operations, not per-token work.
// Every word of the control block is accessed with Atomics.
import type { HostKernelChoice } from '../../submit/index.js';
import type { DenseConfig, RankWeights } from './weights.js';

/** Int32 word indices of the control block. */
export const CTRL = {
  CMD_SEQ: 0,
  CMD_KIND: 1,
  CMD_EPOCH: 2,
  CMD_POS: 3,
  CMD_COUNT: 4,
  /** Total votes cast by all ranks so far (every rank adds one per round). */
  VOTES: 5,
  DECISION_SEQ: 6,
  DECISION_PHASE: 7,
  DECISION_EPOCH: 8,
  DECISION_VERDICT: 9,
  /** Set once the session is fenced (a rank was lost): every rank stops waiting and restores. */
  FENCE: 10,
  /** VOTES when the step was issued: round r of the step is complete at VOTE_BASE + (r + 1) * ranks votes. */
  VOTE_BASE: 11,
  /** Fault seam (PartitionFaults.decisionEpochSkew): added to the epoch the commit (execute) decision names. */
  DECISION_SKEW: 12,
  /**
   * Bumped (and notified) with a step's final decision only (an abort, or 'complete' decided): the word the
   * coordinator sleeps on, so the decisions in between wake only ranks and never take a core from them.
   */
  STEP_END: 13,
  /**
   * Decode runs (CMD.DECODE): steps of the run whose 'complete' round proceeded so far (the rank deciding
   * that round adds one after writing the step's greedy id into RankInit.ids, before the decision).
   */
  DECODED: 14,
  /** First token word; maxBatch of them follow, then the per-rank blocks. */
  TOKENS: 16,
} as const;

/** Words per rank block, after the tokens. */
export const RANK_WORDS = 9;
/** Word offsets inside a rank block. */
export const RANK_WORD = {
  VOTE_PHASE: 0,
  VOTE_EPOCH: 1,
  VOTE_OK: 2,
  /** The rank's committed length (for inspection without a message). */
  LENGTH: 3,
  /** Phase + 1 where the rank parked itself (fault seam), 0 otherwise. */
  PARKED: 4,
  /**
   * A classifying rank's greedy candidate after its execute phase: the vocabulary index of the first
   * largest logit among its own classifier rows (-1 when it owns none). The coordinator picks among the
   * candidates instead of scanning the whole vocabulary on its own thread after the step.
   */
  BEST: 5,
  /**
   * Tensor partitions of more than one rank: chunks of this rank's classifier rows claimed so far in the
   * current step, by any rank (Atomics.add; the coordinator zeroes it before issuing the step). A rank
   * claims its own rows first, then helps the other ranks with theirs (rank.ts claimClassifierRows).
   */
  CLAIMED: 6,
  /**
   * The rank's liveness counter: bumped (Atomics.store of the next value, wrapping) before every dispatch
   * of its host forward pass, after every activation exchange and with every vote. A rank waiting on a peer
   * keeps polling while a peer's counter moves (the peer is on its core and computing what the waiter needs)
   * and sleeps once no peer's counter moved for a liveness window (rank.ts Spinner): a dead, parked or
   * preempted peer stops it. Never read for a decision: only for how to wait.
   */
  PROGRESS: 7,
  /**
   * Futex sleeps the rank began inside steps (ring and decision waits; Atomics.add before each
   * Atomics.wait) after a poll that ran its course (its bound, or the liveness window), not after one cut
   * short by a preemption: how a test sees, without a message, that a rank waiting on a silent peer
   * stopped polling because the peer was silent.
   */
  SLEEPS: 8,
} as const;

/**
 * Rows of one classifier chunk: the unit a rank claims. Small enough that the ranks end their classifier
 * within one chunk's time of each other (~40 µs at dim 288 on one core), large enough that claiming costs
 * nothing next to computing it.
 */
export const CLASSIFIER_CHUNK_ROWS = 512;

export const controlWords = (maxBatch: number, ranks: number): number => CTRL.TOKENS + maxBatch + ranks * RANK_WORDS;
export const rankBase = (maxBatch: number, rank: number): number => CTRL.TOKENS + maxBatch + rank * RANK_WORDS;

/**
 * CMD_KIND values. STEP: one step of CMD_COUNT tokens (TOKENS). DECODE: a greedy decode run of CMD_COUNT
 * one-token steps, the first fed TOKENS[0]: the ranks run the steps back to back without the coordinator,
 * each step the same three-round transaction at the next epoch and position, each next token the greedy
 * id of the step before (pickGreedy over the classifying ranks' candidates, written by the rank that
 * decides the 'complete' round); the run ends at its last step or at the first step that does not commit.
 */
export const CMD = { STEP: 1, DECODE: 2 } as const;

/** The phases of a partitioned step, in order; each boundary is agreed by every rank. */
export const RANK_PHASES = ['checkpoint', 'execute', 'complete'] as const;
export type RankPhase = (typeof RANK_PHASES)[number];
export const phaseIndex = (p: RankPhase): number => RANK_PHASES.indexOf(p);

/** VOTE_OK values: the phase succeeded, failed locally, or the rank refused a decision naming a foreign epoch. */
export const VOTE = { FAILED: 0, OK: 1, REFUSED: 2 } as const;

/** DECISION_VERDICT values. */
export const VERDICT = { PROCEED: 1, ABORT: 2, FENCED: 3 } as const;

/** Fault seams of one rank (set by message before a step; cleared after it fired). */
export interface RankFaults {
  /** Park (block forever, PARKED set) on reaching this phase, before voting: the test then kills the worker. */
  readonly parkAt?: RankPhase;
  /**
   * parkAt and failAt fire this many steps later (a decode run's later step); the other seams fire in the
   * next step regardless. Default 0.
   */
  readonly afterSteps?: number;
  /** Vote failure at this phase (a local error). */
  readonly failAt?: RankPhase;
  /** Add this to the epoch this rank votes with (a rank that believes in another epoch). */
  readonly voteEpochSkew?: number;
  /** Refuse the next checkpoint capture / rollback preparation / shard validation. */
  readonly failCheckpoint?: boolean;
  readonly failPrepare?: boolean;
  readonly failShardValidation?: boolean;
  /**
   * Shared classifier: claim no classifier rows until every other rank has voted on its execute phase (a
   * rank that reaches its classifier last, e.g. preempted): the others must have computed every chunk.
   */
  readonly classifierLast?: boolean;
}

export interface RankInit {
  readonly t: 'init';
  readonly rank: number;
  readonly ranks: number;
  readonly weights: RankWeights;
  readonly maxSeq: number;
  readonly maxBatch: number;
  readonly control: SharedArrayBuffer;
  readonly logits: SharedArrayBuffer;
  /** Ring incarnation shared by every link of this session. */
  readonly incarnation: number;
  /** Rings this rank writes (to rank `to`) and reads (from rank `from`). */
  readonly outgoing: readonly { readonly to: number; readonly ring: SharedArrayBuffer }[];
  readonly incoming: readonly { readonly from: number; readonly ring: SharedArrayBuffer }[];
  /** Browser: the Web Lock this rank holds for its lifetime (the coordinator watches it). */
  readonly lock: string | undefined;
  readonly identity: string;
  readonly topology: string;
  /** Which host kernels the rank runs (a runtime's `hostKernels` choice). */
  readonly kernels: HostKernelChoice;
  /** Where the rank computes: the host (RankForward) or a WebGPU provider of its own (DeviceRankForward). */
  readonly device: RankDevice;
  /** How long the rank polls a ring, decision or command word before it sleeps on it (µs; 0: never polls). */
  readonly spinMicros: number;
  /** How long past the spin bound a rank polls after a peer last showed progress (µs; 0: never past the bound). */
  readonly livenessMicros: number;
  /** Start the forward pass on an OK checkpoint vote and read the decision at the first exchange (PartitionedSessionOptions.overlapCheckpoint). */
  readonly overlapCheckpoint: boolean;
  /**
   * Tensor partitions of more than one rank: every rank's classifier rows [vocabStart, vocabEnd) in rank
   * order, claimed in chunks by any rank (RANK_WORD.CLAIMED); the rank then holds the whole classifier.
   * Empty otherwise (the rank computes exactly its own rows).
   */
  readonly sharedClassifier: readonly (readonly [number, number])[];
  /** The exchange trace (PartitionedSessionOptions.traceSteps; traceLayout), or undefined when off. */
  readonly trace: SharedArrayBuffer | undefined;
  /** Steps the trace keeps per rank (the last ones; 0 when off). */
  readonly traceSteps: number;
  /** Decode runs: the greedy id of the committed step at each position (Int32, maxSeq words). */
  readonly ids: SharedArrayBuffer;
  /** The classifying ranks in vocabulary order (whose RANK_WORD.BEST candidates pickGreedy compares). */
  readonly classifiers: readonly number[];
}

/**
 * The exchange trace (benchmarks): one Float64 region per rank in one shared buffer, written by that rank
 * only, with plain stores before its execute vote and read by the coordinator after the step's final
 * decision (the vote and decision words order them). A region is one word (steps traced so far) then a ring
 * of `steps` step records of `stride` words: the TRACE_STEP words, then an entry and an exit time for each
 * exchange of the step, in order. Times are the rank's performance.timeOrigin + performance.now() (ms),
 * one clock for every thread of the process.
 */
export const TRACE_STEP = {
  EPOCH: 0,
  /** The rank saw the step's command. */
  COMMAND: 1,
  /** The checkpoint decision proceeded: the forward pass starts. */
  START: 2,
  /** The forward pass and the greedy candidate are done: the execute vote follows. */
  END: 3,
  /** The execute (commit) decision was seen. */
  DECIDED: 4,
  /** Exchanges recorded in this step (entry/exit pairs follow from FIRST). */
  EXCHANGES: 5,
  FIRST: 6,
} as const;

/** Exchanges a step of a model with `layers` layers can make on one rank (tensor: 2 per layer; pipeline: 2). */
export const traceExchangeBound = (layers: number): number => 2 * layers + 2;
/** Words of one step record / of one rank's region / of the whole trace. */
export function traceLayout(layers: number, steps: number, ranks: number): { stride: number; region: number; words: number } {
  const stride = TRACE_STEP.FIRST + 2 * traceExchangeBound(layers);
  const region = 1 + steps * stride;
  return { stride, region, words: region * ranks };
}
/** One traced step of one rank (PartitionedSession.exchangeTrace; times in ms on the shared trace clock). */
export interface RankStepTrace {
  readonly epoch: number;
  readonly command: number;
  readonly start: number;
  readonly end: number;
  readonly decided: number;
  /** Each activation exchange of the step in order: when the rank entered it and when it left. */
  readonly exchanges: readonly { readonly entry: number; readonly exit: number }[];
}
/** Largest accepted traceSteps. */
export const MAX_TRACE_STEPS = 4096;

/**
 * Default bound of a rank's polling before it sleeps (µs): 0, a rank sleeps on the word at once. Polling
 * would save the futex wake-up (scripts/ranks-probe.mjs on this 2-vCPU VM: 72-80 µs median at load ~1,
 * 11-16 µs when other processes keep the vCPUs busy), but a peer's arrival skew is itself about one wake-up,
 * so a 60 µs poll mostly runs out and then sleeps anyway, and under load a polling thread loses its slice
 * (a lock-step probe with pure polling: median iteration at solo speed, mean 10x it). bench:ranks (same
 * process, interleaved), two tensor ranks over one rank with spin 0 vs the earlier default 60: 1.30 vs
 * 0.64x, 2.28 vs 1.66x, 1.34 vs 1.08x (load 6-14, three runs), and in earlier sessions 0.80 vs 0.59x, 0.78
 * vs 0.73x (load ~1) and 107.5 vs 70.7 tok/s (load 6-8): spin 0 ahead in every pair. The bench keeps 60,
 * 200 and 400 as sides, so a quieter machine can show otherwise.
 */
export const DEFAULT_SPIN_MICROS = 0;
/** Largest accepted spin bound (µs): past this a rank should sleep. */
export const MAX_SPIN_MICROS = 10_000;
/** Smallest adaptive spin (µs): what long waits shrink the bound to. */
export const SPIN_FLOOR_MICROS = 8;
/**
 * Default liveness window (µs; PartitionedSessionOptions.livenessMicros): past its adaptive bound a waiting
 * rank keeps polling only while some peer's RANK_WORD.PROGRESS moved within this long. Off by default:
 * on a quiet two-core machine (load about 1, two bench:ranks runs, stories15M shape) the two-rank side with
 * a 200 µs window ran 0.53x and 0.50x of one rank against 0.59x and 0.73x without it. A window worth trying
 * is longer than one dispatch of a rank's forward pass (the longest at dim 288, a classifier chunk, takes
 * ~40 µs on one core), so a computing peer shows progress within it, and short, so a dead or descheduled
 * peer costs one window of polling before the waiter sleeps (fence-checked slices); 200 is what was tried.
 */
export const LIVENESS_MICROS = 0;
/** A wait longer than this multiple of spinMicros means the peer was off its core: the bound shrinks. */
export const SPIN_LONG_WAIT = 2;

/**
 * The adaptive spin rule (rank.ts Spinner): the next bound after a wait that outlasted the poll and slept,
 * from how long the whole wait took (µs; Infinity when a sleep slice ran out). A wait that the full bound
 * (`maxMicros`, the session's spinMicros) would have caught grows the bound back towards it (doubling); a
 * wait longer than SPIN_LONG_WAIT x maxMicros (the peer was off its core, not computing) halves it towards
 * SPIN_FLOOR_MICROS; anything between keeps it. The waits are compared with the full bound, not the current
 * one: a sleep's own wake-up outlasts a small bound, so that comparison only ever shrank it (measured in
 * bench:ranks with spinMicros 400: ranks slept at about half of their exchanges, every one where they
 * arrived first, while 14% of the waits were longer than 400 µs).
 */
export function nextSpinBound(bound: number, maxMicros: number, waitedMicros: number): number {
  if (waitedMicros <= maxMicros) return Math.min(maxMicros, Math.max(SPIN_FLOOR_MICROS, bound * 2));
  if (waitedMicros > SPIN_LONG_WAIT * maxMicros) return Math.max(SPIN_FLOOR_MICROS, bound / 2);
  return bound;
}

export type RankDevice = 'host' | 'webgpu';

/** What a rank reports of its own state (inspection, tests). */
export interface RankState {
  readonly rank: number;
  readonly stateful: boolean;
  readonly length: number;
  readonly epoch: number;
  /** Hex SHA-256 over every KV row this rank owns (all maxSeq rows), or '' for a stateless rank. */
  readonly digest: string;
  readonly checkpoints: readonly number[];
}

/** Why a round fails: the first rank (in rank order) whose vote is not OK for this phase and epoch. */
export interface RoundFailure {
  readonly rank: number;
  /** The rank refused the previous decision or voted with another epoch (TS-txn-epoch-mismatch). */
  readonly refused: boolean;
}

/**
 * Evaluates a complete round of votes for `phase` of the step of `epoch`: undefined when every rank voted
 * OK for this phase and this epoch (the round proceeds), else the first failing rank. Pure over the control
 * block; the deciding rank and the coordinator apply it to the same words.
 */
export function roundFailure(c: Int32Array, maxBatch: number, ranks: number, phase: RankPhase, epoch: number): RoundFailure | undefined {
  for (let r = 0; r < ranks; r++) {
    const base = rankBase(maxBatch, r);
    const status = Atomics.load(c, base + RANK_WORD.VOTE_OK);
    const sameEpoch = Atomics.load(c, base + RANK_WORD.VOTE_EPOCH) === epoch;
    const samePhase = Atomics.load(c, base + RANK_WORD.VOTE_PHASE) === phaseIndex(phase);
    if (status !== VOTE.OK || !sameEpoch || !samePhase) return { rank: r, refused: status === VOTE.REFUSED || !sameEpoch };
  }
  return undefined;
}

/**
 * The greedy id of a step from the classifying ranks' candidates (RANK_WORD.BEST; -1: the rank computed no
 * rows): the candidate with the largest logit, ties to the smallest index, as argmax over the whole row.
 */
export function pickGreedy(candidates: readonly number[], logits: Float32Array): number {
  let best = -1;
  for (const i of candidates) if (i >= 0 && (best < 0 || logits[i]! > logits[best]! || (logits[i] === logits[best] && i < best))) best = i;
  return best;
}

/** Benchmark counters of one rank: activation exchanges and time inside them, time in forward passes (µs). */
export interface RankCounters {
  readonly exchanges: number;
  readonly exchangeMicros: number;
  readonly forwardMicros: number;
  /** Futex sleeps inside exchanges (the bounded spin ran out before the peer arrived). */
  readonly exchangeSleeps: number;
  /** Microseconds from casting its vote to seeing the decision, per phase (RANK_PHASES order). */
  readonly decisionMicros: readonly number[];
  /** Dispatches that ran a WebAssembly kernel / a scalar twin. */
  readonly wasmDispatches: number;
  readonly scalarDispatches: number;
  /** WebGPU ranks: queue submissions made (0 on host ranks). */
  readonly gpuSubmits: number;
  /** Shared classifier: chunks of classifier rows this rank computed (all steps). */
  readonly classifierChunks: number;
}

/** A cache shard header (JSON, before the KV rows). */
export interface ShardHeader {
  readonly rank: number;
  readonly topology: string;
  readonly identity: string;
  readonly length: number;
  readonly epoch: number;
  readonly layerStart: number;
  readonly layerEnd: number;
  readonly kvWidth: number;
}

export type RankRequest =
  | { readonly t: 'faults'; readonly faults: RankFaults }
  | { readonly t: 'inspect' }
  | { readonly t: 'counters' }
  | { readonly t: 'checkpoint'; readonly id: number }
  | { readonly t: 'discard'; readonly id: number }
  | { readonly t: 'prepare-restore'; readonly id: number | 'reset'; readonly length: number; readonly epoch: number }
  | { readonly t: 'apply-restore'; readonly id: number | 'reset'; readonly length: number; readonly epoch: number }
  | { readonly t: 'cancel-restore' }
  | { readonly t: 'export-shard' }
  | { readonly t: 'validate-shard'; readonly shard: Uint8Array }
  | { readonly t: 'install-shard' }
  | { readonly t: 'cancel-shard' };

export type RankMessage = RankInit | (RankRequest & { readonly req: number });

/** A wire error (TenonError fields). */
export interface WireError {
  readonly code: string;
  readonly reason: string | undefined;
  readonly message: string;
}

export type RankReply =
  | { readonly t: 'ready'; readonly rank: number }
  | { readonly t: 'init-failed'; readonly rank: number; readonly error: WireError }
  | { readonly t: 'reply'; readonly req: number; readonly ok: true; readonly value: unknown }
  | { readonly t: 'reply'; readonly req: number; readonly ok: false; readonly error: WireError };

export type { DenseConfig };
