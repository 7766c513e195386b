// Op suite: hostRopeKv (fused_rope_kv under its own identity, src/submit/ops/fused-rope-kv.ts) and its
// WebAssembly entry (src/submit/wasm/ops.ts) on a host provider, against the composition the unfused
// host list ran before it: rope's WebAssembly kernel over Q and over K (each in its own
// dispatch), then kv_write of K and V. The entry copies the rows and then runs that same rope kernel over
// q and over the new cache rows, so the two must agree bit for bit; that is what lets a one-row decode
// step on the host take the qkv row + fused_rope_kv (3 dispatches fewer per layer) with unchanged logits.
// Plan: seeded cases over both pairings, frequency factors or none, GQA groups 1..4, head sizes with and
// without a 4-element tail, 1..4 rows at positions 0..300 of a cache whose other rows hold junk, element
// offsets with canaries (run-host.ts): q and every cache row bit-identical to the composition (so the
// junk rows are untouched), and the fused dispatch counted on the WebAssembly path. The library's
// fusedRopeKv has no WebAssembly entry: on the host it runs its twin (rope's twin, which the fused list's
// one-pass op matches), counted on the scalar path.
import { describe, expect, it } from 'vitest';
import { createHostProvider, createRuntime } from '../../src/index.js';
import type { Runtime } from '../../src/index.js';
import { fusedRopeKv, kvWrite, rope } from '../../src/submit/ops/index.js';
import { hostRopeKv } from '../../src/submit/ops/fused-rope-kv.js';
import type { FusedRopeKvParams, RopeParams, RopeStyle } from '../../src/submit/ops/index.js';
import { runHostOp } from '../support/run-host.js';
import { randomF32 } from './harness.js';

const f32 = (shape: number[], data: Float32Array) => ({ dtype: 'f32' as const, shape, data });

function expectSameBits(got: Float32Array, want: Float32Array, label: string): void {
  expect(got.length, `${label}: length`).toBe(want.length);
  const a = new Uint32Array(got.buffer, got.byteOffset, got.length);
  const b = new Uint32Array(want.buffer, want.byteOffset, want.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) expect.fail(`${label}: element ${i} is ${got[i]}, composition ${want[i]}`);
}

/** rope (WebAssembly) on Q and K, then kv_write of K and V: the unfused host list's four dispatches. */
async function composition(runtime: Runtime, p: FusedRopeKvParams, qkv: Float32Array, kCache: Float32Array, vCache: Float32Array) {
  const { count, headDim } = p;
  const qDim = p.heads * headDim;
  const kvDim = p.kvHeads * headDim;
  const width = qDim + 2 * kvDim;
  const columns = (from: number, n: number): Float32Array => {
    const out = new Float32Array(count * n);
    for (let t = 0; t < count; t++) out.set(qkv.subarray(t * width + from, t * width + from + n), t * n);
    return out;
  };
  const ropeOf = (heads: number): RopeParams => ({
    count,
    heads,
    headDim,
    pos0: p.pos0,
    theta: p.theta,
    ...(p.style === undefined ? {} : { style: p.style }),
    ...(p.freqFactors === undefined ? {} : { freqFactors: p.freqFactors }),
  });
  const q = await runHostOp(runtime, rope as never, [f32([count, qDim], columns(0, qDim))], ropeOf(p.heads));
  const k = await runHostOp(runtime, rope as never, [f32([count, kvDim], columns(qDim, kvDim))], ropeOf(p.kvHeads));
  expect([q.wasm + k.wasm, q.scalar + k.scalar], 'rope ran its WebAssembly kernel').toEqual([2, 0]);
  const cache = { count, width: kvDim, maxSeq: p.maxSeq, pos0: p.pos0 };
  const kc = kCache.slice();
  const vc = vCache.slice();
  kvWrite.host(cache, [k.arrays[0] as Float32Array, kc]);
  kvWrite.host(cache, [columns(qDim + kvDim, kvDim), vc]);
  return { q: q.arrays[0] as Float32Array, kc, vc };
}

