// Plan: the forward's fused per-layer dispatch list (kernels 'fused', opt-in) against the
// op-by-op list it replaces ('unfused'), on every provider of the lane (the host runs the fused ops' host
// twins when asked), with real model fixtures:
// (1) TS-fused-forward: stories260K (F32, llama2.c) and tiny-llama-Q4_K_M (Q4_K and Q6_K mixed inside a
//     layer, untied Q6_K classifier): a batched pass with per-row logits (stories260K: the prompt's prefill;
//     tiny-llama: 3 rows) and, for stories260K, greedy decode
//     steps, fused within 2e-4·(1 + |logit|) of unfused with the same argmax everywhere, and stories260K's
//     greedy continuation equal to llama2.c's published ids through the fused list;
// (2) TS-fused-dispatches: a decode step is 4 dispatches per dense layer + 3 (embedding, classifier with the
//     final norm folded in, argmax) fused (fused_attention_block, then O, gate/up, down); unfused 14 per layer + 4 on the host (a one-row step's Q/K/V into one qkv row, then fused_rope_kv), and on WebGPU 6 per F32 layer + 3
//     (matmul_nt_norm_qkv + fused_rope_kv, O and down adding into the residual, matmul_nt_norm_glu; the final
//     norm folded into the classifier, matmul_nt_norm); a cache longer than attentionSplit takes the
//     two-pass attention split over positions with a combine (6 per layer), and then gives the block's logits within
//     2e-4·(1 + |logit|) at every decode position;
// (3) TS-fused-split: with every Q, K, V, O and FFN matrix split by rows under a 6 KiB binding limit, the
//     fused list's logits are bit-identical to the unsplit fused run at every position of a prompt and its
//     greedy continuation (parts written in place; split Q/K/V through fused_norm_matmul and
//     fused_rope_kv; both runs split decode attention over positions, so neither takes the attention
//     block, which sums in its own order; batched steps with split FFN matrices: TS-split-bindings);
// (4) TS-fused-forward on synthetic GGUF models written here (five block-32 weight kinds in every layer):
//     qwen2 (Q/K/V biases through the combined vector, NEOX pairs, tied classifier), llama with
//     rope_freqs, llama with routed experts: batched and decode logits within 2e-4 of unfused, same argmax;
// (5) TS-fused-split, batched: stories260K under 32 KiB (embedding, classifier and FFN split), per-row
//     logits of a 12-token pass bit-identical to the unsplit fused run;
// (6) bad kernel options are refused before anything is allocated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlamaForward, createHostProvider, createRuntime, createWebGPUProvider, loadModel, planWeights } from '../../src/index.js';
import type { HostProvider, LoadedModel, LlamaForwardOptions, Runtime, StepResult, WebGPUProvider } from '../../src/index.js';
import type { GgufValue, PackedKind } from '../../src/index.js';
import { randomGgufRows } from '../ops/qmatmul-blocks.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { gv, writeGguf } from '../support/gguf-writer.js';
import type { WriterTensor } from '../support/gguf-writer.js';
import { readGgufFixture } from '../support/gguf-fixtures.js';
import { readModelFixture } from '../support/models.js';
import { inBrowser, providerCases } from '../support/providers.js';
import type { ProviderCase } from '../support/providers.js';

const stories = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');
const tinyLlama = await readGgufFixture('tiny-llama-Q4_K_M.gguf');

/** |fused - unfused| <= TOL·(1 + |unfused|): f32 sums in another order (and f32 vs f64 norms on the host). */
const TOL = 2e-4;
const KIB = 1024;
const TIMEOUT = 600_000;
/** "Once upon a time" and llama2.c's greedy continuation (../shared/models/README.md). */
const PROMPT = [1, 403, 407, 261, 378];
const KNOWN_CONTINUATION = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317];
/** Dispatches per layer and per step of a decode step (see the module comment of src/session/llama.ts). */
const FUSED_PER_LAYER = 4;
/** The fused list where the attention block does not apply: fused_norm_qkv_rope, fused_attention_split, the combine, O, gate/up, down. */
const FUSED_SPLIT_PER_LAYER = 6;
const FUSED_PER_STEP = 3;
/** The unfused list on the host: rmsnorm, Q, K, V (into one qkv row), fused_rope_kv, attention, O, add, rmsnorm, gate, up, silu_mul, down, add. */
const UNFUSED_PER_LAYER = 14;
/** The unfused list on WebGPU, F32 weights: norm+Q/K/V, fused_rope_kv, attention, O (+x), norm+gate/up/SiLU, down (+x). */
const UNFUSED_WEBGPU_F32_PER_LAYER = 6;
const UNFUSED_PER_STEP = 4;
/** The unfused list on WebGPU with an F32 classifier: the final norm folded into it (matmul_nt_norm). */
const UNFUSED_WEBGPU_F32_PER_STEP = 3;

