// Weight materialisation (src/model/materialize.ts): model -> storage on the host and WebGPU providers.
// Plan:
// (1) every tensor of tiny-llama-Q4_K_M becomes parts whose words are exactly the lowering kind's repack
//     of the stored rows (F32 tensors as f32, the rest as u32 words); the provider's live roots and bytes
//     grow by exactly the parts and return to baseline on dispose;
// (2) a binding limit below a tensor's packed size (forced by option, or by the WebGPU provider's own
//     capped limits) splits it by rows into parts that concatenate to the unsplit tensor, the last part
//     holding the remainder; the tiny-qwen2 Q6_K embedding (32 MB packed) loads under an 8 MiB binding
//     limit; 3-D expert tensors keep whole experts in a part when one fits; the WebGPU provider reports the
//     adapter's own limits unless capped, and refuses allocations past a cap;
// (3) validation happens before the first allocation: a row larger than the limit (ENOMEM) and bad options
//     (EINVAL) leave every counter unchanged;
// (4) stored bytes are read by ranges of at most `chunkBytes` (or one row), each byte once, with monotonic
//     progress ending at the model's stored bytes;
// (5) a failure part-way (abort, a source read error, a device lost mid-load) disposes everything:
//     live roots, bytes and resources return to baseline after at least one part had been created.
import { describe, expect, it } from 'vitest';
import { createWebGPUProvider, loadModel, materializeWeights, planWeights, zeros } from '../../src/index.js';
import type { ByteSource, CounterSnapshot, HostProvider, LoadedModel, MaterializedWeights, WeightTensor, WebGPUProvider } from '../../src/index.js';
import { TenonError } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { readGgufFixture } from '../support/gguf-fixtures.js';
import { inBrowser, providerCases, webgpuCase } from '../support/providers.js';

const llamaQ4KM = await readGgufFixture('tiny-llama-Q4_K_M.gguf');
const llamaF32 = await readGgufFixture('tiny-llama-f32.gguf');
const moeF32 = await readGgufFixture('tiny-moe-f32.gguf');
const qwen2 = await readGgufFixture('tiny-qwen2-Q4_K_M.gguf');

const MiB = 1 << 20;

/** The words of one part, read back from the provider. */
async function partWords(weights: MaterializedWeights, w: WeightTensor, index: number): Promise<Uint32Array> {
  using view = weights.group.view(w.parts[index]!.slot);
  const array = await view.toArray();
  expect(view.dtype).toBe(w.dtype);
  return new Uint32Array(array.buffer, array.byteOffset, array.byteLength / 4);
}

/** All parts of a weight, concatenated. */
async function allWords(weights: MaterializedWeights, w: WeightTensor): Promise<Uint32Array> {
  const out = new Uint32Array(w.rows * w.packedRowWords);
  for (let p = 0; p < w.parts.length; p++) out.set(await partWords(weights, w, p), w.parts[p]!.firstRow * w.packedRowWords);
  return out;
}

/** The packed form the lowering kind gives the tensor's stored rows (the reference). */
async function expectedWords(model: LoadedModel, name: string): Promise<Uint32Array> {
  const t = model.tensor(name);
  return t.kind.repack(await t.readRows(0, t.geometry.rows), t.geometry.rowElements);
}

