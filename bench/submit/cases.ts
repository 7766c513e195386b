// The cases of the execution-layer benchmark (issue 3, acceptance point 6), each returning CaseRecords.
// Shared by the Node lane (Dawn, host, onnxruntime-web wasm) and the Chromium lane (WebGPU in the page,
// TF.js on the same device); no node:* imports here.
//   (b) overheadCases(smallGraph())  submit + retire of 3 small dispatches vs a hand-written loop, and the
//                                    cost of the completion fence vs the old onSubmittedWorkDone wait
//   (c) overheadCases(decodeGraph()) 85-dispatch decode step replayed vs the same dispatches by hand
//   (d) hostMatmulCases()            host-provider matmul vs onnxruntime-web single-thread wasm
//   (e) chainCases(workload)         N steps chained on a live group (step t+1 admitted before step t is
//                                    read) vs N steps of submit -> wait, both reading 4 bytes per step
// (a) lives in the browser file: its peer (TF.js WebGPU) only runs in a page.
import * as ort from 'onnxruntime-web';
import { OPS, createAllocationGroup, createRuntime, fromArray, zeros } from '../../src/index.js';
import type { AllocationGroup, CompiledGraph, DescriptorSlot, HostProvider, Runtime, RuntimeStats, WebGPUProvider } from '../../src/index.js';
import { median, record, sideBySide } from './measure.js';
import type { CaseRecord, TimingOptions } from './measure.js';
import { matmulModel } from './onnx.js';
import { RawPipelines, RawSide, TenonSide, pseudoRandom } from './workloads.js';
import type { Phases, Workload } from './workloads.js';

/** The aims of acceptance point 6: matmul at least 1.2x the peer's speed, overheads at most 1.1x time. */
export const MATMUL_AIM = { kind: 'speedup-at-least', value: 1.2 } as const;
export const OVERHEAD_AIM = { kind: 'time-ratio-at-most', value: 1.1 } as const;

/** Median time of each phase of one tenon call (diagnostics: where the submission's time goes). */
export interface PhaseBreakdown {
  readonly case: string;
  readonly lane: CaseRecord['lane'];
  readonly calls: number;
  /** `await runtime.submit(...)`: checks, bind (prepareDispatch per dispatch), encode, queue.submit. */
  readonly submitMs: number;
  /** `await handle.wait()`: the completion fence (copy + map + check), error scopes, the Bundle. */
  readonly waitMs: number;
  /** `bundle.intoGroup()`: the group back to the caller. */
  readonly intoGroupMs: number;
}

/** Max |x - y| / max(1, |y|) over two arrays of equal length. */
export function maxRelDiff(x: Float32Array, y: Float32Array): number {
  if (x.length !== y.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i]! - y[i]!) / Math.max(1, Math.abs(y[i]!)));
  return worst;
}

/**
 * (b)/(c): tenon replay against the hand-written loop (submit + onSubmittedWorkDone), plus attribution
 * rows. Hand-written variants: with tenon's two error scopes; with the scopes and tenon's completion fence
 * written by hand (what tenon costs beyond it is its own CPU bookkeeping: bind, records, bundle); and with
 * the scopes and the wait tenon used before the fence (onSubmittedWorkDone + one macrotask, a timing guess
 * that proves nothing, reachable only here as a baseline). The proof-cost rows compare the same
 * hand-written loop waiting by fence against waiting by onSubmittedWorkDone (with and without the old
 * macrotask): only the wait differs.
 */
