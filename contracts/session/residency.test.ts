// Layer residency (issue 13, seed 003 "Residency"): a forward built with `residency: { kind: 'bounded',
// bytes }` keeps the layer weights in the model's source (read by range when a slot is filled; see
// residency-source.test.ts) and at most `bytes` of them on the provider, in a window of
// slots, and computes bit-identical logits to the resident forward on the same provider (the same kernels
// run on the same bytes; only the submissions are cut between layers). Cases:
// - every lowering kind on the host provider: stories260K.bin (F32, llama2.c), tiny-llama F16, Q8_0,
//   Q4_0, Q4_K_M, Q6_K, and tiny-moe Q4_K_M (routed experts: its expert tensors travel with their layer);
// - on WebGPU (Dawn in Node, Chromium in the browser lane; SwiftShader is slow, so two kinds only):
//   stories260K.bin and tiny-llama Q4_K_M (every kind over 32 steps: residency-matrix.test.ts, opt-in).
// Each case runs a 4-token prompt and greedy steps (32 on the host; 4 on WebGPU, 2 for tiny-moe there:
// SwiftShader is slow) with the resident forward, then the same with a window
// of one slot (the budget of one layer plus one byte) and with half the layer bytes, comparing every
// step's logits bit for bit, and asserting at every step that the provider's live bytes never exceed the
// budget plus the fixed state (everything a resident forward holds besides its layer weights).
// Construction refuses a budget below the largest layer (EINVAL budget-below-layer, with the numbers)
// before anything is allocated. Models load once for the file, and each lane's providers (with one runtime
// each, so pipelines compile once) serve all its tests: every test reads the live bytes at its start.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlamaForward, createRuntime, loadModel } from '../../src/index.js';
import type { HostProvider, LoadedModel, ResidencyPolicy, Runtime, WebGPUProvider } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { readGgufFixture } from '../support/gguf-fixtures.js';
import type { GgufFixture } from '../support/gguf-fixtures.js';
import { readModelFixture } from '../support/models.js';
import { providerCases } from '../support/providers.js';
import { bits, greedyTrace } from '../support/greedy-trace.js';

const PROMPT = [1, 403, 407, 261];
const HOST_STEPS = 32;
const WEBGPU_STEPS = 4;
const MAX_SEQ = 40;
const MAX_BATCH = 4;
const TIMEOUT = 300_000;

const stories = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');

/** Each model is loaded once for the whole file (both providers, both describes share it). */
const loaded = new Map<string, Promise<LoadedModel | undefined>>();
function once(name: string, load: () => Promise<LoadedModel | undefined>): Promise<LoadedModel | undefined> {
  let m = loaded.get(name);
  if (m === undefined) loaded.set(name, (m = load()));
  return m;
}

/**
 * One provider and runtime per provider case for the whole file (its pipelines compile once): every test
 * reads the live bytes at its start and asserts that each forward it made gives them back.
 */
const lanes = new Map<string, { provider: HostProvider | WebGPUProvider; runtime: Runtime }>();
beforeAll(async () => {
  for (const pc of providerCases()) {
    const provider = await pc.make();
    lanes.set(pc.name, { provider, runtime: createRuntime(provider) });
  }
});
afterAll(() => {
  for (const { provider } of lanes.values()) if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
  lanes.clear();
});

interface Case {
  readonly name: string;
  readonly webgpu: boolean;
  load(): Promise<LoadedModel | undefined>;
}

const gguf = (file: GgufFixture, webgpu = false): Case => ({
  name: file,
  webgpu,
  load: () =>
    once(file, async () => {
      const bytes = await readGgufFixture(file);
      return bytes === undefined ? undefined : loadModel(bytes);
    }),
});

