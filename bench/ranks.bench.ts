// Partitioned-session benchmark (issue 14, acceptance point 3): `npm run bench:ranks`, Node.
// Greedy decode tokens/s of one host rank vs two host ranks of a tensor partition (KV heads and FFN columns
// split in two, partial sums added in rank order; the classifier rows shared in claimed chunks), decoding
// with PartitionedSession.decode (the ranks run the steps back to back; TS-dist-decode-run), next to the
// same two partitions decoding one step() per token (the coordinator's turn-around between steps), and
// next to two one-rank sessions decoding at the same time (no exchange: the machine's own two-core ceiling), on
//   (a) a seeded random model of stories15M's shape (dim 288, 6 layers, 6 heads, ffn 768, vocab 32000),
//       synthesised here (randomDenseWeights), and
//   (b) tiny-llama-f32.gguf (dim 256, 4 layers, 8/4 heads, vocab 512) from ../shared/models.
// Every rank is a worker_threads worker running the Node build of workers/rank.worker.ts (built first here);
// both sides run the same op-library host kernels (src/session/partition/rank-forward.ts: the WebAssembly
// SIMD kernels where the engine has them, else the scalar twins; the summary names which ran), so the ratio
// is what splitting across cores buys. Next to the compute time it reports the per-step synchronisation
// cost: agreements per token and microseconds per agreement (the checkpoint and complete rounds carry no
// compute: rank-side wait from casting its vote to seeing the decision) and per activation exchange (rank-side
// time inside a ring send/receive or all-reduce, which includes waiting for the slower peer); then, per rank,
// compute, exchange time, futex sleeps and the wait of each round, so imbalance between ranks shows; and the
// hand-off time per step that no compute overlaps (coordinator's issue-to-final-decision minus the ranks' forward).
// Two sides run the tensor partition with attention replicated on both ranks (evenTensorPartition(..,
// 'replicated'): only the FFN and classifier split, one all-reduce per layer instead of two), with spin 0
// and with a 60 µs spin bound.
// Two-rank sides with other spin bounds (spinMicros 60, 200 and 400) and one with the liveness rule
// (livenessMicros 200: past its bound a rank polls while its peer shows progress; off by default) run next to
// the default one (spin 0: never polls; liveness off), and one whose ranks start their forward pass on their own OK
// checkpoint vote and read the decision at the first exchange (overlapCheckpoint true; by default they wait for it). Sides run in
// interleaved rounds so drift and other processes' load hit both. Nothing here asserts anything about time.
// Every session records an exchange trace (traceSteps): the breakdown table splits each two-rank decode
// step into waits at exchanges, start/tail skew, hand-off after both ranks arrived, and stalls (segments over
// their best time on the same rank), from rank-local times written to shared memory during the run.
// Output: a printed table and bench/results/ranks.json (machine, cores, load average).
import { execSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { it } from 'vitest';
import { PartitionedSession, defaultRankSpawner, evenTensorPartition, loadModel, randomDenseWeights, readDenseWeights } from '../src/index.js';
import type { ArchitecturePartition, DenseWeights, RankStepTrace } from '../src/index.js';
import { readGgufFixture } from '../contracts/support/gguf-fixtures.js';

const PROMPT_TOKENS = 8;
const DECODE_STEPS = 24;
const ROUNDS = 3;
const MAX_SEQ = PROMPT_TOKENS + DECODE_STEPS * ROUNDS + 8;
const STORIES15M_SHAPE = { dim: 288, layers: 6, ffnDim: 768, heads: 6, kvHeads: 6, vocabSize: 32000, ropeTheta: 10000, ropeStyle: 'normal' as const, rmsEps: Math.fround(1e-5), contextLength: 256 };
const SEED = 15;
/** Spin bounds (µs) of the extra two-rank sides, next to the default (DEFAULT_SPIN_MICROS, 0: never poll): the earlier default 60 and two longer polls. */
const SPIN_VARIANTS = [60, 200, 400];
/** Steps each rank traces (options.traceSteps): every step of the run. */
const TRACE_STEPS = 1 + DECODE_STEPS * ROUNDS;
/** A segment this far over its best time on the same rank counts as a stall (a core taken away, µs). */
const STALL_MICROS = 50;

/**
 * Where the time of a two-rank decode step goes, from the exchange trace (rank-local entry and exit times of
 * every exchange on one clock, written into shared memory during the run and read after it). Per token:
 *  - span: first forward start to last forward end over the ranks;
 *  - ideal: the sum over segments of the slower rank's best time for that segment (what the span would be
 *    with no waiting, no hand-off and no stalls);
 *  - wait (a): at each exchange, how long the first rank to arrive waited for the last, split by the kind
 *    of segment that preceded it (attention, FFN) and into its structural part (the late rank's best segment
 *    time minus the early rank's: imbalance of the split) and the rest (arrival skew carried over + stalls);
 *    plus the skew of the forward start (checkpoint decision wake) and of the forward end (tail: final norm,
 *    classifier rows, greedy candidate);
 *  - hand-off (b): from the last arrival at an exchange to the last rank leaving it;
 *  - stalls (c): on the critical path (the late rank of each exchange), segment time over that rank's best
 *    for the same segment, and how many segments ran > STALL_MICROS over their best.
 */
interface Breakdown {
  readonly spanMicros: number;
  readonly idealMicros: number;
  readonly waitMicros: { readonly attention: number; readonly ffn: number; readonly start: number; readonly tail: number };
  readonly structuralWaitMicros: number;
  readonly handoffMicros: number;
  /** Median over exchanges of one exchange's hand-off and of its wait (µs): typical cost, apart from outliers. */
  readonly handoffMedianMicros: number;
  readonly waitMedianMicros: number;
  /**
   * Median over consecutive decode steps of one side (rank 0): from a step's commit decision to the next
   * step's command (the complete round and the coordinator's turn-around; in a decode run the complete
   * round alone, as a rank starts the next step on seeing its decision; sides run in interleaved rounds, so
   * the median leaves out the gaps where other sides ran).
   */
  readonly betweenMicros: number;
  readonly criticalExcessMicros: number;
  readonly stallsPerToken: number;
  /** Exchanges per token where each rank arrived last. */
  readonly lateCount: readonly number[];
  /** Per rank: best (min) µs per token of its segments summed, by kind: attention (the first includes the embedding), FFN, tail (its own best; the ideal uses the best step's slower tail). */
  readonly bestMicros: readonly { readonly attention: number; readonly ffn: number; readonly tail: number }[];
  /** Per rank: µs per token of its segments over their best (all segments, on or off the critical path). */
  readonly excessMicros: readonly number[];
  /** Per rank: µs per token from seeing the command to starting (checkpoint round) and from ending to the commit decision. */
  readonly checkpointMicros: readonly number[];
  readonly commitMicros: readonly number[];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[s.length >> 1]!;
}

function breakdown(trace: RankStepTrace[][], layers: number): Breakdown | undefined {
  // The first traced step is the prompt (8 tokens): decode steps only.
  const steps = trace.map((r) => r.slice(1));
  const n = steps[0]!.length;
  if (trace.length !== 2 || n === 0 || steps.some((r) => r.length !== n)) return undefined;
  const E = steps[0]![0]!.exchanges.length;
  const seg = (t: RankStepTrace, j: number): number => (j < E ? t.exchanges[j]!.entry : t.end) - (j === 0 ? t.start : t.exchanges[j - 1]!.exit);
  const best = steps.map((r) => Array.from({ length: E + 1 }, (_, j) => Math.min(...r.map((t) => seg(t, j)))));
  // The tail (final norm, classifier chunks as claimed, candidate) moves work between the ranks from step to
  // step: its best is the best step's slower rank, not each rank's own best.
  const bestTail = Math.min(...steps[0]!.map((t, i) => Math.max(seg(t, E), seg(steps[1]![i]!, E))));
  // Two exchanges per layer (attention, FFN), or one (FFN only: attention replicated; the segment then holds both).
  const perLayer = E / layers;
  const kind = (j: number): 'attention' | 'ffn' | 'tail' => (j === E ? 'tail' : perLayer === 2 && j % 2 === 0 ? 'attention' : 'ffn');
  const wait = { attention: 0, ffn: 0, start: 0, tail: 0 };
  let structural = 0;
  let handoff = 0;
  let critical = 0;
  let stalls = 0;
  let span = 0;
  const late = [0, 0];
  const handoffs: number[] = [];
  const waits: number[] = [];
  const between: number[] = [];
  const excess = [0, 0];
  const checkpoint = [0, 0];
  const commit = [0, 0];
  for (let i = 0; i < n; i++) {
    const a = steps[0]![i]!;
    const b = steps[1]![i]!;
    span += Math.max(a.end, b.end) - Math.min(a.start, b.start);
    if (i + 1 < n) between.push(steps[0]![i + 1]!.command - a.decided);
    wait.start += Math.abs(a.start - b.start);
    wait.tail += Math.abs(a.end - b.end);
    [a, b].forEach((t, r) => {
      checkpoint[r]! += t.start - t.command;
      commit[r]! += t.decided - t.end;
      for (let j = 0; j <= E; j++) {
        const over = seg(t, j) - best[r]![j]!;
        excess[r]! += over;
        if (over * 1000 > STALL_MICROS) stalls++;
      }
    });
    for (let j = 0; j < E; j++) {
      const ea = a.exchanges[j]!;
      const eb = b.exchanges[j]!;
      const L = ea.entry >= eb.entry ? 0 : 1;
      late[L]!++;
      const w = Math.abs(ea.entry - eb.entry);
      wait[kind(j) === 'ffn' ? 'ffn' : 'attention'] += w;
      structural += Math.max(0, best[L]![j]! - best[1 - L]![j]!);
      handoff += Math.max(ea.exit, eb.exit) - Math.max(ea.entry, eb.entry);
      handoffs.push(Math.max(ea.exit, eb.exit) - Math.max(ea.entry, eb.entry));
      waits.push(w);
      critical += seg([a, b][L]!, j) - best[L]![j]!;
    }
    critical += Math.max(seg(a, E), seg(b, E)) - bestTail;
  }
  const ideal = Array.from({ length: E }, (_, j) => Math.max(best[0]![j]!, best[1]![j]!)).reduce((x, y) => x + y, bestTail);
  const us = (ms: number): number => (ms * 1000) / n;
  return {
    spanMicros: us(span),
    idealMicros: ideal * 1000,
    waitMicros: { attention: us(wait.attention), ffn: us(wait.ffn), start: us(wait.start), tail: us(wait.tail) },
    structuralWaitMicros: us(structural),
    handoffMicros: us(handoff),
    handoffMedianMicros: median(handoffs) * 1000,
    waitMedianMicros: median(waits) * 1000,
    betweenMicros: median(between) * 1000,
    criticalExcessMicros: us(critical),
    stallsPerToken: stalls / n,
    lateCount: late.map((c) => c / n),
    bestMicros: best.map((b) => {
      const sum = { attention: 0, ffn: 0, tail: 0 };
      b.forEach((m, j) => (sum[kind(j)] += m * 1000));
      return sum;
    }),
    excessMicros: excess.map(us),
    checkpointMicros: checkpoint.map(us),
    commitMicros: commit.map(us),
  };
}

interface Side {
  readonly name: string;
  readonly ranks: number;
  /** Decodes with session.decode (the ranks run the steps back to back), else one session.step per token. */
  readonly run: boolean;
  /**
   * A second one-rank session decoding at the same time as `session` (no exchange between them): the
   * side's tokens/s is both sessions' tokens together, the two cores' own scaling with no synchronisation
   * (the ceiling for two ranks of one model on this machine).
   */
  readonly pair?: PartitionedSession;
  session: PartitionedSession;
  micros: number;
  steps: number;
  ids: number[];
}

interface Row {
  readonly model: string;
  readonly side: string;
  readonly ranks: number;
  readonly tokensPerSecond: number;
  readonly msPerToken: number;
  readonly forwardMsPerToken: number;
  /**
   * Coordinator-side ms per step from issuing it to seeing its final decision, minus the ranks' mean time in
   * their forward passes (exchanges included): the hand-offs (waking the ranks, the rounds, waking the
   * coordinator) that no compute overlaps.
   */
  readonly handoffMsPerToken: number;
  readonly agreementMicros: number;
  readonly agreementsPerToken: number;
  readonly exchangesPerToken: number;
  readonly exchangeMicros: number;
  /** Which host kernels the ranks ran: WebAssembly SIMD, the scalar twins, or a mix. */
  readonly kernels: string;
  /** Per rank: compute ms/token, µs/token inside exchanges, futex sleeps/token in exchanges, µs/token waiting for decisions. */
  readonly perRank: readonly { readonly computeMs: number; readonly exchangeMicros: number; readonly sleeps: number; readonly decisionMicros: readonly number[] }[];
  /** Two-rank sides: where the step's time goes, from the exchange trace. */
  readonly breakdown: Breakdown | undefined;
}

function kernelsOf(counters: readonly { wasmDispatches: number; scalarDispatches: number }[]): string {
  const wasm = counters.reduce((a, c) => a + c.wasmDispatches, 0);
  const scalar = counters.reduce((a, c) => a + c.scalarDispatches, 0);
  return scalar === 0 ? 'wasm-simd' : wasm === 0 ? 'scalar twins' : `mixed (${wasm} wasm / ${scalar} scalar dispatches)`;
}

async function measure(model: string, weights: DenseWeights): Promise<{ rows: Row[]; speedup: number; sameIds: boolean }> {
  const one: ArchitecturePartition = { kind: 'pipeline', ranks: [{ start: 0, end: weights.config.layers }] };
  const two = evenTensorPartition(weights.config, 2);
  const make = (partition: ArchitecturePartition, spinMicros?: number, livenessMicros?: number, overlapCheckpoint?: boolean) =>
    PartitionedSession.create(weights, partition, {
      maxSeq: MAX_SEQ,
      maxBatch: PROMPT_TOKENS,
      identity: model,
      spawn: defaultRankSpawner(),
      traceSteps: TRACE_STEPS,
      ...(spinMicros === undefined ? {} : { spinMicros }),
      ...(livenessMicros === undefined ? {} : { livenessMicros }),
      ...(overlapCheckpoint === undefined ? {} : { overlapCheckpoint }),
    });
  // The two-rank side with the default spin bound comes first after one rank (the headline ratio); the
  // others vary only how long ranks poll before sleeping, in the same interleaved rounds.
  const sides: Side[] = [
    { name: '1 host rank', ranks: 1, run: true, session: await make(one), micros: 0, steps: 0, ids: [] },
    { name: '2 host ranks (tensor)', ranks: 2, run: true, session: await make(two), micros: 0, steps: 0, ids: [] },
    // Every head on both ranks, only the FFN and classifier split: one exchange per layer instead of two.
    { name: '2 ranks, attn replicated', ranks: 2, run: true, session: await make(evenTensorPartition(weights.config, 2, 'replicated')), micros: 0, steps: 0, ids: [] },
    { name: '2 ranks, repl, spin 60', ranks: 2, run: true, session: await make(evenTensorPartition(weights.config, 2, 'replicated'), 60), micros: 0, steps: 0, ids: [] },
    // The default, but each rank starts its forward pass on its own OK checkpoint vote (overlapCheckpoint on).
    { name: '2 ranks, cp overlap', ranks: 2, run: true, session: await make(two, undefined, undefined, true), micros: 0, steps: 0, ids: [] },
    // A 60 µs spin bound with the liveness rule on (it needs a bound to poll past) (past its bound a rank polls while its peer shows progress).
    { name: '2 ranks, spin60+live200', ranks: 2, run: true, session: await make(two, 60, 200), micros: 0, steps: 0, ids: [] },
    ...(await Promise.all(SPIN_VARIANTS.map(async (spin) => ({ name: `2 ranks, spin ${spin} µs`, ranks: 2, run: true, session: await make(two, spin), micros: 0, steps: 0, ids: [] as number[] })))),
    // The same two sessions decoding one step() per token: the coordinator's turn-around between steps.
    { name: '1 rank, step()', ranks: 1, run: false, session: await make(one), micros: 0, steps: 0, ids: [] },
    { name: '2 ranks, step()', ranks: 2, run: false, session: await make(two), micros: 0, steps: 0, ids: [] },
    { name: '2 x 1 rank, concurrent', ranks: 1, run: true, session: await make(one), pair: await make(one), micros: 0, steps: 0, ids: [] },
  ];
  try {
    const prompt = Array.from({ length: PROMPT_TOKENS }, (_, i) => (i * 37 + 1) % weights.config.vocabSize);
    for (const s of sides) s.ids.push((await s.session.step(prompt)).argmax);
    for (const s of sides) if (s.pair !== undefined) await s.pair.step(prompt);
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of sides) {
        const t0 = performance.now();
        if (s.pair !== undefined) {
          const last = s.ids[s.ids.length - 1]!;
          const [a] = await Promise.all([s.session.decode(last, DECODE_STEPS), s.pair.decode(last, DECODE_STEPS)]);
          s.ids.push(...a.ids);
          s.steps += DECODE_STEPS;
        } else if (s.run) s.ids.push(...(await s.session.decode(s.ids[s.ids.length - 1]!, DECODE_STEPS)).ids);
        else for (let i = 0; i < DECODE_STEPS; i++) s.ids.push((await s.session.step([s.ids[s.ids.length - 1]!])).argmax);
        s.micros += (performance.now() - t0) * 1000;
        s.steps += DECODE_STEPS;
      }
    }
    const rows: Row[] = [];
    for (const s of sides) {
      const stats = s.session.stats();
      const counters = await s.session.counters();
      const steps = stats.steps;
      // The checkpoint and complete rounds carry no compute: a rank's wait from its vote to the decision.
      const agreementMicros = counters.reduce((a, c) => a + c.decisionMicros[0]! + c.decisionMicros[2]!, 0) / counters.length / (2 * steps);
      const exchanges = counters.reduce((a, c) => a + c.exchanges, 0) / counters.length;
      const exchangeMicros = counters.reduce((a, c) => a + c.exchangeMicros, 0) / counters.length;
      const forwardMicros = counters.reduce((a, c) => a + c.forwardMicros, 0) / counters.length;
      rows.push({
        model,
        side: s.name,
        ranks: s.ranks,
        tokensPerSecond: s.steps / (s.micros / 1e6),
        msPerToken: s.micros / s.steps / 1000,
        forwardMsPerToken: (forwardMicros - exchangeMicros) / steps / 1000,
        handoffMsPerToken: (stats.stepMicros - forwardMicros) / steps / 1000,
        agreementMicros,
        agreementsPerToken: stats.agreements / steps,
        exchangesPerToken: exchanges / steps,
        exchangeMicros: exchanges === 0 ? 0 : exchangeMicros / exchanges,
        kernels: kernelsOf(counters),
        perRank: counters.map((c) => ({
          computeMs: (c.forwardMicros - c.exchangeMicros) / steps / 1000,
          exchangeMicros: c.exchangeMicros / steps,
          sleeps: c.exchangeSleeps / steps,
          decisionMicros: c.decisionMicros.map((m) => m / steps),
        })),
        breakdown: breakdown(s.session.exchangeTrace(), weights.config.layers),
      });
    }
    return { rows, speedup: rows[1]!.tokensPerSecond / rows[0]!.tokensPerSecond, sameIds: sides.every((s) => s.ids.join() === sides[0]!.ids.join()) };
  } finally {
    for (const s of sides) {
      s.session.dispose();
      s.pair?.dispose();
    }
  }
}

