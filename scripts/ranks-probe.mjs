// Issue 14 diagnosis probe (not a test): what two worker_threads on this machine pay for running in lock
// step. `node scripts/ranks-probe.mjs [segmentMicros=150] [modes=solo,pair,spin,spinwait,wait,wake] [rounds=2]`
// (PROBE_KERNEL=wasm: a WebAssembly SIMD matvec instead of a JS loop; PROBE_REPS=n: n matvecs per segment
// instead of calibrating to segmentMicros, so runs compare). Each worker owns its own weights (42 matrices
// of 288 x 384 f32, 18.6 MB, streamed in turn as a stories15M-shaped tensor rank streams its shard and the
// classifier) and runs 3000 segments:
//  solo       one worker alone
//  pair       two workers at the same time, independently (no synchronisation)
//  spin       two workers, a barrier after every segment, pure polling
//  spinwait   the same barrier, polling up to 60 µs then Atomics.wait
//  wait       the same barrier, Atomics.wait at once
//  live       the same barrier, polling while the peer's progress word moved within PROBE_LIVE_WINDOW µs
//             (default 60) and no preemption of this thread was seen (a 50 µs gap between clock reads), then Atomics.wait
//  claimspin, claimwait, claimlive: one iteration is both segments' matvecs, claimed one at a time by either
//             worker through a shared counter, then the barrier of spin / wait / live (balances a slow core)
//  wake       ping-pong: one worker notifies after a segment, the other sleeps in Atomics.wait: notify->wake
// Reported: median / mean µs per segment of compute (excluding the barrier) and per iteration, the barrier
// time, and for `wake` the notify -> return-from-wait latency and the segment time right after a wake.
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import os from 'node:os';

const DIM = 288;
/**
 * The WebAssembly SIMD matvec y[r] = sum_k w[r*k + i] x[i] (f32x4 mul + add, lanes summed at the end), built with
 * wabt (node_modules/wabt) from:
 * (module
 *   (memory (export "mem") 512)
 *   (func (export "mv") (param $w i32) (param $x i32) (param $y i32) (param $rows i32) (param $k i32)
 *     (local $r i32) (local $i i32) (local $acc v128) (local $wp i32)
 *     (local.set $wp (local.get $w))
 *     (block $done (loop $rl
 *       (br_if $done (i32.ge_u (local.get $r) (local.get $rows)))
 *       (local.set $acc (v128.const f32x4 0 0 0 0))
 *       (local.set $i (i32.const 0))
 *       (block $kd (loop $kl
 *         (br_if $kd (i32.ge_u (local.get $i) (local.get $k)))
 *         (local.set $acc (f32x4.add (local.get $acc)
 *           (f32x4.mul (v128.load (i32.add (local.get $wp) (i32.shl (local.get $i) (i32.const 2))))
 *                      (v128.load (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 2)))))))
 *         (local.set $i (i32.add (local.get $i) (i32.const 4)))
 *         (br $kl)))
 *       (f32.store (i32.add (local.get $y) (i32.shl (local.get $r) (i32.const 2)))
 *         (f32.add (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
 *                  (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))
 *       (local.set $wp (i32.add (local.get $wp) (i32.shl (local.get $k) (i32.const 2))))
 *       (local.set $r (i32.add (local.get $r) (i32.const 1)))
 *       (br $rl)))))
 */
const WASM_MATVEC = 'AGFzbQEAAAABCQFgBX9/f39/AAMCAQAFBAEAgAQHDAIDbWVtAgACbXYAAAqhAQGeAQMCfwF7AX8gACEIAkADQCAFIANPDQH9DAAAAAAAAAAAAAAAAAAAAAAhB0EAIQYCQANAIAYgBE8NASAHIAggBkECdGr9AAQAIAEgBkECdGr9AAQA/eYB/eQBIQcgBkEEaiEGDAALCyACIAVBAnRqIAf9HwAgB/0fAZIgB/0fAiAH/R8DkpI4AgAgCCAEQQJ0aiEIIAVBAWohBQwACwsL';
const ITERS = 3000;
/** live: how long after the peer's last progress a waiting worker keeps polling (µs). */
const LIVE_WINDOW = Number(process.env.PROBE_LIVE_WINDOW ?? 60);

