// Plan: TextSession on every provider of the lane (host and WebGPU), with the real stories260K fixture.
// Greedy generation must reproduce llama2.c's known ids (also with prompt-lookup speculation); each step
// is a transaction: a failure injected in each phase through the session's seam leaves tokens and every
// KV byte (the whole cache, not only the committed rows) bit-identical and names the phase; observers can
// intervene; checkpoints roll back exactly; lanes commit or abandon rows past the committed length; a
// device lost mid-step makes the outcome indeterminate and fences the session.
import { beforeAll, describe, expect, it } from 'vitest';
import { createReferenceModel, createRuntime, parseTokenizer, referenceArgmax, TextSession } from '../../src/index.js';
import type { HostProvider, LlamaModelFile, Runtime, StepError, Tokenizer, WebGPUProvider } from '../../src/index.js';
import { STEP_PHASES } from '../../src/session/index.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { stories260K, useSessionFixture } from '../support/session-fixture.js';
import { providerCases } from '../support/providers.js';

const PROMPT = [1, 403, 407, 261, 378];
const GREEDY = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317];
const MAX_SEQ = 96;
/** Largest relative difference of a layer output from the host reference (fp32 sums in another order). */
const LAYER_TOLERANCE = 1e-4;

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

    /** The state plus the transaction metadata a rollback restores. */
    async function fullState(s: TextSession) {
      return { ...(await snapshot(s)), epoch: s.epoch, lastOutcome: s.lastOutcome };
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

    it('[TS-observe-hooks] observers see the hidden state after every layer, equal to the reference forward pass', async () => {
      const c = model.config;
      const calls: { layer: number; hidden: Float32Array; position: number; tokens: readonly number[] }[] = [];
      const s = await session({ observer: { layer: (layer, hidden, ctx) => void calls.push({ layer, hidden: hidden.slice(), position: ctx.position, tokens: ctx.tokens }) } });
      // more tokens than one chunk (maxBatch 16): the rows of both chunks arrive together, in order
      const prompt = [...PROMPT, ...GREEDY, ...PROMPT.slice(1), 300];
      const activationBefore = s.report().activationBytes;
      const liveBefore = provider.counters().liveBytes;
      const r = await s.prefill(prompt);
      expect(calls.map((x) => x.layer)).toEqual(Array.from({ length: c.nLayers }, (_, l) => l));
      for (const x of calls) {
        expect(x.position).toBe(0);
        expect(x.tokens).toEqual(prompt);
        expect(x.hidden.length).toBe(prompt.length * c.dim);
      }
      const ref = createReferenceModel(model, { capacity: MAX_SEQ });
      const expected: Float32Array[][] = prompt.map(() => []);
      let refLogits: Float32Array = new Float32Array(0);
      for (const [i, t] of prompt.entries()) refLogits = ref.forward(t, { onLayer: (l, h) => void (expected[i]![l] = h.slice()) });
      let worst = 0;
      for (const x of calls) {
        for (let i = 0; i < prompt.length; i++) {
          const want = expected[i]![x.layer]!;
          for (let j = 0; j < c.dim; j++) worst = Math.max(worst, Math.abs(x.hidden[i * c.dim + j]! - want[j]!) / Math.max(1, Math.abs(want[j]!)));
        }
      }
      expect(worst).toBeLessThan(LAYER_TOLERANCE);
      expect(r.argmax).toBe(referenceArgmax(refLogits));
      // a decode step shows its one row at its position
      calls.length = 0;
      const d = await s.decode(r.argmax);
      const refRow: Float32Array[] = [];
      ref.forward(r.argmax, { onLayer: (l, h) => void (refRow[l] = h.slice()) });
      expect(calls.map((x) => [x.layer, x.position, x.tokens.length, x.hidden.length])).toEqual(Array.from({ length: c.nLayers }, (_, l) => [l, prompt.length, 1, c.dim]));
      for (const x of calls) for (let j = 0; j < c.dim; j++) expect(Math.abs(x.hidden[j]! - refRow[x.layer]![j]!)).toBeLessThan(LAYER_TOLERANCE * Math.max(1, Math.abs(refRow[x.layer]![j]!)));
      expect(d.length).toBe(prompt.length + 1);
      const layeredGrowth = provider.counters().liveBytes - liveBefore;
      // the observation buffer exists only because a layer hook asked: one block of maxBatch rows per layer
      const observation = c.nLayers * 16 * c.dim * 4;
      expect(s.report().activationBytes - activationBefore).toBe(observation);
      // the same steps without a layer hook allocate exactly that much less
      const plain = await session({ observer: { logits: () => undefined } });
      const plainBefore = plain.report().activationBytes;
      const live = provider.counters().liveBytes;
      await plain.prefill(prompt);
      await plain.decode(r.argmax);
      expect(plain.report().activationBytes).toBe(plainBefore);
      expect(layeredGrowth - (provider.counters().liveBytes - live)).toBe(observation);
      plain.dispose();
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

    it('[TS-agree-before-publish][TS-observe-hooks] speculative decoding passes every phase of every pass through the seam and shows observers every committed token', async () => {
      type Row = { position: number; logits: number[] };
      const record = () => {
        const agreed: string[] = [];
        const rows: Row[] = [];
        const options = {
          agreement: { agree: (epoch: number, phase: string) => (agreed.push(`${epoch}:${phase}`), true) },
          observer: {
            logits: (logits: Float32Array, ctx: { position: number; tokens: readonly number[] }) =>
              void rows.push({ position: ctx.position + ctx.tokens.length - 1, logits: Array.from(logits) }),
          },
        };
        return { agreed, rows, options };
      };
      const prompt = [...PROMPT, ...GREEDY, ...PROMPT.slice(1)];
      const p = record();
      const q = record();
      const plain = await session(p.options);
      const fast = await session(q.options);
      const a: number[] = [];
      const b: number[] = [];
      for await (const t of plain.generate(prompt, { maxTokens: 40 })) a.push(t.token);
      for await (const t of fast.generate(prompt, { maxTokens: 40, speculative: { lookahead: 3, ngram: 1 } })) b.push(t.token);
      expect(b).toEqual(a);
      const stats = fast.speculationStats();
      expect(stats.accepted).toBeGreaterThan(0);
      expect(stats.drafted).toBeGreaterThan(stats.accepted);
      // every transaction (prefill, decodes and verification passes alike) asked the seam for all five
      // phases, in order, and every one of them committed
      expect(fast.epoch).toBeLessThan(plain.epoch);
      expect(q.agreed).toEqual(Array.from({ length: fast.epoch }, (_, e) => STEP_PHASES.map((phase) => `${e + 1}:${phase}`)).flat());
      // observers saw the logits after every committed token exactly once, the same rows as plain decoding
      const committedRows = Array.from({ length: fast.length - prompt.length + 1 }, (_, i) => prompt.length - 1 + i);
      expect(q.rows.map((r) => r.position)).toEqual(committedRows);
      expect(q.rows).toEqual(p.rows);
      plain.dispose();
      fast.dispose();
    });

    it('[TS-agree-before-publish][TS-observe-hooks] an observer intervention inside a speculative pass decides what commits', async () => {
      // The story told twice: after the prompt the drafts are the story's continuation. Forcing token 7
      // after the third row of the first verification pass rejects the draft there, as it would change the
      // plain decode step at that position.
      const prompt = [...PROMPT, ...GREEDY, ...PROMPT.slice(1)];
      const forcedRow = prompt.length + 2;
      const make = () => {
        const rows: { epoch: number; row: number }[] = [];
        const observer = {
          logits: (logits: Float32Array, ctx: { epoch: number; position: number; tokens: readonly number[] }) => {
            const row = ctx.position + ctx.tokens.length - 1;
            rows.push({ epoch: ctx.epoch, row });
            if (row !== forcedRow) return;
            const forced = new Float32Array(logits.length);
            forced[7] = 1;
            return forced;
          },
        };
        return { rows, observer };
      };
      const p = make();
      const q = make();
      const plain = await session({ observer: p.observer });
      const fast = await session({ observer: q.observer });
      const a: number[] = [];
      const b: number[] = [];
      for await (const t of plain.generate(prompt, { maxTokens: 8 })) a.push(t.token);
      for await (const t of fast.generate(prompt, { maxTokens: 8, speculative: { lookahead: 4, ngram: 2 } })) b.push(t.token);
      expect(a[forcedRow - prompt.length + 1]).toBe(7);
      expect(b).toEqual(a);
      expect(fast.tokens).toEqual(plain.tokens);
      // the forced row was observed inside the first verification pass, together with the rows before it
      const epochOf = (row: number) => q.rows.find((r) => r.row === row)!.epoch;
      expect(epochOf(forcedRow)).toBe(epochOf(prompt.length));
      expect(epochOf(forcedRow)).not.toBe(epochOf(prompt.length - 1));
      plain.dispose();
      fast.dispose();
    });

    it('[TS-checkpoint][TS-rollback-complete] rollback restores tokens, every KV byte, the next epoch and the last outcome', async () => {
      const s = await session();
      await s.prefill(PROMPT);
      const cp = s.checkpoint();
      expect(cp).toEqual({ length: PROMPT.length, epoch: 1, lastOutcome: 'committed' });
      const before = await fullState(s);
      let r = await s.decode(GREEDY[0]!);
      r = await s.decode(r.argmax);
      // a failed step after the checkpoint changes the last outcome and uses up an epoch
      s.faults.failNextStepAt('execute');
      await expectCodeAsync(() => s.decode(GREEDY[2]!), 'EIO', 'execute-failed');
      expect(s.length).toBe(PROMPT.length + 2);
      expect(s.epoch).toBe(4);
      expect(s.lastOutcome).toBe('aborted');
      await s.rollback(cp);
      expect(await fullState(s)).toEqual(before);
      // the history continues exactly as before the detour, from the checkpoint's next epoch
      const again = await s.decode(GREEDY[0]!);
      expect(again.argmax).toBe(GREEDY[1]);
      expect(again.epoch).toBe(cp.epoch + 1);
      // an aborted last outcome is restored as well
      s.faults.failNextStepAt('publish');
      await expectCodeAsync(() => s.decode(GREEDY[1]!), 'EIO', 'publish-failed');
      const afterAbort = s.checkpoint();
      const abortedState = await fullState(s);
      expect(afterAbort.lastOutcome).toBe('aborted');
      await s.decode(GREEDY[1]!);
      expect(s.lastOutcome).toBe('committed');
      await s.rollback(afterAbort);
      expect(await fullState(s)).toEqual(abortedState);
      // only checkpoint() makes checkpoints: a look-alike object or another session's checkpoint is refused
      const other = await session();
      await expectCodeAsync(() => s.rollback({ length: 1, epoch: 0, lastOutcome: undefined }), 'EINVAL', 'bad-checkpoint');
      await expectCodeAsync(() => s.rollback(other.checkpoint()), 'EINVAL', 'bad-checkpoint');
      expect(await fullState(s)).toEqual(abortedState);
      other.dispose();
      s.dispose();
    });

    it('[TS-rollback-complete] a checkpoint whose history was replaced is refused with ESTALE and changes nothing', async () => {
      const s = await session();
      await s.prefill(PROMPT);
      const a = s.checkpoint();
      await s.decode(GREEDY[0]!);
      const b = s.checkpoint();
      await s.decode(GREEDY[1]!);
      await s.rollback(a);
      // the same token again: the tokens and KV rows equal b's, but b's epoch and step were discarded
      await s.decode(GREEDY[0]!);
      expect(s.tokens).toEqual([...PROMPT, GREEDY[0]]);
      const now = await fullState(s);
      await expectCodeAsync(() => s.rollback(b), 'ESTALE', 'stale-checkpoint');
      expect(await fullState(s)).toEqual(now);
      // a checkpoint the history still extends stays valid, however often it is used
      await s.rollback(a);
      await s.decode(300);
      await s.rollback(a);
      expect(s.tokens).toEqual(PROMPT);
      // a prompt that cuts the history short makes checkpoints past the cut stale, not those before it
      await s.decode(GREEDY[0]!);
      const past = s.checkpoint();
      for await (const t of s.generate([1, 403], { maxTokens: 1 })) expect(t.position).toBe(2);
      await expectCodeAsync(() => s.rollback(past), 'ESTALE', 'stale-checkpoint');
      // reset and importState start a new history: every earlier checkpoint is stale
      await s.prefill([300, 301]);
      const beforeReset = s.checkpoint();
      const kv = await s.exportState();
      const tokens = s.tokens;
      await s.reset();
      await expectCodeAsync(() => s.rollback(beforeReset), 'ESTALE', 'stale-checkpoint');
      await s.importState(tokens, kv);
      const imported = s.checkpoint();
      await s.importState(tokens, kv);
      await expectCodeAsync(() => s.rollback(imported), 'ESTALE', 'stale-checkpoint');
      s.dispose();
    });

    it('[TS-txn-publish-after-complete] nothing of a step is visible to the seam or the observers before complete; a failure at complete publishes nothing', async () => {
      type Seen = { where: string; length: number; tokens: readonly number[]; lastOutcome: string | undefined };
      const seen: Seen[] = [];
      let s!: TextSession;
      const look = (where: string): void => void seen.push({ where, length: s.length, tokens: s.tokens, lastOutcome: s.lastOutcome });
      s = await session({
        agreement: { agree: (_epoch, phase) => (look(phase), true) },
        observer: { layer: (l) => look(`layer${l}`), logits: () => look('logits') },
      });
      /** Every look inside one transaction (from its checkpoint phase on) saw the history as it was before it. */
      const expectUnpublished = (from: Omit<Seen, 'where'>[]): void => {
        let before: Omit<Seen, 'where'> | undefined;
        let transactions = 0;
        for (const x of seen) {
          if (x.where === 'checkpoint') before = from[transactions++] ?? { length: x.length, tokens: x.tokens, lastOutcome: x.lastOutcome };
          expect(before).toBeDefined();
          expect({ length: x.length, tokens: x.tokens, lastOutcome: x.lastOutcome }).toEqual(before);
        }
        expect(transactions).toBeGreaterThan(0);
      };
      const layers = Array.from({ length: model.config.nLayers }, (_, l) => `layer${l}`);
      await s.prefill(PROMPT);
      expect(seen.map((x) => x.where)).toEqual(['checkpoint', 'execute', 'observe', ...layers, 'logits', 'publish', 'complete']);
      expectUnpublished([{ length: 0, tokens: [], lastOutcome: undefined }]);
      expect(s.tokens).toEqual(PROMPT);
      seen.length = 0;
      await s.decode(GREEDY[0]!);
      expectUnpublished([{ length: PROMPT.length, tokens: PROMPT, lastOutcome: 'committed' }]);
      // a speculative generation: each verification pass commits several tokens, none visible before complete
      seen.length = 0;
      for await (const t of s.generate([...PROMPT, ...GREEDY, ...PROMPT.slice(1)], { maxTokens: 12, speculative: { lookahead: 4, ngram: 2 } })) void t;
      expect(s.speculationStats().accepted).toBeGreaterThan(0);
      expectUnpublished([]);
      // a failure at complete: the step never became visible, before or after
      seen.length = 0;
      const before = { length: s.length, tokens: s.tokens, lastOutcome: s.lastOutcome };
      s.faults.failNextStepAt('complete');
      await expectCodeAsync(() => s.decode(GREEDY[0]!), 'EIO', 'complete-failed');
      expect(seen.map((x) => x.where).slice(-2)).toEqual(['logits', 'publish']);
      expectUnpublished([before]);
      expect({ length: s.length, tokens: s.tokens }).toEqual({ length: before.length, tokens: before.tokens });
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
      const cp = s.checkpoint();
      rt.faults.loseDeviceAt('after-enqueue');
      const err = (await expectCodeAsync(() => s.decode(GREEDY[0]!), 'ENODEV', 'execute-failed')) as StepError;
      expect(err.outcome).toBe('indeterminate');
      expect(s.lastOutcome).toBe('indeterminate');
      // nothing else runs on a state whose last step may or may not have happened
      await expectCodeAsync(() => s.decode(GREEDY[0]!), 'ENODEV', 'state-lost');
      expectCode(() => s.checkpoint(), 'ENODEV', 'state-lost');
      await expectCodeAsync(() => s.rollback(cp), 'ENODEV', 'state-lost');
      await expectCodeAsync(() => s.reset(), 'ENODEV', 'state-lost');
      expect(s.length).toBe(PROMPT.length);
      // the memory of the lost step is retained, never freed
      expect(lossy.counters().rootsRetainedForever).toBeGreaterThan(0);
    });

    it('[TS-restore-atomic][TS-txn-indeterminate-fence] a rollback that stops part-way fences the session until a reset rewrites every row', async () => {
      const s = await session();
      await s.prefill(PROMPT);
      const cp = s.checkpoint();
      await s.decode(GREEDY[0]!);
      await s.decode(GREEDY[1]!);
      // the K cache of layer 0 is zeroed past the checkpoint, then the restore fails
      s.faults.failNextRestoreAfter(1);
      await expectCodeAsync(() => s.rollback(cp), 'EIO', 'injected');
      expect(s.lastOutcome).toBe('indeterminate');
      // half-restored rows are never used: every call but reset refuses
      await expectCodeAsync(() => s.decode(GREEDY[2]!), 'EIO', 'fenced');
      await expectCodeAsync(() => s.prefill([GREEDY[2]!]), 'EIO', 'fenced');
      expectCode(() => s.checkpoint(), 'EIO', 'fenced');
      await expectCodeAsync(() => s.rollback(cp), 'EIO', 'fenced');
      await expectCodeAsync(() => s.exportState(), 'EIO', 'fenced');
      await expectCodeAsync(() => s.importState([1], new Float32Array(2 * model.config.nLayers * model.config.kvDim)), 'EIO', 'fenced');
      expectCode(() => s.forkLane(), 'EIO', 'fenced');
      await expectCodeAsync(async () => {
        for await (const t of s.generate(PROMPT, { maxTokens: 1 })) void t;
      }, 'EIO', 'fenced');
      // a reset rewrites every row and lifts the fence; the session then works as a fresh one
      await s.reset();
      expect(s.length).toBe(0);
      expect((await s.exportState(MAX_SEQ)).every((v) => v === 0)).toBe(true);
      expect((await s.prefill(PROMPT)).argmax).toBe(GREEDY[0]);
      s.dispose();
    });

    it('[TS-restore-atomic] a reset or importState that stops part-way fences the session; bad input to importState changes nothing', async () => {
      const s = await session();
      await s.prefill(PROMPT);
      const kv = await s.exportState();
      const before = await snapshot(s);
      // refused input: no fence, nothing changed
      await expectCodeAsync(() => s.importState([1, 99999], new Float32Array(2 * 2 * model.config.nLayers * model.config.kvDim)), 'EINVAL', 'bad-token');
      await expectCodeAsync(() => s.importState(PROMPT, kv.subarray(1)), 'EINVAL', 'state-mismatch');
      expect(await snapshot(s)).toEqual(before);
      // an import that fails after rewriting two cache buffers
      s.faults.failNextRestoreAfter(2);
      await expectCodeAsync(() => s.importState(PROMPT.slice(0, 2), kv.subarray(0, 2 * model.config.nLayers * 2 * model.config.kvDim)), 'EIO', 'injected');
      await expectCodeAsync(() => s.decode(GREEDY[0]!), 'EIO', 'fenced');
      // a reset that fails part-way leaves the fence up; one that completes lifts it
      s.faults.failNextRestoreAfter(3);
      await expectCodeAsync(() => s.reset(), 'EIO', 'injected');
      await expectCodeAsync(() => s.decode(GREEDY[0]!), 'EIO', 'fenced');
      await s.reset();
      await s.importState(PROMPT, kv);
      expect(await snapshot(s)).toEqual(before);
      expect((await s.decode(GREEDY[0]!)).argmax).toBe(GREEDY[1]);
      s.dispose();
    });

    it('[TS-restore-atomic][TS-lane-recover] a lane abandon that fails is an error and fences the session', async () => {
      const s = await session();
      await s.prefill(PROMPT);
      const lane = s.forkLane();
      await lane.run([GREEDY[0]!, 100, 200]);
      s.faults.failNextRestoreAfter(1);
      await expectCodeAsync(() => lane.abandon(), 'EIO', 'injected');
      expect(lane.closed).toBe(true);
      await expectCodeAsync(() => s.decode(GREEDY[0]!), 'EIO', 'fenced');
      await s.reset();
      expect((await s.prefill(PROMPT)).argmax).toBe(GREEDY[0]);
      s.dispose();
    });

    it('[TS-txn-indeterminate-fence][TS-restore-atomic] a failed step whose undo stops part-way is indeterminate and fences the session', async () => {
      const s = await session();
      await s.prefill(PROMPT);
      s.faults.failNextStepAt('publish');
      s.faults.failNextRestoreAfter(1);
      const err = (await expectCodeAsync(() => s.decode(GREEDY[0]!), 'EIO', 'publish-failed')) as StepError;
      expect(err.outcome).toBe('indeterminate');
      expect(s.lastOutcome).toBe('indeterminate');
      expect(s.length).toBe(PROMPT.length);
      await expectCodeAsync(() => s.decode(GREEDY[0]!), 'EIO', 'fenced');
      expectCode(() => s.checkpoint(), 'EIO', 'fenced');
      await s.reset();
      expect(s.lastOutcome).toBeUndefined();
      expect((await s.prefill(PROMPT)).argmax).toBe(GREEDY[0]);
      s.dispose();
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

    it('[TS-prefill-one-readback] a prefill of several chunks reads logits back once, after its last chunk, and chooses as one chunk does', async () => {
      const story = [...PROMPT, ...GREEDY];
      const ids = Array.from({ length: 40 }, (_, i) => story[i % story.length]!);
      const chunked = await session(); // maxBatch 16: three chunks
      const whole = await session({ maxBatch: ids.length }); // one chunk
      const downloads = async (s: TextSession) => {
        const mark = provider.ledgerMark();
        const report = await s.prefill(ids);
        return { report, count: provider.ledgerSince(mark).filter((e) => e.kind === 'copy' && e.to === 'host').length };
      };
      const three = await downloads(chunked);
      const one = await downloads(whole);
      // WebGPU: the logits and their argmax, once each; the host provider crosses no boundary.
      expect(one.count).toBe(provider.kind === 'webgpu' ? 2 : 0);
      expect(three.count).toBe(one.count);
      expect(three.report.argmax).toBe(one.report.argmax);
      expect(three.report.logits.length).toBe(model.config.vocabSize);
      let worst = 0;
      for (let i = 0; i < one.report.logits.length; i++) worst = Math.max(worst, Math.abs(three.report.logits[i]! - one.report.logits[i]!));
      expect(worst).toBeLessThan(LAYER_TOLERANCE * 10);
      chunked.dispose();
      whole.dispose();
    });
  });
}
