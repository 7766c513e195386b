// Plan: what outcomes hand back and how (G3 bundles, scoped read-only execution; G5 admission boundary).
// Bundle outputs are group slots: borrowing one copies nothing, extracting one consumes the bundle and
// releases the rest exactly once, a refused extraction leaves the bundle whole. Scoped read-only calls run
// only on the host provider, accept only shared views, never write them, and return after retirement.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bundle, TensorView, createAllocationGroup, createRuntime, fromArray, zeros } from '../../src/index.js';
import type { CompiledGraph, DescriptorSlot, HostProvider, Runtime, StepValues, WebGPUProvider } from '../../src/index.js';
import { axpy } from '../support/kernels/axpy.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { providerCases } from '../support/providers.js';

const N = 8;
const xs = Float32Array.from({ length: N }, (_, i) => i + 1);

for (const pc of providerCases()) {
  describe(`bundles and scoped execution on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    let runtime: Runtime;
    beforeAll(async () => {
      provider = await pc.make();
      runtime = createRuntime(provider);
    });
    afterAll(() => {
      if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    async function twoOutputs(): Promise<{ graph: CompiledGraph; group: ReturnType<typeof createAllocationGroup>; x: DescriptorSlot; y: DescriptorSlot }> {
      const group = createAllocationGroup();
      const x = group.insert(await fromArray(provider, 'f32', xs)).descriptor;
      const y = group.insert(await zeros(provider, 'f32', [N])).descriptor;
      const graph = runtime.compile({
        name: 'two-outputs',
        inputs: { x: { slot: x, dtype: 'f32', shape: [N] }, y: { slot: y, dtype: 'f32', shape: [N] } },
        fresh: [{ name: 'z', dtype: 'f32', shape: [N] }],
        dispatches: [
          { kernel: axpy, bind: ['x', 'x', 'y'], params: { n: N, alpha: 1 } }, // y = 2x (in place)
          { kernel: axpy, bind: ['y', 'x', 'z'], params: { n: N, alpha: 1 } }, // z = 3x (fresh)
        ],
        outputs: ['y', 'z', 'y'], // a repeated output is the same slot twice
      });
      return { graph, group, x, y };
    }

    async function completed(graph: CompiledGraph, group: ReturnType<typeof createAllocationGroup>): Promise<Bundle> {
      const o = await (await runtime.submit(graph, group)).wait();
      if (o.kind !== 'completed') throw new Error(o.kind);
      return o.bundle;
    }

    it('[G3-bundle-output] output(i) borrows the output slot in place: no copy, no allocation', async () => {
      const { graph, group } = await twoOutputs();
      const bundle = await completed(graph, group);
      const mark = provider.ledgerMark();
      const before = provider.counters();
      const y = bundle.output<'f32'>(0);
      const again = bundle.output<'f32'>(2);
      expect(y.diagnostics().root).toBe(again.diagnostics().root);
      expect(bundle.outputCount).toBe(3);
      expect(provider.counters().rootsCreated).toBe(before.rootsCreated);
      if (pc.kind === 'host') expect(provider.ledgerSince(mark)).toEqual([]);
      expect(Array.from(await y.toArray())).toEqual(Array.from(xs, (v) => 2 * v));
      // a borrowed output blocks consumption of the bundle
      expectCode(() => bundle.intoOutput(1), 'EBUSY');
      y.release();
      again.release();
      bundle.dispose();
      graph.dispose();
    });

    it('[G3-outputs-no-copy] in-place, repeated and fresh outputs are all slots; producing them records no copy', async () => {
      const { graph, group } = await twoOutputs();
      const mark = provider.ledgerMark();
      const bundle = await completed(graph, group);
      const events = provider.ledgerSince(mark);
      // the only event of the whole submission is the fresh output's allocation
      expect(events.map((e) => (e.kind === 'allocation' ? `${e.kind}:${e.reason}` : `${e.kind}:${e.reason}`))).toEqual(['allocation:operation-output']);
      const { group: merged, outputs } = bundle.intoGroup();
      expect(outputs[0]).toBe(outputs[2]);
      expect(outputs).toHaveLength(3);
      {
        using z = merged.view<'f32'>(outputs[1]!);
        expect(Array.from(await z.toArray())).toEqual(Array.from(xs, (v) => 3 * v));
      }
      expect(provider.ledgerSince(mark).filter((e) => e.kind === 'copy' && e.reason !== 'transfer')).toEqual([]);
      merged.dispose();
      graph.dispose();
    });

    it('[G3-bundle-into-output] intoOutput(i) consumes the bundle, keeps one tensor and releases the rest once', async () => {
      const { graph, group } = await twoOutputs();
      const bundle = await completed(graph, group);
      const before = provider.counters();
      const z = bundle.intoOutput<'f32'>(1);
      expect(Array.from(await z.toArray())).toEqual(Array.from(xs, (v) => 3 * v));
      // x and y (the inputs group) were released; only z lives
      const after = provider.counters();
      expect(after.rootsDestroyed - before.rootsDestroyed).toBe(2);
      expect(after.liveRoots).toBe(before.liveRoots - 2);
      expectCode(() => bundle.output(0), 'EMOVED');
      expectCode(() => bundle.intoOutput(1), 'EMOVED');
      expectCode(() => bundle.dispose(), 'EMOVED');
      z.dispose();
      graph.dispose();
    });

    it('[G3-bundle-into-output-reject] a refused intoOutput leaves the exact bundle usable', async () => {
      const { graph, group } = await twoOutputs();
      const bundle = await completed(graph, group);
      const before = provider.counters();
      expectCode(() => bundle.intoOutput(7), 'EINVAL', 'invalid-output');
      expectCode(() => bundle.intoOutput(-1), 'EINVAL', 'invalid-output');
      expectCode(() => bundle.intoOutput(0.5), 'EINVAL', 'invalid-output');
      const v = bundle.output(1);
      expectCode(() => bundle.intoOutput(0), 'EBUSY');
      v.release();
      expect(provider.counters().liveRoots).toBe(before.liveRoots);
      const y = bundle.intoOutput<'f32'>(0);
      expect(Array.from(await y.toArray())).toEqual(Array.from(xs, (v) => 2 * v));
      y.dispose();
      graph.dispose();
    });

    it('[G5-admission-boundary] only failures before enqueue reject; once admitted, every failure is an outcome', async () => {
      const { graph, group } = await twoOutputs();
      const stats = runtime.stats();
      // before: a bad step value fails inside bind, the inputs are untouched
      const bad = runtime.compile({
        name: 'bad-step',
        inputs: { x: { slot: 0 as DescriptorSlot, dtype: 'f32', shape: [N] }, y: { slot: 1 as DescriptorSlot, dtype: 'f32', shape: [N] } },
        dispatches: [{ kernel: axpy, bind: ['x', 'x', 'y'], params: (s: StepValues) => ({ n: s['n'] ?? N, alpha: 1 }) }],
        outputs: ['y'],
      });
      await expectCodeAsync(() => runtime.submit(bad, group, { step: { n: N + 1 } }), 'EINVAL', 'shape-mismatch');
      expect(group.moved).toBe(false);
      // after: the failure comes back through wait(), with the inputs, never as a throw from submit
      if (pc.kind === 'webgpu') runtime.faults.invalidateNextSubmission();
      else runtime.faults.failNextHostRun();
      const handle = await runtime.submit(graph, group);
      expect(group.moved).toBe(true);
      const o = await handle.wait();
      expect(o.kind).toBe('retired-failed');
      expect(runtime.stats().rejected - stats.rejected).toBe(1);
      expect(runtime.stats().retiredFailed - stats.retiredFailed).toBe(1);
      if (o.kind === 'retired-failed') o.inputs.dispose();
      graph.dispose();
      bad.dispose();
    });

    it('[G3-scoped-host-only][G5-detached-owning-only] scoped read-only execution runs on the host provider and is refused up front on WebGPU', async () => {
      const x = await fromArray(provider, 'f32', xs);
      const graph = runtime.compile({
        name: 'scoped',
        inputs: { x: { slot: 0 as DescriptorSlot, dtype: 'f32', shape: [N] } },
        fresh: [{ name: 'z', dtype: 'f32', shape: [N] }],
        dispatches: [{ kernel: axpy, bind: ['x', 'x', 'z'], params: { n: N, alpha: 2 } }],
        outputs: ['z', 'x'],
      });
      const view = x.view();
      const before = provider.counters();
      if (pc.kind === 'webgpu') {
        await expectCodeAsync(() => runtime.executeScopedReadOnly(graph, { x: view }), 'ENOTSUP', 'no-scoped-execution');
        expect(provider.counters().rootsCreated).toBe(before.rootsCreated);
        expect(Array.from(await view.toArray())).toEqual(Array.from(xs));
      } else {
        const o = await runtime.executeScopedReadOnly(graph, { x: view });
        expect(o.kind).toBe('completed');
        if (o.kind === 'completed') {
          const [z, same] = o.outputs;
          expect(z!.kind).toBe('owned');
          expect(same).toEqual({ kind: 'borrowed', view });
          if (z!.kind === 'owned') {
            expect(Array.from(await z!.tensor.toArray())).toEqual(Array.from(xs, (v) => 3 * v));
            z!.tensor.dispose();
          }
        }
      }
      view.release();
      x.dispose();
      graph.dispose();
    });

    // WebGPU offers no scoped execution (its refusal is the ENOTSUP case above): these run on the host.
    it.skipIf(pc.kind === 'webgpu')('[G3-scoped-readonly] scoped calls take shared views only, never write them, and return after retirement', async () => {
      const x = await fromArray(provider, 'f32', xs);
      const y = await zeros(provider, 'f32', [N]);
      const writes = runtime.compile({
        name: 'writes-input',
        inputs: { x: { slot: 0 as DescriptorSlot, dtype: 'f32', shape: [N] }, y: { slot: 1 as DescriptorSlot, dtype: 'f32', shape: [N] } },
        dispatches: [{ kernel: axpy, bind: ['x', 'x', 'y'], params: { n: N, alpha: 1 } }],
        outputs: ['y'],
      });
      const vx = x.view();
      const vy = y.view();
      await expectCodeAsync(() => runtime.executeScopedReadOnly(writes, { x: vx, y: vy }), 'EINVAL', 'write-through-shared-view');
      expect(Array.from(await vy.toArray())).toEqual(Array(N).fill(0));
      // while the call runs, its views are borrowed: the owner cannot be written until it returned
      const reads = runtime.compile({
        name: 'reads',
        inputs: { x: { slot: 0 as DescriptorSlot, dtype: 'f32', shape: [N] } },
        fresh: [{ name: 'z', dtype: 'f32', shape: [N] }],
        dispatches: [{ kernel: axpy, bind: ['x', 'x', 'z'], params: { n: N, alpha: 1 } }],
        outputs: ['z'],
      });
      const pending = runtime.executeScopedReadOnly(reads, { x: vx });
      const o = await pending;
      expect(o.kind === 'completed' && o.outputs.map((out) => out.kind)).toEqual(['owned']);
      if (o.kind === 'completed' && o.outputs[0]!.kind === 'owned') {
        // fresh outputs are observable only now, after retirement, and are complete
        expect(Array.from(await o.outputs[0]!.tensor.toArray())).toEqual(Array.from(xs, (v) => 2 * v));
        o.outputs[0]!.tensor.dispose();
      }
      vx.release();
      vy.release();
      await x.write(xs); // the borrow ended with the call
      x.dispose();
      y.dispose();
      writes.dispose();
      reads.dispose();
    });

    // WebGPU offers no scoped execution (its refusal is the ENOTSUP case above): these run on the host.
    it.skipIf(pc.kind === 'webgpu')('[G3-scoped-outputs] scoped results keep owned fresh outputs apart from the caller\'s borrowed views', async () => {
      const x = await fromArray(provider, 'f32', xs);
      const graph = runtime.compile({
        name: 'scoped-outputs',
        inputs: { x: { slot: 0 as DescriptorSlot, dtype: 'f32', shape: [N] } },
        fresh: [
          { name: 'a', dtype: 'f32', shape: [N] },
          { name: 'b', dtype: 'f32', shape: [N] },
        ],
        dispatches: [
          { kernel: axpy, bind: ['x', 'x', 'a'], params: { n: N, alpha: 1 } },
          { kernel: axpy, bind: ['a', 'x', 'b'], params: { n: N, alpha: 1 } },
        ],
        outputs: ['x', 'b'],
      });
      const before = provider.counters();
      const view = x.view();
      const o = await runtime.executeScopedReadOnly(graph, { x: view });
      expect(o.kind).toBe('completed');
      if (o.kind !== 'completed') return;
      expect(o.outputs.map((out) => out.kind)).toEqual(['borrowed', 'owned']);
      // the borrowed output is the caller's own view; the owned one is a new owner; `a` was not an output
      expect(o.outputs[0]!.kind === 'borrowed' && o.outputs[0]!.view).toBe(view);
      expect(provider.counters().liveRoots - before.liveRoots).toBe(1);
      if (o.outputs[1]!.kind === 'owned') {
        expect(Array.from(await o.outputs[1]!.tensor.toArray())).toEqual(Array.from(xs, (v) => 3 * v));
        o.outputs[1]!.tensor.dispose();
      }
      view.release();
      x.dispose();
      graph.dispose();
    });

    // WebGPU offers no scoped execution (its refusal is the ENOTSUP case above): these run on the host.
    it.skipIf(pc.kind === 'webgpu')('[G3-scoped-fresh-after-retire] a failing scoped call releases its fresh outputs; none is observable', async () => {
      const x = await fromArray(provider, 'f32', xs);
      const throwing = { ...axpy, name: 'test.throws', host: () => { throw new Error('kernel failed'); } };
      const graph = runtime.compile({
        name: 'scoped-fails',
        inputs: { x: { slot: 0 as DescriptorSlot, dtype: 'f32', shape: [N] } },
        fresh: [{ name: 'z', dtype: 'f32', shape: [N] }],
        dispatches: [{ kernel: throwing, bind: ['x', 'x', 'z'], params: { n: N, alpha: 1 } }],
        outputs: ['z'],
      });
      const before = provider.counters();
      const view = x.view();
      const o = await runtime.executeScopedReadOnly(graph, { x: view });
      expect(o.kind).toBe('retired-failed');
      expect(o.kind === 'retired-failed' && o.cause.code).toBe('EIO');
      const after = provider.counters();
      expect(after.liveRoots).toBe(before.liveRoots);
      expect(after.rootsCreated - before.rootsCreated).toBe(after.rootsDestroyed - before.rootsDestroyed);
      expect(Array.from(await view.toArray())).toEqual(Array.from(xs));
      view.release();
      x.dispose();
      graph.dispose();
    });

    it('[G3-scoped-rejected] a refused scoped call leaves the borrowed views exactly as they were', async () => {
      const x = await fromArray(provider, 'f32', xs);
      const graph = runtime.compile({
        name: 'scoped-rejects',
        inputs: { x: { slot: 0 as DescriptorSlot, dtype: 'f32', shape: [N] } },
        fresh: [{ name: 'z', dtype: 'f32', shape: [N] }],
        dispatches: [{ kernel: axpy, bind: ['x', 'x', 'z'], params: { n: N, alpha: 1 } }],
        outputs: ['z'],
      });
      const before = provider.counters();
      const v = x.view();
      const code = pc.kind === 'webgpu' ? 'ENOTSUP' : 'EINVAL';
      await expectCodeAsync(() => runtime.executeScopedReadOnly(graph, {} as never), code);
      await expectCodeAsync(() => runtime.executeScopedReadOnly(graph, { x: x as unknown as TensorView }), code);
      const other = createRuntime(provider);
      await expectCodeAsync(() => other.executeScopedReadOnly(graph, { x: v }), code);
      expect(v.size).toBe(N);
      expect(Array.from(await v.toArray())).toEqual(Array.from(xs));
      expect(provider.counters().liveRoots).toBe(before.liveRoots);
      v.release();
      x.dispose();
      graph.dispose();
    });
  });
}
