// Suite: LoRA adapters in LlamaGrad and Trainer (src/train/llama-grad.ts, `lora` option) on stories260K.
// Plan: (1) a fresh adapter (B = 0) leaves the model as it was: the window's loss is the base model's
// bit for bit; (2) finite differences — with every B set to seeded values in ±0.05 (so A's gradients are
// not zero), on the host, the largest and one seeded entry of A and B of wq, wv, wo and w2 in the first and
// the last layer: central difference with h = 2^-7 against the gradient within 2e-2·(|fd| + |g|)/2 + 2e-4;
// (3) host vs WebGPU — loss within 1e-5 relative, every adapter gradient within 1e-4 relative L2;
// (4) training — a LoRA Trainer (rank 4, alpha 8, lr 1e-2, seed 7) lowers the first window's loss of a
// fixed text at least 1.5x in 12 steps on the host and WebGPU, while every base weight keeps its bits;
// (5) a bad rank is EINVAL, a base weight has no gradient under LoRA (EINVAL unknown-name).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlamaGrad, Trainer, createHostProvider, createRuntime, parseLlamaModel, parseTokenizer } from '../../src/index.js';
import type { HostProvider, LlamaModelFile, WebGPUProvider } from '../../src/index.js';
import { randomF32, rng } from '../ops/harness.js';
import { expectCode } from '../support/expect-error.js';
import { readModelFixture } from '../support/models.js';
import { webgpuCase } from '../support/providers.js';

const model = await readModelFixture('stories260K.bin');
const vocab = await readModelFixture('tok512.bin');
const TOKENS = [1, 403, 407, 261, 378, 42, 77, 300, 261];
const T = TOKENS.length - 1;
const LORA = { rank: 4, alpha: 8, seed: 3 };
const H = 2 ** -7;
/** WebGPU vs host, per adapter gradient (relative L2). */
const GRAD_REL_L2 = 1e-4;
const TEXT = 'Tom had a blue kite. The wind took the kite up to the sky, and Tom ran after it with a big smile.';

