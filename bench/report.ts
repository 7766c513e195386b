// Shared benchmark plumbing, used by every benchmark (storage, submit, dataplane, session) in Node and in
// the page: median-of-rounds timing with interleaved candidates, a printed table of ratios against the
// baseline measured in the same run, a JSON record under bench/results/, and the label that says what
// hardware a figure was measured on. A WebGPU adapter that is a software rasterizer (SwiftShader here:
// `isFallbackAdapter`, or an architecture/description naming one) emulates a GPU on the CPU; figures and
// ratios measured on it are labelled `software adapter` in the JSON (the adapter record's `software: true`
// and every row's `softwareAdapter`/`measuredOn`) and in the printed tables, and are never GPU performance.
// No top-level node:* import: the page imports this file too; the Node-only helpers (machineInfo,
// writeResults) load their builtins when called.

export interface Candidate {
  readonly name: string;
  /** Runs one round; returns a checksum so the work cannot be optimized away. */
  run(): number | Promise<number>;
}

/** Where one side of a measurement ran: code on the host CPU, or a WebGPU adapter. */
export type Where = 'host' | AdapterRecord;

/** The hardware label every row carries. */
export interface HardwareLabel {
  /** 'host CPU', 'GPU (<architecture>)', 'software adapter (<architecture>)', or two of them joined by ' vs '. */
  readonly measuredOn: string;
  /** True when any side ran on a software adapter: the figure is not GPU performance. */
  readonly softwareAdapter: boolean;
}

export interface PairResult extends HardwareLabel {
  readonly case: string;
  readonly baseline: string;
  readonly candidate: string;
  readonly baselineMedianMs: number;
  readonly candidateMedianMs: number;
  /** candidate / baseline time: 1.0 means equal speed, above 1 means slower than the baseline. */
  readonly ratio: number;
  readonly rounds: number;
}

/** A WebGPU adapter as recorded with the results. */
export interface AdapterRecord {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
  readonly isFallbackAdapter: boolean | undefined;
  /** A software rasterizer (isSoftwareAdapter): what was measured on it is an emulation, not a GPU. */
  readonly software: boolean;
  readonly limits?: { readonly maxBufferSize: number; readonly maxComputeInvocationsPerWorkgroup: number; readonly maxStorageBufferBindingSize: number };
}

/** Software rasterizers that present themselves as WebGPU adapters (names as adapters report them). */
const SOFTWARE_ADAPTER_NAMES = ['swiftshader', 'llvmpipe', 'lavapipe', 'warp'] as const;

/** The label of a software adapter in tables and rows. */
export const SOFTWARE_ADAPTER = 'software adapter';

/** Printed under a table that has software-adapter rows, and recorded in the JSON of such a run. */
export const SOFTWARE_ADAPTER_NOTE =
  'rows measured on a software adapter (SwiftShader: a GPU emulated on the CPU) describe that emulation only: they are not GPU performance, and GPU ratios can differ in either direction (npm run test:hardware measures on a real GPU)';

type AdapterInfoLike = Pick<GPUAdapterInfo, 'vendor' | 'architecture' | 'device' | 'description'> & { readonly isFallbackAdapter?: boolean };

/** True for a fallback adapter, or one whose architecture, device or description names a software rasterizer. */
export function isSoftwareAdapter(info: AdapterInfoLike): boolean {
  if (info.isFallbackAdapter === true) return true;
  const names = `${info.architecture} ${info.device} ${info.description}`.toLowerCase();
  return SOFTWARE_ADAPTER_NAMES.some((n) => names.includes(n));
}

/** The adapter record of a provider's adapter (and its device's limits, when given). */
export function describeAdapter(info: GPUAdapterInfo, device?: GPUDevice): AdapterRecord {
  const like = info as AdapterInfoLike;
  return {
    vendor: info.vendor,
    architecture: info.architecture,
    device: info.device,
    description: info.description,
    isFallbackAdapter: like.isFallbackAdapter,
    software: isSoftwareAdapter(like),
    ...(device === undefined
      ? {}
      : {
          limits: {
            maxBufferSize: device.limits.maxBufferSize,
            maxComputeInvocationsPerWorkgroup: device.limits.maxComputeInvocationsPerWorkgroup,
            maxStorageBufferBindingSize: device.limits.maxStorageBufferBindingSize,
          },
        }),
  };
}

function whereText(w: Where): string {
  if (w === 'host') return 'host CPU';
  const arch = w.architecture === '' ? w.vendor : w.architecture;
  return `${w.software ? SOFTWARE_ADAPTER : 'GPU'}${arch === '' ? '' : ` (${arch})`}`;
}

