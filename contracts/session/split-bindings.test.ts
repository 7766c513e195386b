// Plan (acceptance point 3): a provider whose binding and buffer limits are forced below the size of the
// token embedding still runs the model, with the embedding, the classifier and every other matrix too
// large for one binding split by rows, and gives bit-identical logits to the unsplit run on the same
// kind of provider. Per split part the forward dispatches the very kernel and tiling of the unsplit weight
// (a qmatmul's tiling depends on M and K only, so every output element is summed in the same order), and
// the split embedding selects each token's row with an exact copy, so equality is exact, not approximate.
// Cases, on every provider of the lane (WebGPU forced through createWebGPUProvider({ limits }), the host
// provider through maxAllocationBytes):
// - stories260K.bin + tok512.bin (llama2.c, F32, tied classifier): a 32 KiB limit splits the embedding =
//   classifier into 4 parts and the FFN matrices into 2;
// - tiny-llama-Q4_K_M.gguf (Q4_K embedding read by qgather, untied Q6_K classifier, Q4_K/Q6_K FFN): 48 KiB;
// - tiny-qwen2-Q4_K_M.gguf (a 32 MB Q6_K embedding tied to the classifier): 12 MiB, on the host provider
//   only (on SwiftShader its batched classifier costs minutes; the two cases above run the same code).
// Each case compares a batched pass with per-row logits (M > 1: split matrices write through a scratch),
// and a decode step (M = 1: each part writes its slice of the output). A limit too small for the
// activations of the chosen batch is refused before anything is allocated.
import { describe, expect, it } from 'vitest';
import { LlamaForward, createHostProvider, createRuntime, createWebGPUProvider, loadModel, planWeights } from '../../src/index.js';
import type { HostProvider, LoadedModel, WebGPUProvider } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { readGgufFixture } from '../support/gguf-fixtures.js';
import { readModelFixture } from '../support/models.js';
import { inBrowser, providerCases } from '../support/providers.js';
import type { ProviderCase } from '../support/providers.js';

const KIB = 1024;
const MIB = 1024 * KIB;
const HOST_TIMEOUT = 120_000;
const WEBGPU_TIMEOUT = 600_000;

interface SplitCase {
  readonly name: string;
  readonly limit: number;
  readonly maxSeq: number;
  readonly maxBatch: number;
  /** Tokens of the batched pass (any ids of the vocabulary). */
  readonly tokens: readonly number[];
  readonly hostOnly: boolean;
  /** Layer matrices are split too (the batched pass then goes through the split scratch). */
  readonly layerSplits: boolean;
  /** The fixture files are present. */
  readonly present: boolean;
  load(): Promise<LoadedModel>;
}

const stories = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');
const tinyLlama = await readGgufFixture('tiny-llama-Q4_K_M.gguf');
const qwen = await readGgufFixture('tiny-qwen2-Q4_K_M.gguf');

const CASES: readonly SplitCase[] = [
  {
    name: 'stories260K.bin (F32, tied)',
    limit: 32 * KIB,
    maxSeq: 32,
    maxBatch: 16,
    tokens: [1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315],
    hostOnly: false,
    layerSplits: true,
    present: stories !== undefined && tok512 !== undefined,
    load: () => loadModel(stories!, { tokenizer: tok512! }),
  },
  {
    name: 'tiny-llama-Q4_K_M.gguf (Q4_K embedding, Q6_K classifier)',
    limit: 48 * KIB,
    maxSeq: 32,
    maxBatch: 16,
    tokens: [1, 415, 293, 90, 285, 114, 58, 9, 77, 300, 411, 12],
    hostOnly: false,
    layerSplits: true,
    present: tinyLlama !== undefined,
    load: () => loadModel(tinyLlama!),
  },
  {
    name: 'tiny-qwen2-Q4_K_M.gguf (Q6_K embedding tied to the classifier)',
    limit: 12 * MIB,
    maxSeq: 16,
    maxBatch: 8,
    tokens: [9707, 1879, 11, 419, 374, 2121, 71620],
    hostOnly: true,
    layerSplits: false,
    present: qwen !== undefined,
    load: () => loadModel(qwen!),
  },
];