const CASES: readonly Case[] = [
  { name: 'stories260K.bin', webgpu: true, load: () => once('stories260K.bin', async () => (stories === undefined || tok512 === undefined ? undefined : loadModel(stories, { tokenizer: tok512 }))) },
  gguf('tiny-llama-F16.gguf'),
  gguf('tiny-llama-Q8_0.gguf'),
  gguf('tiny-llama-Q4_0.gguf'),
  gguf('tiny-llama-Q4_K_M.gguf', true),
  gguf('tiny-llama-Q6_K.gguf'),
  gguf('tiny-moe-Q4_K_M.gguf'),
];


for (const pc of providerCases()) {
  describe(`layer residency on ${pc.name}`, () => {
    for (const tc of CASES.filter((c) => pc.kind === 'host' || c.webgpu)) {
      it(`[TS-residency-policy][TS-residency-budget][TS-residency-same-logits][TS-residency-slot-proof][TS-residency-release] ${tc.name}: bounded windows (one layer, half the layers) give the resident logits bit for bit within budget`, async () => {
        const model = await tc.load();
        if (model === undefined) return;
        const { provider, runtime } = lanes.get(pc.name)!;
        const steps = pc.kind === 'host' ? HOST_STEPS : WEBGPU_STEPS;
        const options = { maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, decode: 'plain' as const };
        const before = provider.counters().liveBytes;
        const resident = await LlamaForward.create(runtime, model, options);
        const residentReport = resident.residency();
        expect(residentReport.policy).toBe('resident');
        const fixed = provider.counters().liveBytes - before - residentReport.layerBytes;
        const want = await greedyTrace(resident, PROMPT, steps, () => undefined);
        // Layer observation (the residual after every layer) crosses the window's submissions unchanged.
        const observed = (await resident.run(PROMPT, 0, { layers: true })).layers!.map((l) => bits(l).slice());
        resident.dispose();
        expect(provider.counters().liveBytes).toBe(before);

        const largest = (await (async () => {
          // The slot size comes from the plan: probe with a 1-byte budget (refused, with the numbers).
          const err = await expectCodeAsync(() => LlamaForward.create(runtime, model, { ...options, residency: { kind: 'bounded', bytes: 1 } }), 'EINVAL', 'budget-below-layer');
          expect(provider.counters().liveBytes).toBe(before);
          return (err.ids as { largestLayer: number }).largestLayer;
        })()) as number;
        const budgets: ResidencyPolicy[] = [
          { kind: 'bounded', bytes: largest + 1 },
          { kind: 'bounded', bytes: Math.max(largest, Math.floor(residentReport.layerBytes / 2)) },
        ];
        for (const policy of budgets) {
          const bytes = policy.kind === 'bounded' ? policy.bytes : 0;
          const bounded = await LlamaForward.create(runtime, model, { ...options, residency: policy });
          const report = bounded.residency();
          expect(report.policy).toBe('bounded');
          expect(report.windowBytes).toBeLessThanOrEqual(bytes);
          expect(report.slots).toBeLessThan(model.config.layers);
          const check = (): void => {
            expect(provider.counters().liveBytes - before).toBeLessThanOrEqual(bytes + fixed);
          };
          check();
          const got = await greedyTrace(bounded, PROMPT, steps, check);
          expect(got.ids).toEqual(want.ids);
          got.logits.forEach((l, i) => expect(l, `step ${i}`).toEqual(want.logits[i]));
          const after = bounded.residency();
          const layersSeen = (await bounded.run(PROMPT, 0, { layers: true })).layers!;
          expect(layersSeen.length).toBe(model.config.layers);
          layersSeen.forEach((l, i) => expect(bits(l), `layer ${i}`).toEqual(observed[i]));
          // Every layer is uploaded once per step (a window smaller than the model cycles through it).
          expect(after.layerUploads).toBe((steps + 1) * model.config.layers);
          expect(after.bytesUploaded).toBe((steps + 1) * after.layerBytes);
          expect(after.tokens).toBe(PROMPT.length + steps);
          bounded.dispose();
          expect(provider.counters().liveBytes).toBe(before);
        }
      }, TIMEOUT);
    }
  });
}

