// Plan: capability rules around submission (G5) and draining (G3). Write bindings come only from an
// exclusively held group; nothing the caller holds (a view, a prepared binding, a raw GPUBuffer, an id)
// can stand in for ownership or be upgraded to write access; once admitted, work drains to an outcome
// before anything comes back; unproven records offer no way back to their memory.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Runtime, Tensor, createAllocationGroup, createRuntime, fromArray, zeros } from '../../src/index.js';
import type { AllocationGroup, CompiledGraph, DescriptorSlot, HostProvider, WebGPUProvider } from '../../src/index.js';
import { axpy } from '../support/kernels/axpy.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { providerCases } from '../support/providers.js';

const N = 16;

for (const pc of providerCases()) {
  describe(`submission capabilities on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    let runtime: Runtime;
    beforeAll(async () => {
      provider = await pc.make();
      runtime = createRuntime(provider);
    });
    afterAll(() => {
      if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    async function setup(): Promise<{ group: AllocationGroup; graph: CompiledGraph; x: DescriptorSlot; y: DescriptorSlot }> {
      const group = createAllocationGroup();
      const x = group.insert(await fromArray(provider, 'f32', Float32Array.from({ length: N }, (_, i) => i))).descriptor;
      const y = group.insert(await zeros(provider, 'f32', [N])).descriptor;
      const graph = runtime.compile({
        name: 'double',
        inputs: { x: { slot: x, dtype: 'f32', shape: [N] }, y: { slot: y, dtype: 'f32', shape: [N] } },
        dispatches: [{ kernel: axpy, bind: ['x', 'x', 'y'], params: { n: N, alpha: 1 } }],
        outputs: ['y'],
      });
      return { group, graph, x, y };
    }

    it('[G5-bindings-in-task] a submission derives its bindings from the group it owns; a caller-held binding blocks it', async () => {
      const { group, graph, x } = await setup();
      // a prepared binding (or host access) held by the caller is a live borrow of the group
      const view = group.view(x);
      const held = pc.kind === 'webgpu' ? view.prepareDevice() : await view.prepareHost();
      const e = await expectCodeAsync(() => runtime.submit(graph, group), 'EBUSY');
      expect(e.op).toBe('runtime.submit');
      held.release();
      view.release();
      const o = await (await runtime.submit(graph, group)).wait();
      expect(o.kind).toBe('completed');
      if (o.kind === 'completed') o.bundle.dispose();
      graph.dispose();
    });

    it('[G5-write-from-exclusive] write bindings need the group held exclusively: a shared view anywhere refuses them', async () => {
      const { group, x, y } = await setup();
      const target = pc.kind === 'webgpu' ? 'device' : 'host';
      const v = group.view(y);
      expectCode(() => group.prepareDispatch([{ slot: x, access: 'read' }, { slot: y, access: 'write' }], target as 'device'), 'EBUSY');
      v.release();
      expect(group.prepareDispatch([{ slot: x, access: 'read' }, { slot: y, access: 'write' }], target as 'device')).toHaveLength(2);
      group.dispose();
    });

    it('[G5-no-shared-to-exclusive] nothing upgrades a shared borrow: views have no write members and block exclusive ones', async () => {
      const t = await fromArray(provider, 'f32', Float32Array.from([1, 2]));
      const v = t.view();
      expect('viewMut' in v).toBe(false);
      expect('prepareDeviceMut' in v).toBe(false);
      expect('prepareHostMut' in v).toBe(false);
      expectCode(() => t.viewMut(), 'EBUSY');
      expectCode(() => t.asViewMut().viewMut(), 'EBUSY');
      await expectCodeAsync(() => t.asViewMut().prepareHostMut(), 'EBUSY');
      v.release();
      t.dispose();
    });

    it('[G5-no-write-from-handle] raw handles, ids and counters never become owners or write access', async () => {
      const t = await fromArray(provider, 'f32', Float32Array.from([1, 2, 3, 4]));
      const before = provider.counters();
      const root = t.diagnostics().root;
      const g = createAllocationGroup();
      // an id or a diagnostics record is not a tensor
      expectCode(() => g.insert(root as never), 'EINVAL', 'not-a-tensor');
      expectCode(() => g.insert(t.diagnostics() as never), 'EINVAL', 'not-a-tensor');
      if (pc.kind === 'webgpu') {
        const p = t.prepareDevice();
        const handle = p.binding();
        p.release();
        // the binding object is inert: it is not an owner, and the kernel refuses it as data
        expectCode(() => g.insert(handle as never), 'EINVAL', 'not-a-tensor');
        await expectCodeAsync(() => fromArray(provider, 'f32', handle as never), 'EINVAL', 'dtype-mismatch');
        expectCode(() => p.binding(), 'ERELEASED');
      }
      // a constructor call with a stolen target is refused too
      expectCode(() => new (Tensor as unknown as new (...a: unknown[]) => unknown)(Symbol('x'), { root }), 'EINVAL', 'private-constructor');
      expect(provider.counters().rootsCreated).toBe(before.rootsCreated);
      expect(g.descriptors()).toEqual([]);
      g.dispose();
      t.dispose();
    });

    it('[G5-handle-lifetime-only] a binding handle keeps nothing owned: the owner still ends and its memory goes', async () => {
      const t = await fromArray(provider, 'f32', Float32Array.from([1, 2]));
      if (pc.kind !== 'webgpu') {
        // the host provider hands out no device handles at all
        expectCode(() => t.prepareDevice(), 'ENOTSUP', 'no-device');
        t.dispose();
        return;
      }
      const before = provider.counters();
      const p = t.prepareDevice();
      const handle = p.binding();
      // the whole two-element claim from its first byte, over the root's own 8-byte buffer
      expect({ offset: handle.offset, size: handle.size, bufferSize: handle.buffer.size }).toEqual({ offset: 0, size: 8, bufferSize: 8 });
      p.release();
      t.dispose(); // the copy of the handle we still hold does not keep the root alive
      const after = provider.counters();
      expect(after.rootsDestroyed - before.rootsDestroyed).toBe(1);
      expect(after.liveRoots).toBe(before.liveRoots - 1);
    });

    it('[G3-drain-before-return] once admitted, a failing submission returns nothing until it drained and retired', async () => {
      const { group, graph } = await setup();
      if (pc.kind === 'webgpu') runtime.faults.invalidateNextSubmission();
      else runtime.faults.failNextHostRun();
      const handle = await runtime.submit(graph, group);
      // admitted: the caller's group is gone and the record is in flight until retirement
      expect(group.moved).toBe(true);
      expect(runtime.stats().inFlight).toBe(1);
      let settled = false;
      const waiting = handle.wait().then((o) => {
        settled = true;
        return o;
      });
      await Promise.resolve();
      expect(settled).toBe(false);
      const o = await waiting;
      expect(o.kind).toBe('retired-failed');
      expect(runtime.stats().inFlight).toBe(0);
      if (o.kind === 'retired-failed') o.inputs.dispose();
      graph.dispose();
    });

    it('[G5-bind-failure-exact] a refused binding happens before any enqueue and leaves the group exactly as it was', async () => {
      const { group, x, y } = await setup();
      const target = pc.kind === 'webgpu' ? 'device' : 'host';
      const before = provider.counters();
      const slotsBefore = group.descriptors();
      expectCode(() => group.prepareDispatch([{ slot: y, access: 'write' }, { slot: y, access: 'read' }], target as 'device'), 'EINVAL', 'overlap');
      expectCode(() => group.prepareDispatch([{ slot: x, access: 'read' }, { slot: 42 as DescriptorSlot, access: 'write' }], target as 'device'), 'EINVAL', 'invalid-slot');
      const after = provider.counters();
      expect(group.descriptors()).toEqual(slotsBefore);
      expect(after.dispatches).toBe(before.dispatches);
      expect(after.liveRoots).toBe(before.liveRoots);
      // still fully usable: borrow, write, submit
      {
        using m = group.viewMut<'f32'>(y);
        await m.fill(7);
      }
      expect(group.prepareDispatch([{ slot: x, access: 'read' }, { slot: y, access: 'write' }], target as 'device')).toHaveLength(2);
      group.dispose();
    });

    it('[G5-retire-release-once] proven retirement hands everything back once; ending it destroys each root exactly once', async () => {
      const { group, graph } = await setup();
      const before = provider.counters();
      const o = await (await runtime.submit(graph, group)).wait();
      expect(o.kind).toBe('completed');
      if (o.kind !== 'completed') return;
      expect(provider.counters().rootsDestroyed).toBe(before.rootsDestroyed);
      o.bundle.dispose();
      expectCode(() => o.bundle.dispose(), 'EMOVED');
      const after = provider.counters();
      expect(after.rootsDestroyed - before.rootsDestroyed).toBe(2);
      expect(after.doubleDestroys).toBe(0);
      graph.dispose();
    });

    it('[G5-unproven-no-recovery] a completion-unproven outcome carries no owner, and the runtime offers no way back', async () => {
      const members = Object.getOwnPropertyNames(Runtime.prototype);
      for (const forbidden of ['recover', 'retry', 'reclaim', 'release', 'retained', 'quarantine']) expect(members).not.toContain(forbidden);
      expect(Object.keys(runtime.stats())).toContain('retainedRecords');
      if (pc.kind !== 'webgpu') return;
      const lossy = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(lossy);
      const group = createAllocationGroup();
      const x = group.insert(await fromArray(lossy, 'f32', Float32Array.from({ length: N }, (_, i) => i))).descriptor;
      const y = group.insert(await zeros(lossy, 'f32', [N])).descriptor;
      const graph = rt.compile({
        name: 'lost',
        inputs: { x: { slot: x, dtype: 'f32', shape: [N] }, y: { slot: y, dtype: 'f32', shape: [N] } },
        dispatches: [{ kernel: axpy, bind: ['x', 'x', 'y'], params: { n: N, alpha: 1 } }],
        outputs: ['y'],
      });
      rt.faults.loseDeviceAt('after-enqueue');
      const o = await (await rt.submit(graph, group)).wait();
      expect(o.kind).toBe('completion-unproven');
      expect(Object.values(o).some((v) => v instanceof Object && 'dispose' in (v as object))).toBe(false);
      // the caller's old group stays moved; nothing else refers to the memory
      expectCode(() => group.view(x), 'EMOVED');
      expect(lossy.counters().rootsRetainedForever).toBe(2);
      expect(rt.stats().retainedRecords).toBe(1);
    });
  });
}

describe('binding surface', () => {
  it('[G5-bind-through-root] dispatch bindings are reached through the group alone: no provider, range or key is accepted', async () => {
    const { createAllocationGroup: group } = await import('../../src/index.js');
    const g = group();
    // two parameters only: the requests and the target kind; everything else comes from the retained records
    expect(g.prepareDispatch.length).toBe(2);
    const host = (await providerCases()[0]!.make()) as HostProvider | WebGPUProvider;
    const other = (await providerCases()[1]!.make()) as HostProvider | WebGPUProvider;
    const a = g.insert(await fromArray(host, 'f32', Float32Array.from([1]))).descriptor;
    const b = g.insert(await fromArray(other, 'f32', Float32Array.from([2]))).descriptor;
    // one dispatch binds memory of one provider: mixing them is refused before anything
    const target = host.kind === 'webgpu' ? 'device' : 'host';
    expectCode(() => g.prepareDispatch([{ slot: a, access: 'read' }, { slot: b, access: 'write' }], target as 'device'), 'EINVAL', 'provider-mismatch');
    g.dispose();
    if (host.kind === 'webgpu') (host as WebGPUProvider).destroy();
    if (other.kind === 'webgpu') (other as WebGPUProvider).destroy();
  });

  it('[G5-no-raw-escape] owners and views never return a GPUBuffer; only a prepared binding does, and only while held', async () => {
    const c = providerCases().find((p) => p.kind === 'webgpu')!;
    const gpu = (await c.make()) as WebGPUProvider;
    const t = await fromArray(gpu, 'f32', Float32Array.from([1, 2]));
    const isBuffer = (v: unknown): boolean => typeof GPUBuffer !== 'undefined' && v instanceof GPUBuffer;
    const diag = t.diagnostics() as unknown as Record<string, unknown>;
    expect(Object.values(diag).some(isBuffer)).toBe(false);
    for (const name of ['shape', 'strides', 'layout', 'provider', 'dtype'] as const) expect(isBuffer(t[name])).toBe(false);
    const p = t.prepareDevice();
    expect(isBuffer(p.binding().buffer)).toBe(true);
    p.release();
    expectCode(() => p.binding(), 'ERELEASED');
    t.dispose();
    gpu.destroy();
  });
});
