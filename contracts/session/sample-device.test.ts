// Plan: sampled generation with `deviceSampling` (the sample op in the step graph, counter = the position
// the token takes), with the real stories260K fixture, on the host provider and the lane's WebGPU adapter:
//   - the same seed gives the same ids on both providers, in pipelined generation (the draw made in the
//     step graph: the GPU kernel on WebGPU, the op's host twin on the host provider), and the same ids as
//     plain stepping, where the host draws from the downloaded logits with the same twin at the same
//     positions; the ids depend on the seed and are not greedy's;
//   - on WebGPU a sampled token costs what a greedy one does: one submission, one wait, the chosen id read
//     back (4 bytes), no logits downloaded, no buffer or bind group created after the first token.
import { beforeAll, describe, expect, it } from 'vitest';
import { TextSession, createHostProvider, createRuntime } from '../../src/index.js';
import type { LlamaModelFile, Runtime, Tokenizer, WebGPUProvider } from '../../src/index.js';
import type { GeneratedToken, GenerateOptions } from '../../src/session/index.js';
import { stories260K, useSessionFixture } from '../support/session-fixture.js';
import { webgpuCase } from '../support/providers.js';

const PROMPT = [1, 403, 407, 261, 378];
const GREEDY = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317];
const MAX_SEQ = 96;
const MAX_BATCH = 16;
const TOKENS = 16;
/** Several sessions on a software adapter: room for a loaded machine. */
const HEAVY_TIMEOUT_MS = 180_000;
/** Bytes of one token id read back. */
const ID_BYTES = 4;
/** Generations run without a stop token, so every token is drawn. */
const NO_STOP: readonly number[] = [];
const SAMPLED: GenerateOptions = { maxTokens: TOKENS, temperature: 1.2, topP: 0.95, seed: 7, deviceSampling: true, stopTokens: NO_STOP };

const bytes = await stories260K();

async function collect(gen: AsyncGenerator<GeneratedToken>): Promise<number[]> {
  const out: number[] = [];
  for await (const t of gen) out.push(t.token);
  return out;
}

describe.skipIf(bytes.absent)('sampled generation on the device (deviceSampling)', () => {
  const fx = useSessionFixture(webgpuCase(), bytes);
  let gpu: WebGPUProvider;
  let runtime: Runtime;
  let model: LlamaModelFile;
  let tokenizer: Tokenizer;
  beforeAll(() => {
    ({ runtime, model, tokenizer } = fx);
    gpu = fx.provider as WebGPUProvider;
  });

  async function generate(on: Runtime, options: GenerateOptions, decode: 'plain' | 'chained' = 'chained'): Promise<number[]> {
    const s = await TextSession.create({ runtime: on, model, tokenizer, maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, decode });
    try {
      expect(s.report().decode.mode).toBe(decode);
      return await collect(s.generate(PROMPT, options));
    } finally {
      s.dispose();
    }
  }

  it('[TS-sampling-device] one seed, the same ids on WebGPU and the host provider, pipelined or plain; another seed differs', async () => {
    const host = createRuntime(createHostProvider());
    const onGpu = await generate(runtime, SAMPLED);
    expect(onGpu).toHaveLength(TOKENS);
    expect(await generate(host, SAMPLED), 'host provider, pipelined').toEqual(onGpu);
    expect(await generate(runtime, SAMPLED, 'plain'), 'WebGPU, plain steps (host draws from the logits)').toEqual(onGpu);
    expect(await generate(host, SAMPLED, 'plain'), 'host provider, plain steps').toEqual(onGpu);
    expect(await generate(runtime, SAMPLED), 'reproducible').toEqual(onGpu);
    const other = await generate(runtime, { ...SAMPLED, seed: 8 });
    expect(other).not.toEqual(onGpu);
    expect(await generate(host, { ...SAMPLED, seed: 8 })).toEqual(other);
    // temperature 0 stays greedy with deviceSampling on; the sampled ids are not greedy's
    const greedy = await generate(runtime, { ...SAMPLED, temperature: 0 });
    expect(greedy.slice(0, GREEDY.length)).toEqual(GREEDY);
    expect(onGpu).not.toEqual(greedy);
  }, HEAVY_TIMEOUT_MS);

  it('[TS-sampling-device] on WebGPU a sampled token costs one submission, one wait and a 4-byte readback, and creates nothing after the first', async () => {
    const s = await TextSession.create({ runtime, model, tokenizer, maxSeq: MAX_SEQ, maxBatch: MAX_BATCH });
    try {
      const start = runtime.stats();
      const mark = gpu.ledgerMark();
      let first: ReturnType<Runtime['stats']> | undefined;
      let count = 0;
      for await (const _ of s.generate(PROMPT, SAMPLED)) {
        count++;
        first ??= runtime.stats();
      }
      const end = runtime.stats();
      expect(count).toBe(TOKENS);
      // the prompt (one chunk) and TOKENS decode steps: one submission, one map proving it, 4 bytes each
      expect(end.queueSubmits - start.queueSubmits).toBe(1 + TOKENS);
      expect(end.hostAwaits - start.hostAwaits).toBe(1 + TOKENS);
      expect(end.bytesReadBack - start.bytesReadBack).toBe(ID_BYTES * (1 + TOKENS));
      expect(gpu.ledgerSince(mark).filter((e) => e.kind === 'copy' && e.to === 'host')).toEqual([]);
      expect(end.buffersCreated - first!.buffersCreated).toBe(0);
      expect(end.bindGroupsCreated - first!.bindGroupsCreated).toBe(0);
    } finally {
      s.dispose();
    }
  }, HEAVY_TIMEOUT_MS);
});
