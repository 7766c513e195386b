// Data-plane benchmarks, side by side in one Chromium run (issue 4, point 6). Ratios only; nothing is
// asserted about time. Writes bench/results/dataplane.json and prints a table (bench/report.ts: every row
// is labelled `host CPU`; the data plane uses no GPU adapter).
//   1. stream throughput worker -> worker, 64 KiB writes, 1 MiB of shared memory each:
//        tenon descriptors (writeSync/readSync) vs ringbuf.js 0.4.0 vs a plain SAB slot memcpy
//   2. 64 MiB blob read in a worker: tenon descriptor (readSync) vs a raw OPFS sync access handle
//   3. bytes allocated per call in steady state, counted on the page (the only context with a heap counter)
import { it } from 'vitest';
import { commands } from 'vitest/browser';
import { transfer, wrap } from 'comlink';
import type { Remote } from 'comlink';
import { RingBuffer } from 'ringbuf.js';
import { connectSession, createDataPlane, readExact, writeBlob } from '../src/index.js';
import { RingReader, RingWriter, createRing } from '../src/dataplane/ring.js';
import { formatPairTable, pairResult } from './report.js';
import type { PairResult } from './report.js';
import type { BenchWorker } from './dataplane.worker.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const CHUNK = 64 * KiB;
const RING = MiB;
const STREAM_TOTAL = 256 * MiB;
const BLOB = 64 * MiB;
const ROUNDS = 7;

interface Candidate {
  readonly name: string;
  /** Prepares a round (untimed) and returns the timed part. */
  prepare(): Promise<() => Promise<number>>;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Runs baseline and candidate alternately; same shape as bench/report.ts comparePair. */
async function compare(name: string, baseline: Candidate, candidate: Candidate): Promise<PairResult> {
  const t: Record<string, number[]> = { b: [], c: [] };
  for (let r = -1; r < ROUNDS; r++) {
    for (const [key, c] of (r % 2 === 0 ? [['b', baseline], ['c', candidate]] : [['c', candidate], ['b', baseline]]) as Array<[string, Candidate]>) {
      const run = await c.prepare();
      const t0 = performance.now();
      const n = await run();
      const dt = performance.now() - t0;
      if (!(n > 0)) throw new Error(`${c.name} moved ${n} bytes`);
      if (r >= 0) t[key]!.push(dt);
    }
  }
  const bm = median(t.b!);
  const cm = median(t.c!);
  return pairResult({ case: name, baseline: baseline.name, candidate: candidate.name, baselineMedianMs: bm, candidateMedianMs: cm, rounds: ROUNDS });
}

/** Bytes the page heap grows per call of `op` (after warm-up and a full GC; no GC can run in between). */
async function allocatedPerCall(op: () => unknown, calls: number): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc!;
  const heap = (): number => (performance as unknown as { memory: { usedJSHeapSize: number } }).memory.usedJSHeapSize;
  for (let i = 0; i < 200; i++) await op();
  const samples: number[] = [];
  for (let k = 0; k < 5; k++) {
    gc();
    gc();
    const h0 = heap();
    for (let i = 0; i < calls; i++) await op();
    const grown = heap() - h0;
    if (grown >= 0) samples.push(grown / calls);
  }
  return Math.round(median(samples) * 10) / 10;
}

