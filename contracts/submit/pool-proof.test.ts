// Plan: a worker pool's WebGPU jobs retire by the same completion fence as any runtime (G3-completion-proof).
// A pool with GPU workers (Web Workers in the browser lane, worker_threads + Dawn in the node lane) runs an
// axpy job whose worker device is really destroyed right after the job's submission, once reported at
// once and once reported only late (the loss stays hidden from the worker's runtime). Either way the job
// never reports completed: it comes back retired-failed with ENODEV / completion-unproven, and nothing is
// written back into the shared tensors; the other worker's job completes with its results. The pool is
// closed cooperatively (Node workers must not be terminated mid-GPU-work, TOOLCHAIN.md).
import { describe, expect, it } from 'vitest';
import { createAllocationGroup, createHostProvider, createWorkerPool, fromArray, zeros } from '../../src/index.js';
import type { AllocationGroup, DescriptorSlot, PoolGraphSpec } from '../../src/index.js';
import type { HostProvider } from '../../src/index.js';
import { axpy } from '../support/kernels/axpy.js';
import { inBrowser } from '../support/providers.js';

const kernelModule = inBrowser ? new URL('../support/kernels/index.ts', import.meta.url).href : new URL('../../dist/workers/test-kernels.js', import.meta.url).href;

const N = 64;

/** w <- 2x + y, then y <- 2x + w, then a fresh z = x + y. */
function spec(): PoolGraphSpec {
  return {
    name: 'axpy pair',
    inputs: {
      x: { slot: 0, dtype: 'f32', shape: [N] },
      y: { slot: 1, dtype: 'f32', shape: [N] },
      w: { slot: 2, dtype: 'f32', shape: [N] },
    },
    fresh: [{ name: 'z', dtype: 'f32', shape: [N] }],
    dispatches: [
      { kernel: 'test.axpy', bind: ['x', 'y', 'w'], params: { n: N, alpha: 2 } },
      { kernel: 'test.axpy', bind: ['x', 'w', 'y'], params: { n: N, alpha: 2 } },
      { kernel: 'test.axpy', bind: ['x', 'y', 'z'], params: { n: N, alpha: 1 } },
    ],
    outputs: ['y', 'z'],
  };
}

/** x = 0..N-1, y = w = 0, in slots 0, 1, 2; `written` are the slots of y and w. */
async function inputs(host: HostProvider): Promise<{ group: AllocationGroup; written: DescriptorSlot[] }> {
  const group = createAllocationGroup();
  group.insert(await fromArray(host, 'f32', Float32Array.from({ length: N }, (_, i) => i)));
  const y = group.insert(await zeros(host, 'f32', [N])).descriptor;
  const w = group.insert(await zeros(host, 'f32', [N])).descriptor;
  return { group, written: [y, w] };
}

describe('worker pool WebGPU retirement', () => {
  it('[G3-completion-proof] a GPU job whose worker device is lost after enqueue never reports completed, even when the loss is reported late', async () => {
    const host = createHostProvider({ shared: true });
    const pool = await createWorkerPool({ provider: host, size: 2, gpu: true, kernels: [axpy as never], kernelModules: [kernelModule] });
    try {
      expect(pool.workers().map((w) => w.info.gpu !== null)).toEqual([true, true]);
      // worker 0 loses its device silently after enqueueing the first job, worker 1 after the second
      for (const [worker, silently] of [[0, true], [1, false]] as const) {
        await pool.faults.loseWorkerDevice(worker, { silently });
        const { group, written } = await inputs(host);
        const outcome = await (await pool.submit(spec(), group, { provider: 'webgpu', worker })).wait();
        expect(outcome.kind).toBe('retired-failed');
        if (outcome.kind !== 'retired-failed') continue;
        expect(outcome.cause.code).toBe('ENODEV');
        expect(outcome.cause.reason).toBe('completion-unproven');
        // nothing came back from the device: y and w are still the zeros the job started from
        for (const slot of written) {
          using v = outcome.inputs.view<'f32'>(slot);
          expect(Array.from(await v.toArray())).toEqual(Array(N).fill(0));
        }
        outcome.inputs.dispose();
      }
      expect(pool.stats()).toMatchObject({ completed: 0, retiredFailed: 2, inFlight: 0 });
    } finally {
      await pool.close();
    }
    // A GPU pool without faults completes the same job with its results (the proof does succeed).
    const fine = await createWorkerPool({ provider: host, size: 1, gpu: true, kernels: [axpy as never], kernelModules: [kernelModule] });
    try {
      const outcome = await (await fine.submit(spec(), (await inputs(host)).group, { provider: 'webgpu' })).wait();
      expect(outcome.kind).toBe('completed');
      if (outcome.kind === 'completed') {
        using y = outcome.bundle.output<'f32'>(0);
        // w = 2x, y = 2x + w = 4x
        expect(Array.from((await y.toArray()).subarray(0, 4))).toEqual([0, 4, 8, 12]);
      }
      if (outcome.kind === 'completed') outcome.bundle.dispose();
    } finally {
      await fine.close();
    }
  });
});
