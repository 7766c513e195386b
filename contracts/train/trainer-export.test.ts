// Suite: generating with a trained model (src/train/trainer-export.ts, Trainer.exportModel) on stories260K
// (../shared/models), host and the lane's WebGPU provider.
// Plan: (1) full fine-tune — a trainer takes STEPS AdamW steps on a fixed text and exports its weights; a
// TextSession over the export runs the first window's T inputs in a prediction lane (every row's logits)
// and the mean cross-entropy of those logits against the window's targets equals the loss the trainer's
// next step reports (its loss before the update, i.e. at the exported weights) within LOSS_TOLERANCE
// relative, while a session over the base model gives a loss at least BASE_GAP higher on the same window;
// the export's model identity differs from the base's in modelId and weightsId (same tokenizerId), and its
// weights are views of one buffer. (2) LoRA — the same with a rank-4 adapter trainer (merged W + s·B·A).
// (3) browser lane only: a prompt cache saved by a base-model session is refused by the export's session
// (EINVAL model-mismatch) and leaves it empty. Sizes are CI-small (T = 16, a few steps).
import { describe, expect, it } from 'vitest';
import { TextSession, Trainer, createHostProvider, createRuntime, modelIdentity, parseLlamaModel, parseTokenizer } from '../../src/index.js';
import type { HostProvider, LlamaModelFile, Tokenizer, WebGPUProvider } from '../../src/index.js';
import { readModelFixture } from '../support/models.js';
import { inBrowser, webgpuCase } from '../support/providers.js';

const model = await readModelFixture('stories260K.bin');
const vocab = await readModelFixture('tok512.bin');
const TEXT = 'Tom had a blue kite. The wind took the kite up to the sky, and Tom ran after it with a big smile.';
const T = 16;
const STEPS = 6;
const SEED = 7;
/** The session's forward and the trainer's compiled step use different kernels: f32 rounding apart. */
const LOSS_TOLERANCE = 1e-5;
/** Nats the trained model's loss on the window must lie below the base model's. */
const BASE_GAP = 0.25;
const LORA = { rank: 4, alpha: 8, seed: 3 };
const MAX_SEQ = 64;

/** Mean over rows of -log softmax(logits[row])[targets[row]], in f64. */
function crossEntropy(rowLogits: Float32Array, targets: readonly number[], vocabSize: number): number {
  let total = 0;
  targets.forEach((target, row) => {
    let max = -Infinity;
    for (let j = 0; j < vocabSize; j++) max = Math.max(max, rowLogits[row * vocabSize + j]!);
    let sum = 0;
    for (let j = 0; j < vocabSize; j++) sum += Math.exp(rowLogits[row * vocabSize + j]! - max);
    total += Math.log(sum) + max - rowLogits[row * vocabSize + target]!;
  });
  return total / targets.length;
}

