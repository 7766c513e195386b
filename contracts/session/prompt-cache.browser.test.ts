// Plan: prompt caches through the data plane on real OPFS (browser lane), with the stories260K fixture on
// each provider of the lane. A saved cache loaded into a fresh session gives the same next-token logits as
// a fresh prefill; every kind of mismatch or corruption is refused with its code before the session is
// touched (its tokens and every KV byte stay identical); a save declares its digest, so staged bytes that
// do not match it are never published and readers keep the previous revision; longest-prefix reuse only
// prefills what the cache does not cover.
import { beforeAll, describe, expect, it } from 'vitest';
import { TextSession, encodePromptCache, parseLlamaModel, parseTokenizer, readBlob, writeBlob } from '../../src/index.js';
import type { HostProvider, LlamaModelFile, Runtime, Session, Tokenizer, WebGPUProvider } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { stories260K, useSessionFixture } from '../support/session-fixture.js';
import { providerCases } from '../support/providers.js';
import { planeWithSession } from '../dataplane/support/plane.js';

const PROMPT = [1, 403, 407, 261, 378];
const MAX_SEQ = 64;
const bytes = await stories260K();
const modelBytes = bytes.model;
const tokBytes = bytes.tokenizer;

for (const pc of providerCases()) {
  describe.skipIf(bytes.absent)(`prompt caches on ${pc.name}`, () => {
    const fx = useSessionFixture(pc, bytes);
    let provider: HostProvider | WebGPUProvider;
    let runtime: Runtime;
    let model: LlamaModelFile;
    let tokenizer: Tokenizer;
    beforeAll(() => void ({ provider, runtime, model, tokenizer } = fx));

    const session = (m: LlamaModelFile = model, t: Tokenizer = tokenizer) => TextSession.create({ runtime, model: m, tokenizer: t, maxSeq: MAX_SEQ, maxBatch: 16 });
    const snapshot = async (s: TextSession) => ({ tokens: s.tokens, epoch: s.epoch, kv: Array.from(await s.exportState(MAX_SEQ)) });

    async function savedCache(store: Session, path: string): Promise<{ logits: Float32Array }> {
      const s = await session();
      await s.prefill(PROMPT);
      await s.savePromptCache(store, path);
      const r = await s.decode(432);
      s.dispose();
      return { logits: r.logits };
    }

    it('[TS-cache-load-validate][TS-cache-save-validate] save then load reproduces the next-token logits of a fresh prefill', async () => {
      const { s: store } = await planeWithSession();
      const { logits } = await savedCache(store, '/caches/a.bin');
      const loaded = await session();
      const manifest = await loaded.loadPromptCache(store, '/caches/a.bin', { prompt: [...PROMPT, 432] });
      expect(manifest.tokens).toEqual(PROMPT);
      expect(loaded.tokens).toEqual(PROMPT);
      const r = await loaded.decode(432);
      expect(Array.from(r.logits)).toEqual(Array.from(logits));
      loaded.dispose();
    });

    it('[TS-cache-load-commit] a load adopts the cache\'s last outcome and continues epochs after it', async () => {
      const { s: store } = await planeWithSession();
      const maker = await session();
      await maker.prefill(PROMPT);
      await maker.decode(432);
      await maker.savePromptCache(store, '/c.bin');
      const loaded = await session();
      expect(loaded.epoch).toBe(0);
      await loaded.loadPromptCache(store, '/c.bin');
      expect(loaded.epoch).toBe(maker.epoch);
      expect(loaded.lastOutcome).toBe('committed');
      const r = await loaded.decode(383);
      expect(r.epoch).toBe(maker.epoch + 1);
      maker.dispose();
      loaded.dispose();
    });

    it('[TS-cache-identity][TS-cache-load-atomic] another model, another tokenizer, a wrong prefix, truncation or one flipped byte is refused; the session is unchanged', async () => {
      const { s: store } = await planeWithSession();
      await savedCache(store, '/good.bin');
      const good = await readBlob(store, '/good.bin');
      const put = async (path: string, bytes: Uint8Array): Promise<void> => {
        const w = await writeBlob(store, path, bytes.byteLength);
        await w.write(bytes);
        await w.seal();
      };
      // a victim session with some history of its own
      const victim = await session();
      await victim.prefill([1, 300, 301]);
      const before = await snapshot(victim);
      const cases: [string, Uint8Array][] = [];
      // a cut anywhere breaks the trailing digest; a stub shorter than header + digest is plainly truncated
      cases.push(['checksum', good.subarray(0, good.byteLength - 100)]);
      cases.push(['truncated', good.subarray(0, 20)]);
      const flipped = good.slice();
      flipped[40]! ^= 0x01;
      cases.push(['checksum', flipped]);
      const flippedKv = good.slice();
      flippedKv[good.byteLength - 200]! ^= 0x80;
      cases.push(['checksum', flippedKv]);
      for (const [i, [reason, bytes]] of cases.entries()) {
        await put(`/bad${i}.bin`, bytes);
        await expectCodeAsync(() => victim.loadPromptCache(store, `/bad${i}.bin`), 'EINVAL', reason);
        expect(await snapshot(victim)).toEqual(before);
      }
      await expectCodeAsync(() => victim.loadPromptCache(store, '/good.bin', { prompt: [1, 403, 999] }), 'EINVAL', 'prefix-mismatch');
      await expectCodeAsync(() => victim.loadPromptCache(store, '/missing.bin'), 'ENOENT');
      expect(await snapshot(victim)).toEqual(before);
      // a different model: one weight changed
      const otherBytes = modelBytes!.slice();
      new Float32Array(otherBytes.buffer, 28, 1)[0]! += 0.5;
      const other = await session(parseLlamaModel(otherBytes));
      await other.prefill([1, 300, 301]);
      const otherBefore = await snapshot(other);
      await expectCodeAsync(() => other.loadPromptCache(store, '/good.bin'), 'EINVAL', 'model-mismatch');
      expect(await snapshot(other)).toEqual(otherBefore);
      // a different tokenizer: one score changed
      const tokOther = tokBytes!.slice();
      new DataView(tokOther.buffer).setFloat32(4, new DataView(tokOther.buffer).getFloat32(4, true) + 1, true);
      const third = await session(model, parseTokenizer(tokOther, 512));
      await expectCodeAsync(() => third.loadPromptCache(store, '/good.bin'), 'EINVAL', 'tokenizer-mismatch');
      expect(third.length).toBe(0);
      // a well-formed cache of another layout (re-encoded with a valid digest) is refused too
      const id = await victim.identity();
      const layoutLie = await encodePromptCache(
        { schema: 1, modelId: id.modelId, tokenizerId: id.tokenizerId, layout: { layers: 4, kvDim: 32, dtype: 'f32', order: 'layer-k-v' }, tokens: [1], epoch: 1, lastOutcome: 'committed' },
        new Float32Array(2 * 4 * 32),
      );
      await put('/lie.bin', layoutLie);
      await expectCodeAsync(() => victim.loadPromptCache(store, '/lie.bin'), 'EINVAL', 'layout-mismatch');
      expect(await snapshot(victim)).toEqual(before);
      victim.dispose();
      other.dispose();
      third.dispose();
    });

    it('[TS-cache-txn-publish][TS-cache-txn-finish][TS-cache-save-validate] a save whose staged bytes do not match the declared digest publishes nothing; the previous revision stays visible', async () => {
      const { s: store } = await planeWithSession();
      const revision = async (path: string): Promise<number> => {
        const st = await store.stat(path);
        if (st.kind !== 'blob') throw new Error(`${path} is not a blob`);
        return st.revision;
      };
      await savedCache(store, '/txn.bin');
      const previous = await readBlob(store, '/txn.bin');
      const revBefore = await revision('/txn.bin');
      const s = await session();
      await s.prefill([1, 300, 301, 302]);
      const stateBefore = await snapshot(s);
      s.faults.corruptNextCacheSave();
      await expectCodeAsync(() => s.savePromptCache(store, '/txn.bin'), 'EIO', 'digest-mismatch');
      // nothing was published: same revision, same bytes, and the old prefix still loads
      expect(await revision('/txn.bin')).toBe(revBefore);
      expect(Array.from(await readBlob(store, '/txn.bin'))).toEqual(Array.from(previous));
      // saving never changes the session
      expect(await snapshot(s)).toEqual(stateBefore);
      const loaded = await session();
      expect((await loaded.loadPromptCache(store, '/txn.bin')).tokens).toEqual(PROMPT);
      // a corrupted first save leaves no blob at all
      s.faults.corruptNextCacheSave();
      await expectCodeAsync(() => s.savePromptCache(store, '/fresh.bin'), 'EIO', 'digest-mismatch');
      await expectCodeAsync(() => readBlob(store, '/fresh.bin'), 'ENOENT');
      // the control: an intact save publishes exactly one new revision, which is the new prefix
      await s.savePromptCache(store, '/txn.bin');
      expect(await revision('/txn.bin')).toBe(revBefore + 1);
      expect((await loaded.loadPromptCache(store, '/txn.bin')).tokens).toEqual([1, 300, 301, 302]);
      s.dispose();
      loaded.dispose();
    });

    it('[TS-cache-prefix-reuse] with a loaded cache for a prefix, generation prefills only the rest of the prompt', async () => {
      const { s: store } = await planeWithSession();
      await savedCache(store, '/p.bin');
      const fresh = await session();
      const cached = await session();
      await cached.loadPromptCache(store, '/p.bin', { prompt: PROMPT });
      const epochBefore = cached.epoch;
      const a: number[] = [];
      const b: number[] = [];
      for await (const t of fresh.generate(PROMPT, { maxTokens: 6 })) a.push(t.token);
      for await (const t of cached.generate(PROMPT, { maxTokens: 6 })) b.push(t.token);
      expect(b).toEqual(a);
      // the whole prompt was cached: only its last token is re-run (one transaction), then 6 decodes
      expect(cached.epoch - epochBefore).toBe(1 + 6);
      fresh.dispose();
      cached.dispose();
    });
  });
}
