// Suite: LlamaGrad (src/train/llama-grad.ts), the explicit loss and gradients of the llama forward on the
// real stories260K checkpoint (../shared/models), on the host provider and the lane's WebGPU provider.
// Plan: (1) finite differences — on the host, one window of T = 8 tokens (the README prompt then four arbitrary ids; the
// greedy continuation's loss is checked to be below 0.2 as a forward sanity check); for the embedding, the final norm and all nine tensors of the first and the last
// layer, the entry with the largest |gradient| and one seeded entry: central difference of the step's
// loss with h = 2^-7 (exact in f32) against the gradient within 2e-2·(|fd| + |g|)/2 + 2e-4 (f32 loss
// in the difference: ~2e-6 noise / 2h ≈ 1e-4, plus O(h^2) curvature); (2) host vs WebGPU — the same
// window: loss within 1e-5 relative, every gradient tensor within 1e-4 relative L2 (observed at most
// 6.2e-6 on Dawn and Chromium: f32 sums in other orders and the device's exp/log, through 5 layers, at a
// loss of 9.15); (3) refusals: bad token counts and ids are EINVAL
// before anything runs and the state survives.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlamaGrad, createHostProvider, createRuntime, parseLlamaModel } from '../../src/index.js';
import type { HostProvider, LlamaModelFile, WebGPUProvider } from '../../src/index.js';
import { rng } from '../ops/harness.js';
import { expectCode } from '../support/expect-error.js';
import { readModelFixture } from '../support/models.js';
import { webgpuCase } from '../support/providers.js';

const bytes = await readModelFixture('stories260K.bin');
/** "Once upon a time, there was a" (README): the model's own greedy continuation, so its loss is small. */
const GREEDY = [1, 403, 407, 261, 378, 432, 383, 286, 261];
/** The same prompt then arbitrary ids: a large loss and large gradients for the probes. */
const TOKENS = [1, 403, 407, 261, 378, 42, 77, 300, 261];
const T = TOKENS.length - 1;
const H = 2 ** -7;
/** WebGPU vs host, per gradient tensor (relative L2). */
const GRAD_REL_L2 = 1e-4;

describe.skipIf(bytes === undefined)('LlamaGrad on stories260K', () => {
  let file: LlamaModelFile;
  let host: HostProvider;
  let gpu: WebGPUProvider;
  let hostGrad: LlamaGrad;
  let hostLoss = 0;
  beforeAll(async () => {
    file = parseLlamaModel(bytes!);
    host = createHostProvider();
    gpu = (await webgpuCase().make()) as WebGPUProvider;
    hostGrad = await LlamaGrad.create(createRuntime(host), file, { seqLen: T });
    hostLoss = (await hostGrad.step(TOKENS)).loss;
  });
  afterAll(() => {
    hostGrad?.dispose();
    gpu?.destroy();
  });

  it('[TR-llama-grad-fd] gradients of the stories260K loss agree with central finite differences (embedding, final norm, first and last layer)', async () => {
    const last = file.config.nLayers - 1;
    const names = ['tokenEmbedding', 'rmsFinal', ...['rmsAtt', 'wq', 'wk', 'wv', 'wo', 'rmsFfn', 'w1', 'w2', 'w3'].flatMap((p) => [`${p}.0`, `${p}.${last}`])];
    // The gradients of the unperturbed window, before any probe step overwrites them.
    const grads = new Map<string, Float32Array>();
    for (const name of names) grads.set(name, await hostGrad.gradient(name));
    const r = rng(15);
    let checked = 0;
    for (const name of names) {
      const g = grads.get(name)!;
      const w = await hostGrad.parameter(name);
      let top = 0;
      for (let i = 1; i < g.length; i++) if (Math.abs(g[i]!) > Math.abs(g[top]!)) top = i;
      expect(Math.abs(g[top]!), `${name} has a non-zero gradient`).toBeGreaterThan(1e-5);
      for (const e of [top, Math.floor(r() * g.length)]) {
        const probe = w.slice();
        probe[e] = w[e]! + H;
        const up = probe[e]!;
        await hostGrad.setParameter(name, probe);
        const lp = (await hostGrad.step(TOKENS)).loss;
        probe[e] = w[e]! - H;
        const down = probe[e]!;
        await hostGrad.setParameter(name, probe);
        const lm = (await hostGrad.step(TOKENS)).loss;
        await hostGrad.setParameter(name, w);
        const fd = (lp - lm) / (up - down);
        const bound = 2e-2 * (Math.abs(fd) + Math.abs(g[e]!)) / 2 + 2e-4;
        if (!(Math.abs(fd - g[e]!) <= bound)) expect.fail(`${name}[${e}]: gradient ${g[e]}, finite difference ${fd}`);
        checked++;
      }
    }
    expect(checked).toBe(names.length * 2);
    // The probes left the parameters as they were: the loss is the same bits.
    expect((await hostGrad.step(TOKENS)).loss).toBe(hostLoss);
    // Forward sanity: the model's own greedy continuation is nearly certain, the arbitrary window is not.
    expect((await hostGrad.step(GREEDY)).loss).toBeLessThan(0.2);
    expect(hostLoss).toBeGreaterThan(1);
    expect((await hostGrad.step(TOKENS)).loss).toBe(hostLoss);
  });

  it('[TR-llama-grad-webgpu] WebGPU computes the same loss (1e-5 relative) and every gradient tensor within 1e-4 relative L2 of the host', async () => {
    const g = await LlamaGrad.create(createRuntime(gpu), file, { seqLen: T });
    try {
      const { loss } = await g.step(TOKENS);
      expect((await hostGrad.step(TOKENS)).loss).toBe(hostLoss);
      expect(Math.abs(loss - hostLoss)).toBeLessThanOrEqual(1e-5 * hostLoss);
      for (const name of g.parameterNames) {
        const want = await hostGrad.gradient(name);
        const got = await g.gradient(name);
        let norm = 0;
        let diff = 0;
        for (let i = 0; i < want.length; i++) {
          norm += want[i]! ** 2;
          diff += (got[i]! - want[i]!) ** 2;
        }
        expect(norm, `${name} has a gradient`).toBeGreaterThan(0);
        const rel = Math.sqrt(diff / norm);
        if (!(rel <= GRAD_REL_L2)) expect.fail(`${name}: WebGPU differs from the host by ${rel} relative L2`);
      }
    } finally {
      g.dispose();
    }
  });

  it('[TR-llama-grad-refuse] a window of the wrong length or an id past the vocabulary is EINVAL before anything runs; the state survives', async () => {
    await expect(hostGrad.step(TOKENS.slice(1))).rejects.toMatchObject({ code: 'EINVAL', reason: 'bad-tokens' });
    await expect(hostGrad.step([...TOKENS.slice(1), 512])).rejects.toMatchObject({ code: 'EINVAL', reason: 'out-of-range' });
    expectCode(() => {
      void hostGrad.gradient('nope');
    }, 'EINVAL', 'unknown-name');
    expect((await hostGrad.step(TOKENS)).loss).toBe(hostLoss);
  });
});
