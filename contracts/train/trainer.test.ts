// Suite: Trainer (src/train/trainer.ts): full fine-tuning of stories260K (../shared/models) with AdamW on
// a fixed short text, on the host provider and the lane's WebGPU provider.
// Plan: (1) loss falls — the text (TEXT, tokenized with tok512) is trained for STEPS steps of T = 16
// tokens at lr 3e-3 from seed 7; the loss of the text's first window, measured before training and
// after, drops by at least LOSS_FACTOR on each provider (STEPS is kept small for CI's software adapters:
// WebGPU stops there); (1b) node lane only: the LONG_STEPS = 200 steps on the host provider lower
// the first window's loss by at least LONG_FACTOR, two such runs give the same 200 losses bit for bit, and
// their first STEPS losses equal the 12-step run's (the same seeded windows); and 200 steps on Dawn bring the
// mean of the last TAIL_STEPS window losses LONG_FACTOR_WEBGPU below the start (the
// browser lane keeps 12 steps: Chromium's software adapter would add minutes);
// (2) determinism — a second trainer
// with the same seed on the same provider gives the same per-step losses bit for bit; (3) release — after
// dispose() the provider's live bytes and live roots are back at their values before create (WebGPU:
// every buffer the trainer made is destroyed); (4) refusals: bad options and too short a text are EINVAL
// before anything runs or is allocated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Trainer, createHostProvider, createRuntime, parseLlamaModel, parseTokenizer } from '../../src/index.js';
import type { HostProvider, LlamaModelFile, WebGPUProvider } from '../../src/index.js';
import { readModelFixture } from '../support/models.js';
import { inBrowser, webgpuCase } from '../support/providers.js';

const model = await readModelFixture('stories260K.bin');
const vocab = await readModelFixture('tok512.bin');
const TEXT = 'Tom had a blue kite. The wind took the kite up to the sky, and Tom ran after it with a big smile.';
const T = 16;
const STEPS = 12;
const LOSS_FACTOR = 2;
const LONG_STEPS = 200;
const LONG_FACTOR = 20;
/**
 * WebGPU's 200 steps: the per-window losses follow the host's closely for many tens of steps, then the two
 * trajectories part (f32 sums in other orders, amplified by AdamW on a text the model overfits; single
 * window losses swing between 0.003 and 0.45 there), so WebGPU is held to the mean of its last TAIL_STEPS
 * window losses, not to one window's loss.
 */
const LONG_FACTOR_WEBGPU = 5;
/** Window losses averaged at the end of WebGPU's 200 steps. */
const TAIL_STEPS = 20;
/** 200 Dawn steps take ~45 s on a quiet software adapter, ~95 s under load. */
const LONG_WEBGPU_TIMEOUT = 600_000;
const OPTIMIZER = { lr: 3e-3 };
const SEED = 7;