/** The lane's provider of `pc`'s kind with both limits forced to `limit` bytes. */
async function limited(pc: ProviderCase, limit: number): Promise<HostProvider | WebGPUProvider> {
  if (pc.kind === 'host') return createHostProvider({ maxAllocationBytes: limit, ...(inBrowser ? { shared: true } : {}) });
  const gpu = inBrowser ? undefined : (globalThis as { __tenonNodeGPU?: GPU }).__tenonNodeGPU;
  return createWebGPUProvider({ ...(gpu === undefined ? {} : { gpu }), limits: { maxBufferSize: limit, maxStorageBufferBindingSize: limit } });
}

/** Index of the first element whose bits differ (so -0 and +0 differ), or -1 when a and b are bit-identical. */
function firstDifference(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i;
  return -1;
}

function destroy(p: HostProvider | WebGPUProvider | undefined): void {
  if (p?.kind === 'webgpu') (p as WebGPUProvider).destroy();
}

for (const pc of providerCases()) {
  describe(`weights split across bindings on ${pc.name}`, () => {
    for (const c of CASES) {
      it.skipIf(!c.present || (c.hostOnly && pc.kind !== 'host'))(`[TS-split-bindings] ${c.name}: limits of ${c.limit} bytes split the embedding and classifier by rows; logits bit-identical to the unsplit run`, async () => {
        const model = await c.load();
        const vocab = model.config.vocabSize;
        const embedding = model.globals.tokenEmbedding;
        expect(embedding.geometry.packedBytes).toBeGreaterThan(c.limit);
        const plain = await pc.make();
        const small = await limited(pc, c.limit);
        try {
          expect(small.capabilities.maxBindingBytes).toBe(c.limit);
          expect(small.capabilities.maxAllocationBytes).toBe(c.limit);
          const whole = await LlamaForward.create(createRuntime(plain), model, { maxSeq: c.maxSeq, maxBatch: c.maxBatch });
          const split = await LlamaForward.create(createRuntime(small), model, { maxSeq: c.maxSeq, maxBatch: c.maxBatch });
          try {
            expect(whole.parts).toEqual({ embedding: 1, classifier: 1 });
            expect(split.parts.embedding).toBe(Math.ceil(embedding.geometry.packedBytes / (c.limit - (c.limit % (embedding.geometry.packedRowWords * 4)))));
            expect(split.parts.embedding).toBeGreaterThan(1);
            expect(split.parts.classifier).toBeGreaterThan(1);
            const splitLayers = planWeights(model, small).tensors.filter((t) => t.name.startsWith('blk.') && t.parts.length > 1);
            expect(splitLayers.length > 0).toBe(c.layerSplits);
            // Batched (M > 1): every row's logits and argmax.
            const a = await whole.run(c.tokens, 0, { allRows: true });
            const b = await split.run(c.tokens, 0, { allRows: true });
            expect(b.rowLogits.length).toBe(c.tokens.length * vocab);
            expect(b.argmaxRows).toEqual(a.argmaxRows);
            expect(firstDifference(b.rowLogits, a.rowLogits)).toBe(-1);
            // Decode (M = 1) after the batch: the KV rows the split run wrote are the same too.
            const next = a.argmaxRows[a.argmaxRows.length - 1]!;
            const da = await whole.run([next], c.tokens.length);
            const db = await split.run([next], c.tokens.length);
            expect(db.argmax).toBe(da.argmax);
            expect(db.logits.length).toBe(vocab);
            expect(firstDifference(db.logits, da.logits)).toBe(-1);
          } finally {
            whole.dispose();
            split.dispose();
          }
        } finally {
          destroy(plain);
          destroy(small);
        }
      }, pc.kind === 'host' ? HOST_TIMEOUT : WEBGPU_TIMEOUT);
    }

    it.skipIf(stories === undefined || tok512 === undefined)('[TS-split-bindings] activations that do not fit the limit are refused before anything is allocated', async () => {
      const model = await loadModel(stories!, { tokenizer: tok512! });
      const small = await limited(pc, 32 * KIB);
      try {
        const before = small.counters();
        // 32 rows of 512 logits take 64 KiB: one binding cannot hold them (every other buffer fits).
        const err = await expectCodeAsync(() => LlamaForward.create(createRuntime(small), model, { maxSeq: 64, maxBatch: 32 }), 'ENOMEM', 'activation-exceeds-binding');
        expect(err.ids).toMatchObject({ buffer: 'rowLogits', limit: 32 * KIB });
        const after = small.counters();
        expect(after.rootsCreated).toBe(before.rootsCreated);
        expect(after.liveBytes).toBe(before.liveBytes);
      } finally {
        destroy(small);
      }
    });
  });
}