function expectNear(got: Float32Array, want: Float32Array, label: string): void {
  expect(got.length, `${label}: length`).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i]! - want[i]!) <= TOL * (1 + Math.abs(want[i]!)))) expect.fail(`${label}: logit ${i} is ${got[i]}, unfused ${want[i]}`);
  }
}

function expectSameBits(got: Float32Array, want: Float32Array, label: string): void {
  expect(got.length, `${label}: length`).toBe(want.length);
  const a = new Uint32Array(got.buffer, got.byteOffset, got.length);
  const b = new Uint32Array(want.buffer, want.byteOffset, want.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) expect.fail(`${label}: logit ${i} is ${got[i]}, unsplit ${want[i]}`);
}

function destroy(p: HostProvider | WebGPUProvider | undefined): void {
  if (p?.kind === 'webgpu') (p as WebGPUProvider).destroy();
}

/** Greedy decode from the prompt's batched pass (every row's logits kept): `steps` more tokens, each step's result. */
async function greedy(f: LlamaForward, prompt: readonly number[], steps: number): Promise<{ ids: number[]; prefill: StepResult; results: StepResult[] }> {
  const ids: number[] = [];
  const results: StepResult[] = [];
  const prefill = await f.run(prompt, 0, { allRows: true });
  let r = prefill;
  for (let s = 0; s < steps; s++) {
    ids.push(r.argmax);
    results.push(r);
    r = await f.run([r.argmax], prompt.length + s);
  }
  return { ids, prefill, results };
}

/**
 * A synthetic GGUF model (seeded) for the architecture flags: dim 64, 4 heads over 2 kv heads, ffn 96, 2
 * layers, 40 tokens, every matrix in a different block-32 kind (Q8_0, Q4_0, Q5_1, Q4_1, Q5_0; the token
 * embedding Q8_0, the classifier Q4_1), norms and biases F32.
 */