// Routed experts through an expert cache (bounded with `experts`): the expert tensors stay out of the
// window; the ids the router picked are read back per routed layer and the picked experts fetched into an
// LRU cache of N slots per layer. A cache of one expert (top-2 routing: two rounds per layer and step,
// nearly every fetch a miss) and of all four experts (no misses once every expert was fetched) give the
// resident logits bit for bit.
const MOE_WEBGPU_STEPS = 2;
const MOE_KINDS: readonly GgufFixture[] = ['tiny-moe-f32.gguf', 'tiny-moe-Q8_0.gguf', 'tiny-moe-Q4_K_M.gguf'];
for (const pc of providerCases()) {
  describe(`expert cache on ${pc.name}`, () => {
    for (const file of MOE_KINDS.filter((f) => pc.kind === 'host' || f === 'tiny-moe-Q4_K_M.gguf')) {
      it(`[TS-expert-cache][TS-expert-counters] ${file}: caches of one expert and of every expert (host) give the resident logits bit for bit`, async () => {
        const model = await once(file, async () => {
          const bytes = await readGgufFixture(file);
          return bytes === undefined ? undefined : loadModel(bytes);
        });
        if (model === undefined) return;
        const { provider, runtime } = lanes.get(pc.name)!;
        const steps = pc.kind === 'host' ? HOST_STEPS : MOE_WEBGPU_STEPS;
        const options = { maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, decode: 'plain' as const };
        const before = provider.counters().liveBytes;
        const resident = await LlamaForward.create(runtime, model, options);
        const fixed = provider.counters().liveBytes - before - resident.residency().layerBytes;
        const want = await greedyTrace(resident, PROMPT, steps, () => undefined);
        resident.dispose();
        const { experts, expertsUsed, layers } = model.config;
        // SwiftShader is slow: WebGPU runs the one-expert cache only (every round a fetch).
        for (const slots of pc.kind === 'host' ? [1, experts] : [1]) {
          // The smallest budget holding one layer slot and the caches (from the refusal's numbers).
          const err = await expectCodeAsync(() => LlamaForward.create(runtime, model, { ...options, residency: { kind: 'bounded', bytes: 1, experts: slots } }), 'EINVAL', 'budget-below-layer');
          const ids = err.ids as { largestLayer: number; expertCache: number };
          expect(provider.counters().liveBytes).toBe(before);
          const budget = ids.largestLayer + ids.expertCache;
          const bounded = await LlamaForward.create(runtime, model, { ...options, residency: { kind: 'bounded', bytes: budget, experts: slots } });
          const r0 = bounded.residency();
          expect(r0.windowBytes).toBeLessThanOrEqual(budget);
          expect(r0.experts?.slotsPerLayer).toBe(slots);
          const got = await greedyTrace(bounded, PROMPT, steps, () => expect(provider.counters().liveBytes - before).toBeLessThanOrEqual(budget + fixed));
          expect(got.ids).toEqual(want.ids);
          got.logits.forEach((l, i) => expect(l, `step ${i}`).toEqual(want.logits[i]));
          const cache = bounded.residency().experts!;
          // Every step reads back T * used ids per routed layer.
          expect(cache.bytesReadBack).toBe((PROMPT.length + steps) * expertsUsed * layers * 4);
          if (slots === experts) {
            expect(cache.misses).toBeLessThanOrEqual(experts * layers);
            expect(cache.hits).toBeGreaterThan(0);
          } else {
            // One slot: each round holds one expert; two distinct experts per step and layer means two rounds.
            expect(cache.rounds).toBeGreaterThanOrEqual((steps + 1) * layers * expertsUsed);
            expect(cache.misses).toBeGreaterThanOrEqual((steps + 1) * layers);
          }
          expect(cache.bytesFetched).toBeGreaterThan(0);
          bounded.dispose();
          expect(provider.counters().liveBytes).toBe(before);
        }
      }, TIMEOUT);
    }
  });
}
