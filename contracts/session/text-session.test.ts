// Plan: TextSession on every provider of the lane (host and WebGPU), with the real stories260K fixture.
// Greedy generation must reproduce llama2.c's known ids (also with prompt-lookup speculation); each step
// is a transaction: a failure injected in each phase through the session's seam leaves tokens and every
// KV byte (the whole cache, not only the committed rows) bit-identical and names the phase; observers can
// intervene; checkpoints roll back exactly; lanes commit or abandon rows past the committed length; a
// device lost mid-step makes the outcome indeterminate and fences the session.
import { beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, parseTokenizer, TextSession } from '../../src/index.js';
import type { HostProvider, LlamaModelFile, Runtime, StepError, Tokenizer, WebGPUProvider } from '../../src/index.js';
import { STEP_PHASES } from '../../src/session/index.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { stories260K, useSessionFixture } from '../support/session-fixture.js';
import { providerCases } from '../support/providers.js';

const PROMPT = [1, 403, 407, 261, 378];
const GREEDY = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317];
const MAX_SEQ = 96;

const bytes = await stories260K();
const tokBytes = bytes.tokenizer;

for (const pc of providerCases()) {
  describe.skipIf(bytes.absent)(`TextSession on ${pc.name}`, () => {
    const fx = useSessionFixture(pc, bytes);
    let provider: HostProvider | WebGPUProvider;
    let runtime: Runtime;
    let model: LlamaModelFile;
    let tokenizer: Tokenizer;
    beforeAll(() => void ({ provider, runtime, model, tokenizer } = fx));

    const session = (extra: Partial<Parameters<typeof TextSession.create>[0]> = {}) =>
      TextSession.create({ runtime, model, tokenizer, maxSeq: MAX_SEQ, maxBatch: 16, ...extra });

    /** Every byte of the state: committed tokens and the full K/V caches. */
    async function snapshot(s: TextSession): Promise<{ tokens: readonly number[]; kv: number[] }> {
      return { tokens: s.tokens, kv: Array.from(await s.exportState(MAX_SEQ)) };
    }

    it('[TS-greedy-known] "Once upon a time" encodes and decodes greedily to llama2.c\'s known ids', async () => {
      const s = await session();
      expect(tokenizer.encode('Once upon a time', { bos: true })).toEqual(PROMPT);
      const out: number[] = [];
      let text = '';
      for await (const t of s.generate('Once upon a time', { maxTokens: GREEDY.length })) {
        out.push(t.token);
        text += t.text;
      }
      expect(out).toEqual(GREEDY);
      expect(text).toBe(tokenizer.decodeAll(GREEDY, { prev: PROMPT[PROMPT.length - 1]! }));
      expect(text.startsWith(', there was a little girl named Lily')).toBe(true);
      expect(s.length).toBe(PROMPT.length + GREEDY.length);
      s.dispose();
    });

    it('[TS-speculative-identical] prompt-lookup speculative decoding yields exactly the greedy output', async () => {
      // The story told twice: the second "Once upon a time" gives n-gram matches whose continuation the
      // model repeats (accepted drafts) and later ones it does not (rejected drafts, rolled back).
      const prompt = [...PROMPT, ...GREEDY, ...PROMPT.slice(1)];
      const plain = await session();
      const fast = await session();
      const a: number[] = [];
      const b: number[] = [];
      for await (const t of plain.generate(prompt, { maxTokens: 40 })) a.push(t.token);
      for await (const t of fast.generate(prompt, { maxTokens: 40, speculative: { lookahead: 4, ngram: 2 } })) b.push(t.token);
      expect(b).toEqual(a);
      expect(fast.tokens).toEqual(plain.tokens);
      expect(Array.from(await fast.exportState(MAX_SEQ))).toEqual(Array.from(await plain.exportState(MAX_SEQ)));
      const stats = fast.speculationStats();
      expect(stats.accepted).toBeGreaterThan(0);
      // accepted drafts commit several tokens per transaction
      expect(fast.epoch).toBeLessThan(plain.epoch);
      // A fresh story: its n-gram matches mostly propose tokens the model does not choose; every
      // rejected draft is rolled back and the output is still exactly greedy.
      const plain2 = await session();
      const fast2 = await session();
      const c: number[] = [];
      const d: number[] = [];
      for await (const t of plain2.generate(PROMPT, { maxTokens: 60 })) c.push(t.token);
      for await (const t of fast2.generate(PROMPT, { maxTokens: 60, speculative: { lookahead: 3, ngram: 1 } })) d.push(t.token);
      expect(d).toEqual(c);
      expect(Array.from(await fast2.exportState(MAX_SEQ))).toEqual(Array.from(await plain2.exportState(MAX_SEQ)));
      const rejected = fast2.speculationStats();
      expect(rejected.drafted).toBeGreaterThan(rejected.accepted);
      plain2.dispose();
      fast2.dispose();
      plain.dispose();
      fast.dispose();
    });

    it('[TS-txn-rollback][TS-txn-phase][TS-txn-checkpoint-first] a failure injected in each phase restores every KV byte and names the phase', async () => {
      const s = await session();
      await s.prefill(PROMPT);
      for (const phase of STEP_PHASES) {
        const before = await snapshot(s);
        const epoch = s.epoch;
        s.faults.failNextStepAt(phase);
        const err = (await expectCodeAsync(() => s.decode(GREEDY[0]!), 'EIO', `${phase}-failed`)) as StepError;
        expect(err.phase).toBe(phase);
        expect(err.outcome).toBe('aborted');
        expect(err.epoch).toBe(epoch + 1);
        expect(await snapshot(s)).toEqual(before);
        expect(s.lastOutcome).toBe('aborted');
      }
      // and the session works normally afterwards, from the same state
      const r = await s.decode(GREEDY[0]!);
      expect(r.argmax).toBe(GREEDY[1]);
      expect(s.lastOutcome).toBe('committed');
      s.dispose();
    });

    it('[TS-txn-epoch][TS-txn-outcome] every step opens the next epoch and records its outcome; overlapping steps are refused', async () => {
      const s = await session();
      expect(s.epoch).toBe(0);
      expect(s.lastOutcome).toBeUndefined();
      const first = s.prefill(PROMPT);
      await expectCodeAsync(() => s.decode(5), 'EBUSY', 'step-running');
      const r = await first;
      expect(r.epoch).toBe(1);
      expect(s.lastOutcome).toBe('committed');
      await expectCodeAsync(() => s.decode(9999), 'EINVAL', 'bad-token');
      expect(s.epoch).toBe(1); // refused input opens no epoch
      const d = await s.decode(r.argmax);
      expect(d.epoch).toBe(2);
      s.dispose();
    });

    it('[TS-observe-hooks] observers see the final logits and may replace them; a throwing observer rolls the step back', async () => {
      const seen: number[] = [];
      let mode: 'watch' | 'force' | 'throw' = 'watch';
      const s = await session({
        observer: {
          logits(logits, ctx) {
            seen.push(ctx.epoch);
            if (mode === 'throw') throw new Error('observer failed');
            if (mode === 'force') {
              const forced = new Float32Array(logits.length);
              forced[7] = 1;
              return forced;
            }
          },
        },
      });
      const r = await s.prefill(PROMPT);
      expect(r.argmax).toBe(GREEDY[0]);
      mode = 'force';
      const forced = await s.decode(r.argmax);
      expect(forced.argmax).toBe(7);
      mode = 'throw';
      const before = await snapshot(s);
      const err = (await expectCodeAsync(() => s.decode(7), 'EIO', 'observe-failed')) as StepError;
      expect(err.phase).toBe('observe');
      expect(await snapshot(s)).toEqual(before);
      expect(seen).toEqual([1, 2, 3]);
      s.dispose();
    });

    it('[TS-agree-single-rank][TS-agree-before-publish][TS-txn-aborted] every phase passes the agreement seam; a refusal rolls back', async () => {
      const calls: string[] = [];
      let refuse: string | undefined;
      const s = await session({ agreement: { agree: (epoch, phase) => (calls.push(`${epoch}:${phase}`), phase !== refuse) } });
      await s.prefill(PROMPT);
      expect(calls).toEqual(STEP_PHASES.map((p) => `1:${p}`));
      refuse = 'publish';
      const before = await snapshot(s);
      await expectCodeAsync(() => s.decode(GREEDY[0]!), 'ECANCELED', 'publish-failed');
      expect(await snapshot(s)).toEqual(before);
      s.dispose();
    });

    it('[TS-checkpoint][TS-rollback-complete] rollback to a checkpoint restores tokens and every KV byte', async () => {
      const s = await session();
      await s.prefill(PROMPT);
      const cp = s.checkpoint();
      const before = await snapshot(s);
      let r = await s.decode(GREEDY[0]!);
      r = await s.decode(r.argmax);
      expect(s.length).toBe(PROMPT.length + 2);
      await s.rollback(cp);
      expect(await snapshot(s)).toEqual(before);
      // the history continues exactly as before the detour
      const again = await s.decode(GREEDY[0]!);
      expect(again.argmax).toBe(GREEDY[1]);
      await expectCodeAsync(() => s.rollback({ length: 99, epoch: 0 }), 'EINVAL', 'bad-checkpoint');
      s.dispose();
    });

    it('[TS-reset][TS-report] reset empties the history and zeroes the caches; report counts weights and state', async () => {
      const s = await session();
      await s.prefill(PROMPT);
      const report = s.report();
      const c = model.config;
      const fileWeights = model.tensors.reduce((n, t) => n + t.elements, 0) * 4;
      expect(report.weightBytes).toBe(fileWeights);
      expect(report.stateBytes).toBe(2 * c.nLayers * MAX_SEQ * c.kvDim * 4);
      expect(report.residency).toBe(pc.kind === 'webgpu' ? 'device' : 'host');
      expect(report).toMatchObject({ length: PROMPT.length, maxSeq: MAX_SEQ, epoch: 1, lastOutcome: 'committed' });
      await s.reset();
      expect(s.length).toBe(0);
      expect((await s.exportState(MAX_SEQ)).every((v) => v === 0)).toBe(true);
      const r = await s.prefill(PROMPT);
      expect(r.argmax).toBe(GREEDY[0]);
      s.dispose();
    });

    it('[TS-lane-fork][TS-lane-exchange] a lane runs past the committed length; exchange commits a prefix, the rest is zeroed', async () => {
      const s = await session();
      const r = await s.prefill(PROMPT);
      const lane = s.forkLane();
      expectCode(() => s.forkLane(), 'EBUSY', 'lane-open');
      await expectCodeAsync(() => s.decode(1), 'EBUSY', 'lane-open');
      const out = await lane.run([r.argmax, ...GREEDY.slice(1, 4)]);
      expect(out.argmaxRows).toEqual(GREEDY.slice(1, 5));
      expect(s.length).toBe(PROMPT.length); // nothing committed yet
      await lane.exchange(2);
      expect(s.tokens).toEqual([...PROMPT, GREEDY[0], GREEDY[1]]);
      // the state equals a plain session that decoded those two tokens
      const plain = await session();
      await plain.prefill(PROMPT);
      await plain.decode(GREEDY[0]!);
      await plain.decode(GREEDY[1]!);
      expect(Array.from(await s.exportState(MAX_SEQ))).toEqual(Array.from(await plain.exportState(MAX_SEQ)));
      await expectCodeAsync(() => lane.run([1]), 'ERELEASED', 'lane-closed');
      s.dispose();
      plain.dispose();
    });

    it('[TS-lane-recover][TS-lane-operation] abandoning a lane (or a failed lane pass) leaves the canonical state bit-identical', async () => {
      const s = await session();
      await s.prefill(PROMPT);
      const before = await snapshot(s);
      const lane = s.forkLane();
      await lane.run([GREEDY[0]!, 100, 200]);
      await lane.abandon();
      expect(await snapshot(s)).toEqual(before);
      // a failing lane pass (bad token) changes nothing either
      const again = s.forkLane();
      await expectCodeAsync(() => again.run([GREEDY[0]!, 99999]), 'EINVAL', 'bad-token');
      await again.abandon();
      expect(await snapshot(s)).toEqual(before);
      s.dispose();
    });

    it.skipIf(pc.kind !== 'webgpu')('[TS-txn-indeterminate-fence][TS-txn-publish-after-complete] a device lost mid-step makes the outcome indeterminate and fences the session', async () => {
      const lossy = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(lossy);
      const s = await TextSession.create({ runtime: rt, model, tokenizer, maxSeq: MAX_SEQ, maxBatch: 16 });
      await s.prefill(PROMPT);
      expect(s.lastOutcome).toBe('committed');
      rt.faults.loseDeviceAt('after-enqueue');
      const err = (await expectCodeAsync(() => s.decode(GREEDY[0]!), 'ENODEV', 'execute-failed')) as StepError;
      expect(err.outcome).toBe('indeterminate');
      expect(s.lastOutcome).toBe('indeterminate');
      // nothing else runs on a state whose last step may or may not have happened
      await expectCodeAsync(() => s.decode(GREEDY[0]!), 'ENODEV', 'state-lost');
      expectCode(() => s.checkpoint(), 'ENODEV', 'state-lost');
      await expectCodeAsync(() => s.rollback({ length: 0, epoch: 0 }), 'ENODEV', 'state-lost');
      await expectCodeAsync(() => s.reset(), 'ENODEV', 'state-lost');
      expect(s.length).toBe(PROMPT.length);
      // the memory of the lost step is retained, never freed
      expect(lossy.counters().rootsRetainedForever).toBeGreaterThan(0);
    });

    it('[TS-construct-no-partial] a session that cannot be built leaves nothing allocated', async () => {
      const before = provider.counters();
      const small = parseTokenizer(tokBytes!, 512);
      await expectCodeAsync(() => TextSession.create({ runtime, model, tokenizer: small, maxSeq: model.config.seqLen + 1 }), 'EINVAL', 'bad-max-seq');
      const after = provider.counters();
      expect(after.liveRoots).toBe(before.liveRoots);
      expect(after.liveBytes).toBe(before.liveBytes);
    });

    it('[TS-sampling-seeded] sampling with a seed is reproducible; different seeds diverge', async () => {
      const run = async (seed: number): Promise<number[]> => {
        const s = await session();
        const out: number[] = [];
        for await (const t of s.generate(PROMPT, { maxTokens: 20, temperature: 1, topP: 0.9, seed })) out.push(t.token);
        s.dispose();
        return out;
      };
      const a = await run(7);
      expect(await run(7)).toEqual(a);
      expect(await run(8)).not.toEqual(a);
    });

    it('[TS-prefix-reuse] generating from a prompt that extends the history prefills only the new part', async () => {
      const s = await session();
      const first: number[] = [];
      for await (const t of s.generate(PROMPT, { maxTokens: 4 })) first.push(t.token);
      expect(first).toEqual(GREEDY.slice(0, 4));
      const history = s.tokens;
      expect(history).toEqual([...PROMPT, ...first]);
      const epochs = s.epoch;
      // a prompt that extends the history by one token: only that token is prefilled
      const extended = [...history, GREEDY[4]!];
      const out: number[] = [];
      for await (const t of s.generate(extended, { maxTokens: 3 })) out.push(t.token);
      expect(s.tokens.slice(0, extended.length)).toEqual(extended);
      // one prefill transaction of a single token plus three decodes (not a full re-prefill)
      expect(s.epoch - epochs).toBe(1 + 3);
      expect(out).toEqual(GREEDY.slice(5, 8));
      s.dispose();
    });
  });
}
