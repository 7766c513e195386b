// Suite: which kernels a runtime runs on a host provider, and host runs across memory growth (issue 12).
//
// Plan.
//   - selection: `auto` picks the WebAssembly SIMD kernels where the engine validates them; `scalar`
//     always runs the twins; `buffers` providers (roots outside one memory) run the twins; `wasm` refuses
//     with ENOTSUP where the kernels cannot run; a bad choice is EINVAL. Counters say which path ran, in
//     total and per op name.
//   - fallback by feature detection: with the seam that makes detection validate a module carrying a
//     SIMD opcode no engine knows (the real engine refuses it, as an engine without SIMD refuses ours),
//     `auto` falls back to the scalar twins and still computes the right result; `wasm` is ENOTSUP.
//   - growth: a graph bound (arrays taken) and admitted before an allocation grows the provider's
//     memory runs after it with the right result, on both paths; a scoped run whose fresh output grows
//     the memory after its inputs were prepared computes the right result too.
import { afterEach, describe, expect, it } from 'vitest';
import { createAllocationGroup, createHostProvider, createRuntime, fromArray, hostKernelFaults, zeros } from '../../src/index.js';
import type { HostKernelChoice } from '../../src/index.js';
import { matmulNT, rmsnorm } from '../../src/submit/ops/index.js';
import { UNKNOWN_SIMD_PROBE } from '../../src/submit/wasm/kernels.js';
import { randomF32 } from '../ops/harness.js';
import { expectCode } from '../support/expect-error.js';
import { runHostOp } from '../support/run-host.js';

afterEach(() => {
  hostKernelFaults.unknownSimdProbe = false;
});

/** matmul_nt 3 x 5 x 7 on `runtime`, checked against the twin; returns the path counts. */
async function product(choice: HostKernelChoice, shared = false, memory: 'wasm' | 'buffers' = 'wasm') {
  const runtime = createRuntime(createHostProvider({ shared, memory }), { hostKernels: choice });
  const [m, n, k] = [3, 5, 7];
  const a = randomF32(1, m * k);
  const w = randomF32(2, n * k);
  const want = new Float32Array(m * n);
  matmulNT.host({ m, n, k }, [a, w, want]);
  const run = await runHostOp(runtime, matmulNT as never, [
    { dtype: 'f32', shape: [m, k], data: a },
    { dtype: 'f32', shape: [n, k], data: w },
    { dtype: 'f32', shape: [m, n], data: new Float32Array(m * n) },
  ], { m, n, k }, [1, 2, 3]);
  for (let i = 0; i < want.length; i++) expect(Math.abs(run.arrays[2]![i]! - want[i]!)).toBeLessThan(1e-5);
  return { runtime, run };
}

describe('host kernel selection', () => {
  it('[OPS-wasm-fallback] auto selects the SIMD kernels where the engine validates them; every dispatch counts its path', async () => {
    for (const shared of [false, true]) {
      const { runtime, run } = await product('auto', shared);
      expect(runtime.hostKernels()!.kind).toBe('wasm-simd');
      expect([run.wasm, run.scalar]).toEqual([1, 0]);
      expect(runtime.hostKernels()!.byKernel).toEqual({ matmul_nt: { wasm: 1, scalar: 0 } });
    }
  });

  it('[OPS-wasm-fallback] scalar runs the twins; a buffers provider runs the twins; wasm there is ENOTSUP no-wasm-memory; a bad choice is EINVAL', async () => {
    const scalar = await product('scalar');
    expect(scalar.runtime.hostKernels()!.kind).toBe('scalar');
    expect([scalar.run.wasm, scalar.run.scalar]).toEqual([0, 1]);
    expect(scalar.runtime.hostKernels()!.byKernel).toEqual({ matmul_nt: { wasm: 0, scalar: 1 } });
    const buffers = await product('auto', false, 'buffers');
    expect(buffers.runtime.hostKernels()!.kind).toBe('scalar');
    expect([buffers.run.wasm, buffers.run.scalar]).toEqual([0, 1]);
    expectCode(() => createRuntime(createHostProvider({ memory: 'buffers' }), { hostKernels: 'wasm' }), 'ENOTSUP', 'no-wasm-memory');
    expectCode(() => createRuntime(createHostProvider(), { hostKernels: 'fast' as never }), 'EINVAL', 'bad-option');
  });

  it('[OPS-wasm-fallback] an engine that refuses SIMD (detection validates an unknown SIMD opcode) falls back to the scalar twins', async () => {
    // The probe is refused by this real engine, exactly as a SIMD-less engine refuses our kernels.
    expect(WebAssembly.validate(UNKNOWN_SIMD_PROBE)).toBe(false);
    hostKernelFaults.unknownSimdProbe = true;
    for (const shared of [false, true]) {
      const { runtime, run } = await product('auto', shared);
      expect(runtime.hostKernels()!.kind).toBe('scalar');
      expect([run.wasm, run.scalar]).toEqual([0, 1]);
      expectCode(() => createRuntime(createHostProvider({ shared }), { hostKernels: 'wasm' }), 'ENOTSUP', 'no-wasm-simd');
    }
    hostKernelFaults.unknownSimdProbe = false;
    expect(createRuntime(createHostProvider()).hostKernels()!.kind).toBe('wasm-simd');
  });
});

