// Side-by-side timing for the execution-layer benchmark, usable in Node and in the browser (no node:*
// imports). Candidates of one case run interleaved, their order rotating each round, so drift (JIT,
// thermal, a background GC) hits all of them; a round runs `iterations` calls and counts the mean call,
// and the case reports each candidate's median round. Nothing here asserts anything about time. Rows carry
// bench/report.ts's hardware label once the entry file knows the adapter (laneWhere in adapter.ts).
import { hardwareColumn, softwareNotice } from '../report.js';
import type { HardwareLabel } from '../report.js';

export interface Candidate {
  readonly name: string;
  /** One call of the measured work (a submission to proven completion, a matmul with readback, ...). */
  run(): Promise<void> | void;
}

export interface Timing {
  readonly name: string;
  /** Median over rounds of the mean time of one call, in ms. */
  readonly medianMs: number;
  /** Fastest round's mean call, in ms. */
  readonly minMs: number;
  /** Median of single calls, in ms: leaves out the stalls a round's mean includes. */
  readonly callMedianMs: number;
  readonly rounds: number;
  readonly iterations: number;
}

export interface TimingOptions {
  readonly rounds: number;
  /** Calls per round (the round's mean is one sample). */
  readonly iterations: number;
  /** Untimed rounds of every candidate first (pipelines, JIT, caches). */
  readonly warmupRounds: number;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Times every candidate side by side; returns timings in the candidates' order. */
export async function sideBySide(candidates: readonly Candidate[], options: TimingOptions): Promise<Timing[]> {
  const { rounds, iterations, warmupRounds } = options;
  for (let w = 0; w < warmupRounds; w++) for (const c of candidates) for (let i = 0; i < iterations; i++) await c.run();
  const samples = candidates.map(() => [] as number[]);
  const calls = candidates.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    for (let j = 0; j < candidates.length; j++) {
      const at = (j + r) % candidates.length;
      const c = candidates[at]!;
      const t0 = performance.now();
      let last = t0;
      for (let i = 0; i < iterations; i++) {
        await c.run();
        const now = performance.now();
        calls[at]!.push(now - last);
        last = now;
      }
      samples[at]!.push((last - t0) / iterations);
    }
  }
  return candidates.map((c, i) => ({
    name: c.name,
    medianMs: median(samples[i]!),
    minMs: Math.min(...samples[i]!),
    callMedianMs: median(calls[i]!),
    rounds,
    iterations,
  }));
}

/** GFLOP/s of a [m,k] x [k,n] product that took `ms`. */
export function matmulGflops(m: number, n: number, k: number, ms: number): number {
  return (2 * m * n * k) / (ms * 1e6);
}

/** What a case aims for: tenon at least `value` times the peer's speed, or at most `value` times its time. */
export type Aim = { readonly kind: 'speedup-at-least'; readonly value: number } | { readonly kind: 'time-ratio-at-most'; readonly value: number };

export interface Side {
  readonly name: string;
  readonly medianMs: number;
  readonly minMs: number;
  readonly callMedianMs: number;
  /** Present for matmul cases. */
  readonly gflops?: number;
}

/** One row of bench/results/submit.json: tenon against its peer in one lane, measured side by side. */
export interface CaseRecord extends Partial<HardwareLabel> {
  /** Acceptance point 6 item (a-d), or (e) chained submissions (issue 11). */
  readonly point: 'a' | 'b' | 'c' | 'd' | 'e';
  /** Where it ran: Chromium (WebGPU: SwiftShader here), Node with Dawn, or Node host/wasm. */
  readonly lane: 'chromium' | 'node-dawn' | 'node' | 'chromium-host';
  readonly case: string;
  /** 'headline' rows carry the aim; 'detail' rows are variants and attribution (where time goes). */
  readonly role: 'headline' | 'detail';
  readonly tenon: Side;
  readonly peer: Side;
  /** tenon median time / peer median time (below 1: tenon faster). */
  readonly timeRatio: number;
  /** The same ratio over single-call medians (without the stalls round means include). */
  readonly callMedianRatio: number;
  /** peer median time / tenon median time (above 1: tenon faster). */
  readonly speedup: number;
  readonly aim?: Aim;
  readonly meetsAim?: boolean;
  readonly rounds: number;
  readonly iterations: number;
  readonly note?: string;
}