export async function overheadCases(
  provider: WebGPUProvider,
  workload: Workload,
  point: 'b' | 'c',
  lane: CaseRecord['lane'],
  label: string,
  options: TimingOptions,
): Promise<{ records: CaseRecord[]; phases: PhaseBreakdown }> {
  const tenon = await TenonSide.create(provider, workload);
  const pipelines = new RawPipelines(provider.device);
  const raw = new RawSide(provider.device, workload, pipelines);
  const rawScopes = new RawSide(provider.device, workload, pipelines, { errorScopes: true });
  const rawOld = new RawSide(provider.device, workload, pipelines, { errorScopes: true, wait: 'old-tenon' });
  const rawFence = new RawSide(provider.device, workload, pipelines, { errorScopes: true, wait: 'fence' });
  // Validity: the hand-written dispatches raise no device error; tenon's end `completed` (which covers
  // validation and out-of-memory scopes) or call() throws.
  await raw.checkValid();
  await tenon.call();
  // Same dispatches: after one more identical step from the same initial state, the outputs agree.
  const a = new RawSide(provider.device, workload, pipelines);
  const b = await TenonSide.create(provider, workload, tenon.runtime);
  await a.call();
  await b.call();
  const agree = maxRelDiff(await b.read(workload.outputs[0]!), await a.read(workload.outputs[0]!));
  a.dispose();
  b.dispose();
  if (!(agree <= 1e-5)) throw new Error(`${workload.name}: tenon and hand-written outputs differ (${agree})`);

  await rawFence.checkValid();
  const [t, r, rs, ro, rf] = await sideBySide(
    [
      { name: 'tenon submit -> wait -> intoGroup', run: () => tenon.call() },
      { name: 'hand-written submit + onSubmittedWorkDone', run: () => raw.call() },
      { name: 'hand-written + 2 error scopes', run: () => rawScopes.call() },
      { name: 'hand-written + scopes + old wait (onSubmittedWorkDone + macrotask)', run: () => rawOld.call() },
      { name: 'hand-written + scopes + completion fence', run: () => rawFence.call() },
    ],
    options,
  );
  const phases = await phaseBreakdown(tenon, `${point}: ${label}`, lane, options.iterations * 5);
  const fences = tenon.runtime.stats().fences;
  raw.dispose();
  rawScopes.dispose();
  rawOld.dispose();
  rawFence.dispose();
  tenon.dispose();
  const n = workload.dispatches.length;
  return {
    records: [
      record({ point, lane, case: `${label} (${n} dispatches)`, tenon: t!, peer: r!, aim: OVERHEAD_AIM, note: `tenon retires by completion fence (${fences} fences in the run)` }),
      record({ point, lane, case: `vs hand-written + error scopes`, tenon: t!, peer: rs!, note: 'attribution: tenon pushes/pops a validation and an OOM scope per submission' }),
      record({ point, lane, case: `vs hand-written + scopes + fence`, tenon: t!, peer: rf!, note: 'attribution: what tenon costs beyond its proof (bind, records, bundle)' }),
      record({ point, lane, case: `proof cost: fence vs onSubmittedWorkDone`, tenon: rf!, peer: rs!, note: 'the same hand-written loop with error scopes, waiting by completion fence vs by onSubmittedWorkDone alone (which proves nothing after a loss)' }),
      record({ point, lane, case: `proof cost: fence vs old tenon wait`, tenon: rf!, peer: ro!, note: 'the same hand-written loop with error scopes, waiting by completion fence vs by onSubmittedWorkDone + one macrotask (tenon before the fence: a timing guess)' }),
    ],
    phases,
  };
}

/** Steps per call of (e): one call runs a short decode of this many tokens. */
export const CHAIN_STEPS = 16;

/**
 * (e) tenon against itself: CHAIN_STEPS steps of `workload` chained on one group (runtime.chain, step t+1
 * admitted before step t's readback is read) vs the same steps submitted one at a time, each waited for
 * before the next (runtime.submit -> wait -> intoGroup). Both read back 4 bytes per step with the step's
 * proven outcome, start from the same state and must read back the same values. The note carries each
 * side's per-step counters (queue submits, host awaits, fences) from the runtime's stats over the run.
 */
