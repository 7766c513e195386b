// Plan: what TextSession.create checks before a session exists, on every provider of the lane. A model
// and tokenizer that disagree, impossible cache or batch sizes, and architectures the kernels cannot run
// are refused with coded errors and leave no memory behind; a built session's state has exactly the
// selected layout (all zero) and its prompt-cache identity is the model identity.
import { beforeAll, describe, expect, it } from 'vitest';
import { TextSession, modelFromLlamaFile, modelIdentity, parseLlamaModel, parseTokenizer } from '../../src/index.js';
import type { HostProvider, LlamaModelFile, Runtime, Tokenizer, WebGPUProvider } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { stories260K, useSessionFixture } from '../support/session-fixture.js';
import { providerCases } from '../support/providers.js';
import { STORIES260K, buildV0 } from './llama-files.js';

const bytes = await stories260K();

for (const pc of providerCases()) {
  describe.skipIf(bytes.absent)(`session construction on ${pc.name}`, () => {
    const fx = useSessionFixture(pc, bytes);
    let provider: HostProvider | WebGPUProvider;
    let runtime: Runtime;
    let model: LlamaModelFile;
    let tokenizer: Tokenizer;
    beforeAll(() => void ({ provider, runtime, model, tokenizer } = fx));

    it('[TS-construct-validate] a tokenizer of another vocabulary and impossible sizes are refused before anything is allocated', async () => {
      const before = provider.counters();
      const bigger = parseLlamaModel(buildV0({ ...STORIES260K, vocabSize: 600, nLayers: 1, seqLen: 32 }));
      await expectCodeAsync(() => TextSession.create({ runtime, model: bigger, tokenizer }), 'EINVAL', 'vocab-mismatch');
      await expectCodeAsync(() => TextSession.create({ runtime, model, tokenizer, maxSeq: 0 }), 'EINVAL', 'bad-max-seq');
      await expectCodeAsync(() => TextSession.create({ runtime, model, tokenizer, maxSeq: 8, maxBatch: 0 }), 'EINVAL', 'bad-max-batch');
      await expectCodeAsync(() => TextSession.create({ runtime, model, tokenizer, maxSeq: 8, maxBatch: 1.5 }), 'EINVAL', 'bad-max-batch');
      const after = provider.counters();
      expect(after.rootsCreated).toBe(before.rootsCreated);
      expect(after.liveBytes).toBe(before.liveBytes);
    });

    it('[TS-construct-validate] a LoadedModel runs with its own tokenizer, a parsed checkpoint needs one, anything else is refused; nothing is allocated', async () => {
      const before = provider.counters();
      const loaded = modelFromLlamaFile(model, tokenizer);
      const other = parseTokenizer(bytes.tokenizer!, model.config.vocabSize);
      await expectCodeAsync(() => TextSession.create({ runtime, model: loaded, tokenizer: other }), 'EINVAL', 'tokenizer-mismatch');
      await expectCodeAsync(() => TextSession.create({ runtime, model }), 'EINVAL', 'no-tokenizer');
      await expectCodeAsync(() => TextSession.create({ runtime, model: {} as never }), 'EINVAL', 'bad-argument');
      const after = provider.counters();
      expect(after.rootsCreated).toBe(before.rootsCreated);
      expect(after.liveBytes).toBe(before.liveBytes);
      const s = await TextSession.create({ runtime, model: loaded, tokenizer: loaded.tokenizer, maxSeq: 8 });
      expect(s.model).toBe(loaded);
      expect(s.tokenizer).toBe(loaded.tokenizer);
      s.dispose();
    });

    it('[TS-construct-state-layout] a new session\'s state is exactly the selected layout: 2 x layers x maxSeq x kvDim zeros', async () => {
      const maxSeq = 24;
      const s = await TextSession.create({ runtime, model, tokenizer, maxSeq, maxBatch: 8 });
      const c = model.config;
      const state = await s.exportState(maxSeq);
      expect(state.length).toBe(2 * c.nLayers * maxSeq * c.kvDim);
      expect(state.every((v) => v === 0)).toBe(true);
      expect(s.report().stateBytes).toBe(state.byteLength);
      expect(s.maxSeq).toBe(maxSeq);
      s.dispose();
    });

    it('[TS-construct-cache-identity] the session\'s prompt-cache identity is the model identity of its model and tokenizer', async () => {
      const s = await TextSession.create({ runtime, model, tokenizer, maxSeq: 8 });
      const expected = await modelIdentity(model, tokenizer);
      expect(await s.identity()).toEqual(expected);
      expect(await s.identity()).toBe(await s.identity()); // computed once
      s.dispose();
    });
  });
}
