// Plan: terminal outcomes of detached submission (G3, G5) on every provider of the lane, with real
// dispatches. Each test drives the production path (faults go through the runtime's named seam, which
// destroys the real device or records a real invalid dispatch) and asserts the outcome, what the caller
// holds afterwards, and the counters: roots live / destroyed / retained forever, GPU resources, in-flight.
// Completion proof (WebGPU): a device destroyed with its loss reported only late (after
// onSubmittedWorkDone resolved) still ends completion-unproven, and so does a fence map that resolves over
// a stale number; one fence proves a batch of earlier records but never a record admitted after it, and
// fence buffers are pooled (live resources counted).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AllocationGroup, SubmitRejected, createAllocationGroup, createRuntime, fromArray, zeros } from '../../src/index.js';
import type { CompiledGraph, DescriptorSlot, HostProvider, Outcome, Runtime, StepValues, WebGPUProvider } from '../../src/index.js';
import { axpy } from '../support/kernels/axpy.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { providerCases } from '../support/providers.js';

const N = 300;
const xs = Float32Array.from({ length: N }, (_, i) => i);
const ys = Float32Array.from({ length: N }, (_, i) => 1000 - i);
const expected = (alpha: number): number[] => Array.from(xs, (x, i) => Math.fround(alpha * x + ys[i]!));

interface Setup {
  group: AllocationGroup;
  x: DescriptorSlot;
  y: DescriptorSlot;
  out: DescriptorSlot;
}