it('data plane: streams, blobs and allocations against their baselines', async () => {
  const dp = await createDataPlane({ name: `bench-${Date.now().toString(36)}` });
  const access = { runId: 'bench', read: ['/'], write: ['/'] };
  const spawn = async (): Promise<Remote<BenchWorker>> => {
    const w = new Worker(new URL('./dataplane.worker.ts', import.meta.url), { type: 'module' });
    const api = wrap<BenchWorker>(w);
    const port = dp.createSessionPort(access);
    await api.connect(transfer(port, [port]));
    return api;
  };
  const [A, B] = await Promise.all([spawn(), spawn()]);
  const s = await connectSession(dp.createSessionPort(access));
  const results: PairResult[] = [];

  // 1. stream throughput
  let pairNo = 0;
  const tenon: Candidate = {
    name: 'tenon stream descriptors',
    async prepare() {
      const path = `/bench/s${pairNo++}`;
      await s.ensureStream(path, { capacity: RING });
      const [hw, hr] = await Promise.all([A.open(path, 'write'), B.open(path, 'read')]);
      return async () => {
        const [, got] = await Promise.all([A.tenonProduce(hw, STREAM_TOTAL, CHUNK).then(() => A.close(hw)), B.tenonConsume(hr, CHUNK)]);
        await B.close(hr);
        return got;
      };
    },
  };
  const ringbuf: Candidate = {
    name: 'ringbuf.js 0.4.0',
    async prepare() {
      const sab = RingBuffer.getStorageForCapacity(RING, Uint8Array);
      const futex = new SharedArrayBuffer(8);
      return async () => (await Promise.all([A.ringbufProduce(sab, futex, STREAM_TOTAL, CHUNK), B.ringbufConsume(sab, futex, STREAM_TOTAL, CHUNK)]))[1];
    },
  };
  const slots: Candidate = {
    name: 'plain SAB slot memcpy',
    async prepare() {
      const sab = new SharedArrayBuffer(16 + RING);
      return async () => (await Promise.all([A.slotsProduce(sab, STREAM_TOTAL, CHUNK, RING / CHUNK), B.slotsConsume(sab, STREAM_TOTAL, CHUNK, RING / CHUNK)]))[1];
    },
  };
  results.push(await compare('stream 256 MiB, 64 KiB writes, worker->worker', ringbuf, tenon));
  results.push(await compare('stream 256 MiB, 64 KiB writes, worker->worker', slots, tenon));

  // 2. blob read
  const raw = `tenon-bench-raw-${dp.name}`;
  const hb = await A.open('/bench/blob', 'write', BLOB);
  await A.tenonFill(hb, MiB);
  await A.close(hb);
  await A.rawWrite(raw, BLOB, MiB);
  for (const chunk of [MiB, CHUNK]) {
    results.push(
      await compare(
        `blob 64 MiB read, ${chunk / KiB} KiB reads, in a worker`,
        { name: 'raw OPFS sync access handle', prepare: async () => () => B.rawRead(raw, chunk) },
        { name: 'tenon blob descriptor (open+read+close)', prepare: async () => () => B.tenonReadBlob('/bench/blob', chunk) },
      ),
    );
  }
  await (await navigator.storage.getDirectory()).removeEntry(raw);

  // 3. allocations per call, steady state
  await s.ensureStream('/bench/alloc', { capacity: RING });
  const [r, w] = await Promise.all([s.open('/bench/alloc'), s.open('/bench/alloc', { access: 'write' })]);
  const src = new Uint8Array(CHUNK).fill(1);
  const dst = new Uint8Array(CHUNK);
  const ring = createRing(RING, 1, 1);
  const rw = new RingWriter(ring, 1, 1);
  const rr = new RingReader(ring, 1, 1);
  const bw = await writeBlob(s, '/bench/alloc-blob', 16 * MiB);
  await bw.write(new Uint8Array(16 * MiB));
  await bw.seal();
  let blob = await s.open('/bench/alloc-blob');
  const allocations = {
    'ring primitive write+read (the worker readSync/writeSync hot path), per call': (await allocatedPerCall(() => (rw.tryWrite(src, 0, CHUNK), rr.tryRead(dst, 0, CHUNK)), 2000)) / 2,
    'async stream write()+read() on the page, per call': (await allocatedPerCall(async () => (await w.write(src), await r.read(dst)), 2000)) / 2,
    'async blob read() on the page (File API fallback), per call': await allocatedPerCall(async () => {
      if ((await blob.read(dst)) === 0) {
        await blob.close();
        blob = await s.open('/bench/alloc-blob');
        await readExact(blob, dst);
      }
    }, 1000),
  };
  await blob.close();
  await w.close();
  await r.close();

  const throughput = (res: PairResult, ms: number): string => `${((STREAM_TOTAL / (ms / 1000)) / 1e9).toFixed(2)} GB/s`;
  console.log(`\n${formatPairTable(`data plane benchmark (Chromium ${navigator.userAgent.match(/Chrome\/([\d.]+)/)?.[1]}, ${navigator.hardwareConcurrency} cores)`, results).join('\n')}`);
  console.log(`stream throughput: tenon ${throughput(results[0]!, results[0]!.candidateMedianMs)}, ringbuf.js ${throughput(results[0]!, results[0]!.baselineMedianMs)}, slot memcpy ${throughput(results[1]!, results[1]!.baselineMedianMs)}`);
  for (const [k, v] of Object.entries(allocations)) console.log(`allocated bytes ${k}: ${v}`);

  const record = {
    benchmark: 'dataplane',
    date: new Date().toISOString(),
    machine: { cores: navigator.hardwareConcurrency, userAgent: navigator.userAgent },
    note: 'ratio = tenon median time / baseline median time, measured side by side in one Chromium run; allocations = page heap growth per call after warm-up (no GC in the window)',
    parameters: { chunk: CHUNK, ringBytes: RING, streamBytes: STREAM_TOTAL, blobBytes: BLOB, rounds: ROUNDS },
    streamThroughputGBps: {
      tenon: STREAM_TOTAL / (results[0]!.candidateMedianMs / 1000) / 1e9,
      ringbufjs: STREAM_TOTAL / (results[0]!.baselineMedianMs / 1000) / 1e9,
      slotMemcpy: STREAM_TOTAL / (results[1]!.baselineMedianMs / 1000) / 1e9,
    },
    allocatedBytesPerCall: allocations,
    results,
  };
  await commands.writeFile('bench/results/dataplane.json', `${JSON.stringify(record, null, 2)}\n`);
  await s.close();
  await dp.close();
});
