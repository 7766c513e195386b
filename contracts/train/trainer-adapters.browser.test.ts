// Suite (browser lane: the data plane needs OPFS and workers): saving and loading a Trainer's LoRA
// adapters through the data plane (src/train/trainer-adapters.ts) with the base model's identity.
// Plan: a LoRA trainer on the host provider takes 4 steps on stories260K and saves its adapters to a
// data-plane blob; (1) round trip — a fresh LoRA trainer on WebGPU loads them: every adapter equals the
// saved bits and its loss on the window is the saving trainer's within 1e-4 relative; (2) identity — a
// load naming another base model is ESTALE wrong-model, a trainer of another rank is EINVAL
// layout-mismatch, a blob with one flipped bit is EINVAL corrupt, and none of them changes the loading
// trainer (its B stays zero); (3) a trainer without adapters refuses to save (ENOTSUP no-adapters).
import { beforeAll, describe, expect, it } from 'vitest';
import { Trainer, createHostProvider, createRuntime, modelIdentity, parseLlamaModel, parseTokenizer, readBlob, writeBlob } from '../../src/index.js';
import type { LlamaModelFile, Session, WebGPUProvider } from '../../src/index.js';
import { planeWithSession } from '../dataplane/support/plane.js';
import { readModelFixture } from '../support/models.js';
import { webgpuCase } from '../support/providers.js';

const model = await readModelFixture('stories260K.bin');
const vocab = await readModelFixture('tok512.bin');
const TEXT = 'Tom had a blue kite. The wind took the kite up to the sky, and Tom ran after it with a big smile.';
const LORA = { rank: 4, alpha: 8, seed: 3 };
const T = 16;

describe.skipIf(model === undefined || vocab === undefined)('Trainer adapters through the data plane', () => {
  let file: LlamaModelFile;
  let tokens: number[];
  let baseModelId: string;
  let store: Session;
  let gpu: WebGPUProvider;
  beforeAll(async () => {
    file = parseLlamaModel(model!);
    const tokenizer = parseTokenizer(vocab!, file.config.vocabSize);
    tokens = tokenizer.encode(TEXT);
    baseModelId = (await modelIdentity(file, tokenizer)).modelId;
    ({ s: store } = await planeWithSession());
    gpu = (await webgpuCase().make()) as WebGPUProvider;
  });

  it('[TR-adapters-roundtrip][TR-adapters-identity] adapters saved on the host load into a WebGPU trainer bit for bit; another model, rank or a flipped bit is refused and changes nothing', async () => {
    const saver = await Trainer.create(createRuntime(createHostProvider()), file, { seqLen: T, seed: 7, optimizer: { lr: 1e-2 }, lora: LORA });
    const loader = await Trainer.create(createRuntime(gpu), file, { seqLen: T, seed: 7, lora: LORA });
    const other = await Trainer.create(createRuntime(createHostProvider()), file, { seqLen: T, seed: 7, lora: { ...LORA, rank: 2 } });
    try {
      await saver.train(tokens, 4);
      const manifest = await saver.saveAdapters(store, '/adapters/a.bin', { baseModelId });
      expect(manifest.steps).toBe(4);
      expect(manifest.tensors.length).toBe(2 * 7 * file.config.nLayers);
      const window = tokens.slice(0, T + 1);
      const names = manifest.tensors.map((t) => t.name);
      // Refusals first: the loader's adapters (B = 0) must survive each.
      const zeroB = await loader.parameter(names[1]!);
      expect(zeroB.every((v) => v === 0)).toBe(true);
      await expect(loader.loadAdapters(store, '/adapters/a.bin', { baseModelId: 'f'.repeat(64) })).rejects.toMatchObject({ code: 'ESTALE', reason: 'wrong-model' });
      await expect(other.loadAdapters(store, '/adapters/a.bin', { baseModelId })).rejects.toMatchObject({ code: 'EINVAL', reason: 'layout-mismatch' });
      const good = await readBlob(store, '/adapters/a.bin');
      const flipped = good.slice();
      flipped[flipped.byteLength >> 1]! ^= 0x10;
      const w = await writeBlob(store, '/adapters/bad.bin', flipped.byteLength);
      await w.write(flipped);
      await w.seal();
      await expect(loader.loadAdapters(store, '/adapters/bad.bin', { baseModelId })).rejects.toMatchObject({ code: 'EINVAL', reason: 'corrupt' });
      expect(Array.from(await loader.parameter(names[1]!))).toEqual(Array.from(zeroB));
      // The round trip.
      await loader.loadAdapters(store, '/adapters/a.bin', { baseModelId });
      for (const name of names) expect(Array.from(await loader.parameter(name)), name).toEqual(Array.from(await saver.parameter(name)));
      const want = await saver.step(window);
      const got = await loader.step(window);
      expect(Math.abs(got - want)).toBeLessThanOrEqual(1e-4 * want);
    } finally {
      saver.dispose();
      loader.dispose();
      other.dispose();
    }
  });

  it('[TR-adapters-identity] a trainer without adapters refuses to save with ENOTSUP no-adapters', async () => {
    const full = await Trainer.create(createRuntime(createHostProvider()), file, { seqLen: T, seed: 7 });
    try {
      await expect(full.saveAdapters(store, '/adapters/none.bin', { baseModelId })).rejects.toMatchObject({ code: 'ENOTSUP', reason: 'no-adapters' });
    } finally {
      full.dispose();
    }
  });
});