const SYN = { dim: 64, heads: 4, kvHeads: 2, ffn: 96, layers: 2, vocab: 40, experts: 4, used: 2 } as const;
interface Synthetic {
  readonly arch: 'llama' | 'qwen2';
  readonly bias: boolean;
  readonly tied: boolean;
  readonly routed: boolean;
  readonly factors: boolean;
}
function synthetic(spec: Synthetic, seed: number): Uint8Array {
  const { dim, heads, kvHeads, ffn, layers, vocab, experts, used } = SYN;
  const headDim = dim / heads;
  const kvDim = kvHeads * headDim;
  let n = seed;
  const ggml = (shape: readonly number[]): number[] => [...shape].reverse();
  const f32 = (name: string, values: Float32Array): WriterTensor => ({ name, shape: [values.length], type: 'F32', data: new Uint8Array(values.buffer.slice(0)) });
  const vector = (name: string, len: number, scale: number, offset = 0): WriterTensor => {
    const r = new Float32Array(len);
    for (let i = 0; i < len; i++) r[i] = offset + scale * Math.sin(++n * 12.9898);
    return f32(name, r);
  };
  const matrix = (name: string, kind: PackedKind, shape: readonly number[]): WriterTensor => {
    const k = shape[shape.length - 1]!;
    const rows = shape.slice(0, -1).reduce((a, b) => a * b, 1);
    return { name, shape: ggml(shape), type: kind, data: randomGgufRows(kind, rows, k, ++n) };
  };
  const tensors: WriterTensor[] = [matrix('token_embd.weight', 'Q8_0', [vocab, dim]), vector('output_norm.weight', dim, 0.2, 1)];
  if (!spec.tied) tensors.push(matrix('output.weight', 'Q4_1', [vocab, dim]));
  if (spec.factors) tensors.push(vector('rope_freqs.weight', headDim / 2, 0.5, 2));
  for (let l = 0; l < layers; l++) {
    const b = `blk.${l}.`;
    tensors.push(vector(`${b}attn_norm.weight`, dim, 0.2, 1), matrix(`${b}attn_q.weight`, 'Q8_0', [dim, dim]), matrix(`${b}attn_k.weight`, 'Q4_0', [kvDim, dim]), matrix(`${b}attn_v.weight`, 'Q5_1', [kvDim, dim]));
    if (spec.bias) tensors.push(vector(`${b}attn_q.bias`, dim, 0.5), vector(`${b}attn_k.bias`, kvDim, 0.5), vector(`${b}attn_v.bias`, kvDim, 0.5));
    tensors.push(matrix(`${b}attn_output.weight`, 'Q4_1', [dim, dim]), vector(`${b}ffn_norm.weight`, dim, 0.2, 1));
    if (spec.routed) {
      tensors.push(
        matrix(`${b}ffn_gate_inp.weight`, 'F32', [experts, dim]),
        matrix(`${b}ffn_gate_exps.weight`, 'Q5_0', [experts, ffn, dim]),
        matrix(`${b}ffn_up_exps.weight`, 'Q8_0', [experts, ffn, dim]),
        matrix(`${b}ffn_down_exps.weight`, 'Q4_0', [experts, dim, ffn]),
      );
    } else {
      tensors.push(matrix(`${b}ffn_gate.weight`, 'Q5_0', [ffn, dim]), matrix(`${b}ffn_up.weight`, 'Q8_0', [ffn, dim]), matrix(`${b}ffn_down.weight`, 'Q4_0', [dim, ffn]));
    }
  }
  const tokens = ['<unk>', '<s>', '</s>', ...Array.from({ length: vocab - 3 }, (_, i) => `t${i}`)];
  const hyper: Record<string, GgufValue> = {
    embedding_length: gv.u32(dim),
    block_count: gv.u32(layers),
    feed_forward_length: gv.u32(ffn),
    'attention.head_count': gv.u32(heads),
    'attention.head_count_kv': gv.u32(kvHeads),
    'attention.layer_norm_rms_epsilon': gv.f32(1e-5),
    'rope.freq_base': gv.f32(10000),
    context_length: gv.u32(64),
    ...(spec.routed ? { expert_count: gv.u32(experts), expert_used_count: gv.u32(used) } : {}),
  };
  return writeGguf({
    metadata: [
      ['general.architecture', gv.str(spec.arch)],
      ...Object.entries(hyper).map(([k, v]): [string, GgufValue] => [`${spec.arch}.${k}`, v]),
      ['tokenizer.ggml.model', gv.str('llama')],
      ['tokenizer.ggml.tokens', gv.strings(tokens)],
      ['tokenizer.ggml.scores', gv.f32s(tokens.map((_, i) => -i))],
      ['tokenizer.ggml.token_type', gv.i32s(tokens.map((_, i) => (i === 0 ? 2 : i < 3 ? 3 : 1)))],
    ],
    tensors,
  }).bytes;
}

const SYNTHETIC: readonly [string, Synthetic][] = [
  ['qwen2 (Q/K/V biases, NEOX pairs, tied classifier)', { arch: 'qwen2', bias: true, tied: true, routed: false, factors: false }],
  ['llama with rope_freqs (frequency factors, untied classifier)', { arch: 'llama', bias: false, tied: false, routed: false, factors: true }],
  ['llama with routed experts (router, top-2 of 4)', { arch: 'llama', bias: false, tied: false, routed: true, factors: false }],
];

/**
 * One provider and one runtime per provider case, shared by the tests of its describe: the runtime's
 * pipeline cache then compiles each kernel and constants once for the file instead of once per test
 * (SwiftShader compiles each in about a second). Every test disposes what it creates on them.
 */
