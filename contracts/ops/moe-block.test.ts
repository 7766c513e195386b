// Op suite: a routed-experts (Mixtral-style) feed-forward block built from the op library, as one
// compiled graph submitted once: router qmatmul -> moe_route -> qmatmul_expert gate and up -> silu_mul ->
// qmatmul_expert down (x per slot) -> moe_combine into the residual. Shapes of the tiny-moe fixture's
// kind (4 experts, 2 used) with weights of the fixtures' kinds (F32, Q8_0, Q4_K) repacked by the
// lowering kinds.
// Plan, on every provider of the lane (host twins on the host provider, WGSL on WebGPU), for decode
// (1 token: per-pair dispatch) and prefill (5 tokens: grouped by expert): (1) the residual after one
// submission equals an independent f64 reference (llama.cpp's llm_build_moe_ffn definition over the
// GGUF reference dequantizer's rows: softmax over all experts, top-2, weights divided by their sum,
// silu(gate)·up, down, weighted sum, plus the residual) within 2e-5 of the reference's magnitude; (2) the
// submission runs its 7 dispatches with no host mapping (no readback) and no resource created; the
// result is read only afterwards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAllocationGroup, createRuntime, fromArray, zeros } from '../../src/index.js';
import type { AllocationGroup, DType, DescriptorSlot, HostProvider, Runtime, WebGPUProvider } from '../../src/index.js';
import { OPS, PACKED_KINDS, biasAdd, moeCombine, moeRoute, packedRowLayout, qgatherOp, qmatmulExpertOp, qmatmulOp, qmatmulVariant, siluMul } from '../../src/submit/ops/index.js';
import type { PackedKind, QMatmulVariant } from '../../src/submit/ops/index.js';
import { providerCases } from '../support/providers.js';
import { randomF32 } from './harness.js';
import { packedWeights } from './packed-weights.js';

const EXPERTS = 4;
const USED = 2;
/** Smallest margin between the second and third router logits of every token the reference accepts. */
const ROUTER_MARGIN = 1e-3;
/** |got - want| <= REL · (1 + max |want|); measured: at most 2.4e-7 on Dawn (SwiftShader), 9e-8 on the host. */
const REL = 2e-5;

interface Block {
  readonly kind: PackedKind;
  readonly tokens: number;
  readonly dim: number;
  readonly ffn: number;
  readonly seed: number;
}

interface BlockData {
  readonly x: Float32Array;
  readonly residual: Float32Array;
  readonly router: Float32Array;
  readonly gate: ReturnType<typeof packedWeights>;
  readonly up: ReturnType<typeof packedWeights>;
  readonly down: ReturnType<typeof packedWeights>;
}

function data(b: Block): BlockData {
  return {
    x: randomF32(b.seed, b.tokens * b.dim),
    residual: randomF32(b.seed + 1, b.tokens * b.dim),
    router: randomF32(b.seed + 2, EXPERTS * b.dim),
    gate: packedWeights(b.kind, EXPERTS * b.ffn, b.dim, b.seed + 3),
    up: packedWeights(b.kind, EXPERTS * b.ffn, b.dim, b.seed + 4),
    down: packedWeights(b.kind, EXPERTS * b.dim, b.ffn, b.seed + 5),
  };
}

/** The f64 reference of the block (llama.cpp's definition), over the reference-dequantized rows. */
function reference(b: Block, d: BlockData): Float64Array {
  const out = Float64Array.from(d.residual);
  const dot = (a: ArrayLike<number>, ai: number, w: Float32Array, wi: number, k: number) => {
    let s = 0;
    for (let i = 0; i < k; i++) s += a[ai + i]! * w[wi + i]!;
    return s;
  };
  for (let t = 0; t < b.tokens; t++) {
    const logits = Array.from({ length: EXPERTS }, (_, e) => dot(d.x, t * b.dim, d.router, e * b.dim, b.dim));
    const mx = Math.max(...logits);
    const probs = logits.map((l) => Math.exp(l - mx));
    const order = [...probs.keys()].sort((a, c) => probs[c]! - probs[a]! || a - c);
    const sorted = order.map((e) => logits[e]!);
    if (!(sorted[USED - 1]! - sorted[USED]! >= ROUTER_MARGIN)) throw new Error(`seed ${b.seed}: token ${t} has a near tie in its router (choose another seed)`);
    const picks = order.slice(0, USED);
    const sum = picks.reduce((s, e) => s + probs[e]!, 0);
    for (const e of picks) {
      const h = new Float64Array(b.ffn);
      for (let f = 0; f < b.ffn; f++) {
        const g = dot(d.x, t * b.dim, d.gate.rows, (e * b.ffn + f) * b.dim, b.dim);
        const u = dot(d.x, t * b.dim, d.up.rows, (e * b.ffn + f) * b.dim, b.dim);
        h[f] = (g / (1 + Math.exp(-g))) * u;
      }
      for (let c = 0; c < b.dim; c++) out[t * b.dim + c]! += (probs[e]! / sum) * dot(h, 0, d.down.rows, (e * b.dim + c) * b.ffn, b.ffn);
    }
  }
  return out;
}

