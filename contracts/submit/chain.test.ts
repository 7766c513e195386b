// Plan: chained submissions on a live group and small pooled readbacks (G3-chain-*, G3-readback-*), on
// every provider of the lane, with real dispatches. The workload is a running sum: each member adds
// alpha * x to a state vector s (two axpy dispatches through a temporary) and may read s[0] back, so every
// member's readback names exactly the state that member left, although later members keep changing it.
// Each test asserts the outcome kinds and what they carry, what the caller can reach meanwhile, and the
// counters: runtime stats (admitted, chained, passedOn, fences, stamp proofs, queue submits, host awaits,
// bytes read back, buffers and bind groups created) and provider counters (roots destroyed / retained
// forever, GPU resources). Faults go through the named seams (runtime.faults, provider.faults), which break
// the real device, command buffer or fence. Control cases: the same chain without a fault.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChainHandle, READBACK_MAX_BYTES, READBACK_POOL_LIMIT, SubmitRejected, createAllocationGroup, createRuntime, fromArray, zeros } from '../../src/index.js';
import type { AllocationGroup, ChainOutcome, CompiledGraph, DescriptorSlot, HostProvider, ReadbackRequest, Runtime, StepValues, WebGPUProvider } from '../../src/index.js';
import { axpy } from '../support/kernels/axpy.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { providerCases } from '../support/providers.js';

const N = 64;
const start = Float32Array.from({ length: N }, (_, i) => i);

interface State {
  group: AllocationGroup;
  x: DescriptorSlot;
  s: DescriptorSlot;
  t: DescriptorSlot;
  z: DescriptorSlot;
}

/** s[i] after members with these alphas: i + their sum (x is all ones). */
const summed = (alphas: readonly number[]): number[] => Array.from(start, (v) => v + alphas.reduce((a, b) => a + b, 0));
/** s[0] after each member in turn. */
const running = (alphas: readonly number[]): number[] => alphas.map((_, i) => alphas.slice(0, i + 1).reduce((a, b) => a + b, 0));

