// Suite: step_ids (shaders/step_ids.wgsl), the op through which a chained step takes its token ids on the
// device: a chunk of a staged prompt at a per-step offset, or the one token the host put into the step's
// uniform. Plan: property — staged u32 [1..200] of random ids, a chunk count 1..64 at a random offset
// inside it (including the last possible one), or a random u32 host token with count 1; the ids buffer is
// pre-filled with other values, operands sit at non-zero element offsets with canaries: the WGSL result
// equals the host twin exactly and the staged buffer is not written. Control: hand-computed chunks at
// offsets 0 and n - count. check() refuses a chunk past the staged end (out-of-range), a host token with
// count > 1 and a negative offset (bad-param), and ids of another length (shape-mismatch).
import { describe, expect, it } from 'vitest';
import { stepIds, zeros } from '../../src/index.js';
import type { StepIdsSource } from '../../src/index.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { operandOf } from '../support/run-op.js';
import { arb, rng, runBoth, useWebGPU } from '../ops/harness.js';

const U32_RANGE = 2 ** 32;

function randomIds(seed: number, n: number): Uint32Array {
  const r = rng(seed);
  return Uint32Array.from({ length: n }, () => Math.floor(r() * U32_RANGE));
}

describe('step_ids: WGSL against the host twin', () => {
  const gpu = useWebGPU();

  it('[TS-decode-step-ids] random chunks of a staged prompt and host tokens: WGSL equals the host exactly', async () => {
    await fc.assert(
      fc.asyncProperty(arb.size(200), arb.size(64), fc.nat(), fc.boolean(), arb.seed(), arb.pads(2), async (staged, wanted, where, host, seed, pads) => {
        const count = host ? 1 : Math.min(wanted, staged);
        const source: StepIdsSource = host ? { kind: 'host', token: Math.floor(rng(seed + 2)() * U32_RANGE) } : { kind: 'staged', at: where % (staged - count + 1) };
        const params = { count, staged, source };
        const before = randomIds(seed + 1, count);
        const prompt = randomIds(seed, staged);
        const { gpu: g, host: h } = await runBoth(gpu(), stepIds, [
          { dtype: 'u32', shape: [staged], data: prompt },
          { dtype: 'u32', shape: [count], data: before },
        ], params, pads);
        const want = source.kind === 'host' ? [source.token] : Array.from(prompt.subarray(source.at, source.at + count));
        expect(Array.from(h[1]!)).toEqual(want);
        expect(Array.from(g[1]!)).toEqual(want);
      }),
      fcParams(15),
    );
  });

  it('[TS-decode-step-ids] control: the first and the last chunk of a staged prompt, and a host token', async () => {
    const prompt = Uint32Array.from([7, 8, 9, 10, 11]);
    const run = async (count: number, source: StepIdsSource) =>
      (await runBoth(gpu(), stepIds, [
        { dtype: 'u32', shape: [5], data: prompt },
        { dtype: 'u32', shape: [count], data: new Uint32Array(count).fill(99) },
      ], { count, staged: 5, source })).gpu[1]!;
    expect(Array.from(await run(3, { kind: 'staged', at: 0 }))).toEqual([7, 8, 9]);
    expect(Array.from(await run(2, { kind: 'staged', at: 3 }))).toEqual([10, 11]);
    expect(Array.from(await run(1, { kind: 'host', token: 0xfffffffe }))).toEqual([0xfffffffe]);
  });

  it('[TS-decode-step-ids] check() refuses chunks past the staged ids, host tokens for several ids and mismatched ids', async () => {
    const p = gpu();
    const staged = await zeros(p, 'u32', [6]);
    const ids = await zeros(p, 'u32', [2]);
    const one = await zeros(p, 'u32', [1]);
    try {
      const ok = [staged, ids].map(operandOf);
      stepIds.check(ok, { count: 2, staged: 6, source: { kind: 'staged', at: 4 } });
      expectCode(() => stepIds.check(ok, { count: 2, staged: 6, source: { kind: 'staged', at: 5 } }), 'EINVAL', 'out-of-range');
      expectCode(() => stepIds.check(ok, { count: 2, staged: 6, source: { kind: 'staged', at: -1 } }), 'EINVAL', 'bad-param');
      expectCode(() => stepIds.check(ok, { count: 2, staged: 6, source: { kind: 'host', token: 3 } }), 'EINVAL', 'bad-param');
      stepIds.check([staged, one].map(operandOf), { count: 1, staged: 6, source: { kind: 'host', token: 3 } });
      expectCode(() => stepIds.check([staged, one].map(operandOf), { count: 2, staged: 6, source: { kind: 'staged', at: 0 } }), 'EINVAL', 'shape-mismatch');
    } finally {
      for (const t of [staged, ids, one]) t.dispose();
    }
  });
});