describe.skipIf(model === undefined || vocab === undefined)('LoRA adapters on stories260K', () => {
  let file: LlamaModelFile;
  let host: HostProvider;
  let gpu: WebGPUProvider;
  beforeAll(async () => {
    file = parseLlamaModel(model!);
    host = createHostProvider();
    gpu = (await webgpuCase().make()) as WebGPUProvider;
  });
  afterAll(() => gpu?.destroy());

  /** Sets every B to seeded values in ±0.05. */
  async function perturbB(g: LlamaGrad): Promise<void> {
    let seed = 500;
    for (const name of g.trainableNames.filter((n) => n.startsWith('loraB:'))) {
      const shape = (await g.parameter(name)).length;
      await g.setParameter(name, randomF32(seed++, shape, -0.05, 0.05));
    }
  }

  it('[TR-lora-identity] a fresh adapter (B = 0) gives the base model\'s loss bit for bit', async () => {
    const base = await LlamaGrad.create(createRuntime(host), file, { seqLen: T });
    const adapted = await LlamaGrad.create(createRuntime(host), file, { seqLen: T, lora: LORA });
    try {
      expect((await adapted.step(TOKENS)).loss).toBe((await base.step(TOKENS)).loss);
      expect(adapted.trainableNames.length).toBe(2 * 7 * file.config.nLayers);
      expectCode(() => void adapted.gradient('wq.0'), 'EINVAL', 'unknown-name');
    } finally {
      base.dispose();
      adapted.dispose();
    }
    await expect(LlamaGrad.create(createRuntime(host), file, { seqLen: T, lora: { ...LORA, rank: 0 } })).rejects.toMatchObject({ code: 'EINVAL', reason: 'bad-param' });
  });

  it('[TR-lora-fd] adapter gradients (A and B of wq, wv, wo, w2, first and last layer) agree with central finite differences; WebGPU agrees with the host', async () => {
    const g = await LlamaGrad.create(createRuntime(host), file, { seqLen: T, lora: LORA });
    const w = await LlamaGrad.create(createRuntime(gpu), file, { seqLen: T, lora: LORA });
    try {
      await perturbB(g);
      await perturbB(w);
      const loss = (await g.step(TOKENS)).loss;
      const gpuLoss = (await w.step(TOKENS)).loss;
      expect(Math.abs(gpuLoss - loss)).toBeLessThanOrEqual(1e-5 * loss);
      const grads = new Map<string, Float32Array>();
      for (const name of g.trainableNames) grads.set(name, await g.gradient(name));
      for (const name of g.trainableNames) {
        const want = grads.get(name)!;
        const got = await w.gradient(name);
        let norm = 0;
        let diff = 0;
        for (let i = 0; i < want.length; i++) {
          norm += want[i]! ** 2;
          diff += (got[i]! - want[i]!) ** 2;
        }
        expect(norm, `${name} has a gradient`).toBeGreaterThan(0);
        if (!(Math.sqrt(diff / norm) <= GRAD_REL_L2)) expect.fail(`${name}: WebGPU differs from the host by ${Math.sqrt(diff / norm)} relative L2`);
      }
      const last = file.config.nLayers - 1;
      const probed = ['wq', 'wv', 'wo', 'w2'].flatMap((t) => [0, last].flatMap((l) => [`loraA:${t}.${l}`, `loraB:${t}.${l}`]));
      const r = rng(16);
      for (const name of probed) {
        const grad = grads.get(name)!;
        const value = await g.parameter(name);
        let top = 0;
        for (let i = 1; i < grad.length; i++) if (Math.abs(grad[i]!) > Math.abs(grad[top]!)) top = i;
        for (const e of [top, Math.floor(r() * grad.length)]) {
          const probe = value.slice();
          probe[e] = value[e]! + H;
          const up = probe[e]!;
          await g.setParameter(name, probe);
          const lp = (await g.step(TOKENS)).loss;
          probe[e] = value[e]! - H;
          const down = probe[e]!;
          await g.setParameter(name, probe);
          const lm = (await g.step(TOKENS)).loss;
          await g.setParameter(name, value);
          const fd = (lp - lm) / (up - down);
          if (!(Math.abs(fd - grad[e]!) <= 2e-2 * (Math.abs(fd) + Math.abs(grad[e]!)) / 2 + 2e-4)) expect.fail(`${name}[${e}]: gradient ${grad[e]}, finite difference ${fd}`);
        }
      }
    } finally {
      g.dispose();
      w.dispose();
    }
  });

  it('[TR-lora-trainer] a LoRA Trainer lowers a fixed text\'s loss 1.5x in 12 steps on host and WebGPU, leaving every base weight\'s bits unchanged', async () => {
    const tokens = parseTokenizer(vocab!, file.config.vocabSize).encode(TEXT);
    for (const provider of [host, gpu]) {
      const before = provider.counters().liveBytes;
      const trainer = await Trainer.create(createRuntime(provider), file, { seqLen: 16, seed: 7, optimizer: { lr: 1e-2 }, lora: LORA });
      try {
        const first = tokens.slice(0, 17);
        const start = await trainer.step(first);
        await trainer.train(tokens, 12);
        const end = await trainer.step(first);
        if (!(end * 1.5 <= start)) expect.fail(`${provider.kind}: loss ${start} -> ${end}, not 1.5x lower`);
        for (const name of ['tokenEmbedding', 'wq.0', 'w2.4', 'rmsFinal']) {
          const now = await trainer.parameter(name);
          const shape = now.length;
          const original = name === 'tokenEmbedding' ? file.weights.tokenEmbedding : name === 'rmsFinal' ? file.weights.rmsFinal : name === 'wq.0' ? file.weights.wq.subarray(0, shape) : file.weights.w2.subarray(4 * shape, 5 * shape);
          expect(Array.from(now), `${name} is frozen`).toEqual(Array.from(original));
        }
      } finally {
        trainer.dispose();
      }
      expect(provider.counters().liveBytes).toBe(before);
    }
  });
});
