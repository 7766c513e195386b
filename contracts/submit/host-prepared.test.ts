// Plan: the prepared host step (G5-prepared-host-step). A two-dispatch graph (add_inplace on the
// WebAssembly path, the suite's axpy kernel on the scalar path, one of them with per-step params) is
// replayed on the host provider, feeding each bundle's group into the next submission. Counters show the
// bindings are prepared once (first replay) and then reused: no dispatch preparation, no provider
// resolution, no validation per replay. Every way the prepared state could go stale is exercised with
// values checked: a table change of the group (re-prepared), another group with the same slots while
// the first one's memory is freed (re-prepared, never run on the freed memory), an extracted binding
// (refused as the per-dispatch path refuses it, nothing run), and memory growth between replays (the
// kept addresses hold, the scalar twin re-derives its arrays). The bench's per-dispatch seam is checked
// too: a runtime put in it binds every dispatch on every replay and computes the same values.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SubmitRejected, createAllocationGroup, createHostProvider, createRuntime, fromArray, zeros } from '../../src/index.js';
import type { AllocationGroup, CompiledGraph, DescriptorSlot, HostProvider, Runtime, StepValues } from '../../src/index.js';
import { OPS } from '../../src/submit/ops/index.js';
import { perDispatchHostRuntimes } from '../../src/submit/graph.js';
import { axpy } from '../support/kernels/axpy.js';

const N = 37;
const REPLAYS = 4;

interface Fixture {
  group: AllocationGroup;
  acc: DescriptorSlot;
  b: DescriptorSlot;
  out: DescriptorSlot;
}

/** acc = [0, 1, ..., N-1], b = all ones, out = zeros (inserted in this order: the same slots every time). */
async function fixture(provider: HostProvider): Promise<Fixture> {
  const group = createAllocationGroup();
  const acc = group.insert(await fromArray(provider, 'f32', Float32Array.from({ length: N }, (_, i) => i))).descriptor;
  const b = group.insert(await fromArray(provider, 'f32', new Float32Array(N).fill(1))).descriptor;
  const out = group.insert(await zeros(provider, 'f32', [N])).descriptor;
  return { group, acc, b, out };
}

/** acc += b (WebAssembly kernel), then out = alpha * acc + b (scalar twin; alpha per step). */
function compile(runtime: Runtime, f: Fixture): CompiledGraph {
  const decl = (slot: DescriptorSlot) => ({ slot, dtype: 'f32' as const, shape: [N] });
  return runtime.compile({
    name: 'prepared-step',
    inputs: { acc: decl(f.acc), b: decl(f.b), out: decl(f.out) },
    dispatches: [
      { kernel: OPS.add_inplace, bind: ['acc', 'b'], params: { n: N } },
      { kernel: axpy, bind: ['acc', 'b', 'out'], params: (s: StepValues) => ({ n: N, alpha: s['alpha'] ?? 1 }) },
    ],
    outputs: ['out'],
  });
}

/** After `k` replays with alpha = 2: acc[i] = i + k and out[i] = 2 * (i + k) + 1. */
const expectedOut = (k: number) => Array.from({ length: N }, (_, i) => 2 * (i + k) + 1);

async function read(group: AllocationGroup, slot: DescriptorSlot): Promise<number[]> {
  using v = group.view<'f32'>(slot);
  return Array.from(await v.toArray());
}

