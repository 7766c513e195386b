// Plan: one AD scenario, y = (x @ W + B) * x2 differentiated as sum(y), on every provider of the lane,
// recorded plainly and inside one checkpoint. Checks: the copy and allocation ledgers of forward +
// backward equal the multisets written below (retention adds nothing to either), checkpoint interiors are
// released at record time and recomputed under their own reason, and the gradients agree with central
// finite differences of an f64 reference (host) and between the host and WebGPU.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTape, fromArray } from '../../src/index.js';
import type { Gradients, HostProvider, Provider, WebGPUProvider } from '../../src/index.js';
import { providerCases } from '../support/providers.js';
import { F32_BYTES, K, M, N, allocations, copies, finiteDifferences, recordScenario, scenarioData, times, uploadLeaves } from './support.js';
import type { ScenarioData } from './support.js';

const SEED = 7;
const MN = M * N * F32_BYTES;
const MK = M * K * F32_BYTES;
const KN = K * N * F32_BYTES;
/** f32 kernels vs an f64 central difference (eps 1e-3 on a quadratic loss: exact up to rounding). */
const FD_TOLERANCE = 1e-4;
/** Host vs WebGPU: same f32 math, different summation order. */
const AGREE_TOLERANCE = 1e-5;

/** Runs the scenario to its gradients; returns each leaf's gradient as an array. */
async function gradientsOf(provider: Provider, d: ScenarioData, checkpointed: boolean): Promise<Record<keyof ScenarioData, Float32Array>> {
  using tape = createTape(provider);
  const l = await uploadLeaves(provider, tape, d);
  const y = await recordScenario(tape, l, checkpointed);
  using grads = await tape.backward([y], [await fromArray(provider, 'f32', new Float32Array(M * N).fill(1), [M, N])]);
  const out = {} as Record<keyof ScenarioData, Float32Array>;
  for (const name of ['x', 'W', 'B', 'x2'] as const) {
    using v = grads.grad<'f32'>(l[name])!;
    out[name] = await v.toArray();
  }
  for (const h of [y, l.x, l.W, l.B, l.x2]) h.dispose();
  return out;
}

for (const pc of providerCases()) {
  describe(`autodiff scenario on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    beforeAll(async () => {
      provider = await pc.make();
    });
    afterAll(() => {
      if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    for (const checkpointed of [false, true]) {
      const mode = checkpointed ? 'checkpointed' : 'plain';
      it(`[G7-ledger-multiset] [G7-checkpoint-interior] ${mode}: ledgers equal the expected multisets, interiors released at record time`, async () => {
        const before = provider.counters();
        const tape = createTape(provider);
        const l = await uploadLeaves(provider, tape, scenarioData(SEED));
        const seed = await fromArray(provider, 'f32', new Float32Array(M * N).fill(1), [M, N]);
        const mark = provider.ledgerMark();
        const afterUpload = provider.counters();

        const y = await recordScenario(tape, l, checkpointed);
        const forward = provider.ledgerSince(mark);
        const afterForward = provider.counters();
        // Forward: three operation outputs (h, s, y); retention (x, W needed by matmul, s and x2 by mul) adds nothing.
        expect(allocations(forward)).toEqual(times(3, `operation-output:root:${MN}`));
        expect(copies(forward)).toEqual([]);
        if (checkpointed) {
          // Interior h and s are released when the region is recorded; only the boundary output y stays.
          expect(afterForward.liveBytes - afterUpload.liveBytes).toBe(MN);
          expect(afterForward.rootsDestroyed - afterUpload.rootsDestroyed).toBe(2);
          expect(tape.checkpoints).toHaveLength(1);
          expect(tape.checkpoints[0]!.retainedValues).toBe(1);
          expect(tape.retainedValues).toBe(4);
        } else {
          // h is released (add needs neither input); s is retained for mul's backward, y by its handle.
          expect(afterForward.liveBytes - afterUpload.liveBytes).toBe(2 * MN);
          expect(afterForward.rootsDestroyed - afterUpload.rootsDestroyed).toBe(1);
          expect(tape.retainedValues).toBe(6);
        }

        const grads: Gradients = await tape.backward([y], [seed]);
        const events = provider.ledgerSince(mark);
        // Backward: dS and dX2 (mul), dB (add: dH takes dS's owner, dB is written by the scale kernel),
        // dX (matmul_nt) and dW (matmul_tn_grad).
        const backward = [...times(3, `operation-output:root:${MN}`), `operation-output:root:${MK}`, `operation-output:root:${KN}`];
        const recompute = checkpointed ? times(3, `checkpoint-recompute-output:root:${MN}`) : [];
        expect(allocations(events)).toEqual([...times(3, `operation-output:root:${MN}`), ...backward, ...recompute].sort());
        // No copy at all: retention, checkpoint boundaries and gradient hand-over move owners.
        expect(copies(events)).toEqual([]);
        expect(grads.size).toBe(4);

        grads.dispose();
        for (const h of [y, l.x, l.W, l.B, l.x2]) h.dispose();
        tape.dispose();
        const after = provider.counters();
        expect(after.liveBytes).toBe(before.liveBytes);
        expect(after.liveRoots).toBe(before.liveRoots);
      });

      it(`[G7-backward-basic] ${mode}: gradients match finite differences and agree across providers`, async () => {
        const d = scenarioData(SEED);
        const got = await gradientsOf(provider, d, checkpointed);
        for (const name of ['x', 'W', 'B', 'x2'] as const) {
          const fd = finiteDifferences(d, name);
          for (let i = 0; i < fd.length; i++) expect(Math.abs(got[name][i]! - fd[i]!)).toBeLessThan(FD_TOLERANCE * Math.max(1, Math.abs(fd[i]!)));
        }
        if (provider.kind === 'host') return;
        const host = await gradientsOf(await providerCases().find((c) => c.kind === 'host')!.make(), d, checkpointed);
        for (const name of ['x', 'W', 'B', 'x2'] as const) {
          for (let i = 0; i < host[name].length; i++) expect(Math.abs(got[name][i]! - host[name][i]!)).toBeLessThan(AGREE_TOLERANCE * Math.max(1, Math.abs(host[name][i]!)));
        }
      });
    }
  });
}