export async function chainCases(provider: WebGPUProvider, workload: Workload, lane: CaseRecord['lane'], label: string, options: TimingOptions): Promise<CaseRecord[]> {
  const chained = await TenonSide.create(provider, workload);
  const waited = await TenonSide.create(provider, workload);
  // Validity (outside timing): from the same initial state, the same values step by step.
  const a = await chained.steps(CHAIN_STEPS, 'chain');
  const b = await waited.steps(CHAIN_STEPS, 'wait');
  if (a.length !== CHAIN_STEPS || a.some((v, i) => !(Math.abs(v - b[i]!) <= 1e-5 * Math.max(1, Math.abs(b[i]!))))) {
    throw new Error(`${workload.name}: chained and waited steps read back different values`);
  }
  const before = [chained.runtime.stats(), waited.runtime.stats()] as const;
  const [tc, tw] = await sideBySide(
    [
      { name: `tenon chain: ${CHAIN_STEPS} steps, t+1 admitted before t is read`, run: async () => void (await chained.steps(CHAIN_STEPS, 'chain')) },
      { name: `tenon submit -> wait -> intoGroup, ${CHAIN_STEPS} steps`, run: async () => void (await waited.steps(CHAIN_STEPS, 'wait')) },
    ],
    options,
  );
  const perStep = (side: TenonSide, from: RuntimeStats): string => {
    const now = side.runtime.stats();
    const steps = now.admitted - from.admitted;
    const per = (x: number) => (x / steps).toFixed(2);
    return `${per(now.queueSubmits - from.queueSubmits)} queue submits, ${per(now.hostAwaits - from.hostAwaits)} host awaits, ${per(now.fences - from.fences)} fences, ${per(now.buffersCreated - from.buffersCreated)} buffers per step`;
  };
  const note = `per ${CHAIN_STEPS}-step call; chained: ${perStep(chained, before[0])}; waited: ${perStep(waited, before[1])}`;
  chained.dispose();
  waited.dispose();
  return [record({ point: 'e', lane, role: 'headline', case: `${label}: ${CHAIN_STEPS} chained steps vs ${CHAIN_STEPS} x submit-and-wait`, tenon: tc!, peer: tw!, note })];
}

async function phaseBreakdown(tenon: TenonSide, label: string, lane: CaseRecord['lane'], calls: number): Promise<PhaseBreakdown> {
  const phases: Phases = { submitMs: [], waitMs: [], intoGroupMs: [] };
  for (let i = 0; i < calls; i++) await tenon.call(phases);
  return { case: label, lane, calls, submitMs: median(phases.submitMs), waitMs: median(phases.waitMs), intoGroupMs: median(phases.intoGroupMs) };
}

/** A one-dispatch matmul graph over a group holding a [m,k], b [k,n] and out [m,n]. */
export async function matmulGraph(
  runtime: Runtime,
  provider: HostProvider | WebGPUProvider,
  m: number,
  n: number,
  k: number,
  a: Float32Array,
  b: Float32Array,
): Promise<{ graph: CompiledGraph; group: AllocationGroup; out: DescriptorSlot }> {
  const group = createAllocationGroup();
  const sa = group.insert(await fromArray(provider, 'f32', a, [m, k])).descriptor;
  const sb = group.insert(await fromArray(provider, 'f32', b, [k, n])).descriptor;
  const out = group.insert(await zeros(provider, 'f32', [m, n])).descriptor;
  const graph = runtime.compile({
    name: `matmul${m}x${n}x${k}`,
    inputs: { a: { slot: sa, dtype: 'f32', shape: [m, k] }, b: { slot: sb, dtype: 'f32', shape: [k, n] }, out: { slot: out, dtype: 'f32', shape: [m, n] } },
    dispatches: [{ kernel: OPS.matmul, bind: ['a', 'b', 'out'], params: { m, n, k } }],
    outputs: ['out'],
  });
  return { graph, group, out };
}

/** Submits `graph` over `group` to proven completion and returns the group. */
export async function submitToCompletion(runtime: Runtime, graph: CompiledGraph, group: AllocationGroup): Promise<AllocationGroup> {
  const outcome = await (await runtime.submit(graph, group)).wait();
  if (outcome.kind !== 'completed') throw new Error(`${graph.name}: ${outcome.kind}: ${outcome.cause.message}`);
  return outcome.bundle.intoGroup().group;
}

export async function readSlot(group: AllocationGroup, slot: DescriptorSlot): Promise<Float32Array> {
  using v = group.view<'f32'>(slot);
  return Float32Array.from(await v.toArray());
}