describe('host runs across memory growth', () => {
  for (const choice of ['wasm', 'scalar'] as const) {
    it(`[OPS-wasm-growth] ${choice}: a graph bound and admitted before the memory grows runs after the growth with the right result`, async () => {
      const provider = createHostProvider();
      const runtime = createRuntime(provider, { hostKernels: choice });
      const memory = provider.wasmMemory()!;
      const [rows, cols] = [3, 37];
      const x = randomF32(4, rows * cols);
      const w = randomF32(5, cols);
      const want = new Float32Array(rows * cols);
      rmsnorm.host({ rows, cols, eps: 1e-5 }, [x, w, want]);
      const group = createAllocationGroup();
      const sx = group.insert(await fromArray(provider, 'f32', x, [rows, cols])).descriptor;
      const sw = group.insert(await fromArray(provider, 'f32', w, [cols])).descriptor;
      const so = group.insert(await zeros(provider, 'f32', [rows, cols])).descriptor;
      const graph = runtime.compile({
        name: 'norm',
        inputs: { x: { slot: sx, dtype: 'f32', shape: [rows, cols] }, w: { slot: sw, dtype: 'f32', shape: [cols] }, out: { slot: so, dtype: 'f32', shape: [rows, cols] } },
        dispatches: [{ kernel: rmsnorm, bind: ['x', 'w', 'out'], params: { rows, cols, eps: 1e-5 } }],
        outputs: ['out'],
      });
      const before = runtime.hostKernels()!;
      const growths = provider.counters().memoryGrowths;
      const handle = await runtime.submit(graph, group);
      // Admitted (its arrays were taken at bind); it runs on the next macrotask. Grow the memory first.
      const big = await zeros(provider, 'f32', [memory.buffer.byteLength / 2]);
      expect(provider.counters().memoryGrowths).toBeGreaterThan(growths);
      const now = runtime.hostKernels()!;
      expect(now.wasmDispatches + now.scalarDispatches).toBe(before.wasmDispatches + before.scalarDispatches);
      const outcome = await handle.wait();
      if (outcome.kind !== 'completed') throw new Error(outcome.kind);
      const after = runtime.hostKernels()!;
      expect(choice === 'wasm' ? after.wasmDispatches - before.wasmDispatches : after.scalarDispatches - before.scalarDispatches).toBe(1);
      {
        using out = outcome.bundle.output<'f32'>(0);
        const got = await out.toArray();
        for (let i = 0; i < want.length; i++) expect(Math.abs(got[i]! - want[i]!)).toBeLessThan(1e-5);
      }
      outcome.bundle.dispose();
      big.dispose();
      graph.dispose();
    });

    it(`[OPS-wasm-growth] ${choice}: a scoped run whose fresh output grows the memory after its inputs were prepared computes the right result`, async () => {
      const provider = createHostProvider();
      const runtime = createRuntime(provider, { hostKernels: choice });
      const [m, n, k] = [1024, 1024, 1];
      const a = randomF32(6, m * k);
      const wv = randomF32(7, n * k);
      const ta = await fromArray(provider, 'f32', a, [m, k]);
      const tw = await fromArray(provider, 'f32', wv, [n, k]);
      const group = createAllocationGroup();
      const sa = group.insert(ta).descriptor;
      const sw = group.insert(tw).descriptor;
      const graph = runtime.compile({
        name: 'outer',
        inputs: { a: { slot: sa, dtype: 'f32', shape: [m, k] }, w: { slot: sw, dtype: 'f32', shape: [n, k] } },
        fresh: [{ name: 'out', dtype: 'f32', shape: [m, n] }],
        dispatches: [{ kernel: matmulNT, bind: ['a', 'w', 'out'], params: { m, n, k } }],
        outputs: ['out'],
      });
      const growths = provider.counters().memoryGrowths;
      const va = group.view(sa);
      const vw = group.view(sw);
      const outcome = await runtime.executeScopedReadOnly(graph, { a: va, w: vw });
      va.release();
      vw.release();
      expect(provider.counters().memoryGrowths).toBeGreaterThan(growths);
      if (outcome.kind !== 'completed') throw new Error(outcome.kind);
      const out = outcome.outputs[0]!;
      if (out.kind !== 'owned') throw new Error('owned output expected');
      const got = await out.tensor.toArray();
      for (const [i, j] of [[0, 0], [5, 1000], [1023, 1023], [512, 7]] as const) expect(got[i * n + j]).toBe(Math.fround(a[i]! * wv[j]!));
      out.tensor.dispose();
      group.dispose();
      graph.dispose();
    });
  }
});