if (isMainThread) {
  const segMicros = Number(process.argv[2] ?? 150);
  const modes = (process.argv[3] ?? 'solo,pair,spin,spinwait,wait,wake').split(',');
  const rounds = Number(process.argv[4] ?? 2);
  // Calibrate columns per segment: ~1 ns per multiply-add in this JS loop, measured in the worker.
  const run = (mode, workers) =>
    new Promise((resolve) => {
      const ctrl = new SharedArrayBuffer(64 * 8);
      const out = [];
      let done = 0;
      for (let w = 0; w < workers; w++) {
        const worker = new Worker(new URL(import.meta.url), { workerData: { mode, w, ctrl, segMicros } });
        worker.on('message', (m) => {
          out[w] = m;
          if (++done === workers) resolve(out);
        });
      }
    });
  const fmt = (x) => x.toFixed(1).padStart(7);
  console.log(`load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}  segment ~${segMicros} µs, ${ITERS} iterations`);
  for (let r = 0; r < rounds; r++) {
    let soloMean = 0;
    for (const mode of modes) {
      const res = await run(mode, mode === 'solo' ? 1 : 2);
      if (mode === 'solo') soloMean = res[0].iterMean;
      // Two workers doing one segment each per iteration replace one worker doing both: the speed-up of
      // splitting a step in two (lock-step modes; pair: no synchronisation at all).
      if (mode !== 'solo' && mode !== 'wake' && soloMean > 0) console.log(`${mode.padEnd(9)} two workers vs one doing both segments (means): ${((2 * soloMean) / Math.max(res[0].iterMean, res[1].iterMean)).toFixed(2)}x`);
      for (const m of res) {
        console.log(
          `${mode.padEnd(9)} w${m.w}  seg med ${fmt(m.segMed)} mean ${fmt(m.segMean)}  iter med ${fmt(m.iterMed)} mean ${fmt(m.iterMean)}  barrier med ${fmt(m.barMed)} mean ${fmt(m.barMean)}  sleeps ${m.sleeps}` +
            (m.wakeMed !== undefined ? `  wake med ${fmt(m.wakeMed)} p90 ${fmt(m.wakeP90)} segAfterWake med ${fmt(m.segAfterWake)}` : ''),
        );
      }
    }
  }
} else {
  const { mode, w, ctrl, segMicros } = workerData;
  const c = new Int32Array(ctrl);
  const times = new Float64Array(ctrl, 256);
  // Weights: 6 "layers" x 7 matrices of 288 x 384 f32 (~3 MB per layer): one segment streams some of them.
  const COLS = 384;
  const mats = Array.from({ length: 42 }, (_, i) => {
    const a = new Float32Array(DIM * COLS);
    for (let j = 0; j < a.length; j++) a[j] = ((j * 2654435761 + i) % 1000) / 1000 - 0.5;
    return a;
  });
  const x = new Float32Array(DIM).fill(0.01);
  const y = new Float32Array(COLS);
  let mi = 0;
  // PROBE_KERNEL=wasm: the same matvec as a WebAssembly SIMD loop (f32x4 mul + add) over the same sizes,
  // the weights in the module's memory (42 x 288 x 384 f32 = 18.6 MB).
  let matvec = (a) => {
    for (let r = 0; r < COLS; r++) {
      let s = 0;
      const o = r * DIM;
      for (let k = 0; k < DIM; k++) s += a[o + k] * x[k];
      y[r] = s;
    }
  };
  if (process.env.PROBE_KERNEL === 'wasm') {
    const { instance } = await WebAssembly.instantiate(Buffer.from(WASM_MATVEC, 'base64'));
    const mem = instance.exports.mem;
    mem.grow(300);
    const f32 = new Float32Array(mem.buffer);
    const xAt = 0;
    const yAt = 4096;
    f32.fill(0.01, 0, DIM);
    const offs = mats.map((m, i) => {
      const at = 8192 + i * DIM * COLS * 4;
      f32.set(m, at / 4);
      return at;
    });
    const byMat = new Map(mats.map((m, i) => [m, offs[i]]));
    const mv = instance.exports.mv;
    matvec = (a) => mv(byMat.get(a), xAt, yAt, COLS, DIM);
  }
  // Calibrate: how many matvecs make ~segMicros.
  for (let i = 0; i < 200; i++) matvec(mats[i % 42]);
  const t0 = performance.now();
  for (let i = 0; i < 200; i++) matvec(mats[i % 42]);
  const per = ((performance.now() - t0) * 1000) / 200;
  // PROBE_REPS fixes the matvecs per segment (comparable across runs); else calibrated to segMicros here.
  const reps = process.env.PROBE_REPS !== undefined ? Number(process.env.PROBE_REPS) : Math.max(1, Math.round(segMicros / per));
  if (w === 0 && mode === 'solo') console.error(`one matvec ${per.toFixed(1)} µs, ${reps} per segment`);
  // Progress words (c[8 + w]): bumped before every matvec, as a rank bumps RANK_WORD.PROGRESS per dispatch.
  const segment = () => {
    for (let i = 0; i < reps; i++) {
      Atomics.add(c, 8 + w, 1);
      matvec(mats[mi]);
      mi = (mi + 1) % 42;
    }
  };
  const seg = [];
  const iter = [];
  const bar = [];
  const wake = [];
  const afterWake = [];
  let sleeps = 0;
  // Barrier: generation counter at c[0], arrivals at c[1]. Two parties.
  let gen = 0;
  /** claim modes: the counter the barrier's last arriver zeroes (that of two iterations ahead). */
  let resetWord = -1;
  const barrier = (how) => {
    const g = gen;
    if (Atomics.add(c, 1, 1) === 1) {
      if (resetWord >= 0) Atomics.store(c, resetWord, 0);
      Atomics.store(c, 1, 0);
      Atomics.store(c, 0, g + 1);
      if (how !== 'spin') Atomics.notify(c, 0);
      gen = g + 1;
      return;
    }
    if (how === 'live') {
      // Poll while the peer's progress word moved within LIVE_WINDOW µs; a gap over 50 µs between two clock
      // reads (this thread was preempted) ends the poll; then sleep.
      let t = performance.now();
      let seen = Atomics.load(c, 8 + (1 - w));
      let moved = t;
      let n = 0;
      while (Atomics.load(c, 0) === g) {
        if (++n % 64 !== 0) continue;
        const now = performance.now();
        const p = Atomics.load(c, 8 + (1 - w));
        if (p !== seen) {
          seen = p;
          moved = now;
        }
        if ((now - t) * 1000 > 50 || (now - moved) * 1000 > LIVE_WINDOW) {
          while (Atomics.load(c, 0) === g) {
            sleeps++;
            Atomics.wait(c, 0, g, 50);
          }
          break;
        }
        t = now;
      }
      gen = g + 1;
      return;
    }
    const bound = how === 'spin' ? Infinity : how === 'spinwait' ? 0.06 : 0;
    const ts = performance.now();
    let n = 0;
    while (Atomics.load(c, 0) === g) {
      if (++n % 64 === 0 && performance.now() - ts > bound) {
        sleeps++;
        Atomics.wait(c, 0, g, 50);
      }
      if (bound === 0) {
        if (Atomics.load(c, 0) !== g) break;
        sleeps++;
        Atomics.wait(c, 0, g, 50);
      }
    }
    gen = g + 1;
  };
  // Start together.
  Atomics.add(c, 2, 1);
  while (Atomics.load(c, 2) < (mode === 'solo' ? 1 : 2));
  if (mode === 'wake') {
    // w0 computes a segment then notifies with its time; w1 sleeps, measures wake latency, computes a segment, notifies back.
    for (let i = 0; i < ITERS / 2; i++) {
      const mine = w === 0 ? 2 * i : 2 * i + 1;
      // wait for turn `mine` at c[4]
      for (;;) {
        const v = Atomics.load(c, 4);
        if (v === mine) break;
        if (Atomics.wait(c, 4, v, 50) === 'ok') sleeps++;
      }
      const tw = performance.timeOrigin + performance.now();
      if (i > 0 || w === 1) wake.push((tw - times[0]) * 1000);
      const s0 = performance.now();
      segment();
      afterWake.push((performance.now() - s0) * 1000);
      times[0] = performance.timeOrigin + performance.now();
      Atomics.store(c, 4, mine + 1);
      Atomics.notify(c, 4);
    }
  } else {
    for (let i = 0; i < ITERS; i++) {
      const a = performance.now();
      if (mode.startsWith('claim')) {
        // Both segments' matvecs (2 x reps) claimed one at a time through a counter (c[16 + i % 4]; the
        // barrier's last arriver zeroes the one of iteration i + 2), then the barrier: a slower core takes
        // fewer, as the shared classifier's chunks are claimed.
        const k = 16 + (i % 4);
        while (Atomics.add(c, k, 1) < 2 * reps) {
          Atomics.add(c, 8 + w, 1);
          matvec(mats[mi]);
          mi = (mi + 1) % 42;
        }
      } else segment();
      const b = performance.now();
      if (mode.startsWith('claim')) {
        resetWord = 16 + ((i + 2) % 4);
        barrier(mode.slice(5));
      } else if (mode === 'spin' || mode === 'spinwait' || mode === 'wait' || mode === 'live') barrier(mode);
      const d = performance.now();
      seg.push((b - a) * 1000);
      bar.push((d - b) * 1000);
      iter.push((d - a) * 1000);
    }
  }
  const med = (xs) => (xs.length ? [...xs].sort((p, q) => p - q)[xs.length >> 1] : 0);
  const p90 = (xs) => (xs.length ? [...xs].sort((p, q) => p - q)[Math.floor(xs.length * 0.9)] : 0);
  const mean = (xs) => (xs.length ? xs.reduce((p, q) => p + q, 0) / xs.length : 0);
  const s = mode === 'wake' ? afterWake : seg;
  parentPort.postMessage({
    w,
    segMed: med(s),
    segMean: mean(s),
    iterMed: med(iter),
    iterMean: mean(iter),
    barMed: med(bar),
    barMean: mean(bar),
    sleeps,
    ...(mode === 'wake' ? { wakeMed: med(wake), wakeP90: p90(wake), segAfterWake: med(afterWake) } : {}),
  });
}