/** The label of a row whose sides ran on `sides` (one entry per side; equal sides are named once). */
export function hardwareLabel(...sides: readonly Where[]): HardwareLabel {
  const texts = [...new Set(sides.map(whereText))];
  return { measuredOn: texts.join(' vs '), softwareAdapter: sides.some((s) => s !== 'host' && s.software) };
}

/** Rows with their hardware label: `whereOf` names where each side of a row ran. */
export function labelRows<T extends object>(rows: readonly T[], whereOf: (row: T) => readonly Where[]): (T & HardwareLabel)[] {
  return rows.map((r) => ({ ...r, ...hardwareLabel(...whereOf(r)) }));
}

/** The host-CPU label (storage, host-provider and wasm rows, the data plane). */
export const HOST_CPU: HardwareLabel = hardwareLabel('host');

/** Column text for a row: its hardware, upper-cased where it is a software adapter so no one misreads it. */
export function hardwareColumn(label: HardwareLabel): string {
  return label.softwareAdapter ? label.measuredOn.replace(SOFTWARE_ADAPTER, SOFTWARE_ADAPTER.toUpperCase()) : label.measuredOn;
}

/** The lines to print under a table: the software-adapter note when any row needs it, else nothing. */
export function softwareNotice(rows: readonly Partial<HardwareLabel>[]): string[] {
  return rows.some((r) => r.softwareAdapter === true) ? [`note: ${SOFTWARE_ADAPTER_NOTE}`] : [];
}

/** JSON fields for a results file: the note when any row was measured on a software adapter. */
export function softwareFields(rows: readonly Partial<HardwareLabel>[]): { softwareAdapterNote?: string } {
  return rows.some((r) => r.softwareAdapter === true) ? { softwareAdapterNote: SOFTWARE_ADAPTER_NOTE } : {};
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/**
 * Times baseline and candidate alternately (so drift hits both) and checks they compute the same.
 * `where` labels the row (default: both on the host CPU).
 */
export async function comparePair(caseName: string, baseline: Candidate, candidate: Candidate, rounds: number, where: HardwareLabel = HOST_CPU): Promise<PairResult> {
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
  return { case: caseName, baseline: baseline.name, candidate: candidate.name, baselineMedianMs: bm, candidateMedianMs: cm, ratio: cm / bm, rounds, ...where };
}

/** A PairResult from medians measured elsewhere (the data plane's own rounds), with its label. */
export function pairResult(input: Omit<PairResult, 'ratio' | keyof HardwareLabel>, where: HardwareLabel = HOST_CPU): PairResult {
  return { ...input, ratio: input.candidateMedianMs / input.baselineMedianMs, ...where };
}

/** The ratio table of PairResults, as lines, with the hardware column and the software-adapter note. */
export function formatPairTable(title: string, results: readonly PairResult[]): string[] {
  const lines = [title, `${'case'.padEnd(48)}${'baseline'.padEnd(32)}${'baseline ms'.padStart(13)}${'tenon ms'.padStart(11)}${'ratio'.padStart(8)}  measured on`];
  for (const r of results) {
    lines.push(
      `${r.case.slice(0, 47).padEnd(48)}${r.baseline.slice(0, 31).padEnd(32)}${r.baselineMedianMs.toFixed(3).padStart(13)}${r.candidateMedianMs.toFixed(3).padStart(11)}${r.ratio.toFixed(2).padStart(8)}  ${hardwareColumn(r)}`,
    );
  }
  return [...lines, ...softwareNotice(results)];
}

export function printTable(title: string, results: readonly PairResult[]): void {
  console.log(`\n${formatPairTable(title, results).join('\n')}`);
}

/** The machine a Node benchmark ran on; `loadAtStart` is os.loadavg() taken before the first case. */
export function machineInfo(loadAtStart?: number[]): Record<string, unknown> {
  const os = process.getBuiltinModule('node:os');
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

/** Writes bench/results/<name>.json (Node): machine, note, the software-adapter note if due, rows. */
export function writeResults(name: string, results: readonly PairResult[], extra: Record<string, unknown> = {}): string {
  const fs = process.getBuiltinModule('node:fs');
  fs.mkdirSync('bench/results', { recursive: true });
  const file = `bench/results/${name}.json`;
  const record = {
    benchmark: name,
    date: new Date().toISOString(),
    machine: machineInfo(),
    note: 'ratio = tenon median time / baseline median time, measured side by side in one process',
    ...softwareFields(results),
    ...extra,
    results,
  };
  fs.writeFileSync(file, JSON.stringify(record, null, 2) + '\n');
  return file;
}