for (const pc of providerCases()) {
  describe(`routed-experts block as one submission on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    let runtime: Runtime;
    beforeAll(async () => {
      provider = await pc.make();
      runtime = createRuntime(provider);
    });
    afterAll(() => {
      if (provider.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });

    const blocks: Block[] = [
      { kind: 'F32', tokens: 1, dim: 64, ffn: 96, seed: 101 },
      { kind: 'F32', tokens: 5, dim: 64, ffn: 96, seed: 102 },
      { kind: 'Q8_0', tokens: 1, dim: 64, ffn: 96, seed: 103 },
      { kind: 'Q8_0', tokens: 5, dim: 64, ffn: 96, seed: 104 },
      { kind: 'Q4_K', tokens: 1, dim: 256, ffn: 256, seed: 105 },
      { kind: 'Q4_K', tokens: 5, dim: 256, ffn: 256, seed: 106 },
    ];
    for (const b of blocks) {
      it(`[OPS-moe-block] ${b.kind}, ${b.tokens} token(s): one submission, 7 dispatches, no readback, equals the f64 llama.cpp-definition reference`, async () => {
        const d = data(b);
        const want = reference(b, d);
        const variant: QMatmulVariant = provider.kind === 'webgpu' ? qmatmulVariant(provider as WebGPUProvider) : 'plain';
        const wdtype: DType = b.kind === 'F32' ? 'f32' : 'u32';
        const group: AllocationGroup = createAllocationGroup();
        const slot = async (name: string, dtype: DType, shape: number[], values?: Float32Array | Uint32Array) => {
          const tensor = values === undefined ? await zeros(provider, dtype, shape) : await fromArray(provider, dtype, values as never, shape);
          return [name, { slot: group.insert(tensor).descriptor, dtype, shape }] as const;
        };
        const { tokens: T, dim, ffn } = b;
        const inputs = Object.fromEntries([
          await slot('x', 'f32', [T, dim], d.x),
          await slot('res', 'f32', [T, dim], d.residual),
          await slot('wr', 'f32', [EXPERTS, dim], d.router),
          await slot('wg', wdtype, [EXPERTS, ffn, packedRowLayout(b.kind, dim).rowWords], d.gate.packed),
          await slot('wu', wdtype, [EXPERTS, ffn, packedRowLayout(b.kind, dim).rowWords], d.up.packed),
          await slot('wd', wdtype, [EXPERTS, dim, packedRowLayout(b.kind, ffn).rowWords], d.down.packed),
          await slot('logits', 'f32', [T, EXPERTS]),
          await slot('ids', 'u32', [T, USED]),
          await slot('weights', 'f32', [T, USED]),
          await slot('g', 'f32', [T, USED, ffn]),
          await slot('u', 'f32', [T, USED, ffn]),
          await slot('h', 'f32', [T, USED, ffn]),
          await slot('y', 'f32', [T, USED, dim]),
        ]);
        const expert = qmatmulExpertOp(b.kind, variant);
        const graph = runtime.compile({
          name: `moe-${b.kind}-${T}`,
          inputs,
          dispatches: [
            { kernel: qmatmulOp('F32', variant), bind: ['x', 'wr', 'logits'], params: { m: T, n: EXPERTS, k: dim } },
            { kernel: moeRoute, bind: ['logits', 'ids', 'weights'], params: { tokens: T, experts: EXPERTS, used: USED, renormalize: true } },
            { kernel: expert, bind: ['x', 'ids', 'wg', 'g'], params: { tokens: T, used: USED, experts: EXPERTS, n: ffn, k: dim, xPerSlot: false } },
            { kernel: expert, bind: ['x', 'ids', 'wu', 'u'], params: { tokens: T, used: USED, experts: EXPERTS, n: ffn, k: dim, xPerSlot: false } },
            { kernel: siluMul, bind: ['g', 'u', 'h'], params: { n: T * USED * ffn } },
            { kernel: expert, bind: ['h', 'ids', 'wd', 'y'], params: { tokens: T, used: USED, experts: EXPERTS, n: dim, k: ffn, xPerSlot: true } },
            { kernel: moeCombine, bind: ['y', 'weights', 'res'], params: { tokens: T, used: USED, n: dim, accumulate: true } },
          ],
          outputs: ['res'],
        });
        let after = group;
        try {
          const before = provider.counters();
          const outcome = await (await runtime.submit(graph, group)).wait();
          expect(outcome.kind).toBe('completed');
          if (outcome.kind !== 'completed') return;
          const counters = provider.counters();
          expect({ dispatches: counters.dispatches - before.dispatches, maps: counters.maps - before.maps, resourcesCreated: counters.resourcesCreated - before.resourcesCreated }).toEqual({ dispatches: 7, maps: 0, resourcesCreated: 0 });
          after = outcome.bundle.intoGroup().group;
          const res = (inputs as Record<string, { slot: DescriptorSlot }>)['res']!.slot;
          using view = after.view<'f32'>(res);
          const got = await view.toArray();
          let scale = 0;
          for (const v of want) scale = Math.max(scale, Math.abs(v));
          for (let i = 0; i < want.length; i++) {
            if (!(Math.abs(got[i]! - want[i]!) <= REL * (1 + scale))) expect.fail(`${b.kind} T ${T}: res[${i}] is ${got[i]}, reference ${want[i]} (allowed ${REL}·(1 + ${scale}))`);
          }
          // The block changed the residual (a dropped combine would leave it as it was).
          expect(Math.max(...Array.from(got, (v, i) => Math.abs(v - d.residual[i]!)))).toBeGreaterThan(1e-3 * (1 + scale));
        } finally {
          after.dispose();
          graph.dispose();
        }
      });
    }

    it('[OPS-moe-block] every op is listed under its own name, MoE ops included (pool workers look built-in kernels up by name)', () => {
      for (const [key, op] of Object.entries(OPS)) expect(op.name, key).toBe(key);
      for (const kind of PACKED_KINDS) {
        for (const variant of ['plain', 'subgroups'] as const) expect(Object.values(OPS)).toContain(qmatmulExpertOp(kind, variant));
        expect(Object.values(OPS)).toContain(qgatherOp(kind));
      }
      for (const op of [moeRoute, moeCombine, biasAdd]) expect(Object.values(OPS)).toContain(op);
    });
  });
}