export interface RecordInput {
  readonly point: CaseRecord['point'];
  readonly lane: CaseRecord['lane'];
  readonly case: string;
  readonly role?: CaseRecord['role'];
  readonly tenon: Timing;
  readonly peer: Timing;
  /** For matmul cases: [m, n, k]. */
  readonly flops?: readonly [m: number, n: number, k: number];
  readonly aim?: Aim;
  readonly note?: string;
}

function side(t: Timing, flops: RecordInput['flops']): Side {
  const base = { name: t.name, medianMs: t.medianMs, minMs: t.minMs, callMedianMs: t.callMedianMs };
  return flops === undefined ? base : { ...base, gflops: matmulGflops(flops[0], flops[1], flops[2], t.medianMs) };
}

export function record(input: RecordInput): CaseRecord {
  const timeRatio = input.tenon.medianMs / input.peer.medianMs;
  const speedup = 1 / timeRatio;
  const aim = input.aim;
  const meetsAim = aim === undefined ? undefined : aim.kind === 'speedup-at-least' ? speedup >= aim.value : timeRatio <= aim.value;
  return {
    point: input.point,
    lane: input.lane,
    case: input.case,
    role: input.role ?? (aim === undefined ? 'detail' : 'headline'),
    tenon: side(input.tenon, input.flops),
    peer: side(input.peer, input.flops),
    timeRatio,
    callMedianRatio: input.tenon.callMedianMs / input.peer.callMedianMs,
    speedup,
    ...(aim === undefined ? {} : { aim, meetsAim }),
    rounds: input.tenon.rounds,
    iterations: input.tenon.iterations,
    ...(input.note === undefined ? {} : { note: input.note }),
  };
}

const fmtMs = (ms: number): string => (ms >= 100 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(3) : ms.toFixed(4));

function aimText(r: CaseRecord): string {
  if (r.aim === undefined) return '';
  const want = r.aim.kind === 'speedup-at-least' ? `>=${r.aim.value}x speed` : `<=${r.aim.value}x time`;
  return `${want} ${r.meetsAim ? 'met' : 'MISSED'}`;
}

/** The ratio table, as lines (printed by both lanes). */
export function formatTable(title: string, rows: readonly CaseRecord[]): string {
  const lines = [title];
  const header = `${'pt'.padEnd(3)}${'lane'.padEnd(14)}${'case'.padEnd(62)}${'peer ms'.padStart(11)}${'tenon ms'.padStart(11)}${'t/peer'.padStart(8)}${'p50 t/peer'.padStart(11)}${'GF/s peer'.padStart(11)}${'GF/s tenon'.padStart(11)}  ${'measured on'.padEnd(32)}aim`;
  lines.push(header, '-'.repeat(header.length + 16));
  for (const r of rows) {
    const gf = (s: Side) => (s.gflops === undefined ? '' : s.gflops.toFixed(2));
    const name = `${r.role === 'detail' ? '  ' : ''}${r.case}`;
    lines.push(
      `${r.point.padEnd(3)}${r.lane.padEnd(14)}${name.slice(0, 61).padEnd(62)}${fmtMs(r.peer.medianMs).padStart(11)}${fmtMs(r.tenon.medianMs).padStart(11)}${r.timeRatio.toFixed(2).padStart(8)}${r.callMedianRatio.toFixed(2).padStart(11)}${gf(r.peer).padStart(11)}${gf(r.tenon).padStart(11)}  ${(r.measuredOn === undefined ? '' : hardwareColumn(r as HardwareLabel)).padEnd(32)}${aimText(r)}`,
    );
  }
  lines.push(...softwareNotice(rows));
  return lines.join('\n');
}
