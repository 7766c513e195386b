// Plan: GGUF models go everywhere llama2.c files go (issue 10, "Everywhere"), on each provider of the
// browser lane with real OPFS: a prompt cache saved by a session of a GGUF model loads back into a fresh
// session of the same file and reproduces its next-token logits; the cache is refused by a session of
// another file of the same weights (stories260K.bin: same weights, its tokenizer from tok512.bin, so
// tokenizer-mismatch) and by another lowering kind of the same model (tiny-llama Q4_0 vs Q8_0), leaving the
// victim unchanged; prompt-lookup speculative decoding of a GGUF model yields exactly its plain greedy ids.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TextSession, createRuntime, loadModel, parseTokenizer } from '../../src/index.js';
import type { HostProvider, LoadedModel, Runtime, WebGPUProvider } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { readGgufFixture } from '../support/gguf-fixtures.js';
import { readModelFixture } from '../support/models.js';
import { providerCases } from '../support/providers.js';
import { planeWithSession } from '../dataplane/support/plane.js';

const MAX_SEQ = 96;
/** "Once upon a time" in stories260K's vocabulary, BOS first. */
const PROMPT = [1, 403, 407, 261, 378];
/** llama2.c's greedy continuation of PROMPT with stories260K (../shared/models/README.md). */
const CONTINUATION = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317];
/** The story told twice: the second "Once upon a time" gives n-gram matches the model then repeats. */
const REPEAT = [...PROMPT, ...CONTINUATION, ...PROMPT.slice(1)];
/** Per-test limit: quantized tiny-llama steps on SwiftShader take seconds each. */
const TIMEOUT = 300_000;

const storiesGguf = await readGgufFixture('stories260K-f32.gguf');
const q40 = await readGgufFixture('tiny-llama-Q4_0.gguf');
const q80 = await readGgufFixture('tiny-llama-Q8_0.gguf');
const storiesBin = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');
const absent = [storiesGguf, q40, q80, storiesBin, tok512].some((b) => b === undefined);

for (const pc of providerCases()) {
  describe.skipIf(absent)(`GGUF models everywhere on ${pc.name}`, () => {
    let provider: HostProvider | WebGPUProvider;
    let runtime: Runtime;
    let stories: LoadedModel;
    beforeAll(async () => {
      provider = await pc.make();
      runtime = createRuntime(provider);
      stories = await loadModel(storiesGguf!);
    });
    afterAll(() => {
      if (provider?.kind === 'webgpu') (provider as WebGPUProvider).destroy();
    });
    const session = (model: LoadedModel) => TextSession.create({ runtime, model, maxSeq: MAX_SEQ, maxBatch: 16 });
    const snapshot = async (s: TextSession) => ({ tokens: s.tokens, epoch: s.epoch, kv: Array.from(await s.exportState(MAX_SEQ)) });

    it('[TS-gguf-cache] a prompt cache of a GGUF model reloads into that model only: same next-token logits; another file of the same weights or another lowering kind is refused and unchanged', async () => {
      const { s: store } = await planeWithSession();
      const maker = await session(stories);
      await maker.prefill(PROMPT);
      await maker.savePromptCache(store, '/gguf.bin');
      const expected = await maker.decode(432);
      maker.dispose();

      const loaded = await session(stories);
      await loaded.loadPromptCache(store, '/gguf.bin');
      expect(loaded.tokens).toEqual(PROMPT);
      const got = await loaded.decode(432);
      expect(Array.from(got.logits)).toEqual(Array.from(expected.logits));
      loaded.dispose();

      // stories260K.bin holds the same weights (same weightsId) but its tokenizer comes from tok512.bin: refused.
      const bin = await session(await loadModel(storiesBin!, { tokenizer: parseTokenizer(tok512!, 512) }));
      await bin.prefill([1, 300, 301]);
      const binBefore = await snapshot(bin);
      await expectCodeAsync(() => bin.loadPromptCache(store, '/gguf.bin'), 'EINVAL', 'tokenizer-mismatch');
      expect(await snapshot(bin)).toEqual(binBefore);
      bin.dispose();

      // The lowering kind is part of the identity: a Q4_0 cache does not load into the Q8_0 file.
      const q4Model = await loadModel(q40!);
      const small = await session(q4Model);
      await small.prefill(q4Model.tokenizer.encode('Once upon a time', { bos: true }));
      await small.savePromptCache(store, '/q4.bin');
      small.dispose();
      const other = await session(await loadModel(q80!));
      const otherBefore = await snapshot(other);
      await expectCodeAsync(() => other.loadPromptCache(store, '/q4.bin'), 'EINVAL', 'model-mismatch');
      expect(await snapshot(other)).toEqual(otherBefore);
      other.dispose();
    }, TIMEOUT);

    it('[TS-gguf-speculative] prompt-lookup speculative decoding of a GGUF model yields exactly its greedy ids', async () => {
      const plain = await session(stories);
      const a: number[] = [];
      for await (const t of plain.generate(REPEAT, { maxTokens: 24 })) a.push(t.token);
      plain.dispose();
      const fast = await session(stories);
      const b: number[] = [];
      for await (const t of fast.generate(REPEAT, { maxTokens: 24, speculative: { lookahead: 4, ngram: 2 } })) b.push(t.token);
      const stats = fast.speculationStats();
      fast.dispose();
      expect(a.length).toBe(24);
      expect(b).toEqual(a);
      // the speculative path really ran: some drafts were proposed and checked in batched steps
      expect(stats.drafted).toBeGreaterThan(0);
      expect(stats.accepted).toBeGreaterThan(0);
    }, TIMEOUT);
  });
}