for (const pc of providerCases()) {
  describe(`chained submissions on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    let runtime: Runtime;
    beforeAll(async () => {
      provider = await pc.make();
      runtime = createRuntime(provider);
    });
    afterAll(() => {
      if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    async function setup(p: HostProvider | WebGPUProvider = provider): Promise<State> {
      const group = createAllocationGroup();
      const x = group.insert(await fromArray(p, 'f32', new Float32Array(N).fill(1))).descriptor;
      const s = group.insert(await fromArray(p, 'f32', start)).descriptor;
      const t = group.insert(await zeros(p, 'f32', [N])).descriptor;
      const z = group.insert(await zeros(p, 'f32', [N])).descriptor;
      return { group, x, s, t, z };
    }

    /** s += alpha * x; with `fresh`, also a fresh output w = 2 * s. */
    function accumulate(rt: Runtime, st: State, fresh = false): CompiledGraph {
      const vec = (slot: DescriptorSlot) => ({ slot, dtype: 'f32' as const, shape: [N] });
      return rt.compile({
        name: fresh ? 'accumulate+w' : 'accumulate',
        inputs: { x: vec(st.x), s: vec(st.s), t: vec(st.t), z: vec(st.z) },
        fresh: fresh ? [{ name: 'w', dtype: 'f32', shape: [N] }] : [],
        dispatches: [
          { kernel: axpy, bind: ['x', 's', 't'], params: (step: StepValues) => ({ n: N, alpha: step['alpha'] ?? 1 }) },
          { kernel: axpy, bind: ['t', 'z', 's'], params: { n: N, alpha: 1 } },
          ...(fresh ? [{ kernel: axpy, bind: ['s', 'z', 'w'], params: { n: N, alpha: 2 } }] : []),
        ],
        outputs: fresh ? ['s', 'w'] : ['s'],
      });
    }

    const first = (st: State): ReadbackRequest[] => [{ slot: st.s, count: 1 }];

    async function values(outcome: ChainOutcome, output = 0): Promise<number[]> {
      if (outcome.kind !== 'completed') throw new Error(`expected completed, got ${outcome.kind}`);
      using v = outcome.bundle.output<'f32'>(output);
      return Array.from(await v.toArray());
    }

    it('[G3-chain-pass-on] five members on one group: each earlier member ends passed-on after its proof with its own readback; the last gives the group back', async () => {
      const st = await setup();
      const graph = accumulate(runtime, st);
      const alphas = [1, 2, 3, 4, 5];
      const before = runtime.stats();
      const handles = [await runtime.chain(graph, st.group, { step: { alpha: alphas[0]! }, readback: first(st) })];
      // admitted: the caller's group object is moved, nothing of the group is reachable from the host
      expect(st.group.moved).toBe(true);
      expectCode(() => st.group.view(st.s), 'EMOVED');
      for (const alpha of alphas.slice(1)) handles.push(await handles.at(-1)!.chain(graph, { step: { alpha }, readback: first(st) }));
      // a chain is a line: a member passes its group on once, and the refused call changes nothing
      await expectCodeAsync(() => handles[0]!.chain(graph, { step: { alpha: 9 } }), 'EMOVED', 'chain-passed-on');
      const outcomes = await Promise.all(handles.map((h) => h.wait()));
      expect(outcomes.map((o) => o.kind)).toEqual(['passed-on', 'passed-on', 'passed-on', 'passed-on', 'completed']);
      const sums = running(alphas);
      outcomes.forEach((o, i) => {
        if (o.kind === 'passed-on') {
          expect(Object.keys(o)).toEqual(['kind', 'next', 'fresh', 'readback']);
          expect(o.next).toBe(handles[i + 1]!.index);
          expect(o.fresh.descriptors()).toEqual([]); // no fresh outputs, and no slot of the chain's group
          o.fresh.dispose();
        }
        if (o.kind === 'passed-on' || o.kind === 'completed') {
          expect(o.readback.length).toBe(1);
          expect(o.readback[0]).toBeInstanceOf(Float32Array);
          expect(Array.from(o.readback[0]!)).toEqual([sums[i]]);
        }
      });
      expect(await values(outcomes[4]!)).toEqual(summed(alphas));
      const after = runtime.stats();
      expect(after.admitted - before.admitted).toBe(5);
      expect(after.chained - before.chained).toBe(4);
      expect(after.passedOn - before.passedOn).toBe(4);
      expect(after.completed - before.completed).toBe(1);
      expect(after.rejected - before.rejected).toBe(1);
      expect(after.bytesReadBack - before.bytesReadBack).toBe(5 * Float32Array.BYTES_PER_ELEMENT);
      expect(after.inFlight).toBe(0);
      if (outcomes[4]!.kind === 'completed') outcomes[4]!.bundle.dispose();
      graph.dispose();
    });

    it('[G3-chain-pass-on] a proven newest member nobody claimed is parked: chain() passes the group on, wait() takes it back, then the chain is ended', async () => {
      const st = await setup();
      const graph = accumulate(runtime, st);
      const h1 = await runtime.chain(graph, st.group, { step: { alpha: 1 } });
      await runtime.idle(); // h1 is proven; unclaimed, it keeps the group
      expect(runtime.stats().inFlight).toBe(0);
      const h2 = await h1.chain(graph, { step: { alpha: 2 }, readback: first(st) });
      const o1 = await h1.wait();
      expect(o1.kind).toBe('passed-on');
      if (o1.kind === 'passed-on') {
        expect(o1.next).toBe(h2.index);
        expect(o1.readback).toEqual([]); // none declared
        o1.fresh.dispose();
      }
      const o2 = await h2.wait();
      expect(o2.kind).toBe('completed');
      if (o2.kind !== 'completed') return;
      expect(Array.from(o2.readback[0]!)).toEqual([3]);
      expect(await values(o2)).toEqual(summed([1, 2]));
      // the group went back with h2's outcome: h2 cannot pass it on any more
      await expectCodeAsync(() => h2.chain(graph, {}), 'EMOVED', 'chain-ended');
      await expectCodeAsync(() => runtime.chain(graph, h2, {}), 'EMOVED', 'chain-ended');
      // the returned group starts a new chain; a disposed, parked member releases it exactly once
      const back = o2.bundle.intoGroup().group;
      const roots = provider.counters();
      const detached = runtime.stats().detachedReleases;
      const h3 = await runtime.chain(graph, back, { step: { alpha: 4 } });
      await runtime.idle();
      h3.dispose();
      await expectCodeAsync(() => h3.wait(), 'ERELEASED');
      await expectCodeAsync(() => h3.chain(graph, {}), 'ERELEASED');
      await Promise.resolve();
      await Promise.resolve();
      expect(runtime.stats().detachedReleases - detached).toBe(1);
      expect(provider.counters().rootsDestroyed - roots.rootsDestroyed).toBe(4);
      expect(provider.counters().doubleDestroys).toBe(0);
      graph.dispose();
    });

    it('[G3-chain-pass-on] a refused first member is SubmitRejected with the group untouched; a handle of another runtime is refused', async () => {
      const st = await setup();
      const graph = accumulate(runtime, st);
      const e = await expectCodeAsync(() => runtime.chain(graph, st.group, { signal: AbortSignal.abort() }), 'ECANCELED');
      expect(e).toBeInstanceOf(SubmitRejected);
      expect((e as SubmitRejected).inputs).toBe(st.group);
      expect(st.group.moved).toBe(false);
      const h = await runtime.chain(graph, st.group, { step: { alpha: 1 } });
      const other = createRuntime(provider);
      await expectCodeAsync(() => other.chain(graph, h, {}), 'EINVAL', 'foreign-handle');
      // a program of another runtime, on a good handle: refused, the handle still chains
      const foreign = accumulate(other, st);
      await expectCodeAsync(() => h.chain(foreign, {}), 'EINVAL', 'foreign-program');
      const h2 = await h.chain(graph, { step: { alpha: 2 } });
      expect((await h.wait()).kind).toBe('passed-on');
      const o = await h2.wait();
      expect(await values(o)).toEqual(summed([1, 2]));
      if (o.kind === 'completed') o.bundle.dispose();
      expect(Object.getOwnPropertyNames(ChainHandle.prototype).sort()).toEqual(['chain', 'constructor', 'dispose', 'wait']);
      foreign.dispose();
      graph.dispose();
    });

    it('[G3-chain-proof] members are decided in submission order and the group comes back only after the last member retired', async () => {
      const st = await setup();
      const graph = accumulate(runtime, st, true);
      const order: number[] = [];
      const h1 = await runtime.chain(graph, st.group, { step: { alpha: 1 } });
      const h2 = await h1.chain(graph, { step: { alpha: 1 } });
      const h3 = await h2.chain(graph, { step: { alpha: 1 } });
      // claim the last one first: its outcome still comes after the earlier members'
      const all = [h3, h1, h2].map((h) => h.wait().then((o) => (order.push(h.index), o)));
      const [o3, o1, o2] = await Promise.all(all);
      expect(order).toEqual([h1.index, h2.index, h3.index]);
      expect([o1!.kind, o2!.kind, o3!.kind]).toEqual(['passed-on', 'passed-on', 'completed']);
      // each earlier member's fresh output is its own, proven: w = 2 * s as that member left s
      for (const [o, k] of [[o1!, 1], [o2!, 2]] as const) {
        if (o.kind !== 'passed-on') continue;
        expect(o.fresh.descriptors()).toEqual([0]);
        {
          using w = o.fresh.view<'f32'>(o.fresh.descriptors()[0]!);
          expect(Array.from(await w.toArray())).toEqual(summed(Array(k).fill(1)).map((v) => 2 * v));
        }
        o.fresh.dispose();
      }
      expect(await values(o3!)).toEqual(summed([1, 1, 1]));
      expect(await values(o3!, 1)).toEqual(summed([1, 1, 1]).map((v) => 2 * v));
      if (o3!.kind === 'completed') o3!.bundle.dispose();
      graph.dispose();
    });

    it.skipIf(pc.kind !== 'webgpu')('[G3-chain-proof] an earlier member proven, the last one not: the group never comes back and is retained forever', async () => {
      const own = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(own);
      const st = await setup(own);
      const graph = accumulate(rt, st);
      const before = own.counters();
      const h1 = await rt.chain(graph, st.group, { step: { alpha: 1 } }); // its fence is already submitted
      rt.faults.dropNextFenceCopy(); // the fence that covers h2 reads back an older number
      const h2 = await h1.chain(graph, { step: { alpha: 2 } });
      const o1 = await h1.wait();
      expect(o1.kind).toBe('passed-on');
      if (o1.kind === 'passed-on') o1.fresh.dispose();
      const o2 = await h2.wait();
      expect(o2.kind).toBe('completion-unproven');
      if (o2.kind !== 'completion-unproven') return;
      expect(Object.keys(o2)).toEqual(['kind', 'cause', 'diagnostics']);
      expect(o2.diagnostics.reason).toBe('fence-value-mismatch');
      expect(o2.diagnostics.rootsRetained).toBe(4);
      expect(own.counters().rootsRetainedForever - before.rootsRetainedForever).toBe(4);
      expect(own.counters().rootsDestroyed).toBe(before.rootsDestroyed);
      expect(rt.stats()).toMatchObject({ fences: 2, fencesFailed: 1, passedOn: 1, unproven: 1, completed: 0, retainedRecords: 1 });
      // the device is fine, but this chain is over: it can never be extended again
      expect(own.lossObserved).toBe(false);
      await expectCodeAsync(() => h2.chain(graph, {}), 'ENODEV', 'chain-unproven');
      own.destroy();
    });

    it.skipIf(pc.kind !== 'webgpu')('[G3-chain-loss-retains] a device lost mid-chain: every member is completion-unproven; the group and the first member\'s fresh output are retained forever, none freed', async () => {
      const lossy = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(lossy);
      const st = await setup(lossy);
      const withFresh = accumulate(rt, st, true);
      const plain = accumulate(rt, st);
      const before = lossy.counters();
      const h1 = await rt.chain(withFresh, st.group, { step: { alpha: 1 }, readback: first(st) });
      rt.faults.loseDeviceAt('after-enqueue'); // the device goes right after h2 is queued, before any proof
      const h2 = await h1.chain(plain, { step: { alpha: 2 }, readback: first(st) });
      // no more members; the newest member's handle is unchanged
      await expectCodeAsync(() => h2.chain(plain, {}), 'ENODEV', 'device-lost');
      const [o1, o2] = await Promise.all([h1.wait(), h2.wait()]);
      expect([o1.kind, o2.kind]).toEqual(['completion-unproven', 'completion-unproven']);
      if (o1.kind !== 'completion-unproven' || o2.kind !== 'completion-unproven') return;
      expect(o1.cause.code).toBe('ENODEV');
      expect(o1.cause.reason).toBe('completion-unproven');
      expect(o1.diagnostics.rootsRetained).toBe(1); // its fresh output w (the group had moved on)
      expect(o2.diagnostics.rootsRetained).toBe(4); // the group, held by the newest member
      const after = lossy.counters();
      expect(after.rootsRetainedForever - before.rootsRetainedForever).toBe(5);
      expect(after.rootsDestroyed).toBe(before.rootsDestroyed);
      expect(after.resourcesDestroyed).toBe(before.resourcesDestroyed);
      expect(after.liveRoots).toBe(before.liveRoots + 1);
      expect(rt.stats()).toMatchObject({ unproven: 2, passedOn: 0, completed: 0, retainedRecords: 2, inFlight: 0, bytesReadBack: 0 });
      // the graphs' params buffers stay too: lost members may still reference them
      withFresh.dispose();
      plain.dispose();
      expect(lossy.counters().resourcesDestroyed).toBe(before.resourcesDestroyed);
      expectCode(() => st.group.dispose(), 'EMOVED');
    });

    it.skipIf(pc.kind !== 'webgpu')('[G3-chain-loss-retains] a loss reported only late: three members with readbacks end unproven, no value is delivered, the chain refuses more', async () => {
      const lossy = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(lossy);
      const st = await setup(lossy);
      const graph = accumulate(rt, st);
      const before = lossy.counters();
      const h1 = await rt.chain(graph, st.group, { step: { alpha: 1 }, readback: first(st) });
      const h2 = await h1.chain(graph, { step: { alpha: 2 }, readback: first(st) });
      const h3 = await h2.chain(graph, { step: { alpha: 3 }, readback: first(st) });
      lossy.faults.loseDeviceSilently();
      const outcomes = await Promise.all([h1, h2, h3].map((h) => h.wait()));
      expect(outcomes.map((o) => o.kind)).toEqual(['completion-unproven', 'completion-unproven', 'completion-unproven']);
      expect(outcomes.map((o) => (o.kind === 'completion-unproven' ? o.diagnostics.rootsRetained : -1))).toEqual([0, 0, 4]);
      // decided by failed maps alone: the loss is still unreported
      expect(lossy.lossObserved).toBe(false);
      await expectCodeAsync(() => h3.chain(graph, {}), 'ENODEV', 'chain-unproven');
      const after = lossy.counters();
      expect(after.rootsRetainedForever - before.rootsRetainedForever).toBe(4);
      expect(after.rootsDestroyed).toBe(before.rootsDestroyed);
      expect(rt.stats()).toMatchObject({ unproven: 3, completed: 0, passedOn: 0, bytesReadBack: 0, stampProofs: 0, readbackBuffersInUse: 0 });
      lossy.faults.revealLoss();
    });

    it('[G3-chain-failed] a failing member: it and every later member end passed-on-failed with its cause, the last retired-failed with the exact group once the whole chain is proven', async () => {
      const st = await setup();
      const graph = accumulate(runtime, st, true);
      // h3 and h4 have no fresh outputs, so they are admitted before h2's failure can be known (chaining
      // onto a chain whose failure is already known is refused, below)
      const plain = accumulate(runtime, st);
      const roots = [st.x, st.s, st.t, st.z].map((slot) => {
        using v = st.group.view(slot);
        return v.diagnostics().root;
      });
      const before = provider.counters();
      const stats = runtime.stats();
      const h1 = await runtime.chain(graph, st.group, { step: { alpha: 1 }, readback: first(st) });
      if (pc.kind === 'webgpu') runtime.faults.invalidateNextSubmission();
      else runtime.faults.failNextHostRun();
      const h2 = await h1.chain(graph, { step: { alpha: 2 }, readback: first(st) });
      const h3 = await h2.chain(plain, { step: { alpha: 3 }, readback: first(st) });
      const h4 = await h3.chain(plain, { step: { alpha: 4 }, readback: first(st) });
      const [o1, o2, o3] = await Promise.all([h1.wait(), h2.wait(), h3.wait()]);
      expect([o1.kind, o2.kind, o3.kind]).toEqual(['passed-on', 'passed-on-failed', 'passed-on-failed']);
      if (o1.kind === 'passed-on') {
        expect(Array.from(o1.readback[0]!)).toEqual([1]); // proven before the failure: delivered
        o1.fresh.dispose();
      }
      if (o2.kind !== 'passed-on-failed' || o3.kind !== 'passed-on-failed') return;
      expect(Object.keys(o2)).toEqual(['kind', 'next', 'cause']);
      expect(o2.cause.code).toBe(pc.kind === 'webgpu' ? 'EINVAL' : 'EIO');
      expect(o2.cause.reason).toBe(pc.kind === 'webgpu' ? 'validation' : 'injected');
      if (pc.kind === 'webgpu') expect(o2.cause.ids).toEqual({ submission: h2.index });
      expect(o3.cause).toBe(o2.cause);
      // once the failure is known, the chain takes no new member
      await runtime.idle();
      await expectCodeAsync(() => h4.chain(graph, {}), 'EIO', 'chain-failed');
      const o4 = await h4.wait();
      expect(o4.kind).toBe('retired-failed');
      if (o4.kind !== 'retired-failed') return;
      expect(o4.cause).toBe(o2.cause);
      const inputs = o4.inputs;
      expect(inputs.descriptors()).toEqual([st.x, st.s, st.t, st.z]);
      expect(
        [st.x, st.s, st.t, st.z].map((slot) => {
          using v = inputs.view(slot);
          return v.diagnostics().root;
        }),
      ).toEqual(roots);
      const after = provider.counters();
      // fresh outputs: h1's was delivered (and disposed above), h2's destroyed with its outcome
      expect(after.rootsDestroyed - before.rootsDestroyed).toBe(2);
      expect(after.liveRoots).toBe(before.liveRoots);
      expect(runtime.stats().retiredFailed - stats.retiredFailed).toBe(1);
      expect(runtime.stats().passedOn - stats.passedOn).toBe(3);
      // the returned group runs again
      const again = await runtime.chain(graph, inputs, { step: { alpha: 1 }, readback: first(st) });
      const ok = await again.wait();
      expect(ok.kind).toBe('completed');
      if (ok.kind === 'completed') {
        expect(ok.readback[0]!.length).toBe(1);
        ok.bundle.dispose();
      }
      graph.dispose();
      plain.dispose();
    });

    it('[G3-readback-pooled] readbacks are checked before admission: a bad range is refused with the group untouched', async () => {
      const st = await setup();
      const graph = accumulate(runtime, st);
      const cases: [ReadbackRequest[], string][] = [
        [[{ slot: st.s, offset: N - 1, count: 2 }], 'readback-range'],
        [[{ slot: st.s, count: 0 }], 'readback-range'],
        [[{ slot: st.s, offset: -1 }], 'readback-range'],
        [Array.from({ length: READBACK_MAX_BYTES / (N * 4) + 1 }, () => ({ slot: st.s })), 'readback-too-large'],
      ];
      for (const [readback, reason] of cases) {
        const e = await expectCodeAsync(() => runtime.chain(graph, st.group, { readback }), 'EINVAL', reason);
        expect((e as SubmitRejected).inputs).toBe(st.group);
        expect(st.group.moved).toBe(false);
      }
      // a strided descriptor cannot be read back
      const strided = st.group.alias(st.group.allocationOf(st.t), 'f32', { shape: [N / 2], strides: [2] });
      await expectCodeAsync(() => runtime.submit(graph, st.group, { readback: [{ slot: strided }] }), 'EINVAL', 'readback-not-contiguous');
      expect(st.group.moved).toBe(false);
      const o = await (await runtime.submit(graph, st.group, { step: { alpha: 2 }, readback: [{ slot: st.s, offset: 2, count: 3 }] })).wait();
      expect(o.kind).toBe('completed');
      if (o.kind !== 'completed') return;
      expect(Array.from(o.readback![0]!)).toEqual([4, 5, 6]);
      o.bundle.dispose();
      graph.dispose();
    });

    it.skipIf(pc.kind !== 'webgpu')('[G3-readback-pooled] the staging pool is bounded: a chain deeper than the pool is refused with EAGAIN before admission; a device range must be word-aligned', async () => {
      const own = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(own);
      const st = await setup(own);
      const graph = accumulate(rt, st);
      const bytes = createAllocationGroup();
      const b = bytes.insert(await zeros(own, 'u8', [8])).descriptor;
      const program = rt.compile({ name: 'noop', inputs: {}, dispatches: [], outputs: [] });
      await expectCodeAsync(() => rt.submit(program, bytes, { readback: [{ slot: b, offset: 1, count: 4 }] }), 'EINVAL', 'readback-unaligned');
      await expectCodeAsync(() => rt.submit(program, bytes, { readback: [{ slot: b, count: 3 }] }), 'EINVAL', 'readback-unaligned');
      const handles = [await rt.chain(graph, st.group, { step: { alpha: 1 }, readback: first(st) })];
      while (handles.length < READBACK_POOL_LIMIT) handles.push(await handles.at(-1)!.chain(graph, { step: { alpha: 1 }, readback: first(st) }));
      expect(rt.stats()).toMatchObject({ readbackBuffers: READBACK_POOL_LIMIT, readbackBuffersInUse: READBACK_POOL_LIMIT });
      const tail = handles.at(-1)!;
      await expectCodeAsync(() => tail.chain(graph, { step: { alpha: 1 }, readback: first(st) }), 'EAGAIN', 'readback-pool-exhausted');
      // refused before admission: the tail still holds the group and passes it on to a member without one
      const more = await tail.chain(graph, { step: { alpha: 1 } });
      const outcomes = await Promise.all([...handles, more].map((h) => h.wait()));
      expect(outcomes.map((o) => o.kind)).toEqual([...Array(READBACK_POOL_LIMIT).fill('passed-on'), 'completed']);
      expect(outcomes.map((o) => (o.kind === 'passed-on' ? o.readback[0]![0] : -1))).toEqual([...running(Array(READBACK_POOL_LIMIT).fill(1)), -1]);
      expect(rt.stats()).toMatchObject({ readbackBuffers: READBACK_POOL_LIMIT, readbackBuffersInUse: 0 });
      own.destroy();
    });

    it('[G3-readback-pooled] [G3-chain-counters] a decode-shaped loop (step t+1 chained before step t is read): after warm-up no buffer, no bind group, one queue submit and one host await per step, 4 bytes read back per step', async () => {
      const own = pc.kind === 'webgpu' ? ((await pc.make()) as WebGPUProvider) : provider;
      const rt = createRuntime(own);
      const st = await setup(own);
      const graph = accumulate(rt, st);
      const STEPS = 24;
      const alphas = Array.from({ length: STEPS + 2 }, (_, i) => (i % 3) + 1);
      const sums = running(alphas);
      // warm-up: two members in flight at once, as in the loop
      let prev = await rt.chain(graph, st.group, { step: { alpha: alphas[0]! }, readback: first(st) });
      let cur = await prev.chain(graph, { step: { alpha: alphas[1]! }, readback: first(st) });
      let o = await prev.wait();
      expect(o.kind === 'passed-on' && o.readback[0]![0]).toBe(sums[0]);
      await rt.idle(); // the counters below then hold whole steps only
      const stats = rt.stats();
      const counters = own.counters();
      const graphStats = graph.stats();
      const seen: number[] = [];
      for (let t = 2; t < STEPS + 2; t++) {
        const next = await cur.chain(graph, { step: { alpha: alphas[t]! }, readback: first(st) });
        o = await cur.wait();
        if (o.kind !== 'passed-on') throw new Error(`step ${t - 1}: ${o.kind}`);
        seen.push(o.readback[0]![0]!);
        o.fresh.dispose();
        prev = cur;
        cur = next;
      }
      const last = await cur.wait();
      expect(last.kind).toBe('completed');
      expect(seen).toEqual(sums.slice(1, STEPS + 1));
      const after = rt.stats();
      const gpu = pc.kind === 'webgpu';
      expect(after.admitted - stats.admitted).toBe(STEPS);
      expect(after.chained - stats.chained).toBe(STEPS);
      expect(after.bytesReadBack - stats.bytesReadBack).toBe(STEPS * 4);
      expect(after.buffersCreated - stats.buffersCreated).toBe(0);
      expect(after.bindGroupsCreated - stats.bindGroupsCreated).toBe(0);
      expect(graph.stats().bindGroupsCreated - graphStats.bindGroupsCreated).toBe(0);
      expect(graph.stats().replays - graphStats.replays).toBe(STEPS);
      expect(own.counters().resourcesCreated - counters.resourcesCreated).toBe(0);
      // each step is one queue submit proven by its own stamp: one host await, no fence
      expect(after.queueSubmits - stats.queueSubmits).toBe(gpu ? STEPS : 0);
      expect(after.hostAwaits - stats.hostAwaits).toBe(gpu ? STEPS : 0);
      expect(after.stampProofs - stats.stampProofs).toBe(gpu ? STEPS : 0);
      expect(after.fences - stats.fences).toBe(0);
      expect(after.readbackBuffers).toBe(gpu ? 2 : 0);
      expect(after.readbackBuffersInUse).toBe(0);
      if (last.kind === 'completed') {
        expect(Array.from(last.readback[0]!)).toEqual([sums[STEPS + 1]]);
        expect(await values(last)).toEqual(summed(alphas));
        last.bundle.dispose();
      }
      graph.dispose();
      if (own !== provider) (own as WebGPUProvider).destroy();
    });

    it.skipIf(pc.kind !== 'webgpu')('[G3-readback-stamp-proof] a stamp that does not read back its own number proves nothing: a fence decides and the values are reported lost', async () => {
      const own = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(own);
      const st = await setup(own);
      const graph = accumulate(rt, st);
      // control: the stamp proves the submission, no fence
      const ok = await (await rt.chain(graph, st.group, { step: { alpha: 1 }, readback: first(st) })).wait();
      expect(ok.kind).toBe('completed');
      expect(rt.stats()).toMatchObject({ fences: 0, stampProofs: 1 });
      if (ok.kind !== 'completed') return;
      expect(Array.from(ok.readback[0]!)).toEqual([1]);
      const back = ok.bundle.intoGroup().group;
      rt.faults.dropNextStamp();
      const lost = await (await rt.chain(graph, back, { step: { alpha: 2 }, readback: first(st) })).wait();
      expect(lost.kind).toBe('retired-failed');
      if (lost.kind !== 'retired-failed') return;
      expect(lost.cause.code).toBe('EIO');
      expect(lost.cause.reason).toBe('readback-lost');
      expect(rt.stats()).toMatchObject({ fences: 1, fencesFailed: 0, stampProofs: 1, bytesReadBack: 4 });
      // the work itself ran and was proven by the fence: the state is what it should be
      {
        using v = lost.inputs.view<'f32'>(st.s);
        expect(Array.from(await v.toArray())).toEqual(summed([1, 2]));
      }
      lost.inputs.dispose();
      own.destroy();
    });
  });
}
