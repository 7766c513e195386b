// Plan: replay costs and long-run balance of compiled graphs (G3 graphs, G5 prepared binding). Counters
// show that pipelines and bind groups are made at compile / first bind, never per replay; that per-replay
// work (dispatches, provider resolutions, validations) does not depend on element counts; and that
// 10,000 submit/retire cycles leave live memory, in-flight records and pending outcomes at zero.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAllocationGroup, createRuntime, fromArray, zeros } from '../../src/index.js';
import type { AllocationGroup, CompiledGraph, DescriptorSlot, HostProvider, Runtime, StepValues, WebGPUProvider } from '../../src/index.js';
import { axpy } from '../support/kernels/axpy.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { providerCases } from '../support/providers.js';

interface Chain {
  group: AllocationGroup;
  graph: CompiledGraph;
  a: DescriptorSlot;
}

/** A three-dispatch chain a -> b -> c -> a over n elements. */
async function chain(runtime: Runtime, provider: HostProvider | WebGPUProvider, n: number): Promise<Chain> {
  const group = createAllocationGroup();
  const a = group.insert(await fromArray(provider, 'f32', Float32Array.from({ length: n }, (_, i) => i % 7))).descriptor;
  const b = group.insert(await zeros(provider, 'f32', [n])).descriptor;
  const c = group.insert(await zeros(provider, 'f32', [n])).descriptor;
  const decl = (slot: DescriptorSlot) => ({ slot, dtype: 'f32' as const, shape: [n] });
  const graph = runtime.compile({
    name: `chain${n}`,
    inputs: { a: decl(a), b: decl(b), c: decl(c) },
    dispatches: [
      { kernel: axpy, bind: ['a', 'a', 'b'], params: (s: StepValues) => ({ n, alpha: s['alpha'] ?? 1 }) },
      { kernel: axpy, bind: ['b', 'a', 'c'], params: { n, alpha: 1 } },
      { kernel: axpy, bind: ['c', 'b', 'a'], params: { n, alpha: 0 } },
    ],
    outputs: ['a'],
  });
  return { group, graph, a };
}