describe('fused_rope_kv WebAssembly entry', () => {
  it('[OPS-wasm-fused-rope-kv] equals rope (WebAssembly) on Q and K then kv_write bit for bit: both pairings, factors, GQA, tails, any pos0, junk rows untouched', async () => {
    const runtime = createRuntime(createHostProvider(), { hostKernels: 'wasm' });
    const styles: RopeStyle[] = ['normal', 'neox'];
    let seed = 1;
    let cases = 0;
    for (const style of styles) {
      for (const [kvHeads, group, headDim] of [[1, 1, 2], [2, 4, 6], [4, 2, 8], [3, 3, 10], [2, 2, 64], [1, 3, 34]] as const) {
        for (const [count, pos0] of [[1, 0], [1, 37], [3, 5], [4, 300]] as const) {
          seed++;
          const heads = kvHeads * group;
          const factors = seed % 3 === 0 ? Array.from(randomF32(seed + 1000, headDim / 2), (v) => 1 + Math.abs(v) * 4) : undefined;
          const maxSeq = pos0 + count + 2;
          const p: FusedRopeKvParams = { count, heads, kvHeads, headDim, maxSeq, pos0, theta: 10000, style, ...(factors === undefined ? {} : { freqFactors: factors }) };
          const qDim = heads * headDim;
          const kvDim = kvHeads * headDim;
          const qkv = randomF32(seed, count * (qDim + 2 * kvDim));
          const kCache = randomF32(seed + 1, maxSeq * kvDim).map((v) => v + 999);
          const vCache = randomF32(seed + 2, maxSeq * kvDim).map((v) => v - 999);
          const want = await composition(runtime, p, qkv, kCache, vCache);
          const got = await runHostOp(
            runtime,
            hostRopeKv as never,
            [f32([count, qDim + 2 * kvDim], qkv), f32([count, qDim], new Float32Array(count * qDim)), f32([maxSeq, kvDim], kCache), f32([maxSeq, kvDim], vCache)],
            p,
            [1, 2, 3, 5],
          );
          expect([got.wasm, got.scalar], 'fused_rope_kv ran its WebAssembly entry').toEqual([1, 0]);
          const label = `${style} ${heads}/${kvHeads}x${headDim} rows ${count} @${pos0}${factors === undefined ? '' : ' factors'}`;
          expectSameBits(got.arrays[1] as Float32Array, want.q, `${label} q`);
          expectSameBits(got.arrays[2] as Float32Array, want.kc, `${label} k cache`);
          expectSameBits(got.arrays[3] as Float32Array, want.vc, `${label} v cache`);
          cases++;
        }
      }
    }
    expect(cases).toBe(48);
    expect(runtime.hostKernels()!.byKernel['fused_rope_kv']).toEqual({ wasm: 48, scalar: 0 });
  });

  it('[OPS-wasm-fused-rope-kv] the library fused_rope_kv keeps its host twin on the host (no WebAssembly entry): the same bits as fusedRopeKv.host', async () => {
    const runtime = createRuntime(createHostProvider(), { hostKernels: 'wasm' });
    const p: FusedRopeKvParams = { count: 2, heads: 4, kvHeads: 2, headDim: 6, maxSeq: 9, pos0: 4, theta: 10000 };
    const qkv = randomF32(7, 2 * (24 + 24));
    const kCache = randomF32(8, 9 * 12);
    const vCache = randomF32(9, 9 * 12);
    const want = [qkv.slice(), new Float32Array(2 * 24), kCache.slice(), vCache.slice()] as const;
    fusedRopeKv.host(p, want);
    const got = await runHostOp(runtime, fusedRopeKv as never, [f32([2, 48], qkv), f32([2, 24], new Float32Array(48)), f32([9, 12], kCache), f32([9, 12], vCache)], p);
    expect([got.wasm, got.scalar]).toEqual([0, 1]);
    for (let i = 1; i < 4; i++) expectSameBits(got.arrays[i] as Float32Array, want[i]!, `operand ${i}`);
  });
});
