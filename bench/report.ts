// Shared benchmark plumbing: median-of-rounds timing with interleaved candidates, a printed table of
// ratios against the baseline measured in the same run, and a JSON record under bench/results/.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';

export interface Candidate {
  readonly name: string;
  /** Runs one round; returns a checksum so the work cannot be optimized away. */
  run(): number | Promise<number>;
}

export interface PairResult {
  readonly case: string;
  readonly baseline: string;
  readonly candidate: string;
  readonly baselineMedianMs: number;
  readonly candidateMedianMs: number;
  /** candidate / baseline time: 1.0 means equal speed, above 1 means slower than the baseline. */
  readonly ratio: number;
  readonly rounds: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/** Times baseline and candidate alternately (so drift hits both) and checks they compute the same. */
export async function comparePair(caseName: string, baseline: Candidate, candidate: Candidate, rounds: number): Promise<PairResult> {
  const tb: number[] = [];
  const tc: number[] = [];
  for (let warm = 0; warm < 3; warm++) {
    await baseline.run();
    await candidate.run();
  }
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? [baseline, candidate] : [candidate, baseline];
    for (const c of order) {
      const t0 = performance.now();
      const checksum = await c.run();
      const dt = performance.now() - t0;
      (c === baseline ? tb : tc).push(dt);
      if (!Number.isFinite(checksum)) throw new Error(`${c.name} produced ${checksum}`);
    }
  }
  const [b, c] = [await baseline.run(), await candidate.run()];
  if (b !== c) throw new Error(`${caseName}: ${baseline.name} and ${candidate.name} disagree (${b} vs ${c})`);
  const bm = median(tb);
  const cm = median(tc);
  return { case: caseName, baseline: baseline.name, candidate: candidate.name, baselineMedianMs: bm, candidateMedianMs: cm, ratio: cm / bm, rounds };
}

export function printTable(title: string, results: readonly PairResult[]): void {
  console.log(`\n${title}`);
  console.log(`${'case'.padEnd(36)}${'baseline ms'.padStart(13)}${'tenon ms'.padStart(11)}${'ratio'.padStart(8)}`);
  for (const r of results) {
    console.log(
      `${r.case.padEnd(36)}${r.baselineMedianMs.toFixed(3).padStart(13)}${r.candidateMedianMs.toFixed(3).padStart(11)}${r.ratio.toFixed(2).padStart(8)}`,
    );
  }
}

/** The machine a Node benchmark ran on; `loadAtStart` is os.loadavg() taken before the first case. */
export function machineInfo(loadAtStart?: number[]): Record<string, unknown> {
  return {
    cpus: os.cpus().length,
    model: os.cpus()[0]?.model,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: process.platform,
    // Other processes share these cores: a load above the core count makes every figure noisier.
    ...(loadAtStart === undefined ? {} : { loadAverage: { atStart: loadAtStart, atEnd: os.loadavg() } }),
  };
}

export function writeResults(name: string, results: readonly PairResult[], extra: Record<string, unknown> = {}): string {
  mkdirSync('bench/results', { recursive: true });
  const file = `bench/results/${name}.json`;
  const record = {
    benchmark: name,
    date: new Date().toISOString(),
    machine: machineInfo(),
    note: 'ratio = tenon median time / baseline median time, measured side by side in one process',
    ...extra,
    results,
  };
  writeFileSync(file, JSON.stringify(record, null, 2) + '\n');
  return file;
}