function sameWords(a: Uint32Array, b: Uint32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const live = (c: CounterSnapshot): { roots: number; bytes: number; resources: number } => ({ roots: c.liveRoots, bytes: c.liveBytes, resources: c.liveResources });

async function withProvider(make: () => Promise<HostProvider | WebGPUProvider>, body: (p: HostProvider | WebGPUProvider) => Promise<void>): Promise<void> {
  const provider = await make();
  try {
    await body(provider);
  } finally {
    if ('destroy' in provider) provider.destroy();
  }
}

function nodeGPU(): GPU {
  return (globalThis as { __tenonNodeGPU?: GPU }).__tenonNodeGPU!;
}

/** A WebGPU provider of this lane with capped limits. */
function cappedWebGPU(limits: { maxBufferSize?: number; maxStorageBufferBindingSize?: number }): Promise<WebGPUProvider> {
  return inBrowser ? createWebGPUProvider({ limits }) : createWebGPUProvider({ gpu: nodeGPU(), limits });
}

/** A source over bytes that records every read length and can fail its n-th read. */
function recordingSource(bytes: Uint8Array, failAt?: number): ByteSource & { readonly lengths: number[] } {
  const lengths: number[] = [];
  return {
    size: bytes.length,
    lengths,
    read(offset, length) {
      if (failAt !== undefined && lengths.length === failAt) return Promise.reject(new TenonError('EIO', 'injected read failure', { op: 'test.read', reason: 'read-failed' }));
      lengths.push(length);
      return Promise.resolve(bytes.slice(offset, offset + length));
    },
  };
}

for (const pc of providerCases()) {
  describe(`weight materialisation on ${pc.name}`, () => {
    it.skipIf(llamaQ4KM === undefined)('[MD-materialize-packed] every tensor of tiny-llama-Q4_K_M is its kind\'s repack of the stored rows; counters grow by exactly the parts and return on dispose', async () => {
      await withProvider(pc.make, async (provider) => {
        const model = await loadModel(llamaQ4KM!);
        const before = provider.counters();
        const weights = await materializeWeights(model, provider);
        const after = provider.counters();
        expect(weights.tensors.map((w) => w.name)).toEqual(model.tensors.map((t) => t.name));
        const parts = weights.tensors.reduce((n, w) => n + w.parts.length, 0);
        expect(parts).toBe(model.tensors.length);
        expect(after.liveRoots - before.liveRoots).toBe(parts);
        expect(after.liveBytes - before.liveBytes).toBe(model.packedBytes);
        expect(weights.packedBytes).toBe(model.packedBytes);
        expect(weights.bytesByKind).toEqual({
          F32: model.tensors.filter((t) => t.kind.name === 'F32').reduce((n, t) => n + t.geometry.packedBytes, 0),
          Q4_K: model.tensors.filter((t) => t.kind.name === 'Q4_K').reduce((n, t) => n + t.geometry.packedBytes, 0),
          Q6_K: model.tensors.filter((t) => t.kind.name === 'Q6_K').reduce((n, t) => n + t.geometry.packedBytes, 0),
        });
        for (const w of weights.tensors) {
          expect(w.dtype).toBe(w.kind === 'F32' ? 'f32' : 'u32');
          expect(w.packedLayout).toBe(model.tensor(w.name).kind.packedLayout);
          expect(sameWords(await allWords(weights, w), await expectedWords(model, w.name)), w.name).toBe(true);
        }
        // Layer handles point at the same weights; the classifier is its own tensor here.
        expect(weights.layers[2]!.attnK).toBe(weights.tensor('blk.2.attn_k.weight'));
        expect(weights.globals.output).toBe(weights.tensor('output.weight'));
        weights.dispose();
        expect(live(provider.counters())).toEqual(live(before));
      });
    });

    it.skipIf(llamaF32 === undefined)('[MD-materialize-split] a forced binding limit splits tensors by rows; the parts concatenate to the unsplit tensor and the last holds the remainder', async () => {
      await withProvider(pc.make, async (provider) => {
        const model = await loadModel(llamaF32!);
        const LIMIT = 100_000;
        const whole = await materializeWeights(model, provider);
        const split = await materializeWeights(model, provider, { maxBindingBytes: LIMIT });
        expect(split.maxPartBytes).toBe(LIMIT);
        // token_embd: 512 rows of 1024 bytes, 97 rows per part: 5 x 97 + 27.
        const embd = split.globals.tokenEmbedding;
        expect(embd.parts.map((p) => [p.firstRow, p.rows])).toEqual([[0, 97], [97, 97], [194, 97], [291, 97], [388, 97], [485, 27]]);
        for (const w of split.tensors) {
          const unsplit = whole.tensor(w.name);
          expect(unsplit.parts).toHaveLength(1);
          expect(w.parts.length).toBe(Math.ceil(w.packedBytes / (Math.floor(LIMIT / (w.packedRowWords * 4)) * w.packedRowWords * 4)));
          for (const p of w.parts) expect(p.byteLength).toBeLessThanOrEqual(LIMIT);
          expect(w.parts.reduce((n, p) => n + p.rows, 0)).toBe(w.rows);
          expect(sameWords(await allWords(split, w), await partWords(whole, unsplit, 0)), w.name).toBe(true);
        }
        split.dispose();
        whole.dispose();
      });
    });

    it.skipIf(moeF32 === undefined)('[MD-materialize-split] 3-D expert tensors keep whole experts in a part when one fits, and split by rows when none does', async () => {
      await withProvider(pc.make, async (provider) => {
        const model = await loadModel(moeF32!);
        // One expert of ffn_gate_exps is 512 rows x 1024 bytes = 512 KiB.
        const byExperts = planWeights(model, provider, { maxBindingBytes: 1.25 * MiB }).tensors.find((t) => t.name === 'blk.0.ffn_gate_exps.weight')!;
        expect(byExperts.parts.map((p) => [p.firstRow, p.rows])).toEqual([[0, 1024], [1024, 1024]]);
        const byRows = planWeights(model, provider, { maxBindingBytes: 300_000 }).tensors.find((t) => t.name === 'blk.0.ffn_gate_exps.weight')!;
        expect(byRows.parts).toHaveLength(8);
        expect(byRows.parts.at(-1)).toEqual({ firstRow: 7 * 292, rows: 2048 - 7 * 292, byteLength: (2048 - 7 * 292) * 1024 });
        const weights = await materializeWeights(model, provider, { maxBindingBytes: 1.25 * MiB });
        const w = weights.layers[1]!.ffnDownExperts!;
        expect(w.matrixRows).toBe(256);
        expect(w.parts.every((p) => p.firstRow % w.matrixRows === 0 && p.rows % w.matrixRows === 0)).toBe(true);
        expect(sameWords(await allWords(weights, w), await expectedWords(model, w.name))).toBe(true);
        weights.dispose();
      });
    });

    it.skipIf(llamaF32 === undefined)('[MD-materialize-validate] a row past the binding limit and bad options are refused before the first allocation', async () => {
      await withProvider(pc.make, async (provider) => {
        const model = await loadModel(llamaF32!);
        const before = provider.counters();
        // An ffn_down row holds 768 f32 = 3072 bytes.
        const err = await expectCodeAsync(() => materializeWeights(model, provider, { maxBindingBytes: 3000 }), 'ENOMEM', 'row-exceeds-binding');
        expect(err.ids).toMatchObject({ rowBytes: 3072, limit: 3000 });
        await expectCodeAsync(() => materializeWeights(model, provider, { maxBindingBytes: 0 }), 'EINVAL', 'bad-option');
        await expectCodeAsync(() => materializeWeights(model, provider, { chunkBytes: 1.5 }), 'EINVAL', 'bad-option');
        await expectCodeAsync(() => materializeWeights(model, provider, { onProgress: 'no' as never }), 'EINVAL', 'bad-option');
        const aborted = new AbortController();
        aborted.abort();
        await expectCodeAsync(() => materializeWeights(model, provider, { signal: aborted.signal }), 'ECANCELED', 'aborted');
        expect(provider.counters()).toEqual(before);
        // The control: 3072 bytes per part is enough (one row per part).
        expect(planWeights(model, provider, { maxBindingBytes: 3072 }).tensors.find((t) => t.name === 'blk.0.ffn_down.weight')!.parts).toHaveLength(256);
      });
    });

    it.skipIf(llamaQ4KM === undefined)('[MD-materialize-reads] stored bytes are read once each, by ranges of at most chunkBytes (or one row), with monotonic progress', async () => {
      await withProvider(pc.make, async (provider) => {
        const source = recordingSource(llamaQ4KM!);
        const model = await loadModel(source);
        source.lengths.length = 0;
        const CHUNK = 8192;
        const progress: { bytesDone: number; bytesTotal: number; tensorsDone: number; tensorsTotal: number }[] = [];
        const weights = await materializeWeights(model, provider, { chunkBytes: CHUNK, onProgress: (p) => progress.push(p) });
        const maxRow = Math.max(...model.tensors.map((t) => t.geometry.rowBytes));
        expect(Math.max(...source.lengths)).toBeLessThanOrEqual(Math.max(CHUNK, maxRow));
        expect(source.lengths.reduce((a, b) => a + b, 0)).toBe(model.storedBytes);
        expect(source.lengths.length).toBeGreaterThan(model.tensors.length);
        for (let i = 1; i < progress.length; i++) {
          expect(progress[i]!.bytesDone).toBeGreaterThanOrEqual(progress[i - 1]!.bytesDone);
          expect(progress[i]!.tensorsDone).toBeGreaterThanOrEqual(progress[i - 1]!.tensorsDone);
        }
        expect(progress.at(-1)).toEqual({ bytesDone: model.storedBytes, bytesTotal: model.storedBytes, tensorsDone: model.tensors.length, tensorsTotal: model.tensors.length });
        weights.dispose();
      });
    });

    it.skipIf(llamaQ4KM === undefined)('[MD-materialize-cleanup] an abort or a read error part-way disposes every part made so far', async () => {
      await withProvider(pc.make, async (provider) => {
        const base = provider.counters();
        const model = await loadModel(llamaQ4KM!);
        const controller = new AbortController();
        await expectCodeAsync(
          () =>
            materializeWeights(model, provider, {
              chunkBytes: 4096,
              signal: controller.signal,
              onProgress: (p) => {
                if (p.bytesDone > p.bytesTotal / 2) controller.abort();
              },
            }),
          'ECANCELED',
          'aborted',
        );
        const afterAbort = provider.counters();
        expect(afterAbort.rootsCreated - base.rootsCreated).toBeGreaterThan(5);
        expect(live(afterAbort)).toEqual(live(base));

        const counting = recordingSource(llamaQ4KM!);
        const intact = await loadModel(counting);
        const reads = counting.lengths.length;
        // Fail the 40th tensor read.
        const source = recordingSource(llamaQ4KM!, reads + 40);
        const model2 = await loadModel(source);
        const err = await expectCodeAsync(() => materializeWeights(model2, provider, { chunkBytes: 4096 }), 'EIO', 'read-failed');
        expect(err.op).toBe('test.read');
        const afterRead = provider.counters();
        expect(afterRead.rootsCreated - afterAbort.rootsCreated).toBeGreaterThan(1);
        expect(live(afterRead)).toEqual(live(base));
        // The control: the same model materialises when nothing fails.
        const ok = await materializeWeights(intact, provider);
        expect(ok.tensors).toHaveLength(model.tensors.length);
        ok.dispose();
        expect(live(provider.counters())).toEqual(live(base));
      });
    });
  });
}

describe('WebGPU binding limits', () => {
  it('[MD-materialize-provider-limits] the provider reports the adapter\'s own limits; capped limits are enforced and reported', async () => {
    const plain = (await webgpuCase().make()) as WebGPUProvider;
    try {
      expect(plain.capabilities.maxBindingBytes).toBe(Math.min(plain.device.limits.maxStorageBufferBindingSize, plain.device.limits.maxBufferSize));
      expect(plain.capabilities.maxAllocationBytes).toBe(plain.device.limits.maxBufferSize);
      // The software adapter offers more than the 128 MiB default binding size (TOOLCHAIN.md).
      expect(plain.device.limits.maxStorageBufferBindingSize).toBeGreaterThan(128 * MiB);
    } finally {
      plain.destroy();
    }
    const capped = await cappedWebGPU({ maxBufferSize: 16 * MiB, maxStorageBufferBindingSize: 8 * MiB });
    try {
      expect(capped.capabilities.maxAllocationBytes).toBe(16 * MiB);
      expect(capped.capabilities.maxBindingBytes).toBe(8 * MiB);
      const before = capped.counters();
      await expectCodeAsync(() => zeros(capped, 'u8', [16 * MiB + 4]), 'ENOMEM', 'exceeds-limit');
      expect(capped.counters().liveRoots).toBe(before.liveRoots);
    } finally {
      capped.destroy();
    }
    await expectCodeAsync(() => createWebGPUProvider({ limits: { maxComputeWorkgroupSizeX: 4 } as never }), 'EINVAL', 'bad-limit');
    await expectCodeAsync(() => createWebGPUProvider({ limits: { maxBufferSize: 0 } }), 'EINVAL', 'bad-limit');
  });

  it.skipIf(qwen2 === undefined)('[MD-materialize-split] tiny-qwen2\'s 32 MB Q6_K embedding loads on a WebGPU provider capped at 8 MiB bindings; its parts are the unsplit repack; the tied classifier is uploaded once', async () => {
    const provider = await cappedWebGPU({ maxBufferSize: 16 * MiB, maxStorageBufferBindingSize: 8 * MiB });
    try {
      const model = await loadModel(qwen2!);
      expect(model.globals.tokenEmbedding.geometry.packedBytes).toBeGreaterThan(3 * 8 * MiB);
      const before = provider.counters();
      const weights = await materializeWeights(model, provider);
      const embd = weights.globals.tokenEmbedding;
      expect(weights.globals.output).toBe(embd);
      expect(weights.maxPartBytes).toBe(8 * MiB);
      // 53 words (212 bytes) per Q6_K row of 256: 39,568 rows per 8 MiB part, 151,936 rows in 4 parts.
      expect(embd.packedRowWords).toBe(53);
      expect(embd.parts.map((p) => p.rows)).toEqual([39_568, 39_568, 39_568, 151_936 - 3 * 39_568]);
      expect(sameWords(await allWords(weights, embd), await expectedWords(model, 'token_embd.weight'))).toBe(true);
      expect(provider.counters().liveBytes - before.liveBytes).toBe(model.packedBytes);
      weights.dispose();
      expect(live(provider.counters())).toEqual(live(before));
    } finally {
      provider.destroy();
    }
  });

  it.skipIf(llamaQ4KM === undefined)('[MD-materialize-cleanup] a device lost part-way: materialisation fails ENODEV and every part made so far is released', async () => {
    const provider = (await webgpuCase().make()) as WebGPUProvider;
    try {
      const base = provider.counters();
      const model = await loadModel(llamaQ4KM!);
      let lost = false;
      await expectCodeAsync(
        () =>
          materializeWeights(model, provider, {
            onProgress: (p) => {
              if (!lost && p.tensorsDone > 10) {
                lost = true;
                provider.faults.loseDevice();
              }
            },
          }),
        'ENODEV',
      );
      const after = provider.counters();
      expect(after.rootsCreated - base.rootsCreated).toBeGreaterThan(10);
      expect(after.liveRoots).toBe(base.liveRoots);
      expect(after.liveBytes).toBe(base.liveBytes);
      expect(after.doubleDestroys).toBe(0);
    } finally {
      provider.destroy();
    }
  });
});