it('bench:ranks: one host rank vs two tensor ranks, with the synchronisation cost', async () => {
  execSync('npx vite build --config vite.node.config.ts --logLevel error', { stdio: 'inherit' });
  const loadBefore = os.loadavg();
  const results: { model: string; rows: Row[]; speedup: number; sameIds: boolean }[] = [];
  results.push({ model: 'random stories15M shape', ...(await measure('random stories15M shape', randomDenseWeights(STORIES15M_SHAPE, SEED))) });
  const tiny = await readGgufFixture('tiny-llama-f32.gguf');
  // BENCH_RANKS_MODELS=1: the stories15M-shaped model only (quicker comparisons on a loaded machine).
  if (tiny !== undefined && process.env.BENCH_RANKS_MODELS !== '1') results.push({ model: 'tiny-llama-f32', ...(await measure('tiny-llama-f32', await readDenseWeights(await loadModel(tiny)))) });
  const fmt = (n: number, d = 1) => n.toFixed(d);
  console.log('\nmodel                     side                    tok/s    ms/tok  compute ms/tok  agr/tok  µs/agreement  exch/tok  µs/exchange  hand-off ms/tok');
  for (const r of results.flatMap((x) => x.rows)) {
    console.log(`${r.model.padEnd(26)}${r.side.padEnd(24)}${fmt(r.tokensPerSecond).padStart(7)}${fmt(r.msPerToken, 2).padStart(10)}${fmt(r.forwardMsPerToken, 2).padStart(16)}${fmt(r.agreementsPerToken).padStart(9)}${fmt(r.agreementMicros).padStart(14)}${fmt(r.exchangesPerToken).padStart(10)}${fmt(r.exchangeMicros).padStart(13)}${fmt(r.handoffMsPerToken, 2).padStart(17)}`);
  }
  console.log('\nper rank, per token: compute ms, µs inside exchanges, futex sleeps in exchanges, µs from vote to decision (checkpoint / execute / complete)');
  for (const r of results.flatMap((x) => x.rows)) {
    r.perRank.forEach((p, i) => console.log(`${r.model.padEnd(26)}${r.side.padEnd(24)}rank ${i}${fmt(p.computeMs, 2).padStart(8)}${fmt(p.exchangeMicros).padStart(9)}${fmt(p.sleeps).padStart(7)}${p.decisionMicros.map((m) => fmt(m).padStart(8)).join('')}`));
  }
  console.log('\nbreakdown of a two-rank decode step, µs per token (exchange trace): span, ideal (slower rank\'s best per segment, summed), wait at exchanges after attention / FFN (structural part), start skew, tail skew, hand-off, stalls on the critical path (count of segments > 50 µs over best, both ranks), exchanges where rank 0 / 1 came last');
  for (const r of results.flatMap((x) => x.rows)) {
    const b = r.breakdown;
    if (b === undefined) continue;
    console.log(`${r.model.padEnd(26)}${r.side.padEnd(24)}${fmt(b.spanMicros, 0).padStart(7)}${fmt(b.idealMicros, 0).padStart(7)}${fmt(b.waitMicros.attention, 0).padStart(7)}${fmt(b.waitMicros.ffn, 0).padStart(7)} (${fmt(b.structuralWaitMicros, 0)})${fmt(b.waitMicros.start, 0).padStart(6)}${fmt(b.waitMicros.tail, 0).padStart(6)}${fmt(b.handoffMicros, 0).padStart(7)}${fmt(b.criticalExcessMicros, 0).padStart(7)} (${fmt(b.stallsPerToken)})  late ${b.lateCount.map((c) => fmt(c)).join(' / ')}`);
    console.log(`${''.padEnd(50)}per exchange (median): wait ${fmt(b.waitMedianMicros)}, hand-off ${fmt(b.handoffMedianMicros)}; between steps (complete round + coordinator; in a decode run the complete round alone) ${fmt(b.betweenMicros, 0)}`);
    b.bestMicros.forEach((m, i) => console.log(`${''.padEnd(50)}rank ${i}: best attention ${fmt(m.attention, 0)}, FFN ${fmt(m.ffn, 0)}, tail ${fmt(m.tail, 0)}; over best ${fmt(b.excessMicros[i]!, 0)}; checkpoint round ${fmt(b.checkpointMicros[i]!, 0)}, commit round ${fmt(b.commitMicros[i]!, 0)}`));
  }
  for (const r of results) {
    console.log(`${r.model}: 2 ranks / 1 rank = ${r.speedup.toFixed(2)}x (aim >= 1.6x on two cores), greedy ids ${r.sameIds ? 'identical' : 'DIFFER'}, kernels ${r.rows[0]!.kernels}`);
    for (const v of r.rows.slice(2)) console.log(`  ${v.side}: ${(v.tokensPerSecond / r.rows[0]!.tokensPerSecond).toFixed(2)}x`);
    const stepped = r.rows.filter((v) => v.side.endsWith('step()'));
    const ceiling = r.rows.find((v) => v.side.startsWith('2 x 1 rank'));
    if (ceiling !== undefined) console.log(`  two one-rank sessions at once (no exchange): ${(ceiling.tokensPerSecond / r.rows[0]!.tokensPerSecond).toFixed(2)}x tokens/s together: the machine's two-core ceiling`);
    if (stepped.length === 2) console.log(`  one step() per token: 2 ranks / 1 rank = ${(stepped[1]!.tokensPerSecond / stepped[0]!.tokensPerSecond).toFixed(2)}x; decode runs vs step(): 1 rank ${(r.rows[0]!.tokensPerSecond / stepped[0]!.tokensPerSecond).toFixed(2)}x, 2 ranks ${(r.rows[1]!.tokensPerSecond / stepped[1]!.tokensPerSecond).toFixed(2)}x`);
  }
  const machine = { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, loadAverageBefore: loadBefore, loadAverage: os.loadavg(), node: process.version };
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  console.log(`machine: ${machine.cpus} cores (${machine.cpuModel}), load average ${load(loadBefore)} before, ${load(machine.loadAverage)} after (1/5/15 min; other processes share the cores)`);
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/ranks.json', `${JSON.stringify({ bench: 'ranks', date: new Date().toISOString(), machine, promptTokens: PROMPT_TOKENS, decodeSteps: DECODE_STEPS * ROUNDS, results }, null, 2)}\n`);
});