describe.skipIf(model === undefined || vocab === undefined)('Trainer.exportModel on stories260K', () => {
  const file: LlamaModelFile = parseLlamaModel(model!);
  const tokenizer: Tokenizer = parseTokenizer(vocab!, file.config.vocabSize);
  const tokens = tokenizer.encode(TEXT);
  const window = tokens.slice(0, T + 1);

  /** The window's loss under `m` through a TextSession on `provider` (all-row logits of a prediction lane). */
  async function sessionLoss(provider: HostProvider | WebGPUProvider, m: LlamaModelFile): Promise<{ loss: number; modelId: string; weightsId: string; tokenizerId: string }> {
    const session = await TextSession.create({ runtime: createRuntime(provider), model: m, tokenizer, maxSeq: MAX_SEQ });
    try {
      const lane = session.forkLane();
      const r = await lane.run(window.slice(0, T));
      await lane.abandon();
      expect(r.rowLogits.length).toBe(T * file.config.vocabSize);
      const id = await session.identity();
      return { loss: crossEntropy(r.rowLogits, window.slice(1), file.config.vocabSize), ...id };
    } finally {
      session.dispose();
    }
  }

  async function check(provider: HostProvider | WebGPUProvider, options: { lora?: typeof LORA; lr: number }): Promise<void> {
    const base = await modelIdentity(file, tokenizer);
    const baseLoss = (await sessionLoss(provider, file)).loss;
    const trainer = await Trainer.create(createRuntime(provider), file, { seqLen: T, seed: SEED, optimizer: { lr: options.lr }, ...(options.lora === undefined ? {} : { lora: options.lora }) });
    try {
      await trainer.train(tokens, STEPS);
      const exported = await trainer.exportModel();
      // One buffer behind every weight, and the base model's config.
      expect(new Set(Object.values(exported.weights).map((w) => w.buffer)).size).toBe(1);
      expect(exported.zeroCopy).toBe(true);
      expect(exported.config).toEqual(file.config);
      expect(exported.sharedClassifier).toBe(file.sharedClassifier);
      const got = await sessionLoss(provider, exported);
      // The trainer's next step reports its loss before the update: at the exported weights.
      const trained = await trainer.step(window);
      const label = `${provider.kind}${options.lora === undefined ? '' : ' lora'}`;
      console.info(`[TR-export-session] ${label}: base ${baseLoss}, trainer ${trained}, exported session ${got.loss}`);
      if (!(Math.abs(got.loss - trained) <= LOSS_TOLERANCE * trained)) expect.fail(`${label}: session ${got.loss}, trainer ${trained}`);
      if (!(got.loss + BASE_GAP <= baseLoss)) expect.fail(`${label}: exported ${got.loss} not ${BASE_GAP} below base ${baseLoss}`);
      expect(got.modelId).not.toBe(base.modelId);
      expect(got.weightsId).not.toBe(base.weightsId);
      expect(got.tokenizerId).toBe(base.tokenizerId);
    } finally {
      trainer.dispose();
    }
  }

  it('[TR-export-session] a full fine-tune exported to a TextSession gives the trainer\'s loss on a window (host and WebGPU), below the base model\'s, under another identity', async () => {
    await check(createHostProvider(), { lr: 3e-3 });
    const gpu = (await webgpuCase().make()) as WebGPUProvider;
    try {
      await check(gpu, { lr: 3e-3 });
    } finally {
      gpu.destroy();
    }
  });

  it('[TR-export-lora] a LoRA trainer exports W + (alpha/rank)·B·A: its TextSession gives the trainer\'s loss on a window, below the base model\'s (host and WebGPU)', async () => {
    await check(createHostProvider(), { lr: 1e-2, lora: LORA });
    const gpu = (await webgpuCase().make()) as WebGPUProvider;
    try {
      await check(gpu, { lr: 1e-2, lora: LORA });
    } finally {
      gpu.destroy();
    }
  });

  it.skipIf(!inBrowser)('[TR-export-identity] a prompt cache saved by the base model is refused by the exported model\'s session (EINVAL model-mismatch), which stays empty', async () => {
    const { planeWithSession } = await import('../dataplane/support/plane.js');
    const { s: store } = await planeWithSession();
    const provider = createHostProvider();
    const baseSession = await TextSession.create({ runtime: createRuntime(provider), model: file, tokenizer, maxSeq: MAX_SEQ });
    const trainer = await Trainer.create(createRuntime(provider), file, { seqLen: T, seed: SEED, optimizer: { lr: 3e-3 } });
    try {
      await baseSession.prefill(window.slice(0, T));
      await baseSession.savePromptCache(store, '/caches/base.bin');
      await trainer.train(tokens, 2);
      const adapted = await TextSession.create({ runtime: createRuntime(provider), model: await trainer.exportModel(), tokenizer, maxSeq: MAX_SEQ });
      try {
        await expect(adapted.loadPromptCache(store, '/caches/base.bin')).rejects.toMatchObject({ code: 'EINVAL', reason: 'model-mismatch' });
        expect(adapted.length).toBe(0);
        // The same cache loads into a second base-model session (the refusal is the identity, not the blob).
        const again = await TextSession.create({ runtime: createRuntime(provider), model: file, tokenizer, maxSeq: MAX_SEQ });
        try {
          await again.loadPromptCache(store, '/caches/base.bin');
          expect(again.length).toBe(T);
        } finally {
          again.dispose();
        }
      } finally {
        adapted.dispose();
      }
    } finally {
      trainer.dispose();
      baseSession.dispose();
    }
  });
});