/** Timing plan per size for (d): 1024^3 on the host takes about a second a call. */
const HOST_PLAN: Record<number, TimingOptions> = {
  256: { rounds: 11, iterations: 4, warmupRounds: 1 },
  1024: { rounds: 5, iterations: 1, warmupRounds: 1 },
};

/**
 * (d) tenon's host `matmul` (a host-provider submission, and executeScopedReadOnly) against
 * onnxruntime-web's wasm CPU provider with one thread on a one-node MatMul model.
 */
export async function hostMatmulCases(provider: HostProvider, lane: CaseRecord['lane'], sizes: readonly number[] = [256, 1024]): Promise<CaseRecord[]> {
  ort.env.wasm.numThreads = 1;
  const runtime = createRuntime(provider);
  const records: CaseRecord[] = [];
  for (const size of sizes) {
    const [m, n, k] = [size, size, size];
    const a = pseudoRandom(m * k, 11, 1);
    const b = pseudoRandom(k * n, 12, 1);
    const session = await ort.InferenceSession.create(matmulModel(m, k, n), { executionProviders: ['wasm'] });
    const feeds = { A: new ort.Tensor('float32', a, [m, k]), B: new ort.Tensor('float32', b, [k, n]) };
    let mm = await matmulGraph(runtime, provider, m, n, k, a, b);
    // The scoped form: a and b as shared views, out a fresh tensor per call.
    const scopedGraph = runtime.compile({
      name: `scoped-matmul${size}`,
      inputs: {
        a: { slot: 0 as DescriptorSlot, dtype: 'f32', shape: [m, k] },
        b: { slot: 1 as DescriptorSlot, dtype: 'f32', shape: [k, n] },
      },
      fresh: [{ name: 'out', dtype: 'f32', shape: [m, n] }],
      dispatches: [{ kernel: OPS.matmul, bind: ['a', 'b', 'out'], params: { m, n, k } }],
      outputs: ['out'],
    });
    const ta = await fromArray(provider, 'f32', a, [m, k]);
    const tb = await fromArray(provider, 'f32', b, [k, n]);

    // Agreement (outside timing): tenon's f64-accumulated product against ORT's f32 one.
    mm.group = await submitToCompletion(runtime, mm.graph, mm.group);
    const ours = await readSlot(mm.group, mm.out);
    const theirs = (await session.run(feeds))['C']!.data as Float32Array;
    const diff = maxRelDiff(ours, theirs);
    if (!(diff <= 1e-3)) throw new Error(`host matmul ${size}: tenon and onnxruntime-web differ (${diff})`);

    const scoped = async () => {
      using va = ta.view();
      using vb = tb.view();
      const o = await runtime.executeScopedReadOnly(scopedGraph, { a: va, b: vb });
      if (o.kind !== 'completed') throw new Error(o.cause.message);
      const out = o.outputs[0]!;
      if (out.kind === 'owned') out.tensor.dispose();
    };
    const [tenonSubmit, tenonScoped, peer] = await sideBySide(
      [
        { name: 'tenon host submission (matmul op)', run: async () => void (mm.group = await submitToCompletion(runtime, mm.graph, mm.group)) },
        { name: 'tenon executeScopedReadOnly (fresh out)', run: scoped },
        { name: 'onnxruntime-web wasm, 1 thread', run: async () => void (await session.run(feeds)) },
      ],
      HOST_PLAN[size] ?? { rounds: 5, iterations: 1, warmupRounds: 1 },
    );
    const flops = [m, n, k] as const;
    records.push(
      record({ point: 'd', lane, role: 'headline', case: `host matmul ${size}x${size} f32`, tenon: tenonSubmit!, peer: peer!, flops, note: `max rel diff vs peer ${diff.toExponential(1)}` }),
      record({ point: 'd', lane, case: `host matmul ${size} via executeScopedReadOnly`, tenon: tenonScoped!, peer: peer!, flops }),
    );
    await session.release();
    mm.group.dispose();
    mm.graph.dispose();
    scopedGraph.dispose();
    ta.dispose();
    tb.dispose();
  }
  return records;
}