interface Shared {
  readonly provider: HostProvider | WebGPUProvider;
  readonly runtime: Runtime;
}

async function pair(shared: Shared, model: LoadedModel, options: LlamaForwardOptions): Promise<{ fused: LlamaForward; unfused: LlamaForward; provider: HostProvider | WebGPUProvider }> {
  const fused = await LlamaForward.create(shared.runtime, model, { ...options, kernels: 'fused', decode: 'plain' });
  const unfused = await LlamaForward.create(shared.runtime, model, { ...options, kernels: 'unfused', decode: 'plain' });
  return { fused, unfused, provider: shared.provider };
}

for (const pc of providerCases()) {
  describe(`fused dispatch list on ${pc.name}`, () => {
    let shared: Shared | undefined;
    const on = (): Shared => {
      if (shared === undefined) throw new Error('provider not ready');
      return shared;
    };
    beforeAll(async () => {
      const provider = await pc.make();
      shared = { provider, runtime: createRuntime(provider) };
    });
    afterAll(() => {
      destroy(shared?.provider);
      shared = undefined;
    });

    it.skipIf(stories === undefined || tok512 === undefined)('[TS-fused-forward][TS-fused-dispatches] stories260K: fused logits within 2e-4 of unfused, batched and decode, llama2.c greedy ids, 4 dispatches per layer + 3', async () => {
      const model = await loadModel(stories!, { tokenizer: tok512! });
      const { fused, unfused, provider } = await pair(on(), model, { maxSeq: 64, maxBatch: 16 });
      try {
        expect(fused.kernels).toBe('fused');
        expect(unfused.kernels).toBe('unfused');
        const layers = model.config.layers;
        expect(fused.stepDispatches(1)).toBe(FUSED_PER_LAYER * layers + FUSED_PER_STEP);
        expect(unfused.stepDispatches(1)).toBe(provider.kind === 'webgpu' ? UNFUSED_WEBGPU_F32_PER_LAYER * layers + UNFUSED_WEBGPU_F32_PER_STEP : UNFUSED_PER_LAYER * layers + UNFUSED_PER_STEP);
        // The batched pass is the greedy run's prefill: 5 rows, one whole tile of 4 rows and a partial one.
        const ga = await greedy(fused, PROMPT, KNOWN_CONTINUATION.length);
        const gb = await greedy(unfused, PROMPT, KNOWN_CONTINUATION.length);
        expect(ga.prefill.argmaxRows).toEqual(gb.prefill.argmaxRows);
        expect(ga.prefill.argmaxRows.length).toBe(PROMPT.length);
        expectNear(ga.prefill.rowLogits, gb.prefill.rowLogits, 'batched');
        expect(ga.ids).toEqual(KNOWN_CONTINUATION);
        expect(gb.ids).toEqual(KNOWN_CONTINUATION);
        ga.results.forEach((r, s) => expectNear(r.logits, gb.results[s]!.logits, `decode step ${s}`));
      } finally {
        fused.dispose();
        unfused.dispose();
      }
    }, TIMEOUT);

    it.skipIf(tinyLlama === undefined)('[TS-fused-forward] tiny-llama-Q4_K_M (Q4_K and Q6_K in one layer, untied Q6_K classifier): batched logits within 2e-4 of unfused, same argmax', async () => {
      const model = await loadModel(tinyLlama!);
      const { fused, unfused, provider } = await pair(on(), model, { maxSeq: 16, maxBatch: 8 });
      try {
        // Some layer mixes kinds (Q4_K_M puts attn_v and ffn_down of later layers in Q6_K): one fused Q/K/V dispatch reads two kinds.
        const mixed = Array.from({ length: model.config.layers }, (_, l) => new Set(model.tensors.filter((t) => t.layer === l && t.geometry.shape.length === 2).map((t) => t.kind.name)).size);
        expect(Math.max(...mixed)).toBeGreaterThan(1);
        // Three rows: a partial tile of the batched (TM = 4) kernels.
        const tokens = [1, 415, 293];
        const a = await fused.run(tokens, 0, { allRows: true });
        const b = await unfused.run(tokens, 0, { allRows: true });
        expect(a.argmaxRows).toEqual(b.argmaxRows);
        expectNear(a.rowLogits, b.rowLogits, 'batched');
      } finally {
        fused.dispose();
        unfused.dispose();
      }
    }, TIMEOUT);

    for (const [label, spec] of SYNTHETIC) {
      it(`[TS-fused-forward] ${label}, five weight kinds in a layer: fused logits within 2e-4 of unfused, batched and decode, same argmax`, async () => {
        const model = await loadModel(synthetic(spec, spec.arch === 'qwen2' ? 101 : spec.routed ? 303 : 202));
        expect(model.architecture.attentionBias).toBe(spec.bias);
        expect(model.architecture.ffn).toBe(spec.routed ? 'routed' : 'dense');
        const { fused, unfused } = await pair(on(), model, { maxSeq: 16, maxBatch: 8 });
        try {
          const tokens = [1, 7, 19, 3, 11];
          const a = await fused.run(tokens, 0, { allRows: true });
          const b = await unfused.run(tokens, 0, { allRows: true });
          expect(a.argmaxRows).toEqual(b.argmaxRows);
          expectNear(a.rowLogits, b.rowLogits, 'batched');
          for (let pos = tokens.length; pos < tokens.length + 3; pos++) {
            const da = await fused.run([pos % SYN.vocab], pos);
            const db = await unfused.run([pos % SYN.vocab], pos);
            expect(da.argmax).toBe(db.argmax);
            expectNear(da.logits, db.logits, `decode at ${pos}`);
          }
          // Biases take the attention block's bias form (the combined vector): the same 4 dispatches per layer.
          if (!spec.routed) expect(fused.stepDispatches(1)).toBe(FUSED_PER_LAYER * SYN.layers + FUSED_PER_STEP);
        } finally {
          fused.dispose();
          unfused.dispose();
        }
      }, TIMEOUT);
    }

    it.skipIf(stories === undefined || tok512 === undefined)('[TS-fused-split] batched: the embedding, classifier and FFN split under 32 KiB, each part written into its columns of every row: per-row logits bit-identical to the unsplit fused run', async () => {
      const model = await loadModel(stories!, { tokenizer: tok512! });
      const limit = 32 * KIB;
      const small = pc.kind === 'host'
        ? createHostProvider({ maxAllocationBytes: limit, ...(inBrowser ? { shared: true } : {}) })
        : await createWebGPUProvider({ ...(inBrowser ? {} : { gpu: (globalThis as { __tenonNodeGPU?: GPU }).__tenonNodeGPU! }), limits: { maxBufferSize: limit, maxStorageBufferBindingSize: limit } });
      const options = { maxSeq: 32, maxBatch: 16, kernels: 'fused', decode: 'plain' } as const;
      try {
        const whole = await LlamaForward.create(on().runtime, model, options);
        const parts = await LlamaForward.create(createRuntime(small), model, options);
        try {
          expect(parts.parts.classifier).toBeGreaterThan(1);
          expect(planWeights(model, small).tensors.find((t) => t.name === 'blk.0.ffn_gate.weight')!.parts.length).toBeGreaterThan(1);
          const tokens = [1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315];
          const a = await whole.run(tokens, 0, { allRows: true });
          const b = await parts.run(tokens, 0, { allRows: true });
          expect(b.argmaxRows).toEqual(a.argmaxRows);
          expectSameBits(b.rowLogits, a.rowLogits, 'batched');
        } finally {
          whole.dispose();
          parts.dispose();
        }
      } finally {
        destroy(small);
      }
    }, TIMEOUT);

    it.skipIf(stories === undefined || tok512 === undefined)('[TS-fused-dispatches] a cache past attentionSplit positions: decode attention split over positions + combine (the two-pass path, 6 per layer), logits within 2e-4 of the attention block', async () => {
      const model = await loadModel(stories!, { tokenizer: tok512! });
      const { runtime } = on();
      const split = await LlamaForward.create(runtime, model, { maxSeq: 64, maxBatch: 16, kernels: 'fused', decode: 'plain', attentionSplit: 4 });
      const whole = await LlamaForward.create(runtime, model, { maxSeq: 64, maxBatch: 16, kernels: 'fused', decode: 'plain' });
      try {
        const layers = model.config.layers;
        expect(split.stepDispatches(1)).toBe(FUSED_SPLIT_PER_LAYER * layers + FUSED_PER_STEP);
        expect(whole.stepDispatches(1)).toBe(FUSED_PER_LAYER * layers + FUSED_PER_STEP);
        // Batched steps keep one attention dispatch per layer.
        expect(split.stepDispatches(4)).toBe(whole.stepDispatches(4));
        // Cache lengths 6..12 past attentionSplit 4: two and three chunks, a partial last chunk and whole ones.
        const steps = 7;
        const a = await greedy(split, PROMPT, steps);
        const b = await greedy(whole, PROMPT, steps);
        expect(a.ids).toEqual(b.ids);
        a.results.forEach((r, s) => expectNear(r.logits, b.results[s]!.logits, `decode at position ${PROMPT.length + s - 1}`));
      } finally {
        split.dispose();
        whole.dispose();
      }
    }, TIMEOUT);

    it.skipIf(stories === undefined || tok512 === undefined)('[TS-fused-split] every Q, K, V and FFN matrix split by rows under a 6 KiB binding: fused logits bit-identical to the unsplit fused run at every position', async () => {
      const model = await loadModel(stories!, { tokenizer: tok512! });
      // 6 KiB splits attn_k and attn_v (8 KiB) too; the split embedding's scratch then allows one row per step.
      const limit = 6 * KIB;
      const small = pc.kind === 'host'
        ? createHostProvider({ maxAllocationBytes: limit, ...(inBrowser ? { shared: true } : {}) })
        : await createWebGPUProvider({ ...(inBrowser ? {} : { gpu: (globalThis as { __tenonNodeGPU?: GPU }).__tenonNodeGPU! }), limits: { maxBufferSize: limit, maxStorageBufferBindingSize: limit } });
      // Decode attention split in both runs (8 < maxSeq): split Q/K/V never take the attention block, so the unsplit run must not either.
      const options = { maxSeq: 16, maxBatch: 1, kernels: 'fused', decode: 'plain', attentionSplit: 8 } as const;
      try {
        const split = planWeights(model, small).tensors;
        for (const role of ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down']) {
          expect(split.find((t) => t.name === `blk.0.${role}.weight`)!.parts.length, role).toBeGreaterThan(1);
        }
        const whole = await LlamaForward.create(on().runtime, model, options);
        const parts = await LlamaForward.create(createRuntime(small), model, options);
        try {
          let token = PROMPT[0]!;
          for (let pos = 0; pos < 8; pos++) {
            const a = await whole.run([token], pos);
            const b = await parts.run([token], pos);
            expect(b.argmax).toBe(a.argmax);
            expectSameBits(b.logits, a.logits, `position ${pos}`);
            token = PROMPT[pos + 1] ?? a.argmax;
          }
        } finally {
          whole.dispose();
          parts.dispose();
        }
      } finally {
        destroy(small);
      }
    }, TIMEOUT);

    it.skipIf(stories === undefined || tok512 === undefined)('[TS-fused-forward] an unknown kernels list or a bad attentionSplit is refused (EINVAL) before anything is allocated', async () => {
      const model = await loadModel(stories!, { tokenizer: tok512! });
      const { provider } = on();
      const before = provider.counters();
      await expectCodeAsync(() => LlamaForward.create(createRuntime(provider), model, { kernels: 'fastest' as 'fused' }), 'EINVAL', 'bad-kernels');
      await expectCodeAsync(() => LlamaForward.create(createRuntime(provider), model, { attentionSplit: 0 }), 'EINVAL', 'bad-attention-split');
      await expectCodeAsync(() => LlamaForward.create(createRuntime(provider), model, { attentionSplit: 2.5 }), 'EINVAL', 'bad-attention-split');
      const after = provider.counters();
      expect(after.rootsCreated).toBe(before.rootsCreated);
      expect(after.liveBytes).toBe(before.liveBytes);
    });
  });
}