for (const pc of providerCases()) {
  describe(`graph replay on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    let runtime: Runtime;
    beforeAll(async () => {
      provider = await pc.make();
      runtime = createRuntime(provider);
    });
    afterAll(() => {
      if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    /** Runs `replays` submissions, feeding each bundle's group into the next, and returns counter deltas. */
    async function replay(c: Chain, replays: number) {
      const before = provider.counters();
      const statsBefore = c.graph.stats();
      let group = c.group;
      for (let i = 0; i < replays; i++) {
        const outcome = await (await runtime.submit(c.graph, group, { step: { alpha: 1 } })).wait();
        if (outcome.kind !== 'completed') throw new Error(`replay ${i}: ${outcome.kind}`);
        group = outcome.bundle.intoGroup().group;
      }
      c.group = group;
      const after = provider.counters();
      const stats = c.graph.stats();
      return {
        dispatches: after.dispatches - before.dispatches,
        providerResolutions: after.providerResolutions - before.providerResolutions,
        validations: after.validations - before.validations,
        maps: after.maps - before.maps,
        rootsCreated: after.rootsCreated - before.rootsCreated,
        bindGroupsCreated: stats.bindGroupsCreated - statsBefore.bindGroupsCreated,
        replays: stats.replays - statsBefore.replays,
      };
    }

    it('[G5-bind-once] per-replay work is the same for 1 and 100,000 elements; pipelines and bind groups are made once', async () => {
      const small = await chain(runtime, provider, 1);
      const large = await chain(runtime, provider, 100_000);
      // one kernel with one specialization: the first graph creates its pipeline, the second reuses it
      expect(large.graph.stats().pipelinesCreated).toBe(0);
      expect(small.graph.stats().pipelinesCreated).toBeLessThanOrEqual(pc.kind === 'webgpu' ? 1 : 0);
      const pipelinesAfterCompile = runtime.pipelinesCreated;
      // first replay creates the bind groups; later replays create none
      const firstSmall = await replay(small, 1);
      const firstLarge = await replay(large, 1);
      expect(firstSmall.bindGroupsCreated).toBe(pc.kind === 'webgpu' ? 3 : 0);
      expect(firstLarge.bindGroupsCreated).toBe(firstSmall.bindGroupsCreated);
      const s = await replay(small, 5);
      const l = await replay(large, 5);
      expect(l).toEqual(s);
      // WebGPU resolves each dispatch's bindings per replay; the host replays its prepared step (G5-prepared-host-step)
      const resolutions = pc.kind === 'webgpu' ? 15 : 0;
      expect(s).toEqual({ dispatches: 15, providerResolutions: resolutions, validations: 0, maps: 0, rootsCreated: 0, bindGroupsCreated: 0, replays: 5 });
      expect(runtime.pipelinesCreated).toBe(pipelinesAfterCompile);
      // and the results are right: a <- (a + a) + a + ... ; every element of each
      for (const [c, n] of [[small, 1], [large, 100_000]] as const) {
        using v = c.group.view<'f32'>(c.a);
        const values = await v.toArray();
        // each replay: b = a + a; c = b + a; a = 0 * c + b  => a doubles per replay (6 replays)
        expect(Array.from(values)).toEqual(Array.from({ length: n }, (_, i) => (i % 7) * 2 ** 6));
      }
      small.group.dispose();
      large.group.dispose();
      small.graph.dispose();
      large.graph.dispose();
    });

    it('[G3-outcome-one] 10,000 submit/retire cycles each end in exactly one outcome and leave nothing behind', async () => {
      const c = await chain(runtime, provider, 64);
      const before = provider.counters();
      const stats = runtime.stats();
      let group = c.group;
      const kinds = new Map<string, number>();
      for (let i = 0; i < 10_000; i++) {
        const outcome = await (await runtime.submit(c.graph, group)).wait();
        kinds.set(outcome.kind, (kinds.get(outcome.kind) ?? 0) + 1);
        if (outcome.kind !== 'completed') throw new Error(outcome.kind);
        group = outcome.bundle.intoGroup().group;
      }
      expect(Object.fromEntries(kinds)).toEqual({ completed: 10_000 });
      const now = runtime.stats();
      expect(now.admitted - stats.admitted).toBe(10_000);
      expect(now.completed - stats.completed).toBe(10_000);
      expect(now.inFlight).toBe(0);
      const after = provider.counters();
      expect(after.liveRoots).toBe(before.liveRoots);
      expect(after.liveBytes).toBe(before.liveBytes);
      expect(after.liveResources).toBe(before.liveResources);
      expect(after.rootsCreated).toBe(before.rootsCreated);
      group.dispose();
      c.graph.dispose();
      expect(provider.counters().liveRoots).toBe(before.liveRoots - 3);
      // the graph's own buffer went with it
      if (pc.kind === 'webgpu') expect(provider.counters().liveResources).toBe(before.liveResources - 4);
    });

    it('[G3-outcome-one] many submissions in flight at once all retire, each exactly once', async () => {
      const chains = await Promise.all(Array.from({ length: 8 }, () => chain(runtime, provider, 32)));
      const before = provider.counters();
      const handles = await Promise.all(chains.map((c) => runtime.submit(c.graph, c.group)));
      expect(runtime.stats().inFlight).toBe(8);
      const outcomes = await Promise.all(handles.map((h) => h.wait()));
      expect(outcomes.map((o) => o.kind)).toEqual(Array(8).fill('completed'));
      expect(runtime.stats().inFlight).toBe(0);
      for (const o of outcomes) if (o.kind === 'completed') o.bundle.dispose();
      for (const c of chains) c.graph.dispose();
      expect(provider.counters().liveRoots).toBe(before.liveRoots - 24);
    });

    // Host outputs are read in place: there is no map and no device to lose, so this runs on WebGPU only.
    it.skipIf(pc.kind !== 'webgpu')('[G3-completion-proof] a device loss while an output is mapped fails that read with a code; the bundle stays releasable', async () => {
      const lossy = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(lossy);
      const c = await chain(rt, lossy, 16);
      const outcome = await (await rt.submit(c.graph, c.group)).wait();
      expect(outcome.kind).toBe('completed');
      if (outcome.kind !== 'completed') return;
      const before = lossy.counters();
      lossy.faults.loseDeviceDuringNextMap();
      const view = outcome.bundle.output<'f32'>(0);
      await expectCodeAsync(() => view.toArray(), 'ENODEV', 'device-lost');
      view.release();
      // the staging buffer of the failed map was destroyed; no root was lost or retained
      const after = lossy.counters();
      expect(after.liveResources).toBe(before.liveResources);
      expect(after.rootsRetainedForever).toBe(0);
      outcome.bundle.dispose();
      expect(lossy.counters().liveRoots).toBe(before.liveRoots - 3);
    });
  });
}