for (const pc of providerCases()) {
  describe(`submission outcomes on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    let runtime: Runtime;
    beforeAll(async () => {
      provider = await pc.make();
      runtime = createRuntime(provider);
    });
    afterAll(() => {
      if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    async function setup(p: HostProvider | WebGPUProvider = provider): Promise<Setup> {
      const group = createAllocationGroup();
      const x = group.insert(await fromArray(p, 'f32', xs)).descriptor;
      const y = group.insert(await fromArray(p, 'f32', ys)).descriptor;
      const out = group.insert(await zeros(p, 'f32', [N])).descriptor;
      return { group, x, y, out };
    }

    function graphFor(rt: Runtime, s: Setup, fresh = false): CompiledGraph {
      return rt.compile({
        name: 'axpy',
        inputs: {
          x: { slot: s.x, dtype: 'f32', shape: [N] },
          y: { slot: s.y, dtype: 'f32', shape: [N] },
          out: { slot: s.out, dtype: 'f32', shape: [N] },
        },
        fresh: fresh ? [{ name: 'z', dtype: 'f32', shape: [N] }] : [],
        dispatches: [
          { kernel: axpy, bind: ['x', 'y', 'out'], params: (step: StepValues) => ({ n: N, alpha: step['alpha'] ?? 1 }) },
          ...(fresh ? [{ kernel: axpy, bind: ['out', 'y', 'z'], params: { n: N, alpha: 2 } }] : []),
        ],
        outputs: fresh ? ['out', 'z'] : ['out'],
      });
    }

    async function read(view: { toArray(): Promise<Float32Array> | Promise<unknown> } & { release(): void }): Promise<number[]> {
      const values = Array.from((await view.toArray()) as Float32Array);
      view.release();
      return values;
    }

    it('[G3-completed] a completed submission hands back a bundle whose outputs hold the results', async () => {
      const s = await setup();
      const graph = graphFor(runtime, s, true);
      const before = provider.counters();
      const handle = await runtime.submit(graph, s.group, { step: { alpha: 3 } });
      const outcome = await handle.wait();
      expect(outcome.kind).toBe('completed');
      if (outcome.kind !== 'completed') return;
      expect(await read(outcome.bundle.output(0))).toEqual(expected(3));
      expect(await read(outcome.bundle.output(1))).toEqual(expected(3).map((v, i) => Math.fround(2 * v + ys[i]!)));
      expect(provider.counters().dispatches - before.dispatches).toBe(2);
      expect(runtime.stats().inFlight).toBe(0);
      outcome.bundle.dispose();
      graph.dispose();
      expect(provider.counters().liveRoots).toBe(before.liveRoots - 3);
    });

    it('[G3-admission-moves] admission moves the inputs: the caller\'s group object throws EMOVED afterwards', async () => {
      const s = await setup();
      const graph = graphFor(runtime, s);
      const handle = await runtime.submit(graph, s.group);
      expect(s.group.moved).toBe(true);
      expectCode(() => s.group.view(s.x), 'EMOVED');
      expectCode(() => s.group.dispose(), 'EMOVED');
      const outcome = await handle.wait();
      expect(outcome.kind).toBe('completed');
      if (outcome.kind === 'completed') outcome.bundle.dispose();
      graph.dispose();
    });

    it('[G3-submit-rejected] any failure before admission throws SubmitRejected and leaves the very same inputs usable', async () => {
      const s = await setup();
      const graph = graphFor(runtime, s);
      const before = provider.counters();
      const stats = runtime.stats();
      // a slot holding the wrong shape
      const wrong = createAllocationGroup();
      wrong.insert(await fromArray(provider, 'f32', xs));
      wrong.insert(await fromArray(provider, 'f32', ys));
      wrong.insert(await zeros(provider, 'f32', [N - 1]));
      const e1 = await expectCodeAsync(() => runtime.submit(graph, wrong), 'EINVAL', 'input-mismatch');
      expect(e1).toBeInstanceOf(SubmitRejected);
      expect((e1 as SubmitRejected).inputs).toBe(wrong);
      expect(wrong.moved).toBe(false);
      // a borrowed group cannot be submitted
      const v = s.group.view(s.x);
      const e2 = await expectCodeAsync(() => runtime.submit(graph, s.group), 'EBUSY');
      expect((e2 as SubmitRejected).inputs).toBe(s.group);
      v.release();
      // an aborted signal, a moved group, a program of another runtime
      await expectCodeAsync(() => runtime.submit(graph, s.group, { signal: AbortSignal.abort() }), 'ECANCELED');
      const other = createRuntime(provider);
      await expectCodeAsync(() => other.submit(graph, s.group), 'EINVAL', 'foreign-program');
      const gone = createAllocationGroup();
      gone.dispose();
      await expectCodeAsync(() => runtime.submit(graph, gone), 'EMOVED');
      // nothing was admitted, nothing changed, and the inputs still run
      expect(runtime.stats().admitted).toBe(stats.admitted);
      expect(runtime.stats().rejected - stats.rejected).toBe(4);
      expect(other.stats()).toMatchObject({ rejected: 1, admitted: 0 });
      expect(provider.counters().liveRoots).toBe(before.liveRoots + 3);
      const outcome = await (await runtime.submit(graph, s.group, { step: { alpha: 2 } })).wait();
      expect(outcome.kind).toBe('completed');
      if (outcome.kind === 'completed') {
        expect(await read(outcome.bundle.output(0))).toEqual(expected(2));
        outcome.bundle.dispose();
      }
      wrong.dispose();
      graph.dispose();
    });

    it('[G3-retired-failed] a failure after admission returns the exact inputs, only after retirement', async () => {
      const s = await setup();
      const graph = graphFor(runtime, s, true);
      const rootsBefore = ['x', 'y', 'out'].map((k) => {
        using v = s.group.view(s[k as 'x' | 'y' | 'out']);
        return v.diagnostics().root;
      });
      const before = provider.counters();
      if (pc.kind === 'webgpu') runtime.faults.invalidateNextSubmission();
      else runtime.faults.failNextHostRun();
      const handle = await runtime.submit(graph, s.group);
      expect(runtime.stats().inFlight).toBe(1);
      const outcome = await handle.wait();
      expect(outcome.kind).toBe('retired-failed');
      if (outcome.kind !== 'retired-failed') return;
      expect(outcome.cause.code).toBe(pc.kind === 'webgpu' ? 'EINVAL' : 'EIO');
      if (pc.kind === 'webgpu') expect(outcome.cause.reason).toBe('validation');
      expect(runtime.stats().inFlight).toBe(0);
      // the same allocations under the same slots; the fresh output was released
      const inputs = outcome.inputs;
      expect(inputs.descriptors()).toEqual([s.x, s.y, s.out]);
      const rootsAfter = [s.x, s.y, s.out].map((slot) => {
        using v = inputs.view(slot);
        return v.diagnostics().root;
      });
      expect(rootsAfter).toEqual(rootsBefore);
      {
        using v = inputs.view<'f32'>(s.x);
        expect(Array.from(await v.toArray())).toEqual(Array.from(xs));
      }
      const after = provider.counters();
      expect(after.liveRoots).toBe(before.liveRoots);
      expect(after.rootsDestroyed - before.rootsDestroyed).toBe(1); // the fresh output only
      inputs.dispose();
      graph.dispose();
    });

    it('[G3-error-scope] the validation error of an invalid dispatch is caught by error scopes, never thrown', async () => {
      if (pc.kind !== 'webgpu') {
        // host kernels throw synchronously inside the run; the failure still arrives as an outcome
        const s = await setup();
        const graph = graphFor(runtime, s);
        runtime.faults.failNextHostRun();
        const outcome = await (await runtime.submit(graph, s.group)).wait();
        expect(outcome.kind).toBe('retired-failed');
        if (outcome.kind === 'retired-failed') outcome.inputs.dispose();
        graph.dispose();
        return;
      }
      const s = await setup();
      const graph = graphFor(runtime, s);
      runtime.faults.invalidateNextSubmission();
      const handle = await runtime.submit(graph, s.group);
      const outcome = await handle.wait();
      expect(outcome.kind === 'retired-failed' && outcome.cause.reason).toBe('validation');
      // the device is fine afterwards: the next submission of the same inputs completes
      if (outcome.kind !== 'retired-failed') return;
      const again = await (await runtime.submit(graph, outcome.inputs, { step: { alpha: 5 } })).wait();
      expect(again.kind).toBe('completed');
      if (again.kind === 'completed') {
        expect(await read(again.bundle.output(0))).toEqual(expected(5));
        again.bundle.dispose();
      }
      graph.dispose();
    });

    it('[G3-handle-detach] a handle disposed before completion still retires; the runtime releases everything once', async () => {
      const s = await setup();
      const graph = graphFor(runtime, s, true);
      const before = provider.counters();
      const stats = runtime.stats();
      const handle = await runtime.submit(graph, s.group);
      handle.dispose();
      handle.dispose(); // idempotent
      await expectCodeAsync(() => handle.wait(), 'ERELEASED');
      // let the record retire
      while (runtime.stats().inFlight > 0 || runtime.stats().detachedReleases === stats.detachedReleases) {
        await new Promise((r) => setTimeout(r, 5));
      }
      const after = provider.counters();
      expect(runtime.stats().completed - stats.completed).toBe(1);
      expect(runtime.stats().detachedReleases - stats.detachedReleases).toBe(1);
      // 3 inputs + 1 fresh output destroyed, exactly once each
      expect(after.rootsDestroyed - before.rootsDestroyed).toBe(4);
      expect(after.liveRoots).toBe(before.liveRoots - 3);
      expect(after.doubleDestroys).toBe(0);
      graph.dispose();
    });

    // Host work never depends on a device: the device-loss cases run on WebGPU only.
    it.skipIf(pc.kind !== 'webgpu')('[G3-completion-unproven] device loss right after enqueue: no owner comes back, every root is retained forever', async () => {
      // its own provider: the loss ends that device
      const lossy = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(lossy);
      const s = await setup(lossy);
      const graph = graphFor(rt, s, true);
      const before = lossy.counters();
      rt.faults.loseDeviceAt('after-enqueue');
      const handle = await rt.submit(graph, s.group);
      const outcome: Outcome = await handle.wait();
      expect(outcome.kind).toBe('completion-unproven');
      if (outcome.kind !== 'completion-unproven') return;
      expect(outcome.cause.code).toBe('ENODEV');
      expect(Object.keys(outcome)).toEqual(['kind', 'cause', 'diagnostics']);
      expect(outcome.diagnostics.rootsRetained).toBe(4);
      const after = lossy.counters();
      expect(after.rootsRetainedForever - before.rootsRetainedForever).toBe(4);
      expect(after.rootsDestroyed).toBe(before.rootsDestroyed);
      expect(after.resourcesDestroyed).toBe(before.resourcesDestroyed);
      expect(after.liveRoots).toBe(before.liveRoots + 1); // the fresh output joined the retained roots
      expect(rt.stats().retainedRecords).toBe(1);
      // disposing the graph keeps its uniform buffer too: a lost submission may still reference it
      graph.dispose();
      expect(lossy.counters().resourcesDestroyed).toBe(before.resourcesDestroyed);
      // new work is refused before admission, and the refused group stays the caller's
      const fresh = createAllocationGroup();
      const e = await expectCodeAsync(() => rt.submit(graph, fresh), 'ENODEV', 'device-lost');
      expect((e as SubmitRejected).inputs).toBe(fresh);
      expect(fresh.moved).toBe(false);
      // an unrelated runtime on another device is untouched by this loss and still completes
      const other = await setup();
      const otherGraph = graphFor(runtime, other);
      const ok = await (await runtime.submit(otherGraph, other.group, { step: { alpha: 2 } })).wait();
      expect(ok.kind).toBe('completed');
      if (ok.kind === 'completed') {
        expect(await read(ok.bundle.output(0))).toEqual(expected(2));
        ok.bundle.dispose();
      }
      otherGraph.dispose();
    });

    it.skipIf(pc.kind !== 'webgpu')('[G3-unproven-retains] retained roots stay retained: later releases and other work never destroy or reuse them', async () => {
      const lossy = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(lossy);
      const s = await setup(lossy);
      const graph = graphFor(rt, s);
      rt.faults.loseDeviceAt('after-enqueue');
      const o = await (await rt.submit(graph, s.group)).wait();
      expect(o.kind).toBe('completion-unproven');
      const retained = lossy.counters();
      expect(retained.rootsRetainedForever).toBe(3);
      // the moved group cannot release them, graph disposal keeps the params buffer, time does not help
      expectCode(() => s.group.dispose(), 'EMOVED');
      graph.dispose();
      await new Promise((r) => setTimeout(r, 20));
      const later = lossy.counters();
      expect(later.rootsDestroyed).toBe(retained.rootsDestroyed);
      expect(later.resourcesDestroyed).toBe(retained.resourcesDestroyed);
      expect(later.liveRoots).toBe(retained.liveRoots);
      expect(rt.stats().retainedRecords).toBe(1);
    });

    it.skipIf(pc.kind !== 'webgpu')('[G3-completion-proof] a loss before enqueue is a rejection with the inputs intact, never an outcome', async () => {
      const lossy = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(lossy);
      const s = await setup(lossy);
      const graph = graphFor(rt, s);
      const before = lossy.counters();
      rt.faults.loseDeviceAt('before-enqueue');
      const e = await expectCodeAsync(() => rt.submit(graph, s.group), 'ENODEV', 'device-lost');
      expect((e as SubmitRejected).inputs).toBe(s.group);
      expect(s.group.moved).toBe(false);
      expect(rt.stats().admitted).toBe(0);
      expect(lossy.counters().rootsRetainedForever).toBe(before.rootsRetainedForever);
      // the caller still owns the inputs and can end them
      s.group.dispose();
      expect(lossy.counters().liveRoots).toBe(before.liveRoots - 3);
    });

    // Completion fences exist on WebGPU only: host runs prove themselves by returning on this thread.
    it.skipIf(pc.kind !== 'webgpu')('[G3-completion-proof] a loss reported only after onSubmittedWorkDone resolved still ends completion-unproven', async () => {
      const lossy = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(lossy);
      const s = await setup(lossy);
      const graph = graphFor(rt, s, true);
      const before = lossy.counters();
      const handle = await rt.submit(graph, s.group);
      // The device is really destroyed, but the platform reports it late.
      lossy.faults.loseDeviceSilently();
      await lossy.device.queue.onSubmittedWorkDone();
      await new Promise((r) => setTimeout(r, 0));
      await new Promise((r) => setTimeout(r, 0));
      expect(lossy.lossObserved).toBe(false);
      const outcome = await handle.wait();
      expect(outcome.kind).toBe('completion-unproven');
      if (outcome.kind !== 'completion-unproven') return;
      expect(outcome.cause.code).toBe('ENODEV');
      expect(outcome.cause.reason).toBe('completion-unproven');
      expect(Object.keys(outcome)).toEqual(['kind', 'cause', 'diagnostics']);
      expect(outcome.diagnostics.rootsRetained).toBe(4);
      // decided by the failed fence map alone: the loss is still unreported
      expect(lossy.lossObserved).toBe(false);
      expect(rt.stats()).toMatchObject({ unproven: 1, completed: 0, retainedRecords: 1, inFlight: 0, fencesFailed: 1 });
      const after = lossy.counters();
      expect(after.rootsRetainedForever - before.rootsRetainedForever).toBe(4);
      expect(after.rootsDestroyed).toBe(before.rootsDestroyed);
      expect(after.resourcesDestroyed).toBe(before.resourcesDestroyed);
      // admitted while the loss was hidden (a silent loss before enqueue): still never completed
      const t = await setup(lossy);
      const g2 = graphFor(rt, t);
      rt.faults.loseDeviceAt('before-enqueue', { silently: true });
      const late = await (await rt.submit(g2, t.group)).wait();
      expect(late.kind).toBe('completion-unproven');
      expect(rt.stats()).toMatchObject({ unproven: 2, completed: 0, retainedRecords: 2 });
      expect(lossy.counters().rootsRetainedForever - before.rootsRetainedForever).toBe(7);
      // once reported, the loss refuses new work before admission
      lossy.faults.revealLoss();
      expect(lossy.lossObserved).toBe(true);
      expect((await lossy.lost).reason).toBe('destroyed');
      const refused = createAllocationGroup();
      await expectCodeAsync(() => rt.submit(graph, refused), 'ENODEV', 'device-lost');
      expect(lossy.counters().rootsDestroyed).toBe(before.rootsDestroyed);
    });

    it.skipIf(pc.kind !== 'webgpu')('[G3-completion-proof] a fence map that resolves without its copy having landed proves nothing', async () => {
      const own = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(own);
      const s = await setup(own);
      const graph = graphFor(rt, s);
      const before = own.counters();
      rt.faults.dropNextFenceCopy();
      const outcome = await (await rt.submit(graph, s.group)).wait();
      expect(outcome.kind).toBe('completion-unproven');
      if (outcome.kind !== 'completion-unproven') return;
      expect(outcome.diagnostics.reason).toBe('fence-value-mismatch');
      expect(own.counters().rootsRetainedForever - before.rootsRetainedForever).toBe(3);
      expect(rt.stats()).toMatchObject({ fences: 1, fencesFailed: 1, retainedRecords: 1 });
      // the device itself is fine: the next submission is proven by a fence that read its own number
      expect(own.lossObserved).toBe(false);
      const t = await setup(own);
      const ok = await (await rt.submit(graph, t.group, { step: { alpha: 4 } })).wait();
      expect(ok.kind).toBe('completed');
      if (ok.kind === 'completed') {
        expect(await read(ok.bundle.output(0))).toEqual(expected(4));
        ok.bundle.dispose();
      }
      expect(rt.stats()).toMatchObject({ fences: 2, fencesFailed: 1, completed: 1 });
      own.destroy();
    });

    it.skipIf(pc.kind !== 'webgpu')('[G3-completion-proof-batched] one fence map proves every record before it and never one admitted after it', async () => {
      const lossy = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(lossy);
      const first = await setup(lossy);
      const graph = graphFor(rt, first);
      // Batching: records admitted while a fence map is outstanding are all proven by the next fence.
      const groups = [first, ...(await Promise.all(Array.from({ length: 7 }, () => setup(lossy))))];
      const resources = lossy.counters().liveResources;
      const batch = [];
      for (const g of groups) batch.push(await rt.submit(graph, g.group, { step: { alpha: 2 } }));
      expect(rt.stats().fences).toBe(1); // the first record's fence; the other 7 wait for one more
      const outcomes = await Promise.all(batch.map((h) => h.wait()));
      expect(outcomes.map((o) => o.kind)).toEqual(Array(8).fill('completed'));
      expect(rt.stats()).toMatchObject({ fences: 2, fencesFailed: 0, completed: 8, inFlight: 0 });
      for (const o of outcomes) {
        if (o.kind !== 'completed') continue;
        expect(await read(o.bundle.output(0))).toEqual(expected(2));
        o.bundle.dispose();
      }
      // no buffer per submission: the fence's staging buffers are pooled and reused
      expect(lossy.counters().liveResources).toBe(resources - 3 * groups.length);
      // A record admitted after a fence was submitted is not proven by that fence: a is covered by the
      // fence in flight, b waits for the next one, which the device never finishes.
      const a = await setup(lossy);
      const b = await setup(lossy);
      const before = lossy.counters();
      const ha = await rt.submit(graph, a.group);
      const hb = await rt.submit(graph, b.group);
      expect(rt.stats().fences).toBe(3);
      const oa = await ha.wait();
      expect(oa.kind).toBe('completed');
      lossy.faults.loseDeviceSilently();
      const ob = await hb.wait();
      expect(ob.kind).toBe('completion-unproven');
      expect(rt.stats()).toMatchObject({ fences: 4, fencesFailed: 1, unproven: 1 });
      expect(lossy.counters().rootsRetainedForever - before.rootsRetainedForever).toBe(3);
      if (oa.kind === 'completed') oa.bundle.dispose();
      lossy.faults.revealLoss();
    });
  });
}