describe('prepared host step', () => {
  let provider: HostProvider;
  let runtime: Runtime;
  beforeAll(() => {
    provider = createHostProvider();
    runtime = createRuntime(provider, { hostKernels: 'wasm' });
  });
  afterAll(() => undefined);

  async function replay(graph: CompiledGraph, group: AllocationGroup): Promise<AllocationGroup> {
    const outcome = await (await runtime.submit(graph, group, { step: { alpha: 2 } })).wait();
    if (outcome.kind !== 'completed') throw new Error(outcome.kind);
    return outcome.bundle.intoGroup().group;
  }

  it('[G5-prepared-host-step] bindings are prepared on the first replay only: later replays make no dispatch preparation, resolution or validation', async () => {
    const f = await fixture(provider);
    const graph = compile(runtime, f);
    const kernelsBefore = runtime.hostKernels()!.byKernel;
    let group = await replay(graph, f.group);
    expect(graph.stats()).toMatchObject({ dispatchPreparations: 2, hostStepPrepares: 1, hostStepReuses: 0, replays: 1 });
    const before = provider.counters();
    for (let k = 1; k < REPLAYS; k++) group = await replay(graph, group);
    const after = provider.counters();
    expect(graph.stats()).toMatchObject({ dispatchPreparations: 2, hostStepPrepares: 1, hostStepReuses: REPLAYS - 1, replays: REPLAYS });
    expect(after.providerResolutions - before.providerResolutions).toBe(0);
    expect(after.validations - before.validations).toBe(0);
    expect(after.rootsCreated - before.rootsCreated).toBe(0);
    // Both paths ran every replay: the WebAssembly kernel and the scalar twin.
    const kernels = runtime.hostKernels()!.byKernel;
    expect(kernels['add_inplace']!.wasm - (kernelsBefore['add_inplace']?.wasm ?? 0)).toBe(REPLAYS);
    expect(kernels['test.axpy']!.scalar - (kernelsBefore['test.axpy']?.scalar ?? 0)).toBe(REPLAYS);
    expect(await read(group, f.out)).toEqual(expectedOut(REPLAYS));
    group.dispose();
    graph.dispose();
  });

  it('[G5-prepared-host-step] the per-dispatch seam (bench:host baseline) binds every dispatch on every replay, with the same values', async () => {
    const seamProvider = createHostProvider();
    const seamRuntime = createRuntime(seamProvider, { hostKernels: 'wasm' });
    perDispatchHostRuntimes.add(seamRuntime);
    const f = await fixture(seamProvider);
    const graph = compile(seamRuntime, f);
    let group = f.group;
    const before = seamProvider.counters();
    for (let k = 0; k < REPLAYS; k++) {
      const outcome = await (await seamRuntime.submit(graph, group, { step: { alpha: 2 } })).wait();
      if (outcome.kind !== 'completed') throw new Error(outcome.kind);
      group = outcome.bundle.intoGroup().group;
    }
    expect(graph.stats()).toMatchObject({ dispatchPreparations: 2 * REPLAYS, hostStepPrepares: 0, hostStepReuses: 0 });
    expect(seamProvider.counters().providerResolutions - before.providerResolutions).toBe(2 * REPLAYS);
    expect(await read(group, f.out)).toEqual(expectedOut(REPLAYS));
    group.dispose();
    graph.dispose();
  });

  it('[G5-prepared-host-step] a table change of the group prepares the step again', async () => {
    const f = await fixture(provider);
    const graph = compile(runtime, f);
    let group = await replay(graph, f.group);
    group = await replay(graph, group);
    expect(graph.stats()).toMatchObject({ hostStepPrepares: 1, hostStepReuses: 1 });
    group.insert(await zeros(provider, 'f32', [1]));
    group = await replay(graph, group);
    expect(graph.stats()).toMatchObject({ hostStepPrepares: 2, hostStepReuses: 1, dispatchPreparations: 4 });
    expect(await read(group, f.out)).toEqual(expectedOut(3));
    group.dispose();
    graph.dispose();
  });

  it('[G5-prepared-host-step] another group with the same slots is prepared anew and never touches the freed memory of the first', async () => {
    const first = await fixture(provider);
    const graph = compile(runtime, first);
    const groupA = await replay(graph, await replay(graph, first.group));
    // B is allocated while A still owns its memory, so B's tensors lie elsewhere; then A's memory is freed.
    const second = await fixture(provider);
    expect([second.acc, second.b, second.out]).toEqual([first.acc, first.b, first.out]);
    groupA.dispose();
    const groupB = await replay(graph, second.group);
    expect(graph.stats()).toMatchObject({ hostStepPrepares: 2, hostStepReuses: 1 });
    expect(await read(groupB, second.out)).toEqual(expectedOut(1));
    expect(await read(groupB, second.acc)).toEqual(Array.from({ length: N }, (_, i) => i + 1));
    groupB.dispose();
    graph.dispose();
  });

  it('[G5-prepared-host-step] an extracted binding is refused before anything runs; the extracted tensor is unchanged', async () => {
    const f = await fixture(provider);
    const graph = compile(runtime, f);
    const group = await replay(graph, f.group);
    const b = group.tryExtract<'f32'>(f.b);
    const kernelsBefore = runtime.hostKernels()!.wasmDispatches;
    const err = await runtime.submit(graph, group, { step: { alpha: 2 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SubmitRejected);
    expect((err as SubmitRejected).code).toBe('EINVAL');
    expect((err as SubmitRejected).reason).toBe('empty-slot');
    expect((err as SubmitRejected).inputs).toBe(group);
    expect(runtime.hostKernels()!.wasmDispatches).toBe(kernelsBefore);
    expect(graph.stats()).toMatchObject({ hostStepPrepares: 1, replays: 1 });
    {
      using v = b.view();
      expect(Array.from(await v.toArray())).toEqual(new Array<number>(N).fill(1));
    }
    expect(await read(group, f.acc)).toEqual(Array.from({ length: N }, (_, i) => i + 1));
    b.dispose();
    group.dispose();
    graph.dispose();
  });

  it('[G5-prepared-host-step] memory growth between replays keeps the prepared step valid: addresses hold, the scalar twin re-derives its arrays', async () => {
    const f = await fixture(provider);
    const graph = compile(runtime, f);
    let group = await replay(graph, f.group);
    const memory = provider.wasmMemory()!;
    const bufferBefore = memory.buffer;
    const growths = provider.counters().memoryGrowths;
    const big = await zeros(provider, 'f32', [(bufferBefore.byteLength / 4) * 2]);
    expect(provider.counters().memoryGrowths).toBeGreaterThan(growths);
    expect(memory.buffer).not.toBe(bufferBefore);
    group = await replay(graph, group);
    expect(graph.stats()).toMatchObject({ hostStepPrepares: 1, hostStepReuses: 1 });
    expect(await read(group, f.out)).toEqual(expectedOut(2));
    big.dispose();
    group.dispose();
    graph.dispose();
  });
});