describe.skipIf(model === undefined || vocab === undefined)('Trainer on stories260K', () => {
  let file: LlamaModelFile;
  let tokens: number[];
  let host: HostProvider;
  let gpu: WebGPUProvider;
  beforeAll(async () => {
    file = parseLlamaModel(model!);
    tokens = parseTokenizer(vocab!, file.config.vocabSize).encode(TEXT);
    host = createHostProvider();
    gpu = (await webgpuCase().make()) as WebGPUProvider;
  });
  afterAll(() => gpu?.destroy());

  /** Trains `steps` steps (STEPS by default); returns the first window's loss before and after, every step's loss, and the live counters around. */
  async function run(provider: HostProvider | WebGPUProvider, steps = STEPS) {
    const before = provider.counters();
    const trainer = await Trainer.create(createRuntime(provider), file, { seqLen: T, seed: SEED, optimizer: OPTIMIZER });
    const first = tokens.slice(0, T + 1);
    try {
      const start = await trainer.step(first);
      const losses = await trainer.train(tokens, steps);
      const end = await trainer.step(first);
      expect(trainer.steps).toBe(steps + 2);
      return { start, end, losses, before };
    } finally {
      trainer.dispose();
      const after = provider.counters();
      expect(after.liveBytes, 'live bytes back at the baseline').toBe(before.liveBytes);
      expect(after.liveRoots, 'live roots back at the baseline').toBe(before.liveRoots);
    }
  }

  const first = new Map<string, Awaited<ReturnType<typeof run>>>();

  it(`[TR-trainer-loss] ${STEPS} AdamW steps on a fixed text lower its first window's loss by ${LOSS_FACTOR}x on host and WebGPU`, async () => {
    expect(tokens.length).toBeGreaterThan(T + 8);
    for (const provider of [host, gpu]) {
      const result = await run(provider);
      first.set(provider.kind, result);
      const { start, end } = result;
      expect(start).toBeGreaterThan(1);
      console.info(`[TR-trainer-loss] ${provider.kind}: ${start} -> ${end}`);
      if (!(end * LOSS_FACTOR <= start)) expect.fail(`${provider.kind}: loss ${start} -> ${end}, not ${LOSS_FACTOR}x lower`);
    }
  });

  it.skipIf(inBrowser)(`[TR-trainer-loss] node lane: ${LONG_STEPS} host steps lower the first window's loss by ${LONG_FACTOR}x, bit for bit the same in two runs, their first ${STEPS} losses those of the ${STEPS}-step run`, async () => {
    const began = performance.now();
    const long = await run(host, LONG_STEPS);
    const seconds = ((performance.now() - began) / 1000).toFixed(1);
    console.info(`[TR-trainer-loss] host ${LONG_STEPS} steps: ${long.start} -> ${long.end} (${seconds} s)`);
    if (!(long.end * LONG_FACTOR <= long.start)) expect.fail(`host: loss ${long.start} -> ${long.end} in ${LONG_STEPS} steps, not ${LONG_FACTOR}x lower`);
    const again = await run(host, LONG_STEPS);
    expect(again.losses).toEqual(long.losses);
    expect(again.end).toBe(long.end);
    const short = first.get(host.kind) ?? (await run(host));
    expect(long.losses.slice(0, STEPS)).toEqual(short.losses);
  });

  it.skipIf(inBrowser)(`[TR-trainer-loss] node lane: ${LONG_STEPS} Dawn (WebGPU) steps: the mean loss of the last ${TAIL_STEPS} windows is ${LONG_FACTOR_WEBGPU}x below the first window's start (how WebGPU tracks the host: TR-trainer-deterministic)`, async () => {
    const long = await run(gpu, LONG_STEPS);
    const tail = long.losses.slice(-TAIL_STEPS);
    const tailMean = tail.reduce((a, b) => a + b, 0) / tail.length;
    console.info(`[TR-trainer-loss] webgpu ${LONG_STEPS} steps: first window ${long.start} -> ${long.end}, mean of the last ${TAIL_STEPS} window losses ${tailMean}`);
    if (!(tailMean * LONG_FACTOR_WEBGPU <= long.start)) expect.fail(`webgpu: loss ${long.start} -> mean ${tailMean} over the last ${TAIL_STEPS} of ${LONG_STEPS} steps, not ${LONG_FACTOR_WEBGPU}x lower`);
    expect(long.losses.length).toBe(LONG_STEPS);
  }, LONG_WEBGPU_TIMEOUT);

  it('[TR-trainer-deterministic] the same seed gives the same losses bit for bit (host and WebGPU); WebGPU tracks the host within 1e-3 relative', async () => {
    const a = first.get('host') ?? (await run(host));
    const b = await run(host);
    expect(b.losses).toEqual(a.losses);
    const g1 = first.get('webgpu') ?? (await run(gpu));
    const g2 = await run(gpu);
    expect(g2.losses).toEqual(g1.losses);
    g1.losses.forEach((l, i) => {
      if (!(Math.abs(l - a.losses[i]!) <= 1e-3 * a.losses[i]!)) expect.fail(`step ${i + 1}: WebGPU ${l}, host ${a.losses[i]}`);
    });
  });

  it('[TR-trainer-release] dispose() returns the WebGPU provider to its live bytes and roots before create (checked in every run), and the trainer refuses use after it', async () => {
    const before = gpu.counters();
    const trainer = await Trainer.create(createRuntime(gpu), file, { seqLen: T, seed: SEED });
    expect(gpu.counters().liveBytes).toBeGreaterThan(before.liveBytes);
    trainer.dispose();
    expect(gpu.counters().liveBytes).toBe(before.liveBytes);
    expect(gpu.counters().liveRoots).toBe(before.liveRoots);
    await expect(trainer.step(tokens.slice(0, T + 1))).rejects.toMatchObject({ code: 'ENODEV', reason: 'state-lost' });
  });

  it('[TR-trainer-refuse] bad optimizer settings, seeds and texts are EINVAL before anything is allocated', async () => {
    const before = host.counters();
    const runtime = createRuntime(host);
    await expect(Trainer.create(runtime, file, { seqLen: T, seed: SEED, optimizer: { beta1: 1 } })).rejects.toMatchObject({ code: 'EINVAL', reason: 'bad-param' });
    await expect(Trainer.create(runtime, file, { seqLen: T, seed: SEED, optimizer: { lr: Number.NaN } })).rejects.toMatchObject({ code: 'EINVAL', reason: 'bad-param' });
    await expect(Trainer.create(runtime, file, { seqLen: T, seed: 0.5 })).rejects.toMatchObject({ code: 'EINVAL', reason: 'bad-param' });
    await expect(Trainer.create(runtime, file, { seqLen: 0, seed: SEED })).rejects.toMatchObject({ code: 'EINVAL', reason: 'bad-param' });
    expect(host.counters().liveBytes).toBe(before.liveBytes);
    const trainer = await Trainer.create(runtime, file, { seqLen: T, seed: SEED });
    try {
      await expect(trainer.train(tokens.slice(0, T), 1)).rejects.toMatchObject({ code: 'EINVAL', reason: 'bad-tokens' });
      await expect(trainer.train(tokens, 0)).rejects.toMatchObject({ code: 'EINVAL', reason: 'bad-param' });
      expect(trainer.steps).toBe(0);
    } finally {
      trainer.dispose();
    }
  });
});
