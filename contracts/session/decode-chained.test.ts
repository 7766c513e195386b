// Plan: chained steps and pipelined greedy generation (TextSession's default 'chained' mode) on every
// provider of the lane, with the real stories260K fixture, against the 'plain' baseline mode (submit and
// wait step by step) as the reference. Each case compares the whole state (committed tokens, every KV
// byte of the cache, epoch, last outcome), never only the output:
//   - generation with 0, 1 and the default number of steps ahead equals plain generation, and each decode
//     step is admitted onto the chain while its predecessor still holds the state (runtime chained count);
//   - per decode token on WebGPU, from the first token on, with the unfused and the fused kernel lists: one
//     queue submission, one host wait, the chosen id read back (4 bytes), no GPU buffer, no bind group, no
//     download, the decode graph's dispatches (fused: exactly 4 per layer + 3);
//   - single decode() / prefill() calls with `logits: false` read back 4 bytes; with logits, downloads;
//   - a chunked prefill chains its chunks and reads back once (both modes);
//   - work run ahead is discarded exactly: at a stop token, a `break`, an abort, and a session call made
//     between two tokens (the generation then goes on as plain generation would);
//   - a failure injected in each phase, and a GPU (or host kernel) error in a step ahead, roll back exactly
//     what plain stepping rolls back, steps ahead included;
//   - a device lost mid-chain: indeterminate, fenced, every unproven member retained, no root freed.
import { beforeAll, describe, expect, it } from 'vitest';
import { TextSession, createRuntime } from '../../src/index.js';
import type { HostProvider, LlamaModelFile, Runtime, StepError, Tokenizer, WebGPUProvider } from '../../src/index.js';
import { DEFAULT_STEPS_AHEAD, STEPS_AHEAD_LIMIT, STEP_PHASES } from '../../src/session/index.js';
import type { GeneratedToken } from '../../src/session/index.js';
import { catchTenonAsync, expectCodeAsync } from '../support/expect-error.js';
import { stories260K, useSessionFixture } from '../support/session-fixture.js';
import { providerCases } from '../support/providers.js';

const PROMPT = [1, 403, 407, 261, 378];
const GREEDY = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317];
const MAX_SEQ = 96;
const MAX_BATCH = 16;
/** Bytes of one token id read back. */
const ID_BYTES = 4;
/** The heaviest cases run several sessions on a software adapter: room for a loaded machine. */
const HEAVY_TIMEOUT_MS = 180_000;
/** The counters hold for both dispatch lists (acceptance 2 of issue 11 names the fused one). */
const KERNEL_LISTS = ['unfused', 'fused'] as const;
/** The fused list's decode dispatches (TS-fused-dispatches) and stories260K's layers. */
const FUSED_PER_LAYER = 4;
const FUSED_PER_STEP = 3;
const STORIES_LAYERS = 5;
/** Generations run without a stop token, so every step ahead is used. */
const NO_STOP: readonly number[] = [];

const bytes = await stories260K();

async function collect(gen: AsyncGenerator<GeneratedToken>): Promise<number[]> {
  const out: number[] = [];
  for await (const t of gen) out.push(t.token);
  return out;
}

for (const pc of providerCases()) {
  describe.skipIf(bytes.absent)(`chained decode on ${pc.name}`, () => {
    const fx = useSessionFixture(pc, bytes);
    let provider: HostProvider | WebGPUProvider;
    let runtime: Runtime;
    let model: LlamaModelFile;
    let tokenizer: Tokenizer;
    beforeAll(() => void ({ provider, runtime, model, tokenizer } = fx));

    const session = (decode: 'plain' | 'chained' = 'chained', extra: Partial<Parameters<typeof TextSession.create>[0]> = {}) =>
      TextSession.create({ runtime, model, tokenizer, maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, decode, ...extra });

    /** Everything a transaction may change: tokens, every KV byte, epoch, last outcome. */
    async function state(s: TextSession) {
      return { tokens: s.tokens, kv: Array.from(await s.exportState(MAX_SEQ)), epoch: s.epoch, lastOutcome: s.lastOutcome };
    }

    /** Host copies to the host that `work` caused (on WebGPU each is one download of a buffer). */
    async function downloads<T>(work: () => Promise<T>): Promise<{ value: T; count: number }> {
      const mark = provider.ledgerMark();
      const value = await work();
      return { value, count: provider.ledgerSince(mark).filter((e) => e.kind === 'copy' && e.to === 'host').length };
    }

    it('[TS-decode-chained] pipelined greedy generation equals plain generation; each decode step is chained onto the one before it', async () => {
      const plain = await session('plain');
      expect(plain.report().decode.mode).toBe('plain');
      const before = runtime.stats().chained;
      const want = await collect(plain.generate(PROMPT, { maxTokens: GREEDY.length, stopTokens: NO_STOP }));
      expect(want).toEqual(GREEDY);
      // the baseline never chains
      expect(runtime.stats().chained).toBe(before);
      const reference = await state(plain);
      plain.dispose();
      for (const stepsAhead of [0, 1, DEFAULT_STEPS_AHEAD, STEPS_AHEAD_LIMIT]) {
        const s = await session();
        expect(s.report().decode.mode).toBe('chained');
        const chained = runtime.stats().chained;
        expect(await collect(s.generate(PROMPT, { maxTokens: GREEDY.length, stopTokens: NO_STOP, stepsAhead }))).toEqual(GREEDY);
        expect(await state(s)).toEqual(reference);
        // With steps ahead every decode step joins the chain while the step before it holds the state
        // (so it was submitted before that step's token was read); without, each one starts a new chain.
        expect(runtime.stats().chained - chained).toBe(stepsAhead === 0 ? 0 : GREEDY.length);
        s.dispose();
      }
    }, HEAVY_TIMEOUT_MS);

    for (const kernels of KERNEL_LISTS) it.skipIf(pc.kind !== 'webgpu')(`[TS-decode-one-submission][TS-decode-counters] ${kernels} kernels: from the first token on, each token costs one submission, one wait, a 4-byte readback, the decode graph, and creates nothing`, async () => {
      const N = 9;
      const s = await session('chained', { kernels });
      const gen = s.generate(PROMPT, { maxTokens: N, stopTokens: NO_STOP });
      const start = runtime.stats();
      const mark = provider.ledgerMark();
      const seen: number[] = [];
      let last: { rt: ReturnType<Runtime['stats']>; dispatches: number } | undefined;
      let perToken: number | undefined;
      for await (const t of gen) {
        seen.push(t.token);
        const now = { rt: runtime.stats(), dispatches: provider.counters().dispatches };
        perToken ??= s.report().decode.dispatchesPerToken;
        if (last !== undefined) {
          const k = seen.length - 1;
          // Between two tokens the pipeline submitted one step (the one DEFAULT_STEPS_AHEAD ahead), unless
          // the token budget was covered already.
          const submitted = k + DEFAULT_STEPS_AHEAD < N ? 1 : 0;
          expect({
            submits: now.rt.queueSubmits - last.rt.queueSubmits,
            waits: now.rt.hostAwaits - last.rt.hostAwaits,
            chained: now.rt.chained - last.rt.chained,
            dispatches: now.dispatches - last.dispatches,
            buffers: now.rt.buffersCreated - last.rt.buffersCreated,
            bindGroups: now.rt.bindGroupsCreated - last.rt.bindGroupsCreated,
            fences: now.rt.fences - last.rt.fences,
          }).toEqual({ submits: submitted, waits: submitted, chained: submitted, dispatches: submitted * perToken!, buffers: 0, bindGroups: 0, fences: 0 });
        }
        last = now;
      }
      expect(seen).toEqual(GREEDY.slice(0, N));
      expect(typeof perToken).toBe('number');
      expect(perToken).toBeGreaterThan(0);
      // The fused list's decode graph: fused_attention_block, O, gate/up, down per layer; embedding, classifier, argmax.
      if (kernels === 'fused') expect(perToken).toBe(FUSED_PER_LAYER * STORIES_LAYERS + FUSED_PER_STEP);
      const end = runtime.stats();
      // The whole generation: the prompt (one chunk) and N decode steps, each one submission and one
      // readback map proving it (no fence), each reading back only its chosen id; no logits downloaded.
      expect(end.queueSubmits - start.queueSubmits).toBe(1 + N);
      expect(end.hostAwaits - start.hostAwaits).toBe(1 + N);
      expect(end.fences - start.fences).toBe(0);
      expect(end.bytesReadBack - start.bytesReadBack).toBe(ID_BYTES * (1 + N));
      expect(provider.ledgerSince(mark).filter((e) => e.kind === 'copy' && e.to === 'host')).toEqual([]);
      s.dispose();
    });

    it('[TS-decode-one-submission] decode() and prefill() with logits: false read back only the chosen id; with logits they download them', async () => {
      const plain = await session('plain');
      const s = await session();
      const p = await plain.prefill(PROMPT);
      const quiet = await downloads(() => s.prefill(PROMPT, { logits: false }));
      expect(quiet.value.argmax).toBe(p.argmax);
      expect(quiet.value.logits.length).toBe(0);
      expect(quiet.count).toBe(0);
      const d = await plain.decode(GREEDY[0]!);
      // warm: the one-token graph and the readback buffer exist after this call
      const first = await s.decode(GREEDY[0]!, { logits: false });
      expect(first.argmax).toBe(d.argmax);
      const rt = runtime.stats();
      const step = await downloads(() => s.decode(GREEDY[1]!, { logits: false }));
      const after = runtime.stats();
      expect(step.value.argmax).toBe((await plain.decode(GREEDY[1]!)).argmax);
      expect(step.count).toBe(0);
      if (pc.kind === 'webgpu') {
        expect({
          submits: after.queueSubmits - rt.queueSubmits,
          waits: after.hostAwaits - rt.hostAwaits,
          bytes: after.bytesReadBack - rt.bytesReadBack,
          buffers: after.buffersCreated - rt.buffersCreated,
          bindGroups: after.bindGroupsCreated - rt.bindGroupsCreated,
        }).toEqual({ submits: 1, waits: 1, bytes: ID_BYTES, buffers: 0, bindGroups: 0 });
      }
      // asked for (the default), the logits come down: the same values as the baseline's
      const full = await downloads(() => s.decode(GREEDY[2]!));
      const base = await plain.decode(GREEDY[2]!);
      expect(full.count).toBe(pc.kind === 'webgpu' ? 2 : 0);
      expect(Array.from(full.value.logits)).toEqual(Array.from(base.logits));
      expect(full.value.argmax).toBe(base.argmax);
      expect(await state(s)).toEqual(await state(plain));
      plain.dispose();
      s.dispose();
    });

    it('[TS-prefill-chained][TS-prefill-one-readback] a prefill of several chunks chains them and reads back once, in both modes, with the same state', async () => {
      const story = [...PROMPT, ...GREEDY];
      const ids = Array.from({ length: 40 }, (_, i) => story[i % story.length]!);
      const chunks = Math.ceil(ids.length / MAX_BATCH);
      const plain = await session('plain');
      const chained = await session();
      const quiet = await session();
      const p = await downloads(() => plain.prefill(ids));
      const before = runtime.stats();
      const c = await downloads(() => chained.prefill(ids));
      const between = runtime.stats();
      const q = await downloads(() => quiet.prefill(ids, { logits: false }));
      const after = runtime.stats();
      // logits and their argmax are downloaded once (WebGPU), after the last chunk, in either mode
      expect(p.count).toBe(pc.kind === 'webgpu' ? 2 : 0);
      expect(c.count).toBe(p.count);
      expect(q.count).toBe(0);
      // the chunks after the first were admitted onto the chain (no wait between chunks)
      expect(between.chained - before.chained).toBe(chunks - 1);
      expect(after.chained - between.chained).toBe(chunks - 1);
      if (pc.kind === 'webgpu') expect(after.bytesReadBack - between.bytesReadBack).toBe(ID_BYTES);
      expect(Array.from(c.value.logits)).toEqual(Array.from(p.value.logits));
      expect(c.value.argmax).toBe(p.value.argmax);
      expect(q.value.argmax).toBe(p.value.argmax);
      const reference = await state(plain);
      expect(await state(chained)).toEqual(reference);
      expect(await state(quiet)).toEqual(reference);
      for (const s of [plain, chained, quiet]) s.dispose();
    });

    it('[TS-decode-discard] steps run ahead are discarded exactly at a stop token, a break and an abort: the state equals plain generation\'s', async () => {
      type Run = (s: TextSession) => Promise<number[]>;
      const stopAt: Run = (s) => collect(s.generate(PROMPT, { maxTokens: GREEDY.length, stopTokens: [GREEDY[3]!] }));
      const breakAfter: Run = async (s) => {
        const out: number[] = [];
        for await (const t of s.generate(PROMPT, { maxTokens: GREEDY.length, stopTokens: NO_STOP })) {
          out.push(t.token);
          if (out.length === 2) break;
        }
        return out;
      };
      const abortAfter: Run = async (s) => {
        const out: number[] = [];
        const abort = new AbortController();
        await expectCodeAsync(async () => {
          for await (const t of s.generate(PROMPT, { maxTokens: GREEDY.length, stopTokens: NO_STOP, signal: abort.signal })) {
            out.push(t.token);
            if (out.length === 2) abort.abort();
          }
        }, 'ECANCELED');
        return out;
      };
      for (const [name, run, expected] of [
        ['stop token', stopAt, GREEDY.slice(0, 3)],
        ['break', breakAfter, GREEDY.slice(0, 2)],
        ['abort', abortAfter, GREEDY.slice(0, 2)],
      ] as const) {
        const plain = await session('plain');
        const s = await session();
        expect(await run(plain), name).toEqual(expected);
        expect(await run(s), name).toEqual(expected);
        // rows written ahead are zero again; no epoch was used by them
        expect(await state(s), name).toEqual(await state(plain));
        // and the session goes on from there as the baseline does
        const next = GREEDY[expected.length]!;
        expect((await s.decode(next, { logits: false })).argmax, name).toBe((await plain.decode(next)).argmax);
        expect(await state(s), name).toEqual(await state(plain));
        plain.dispose();
        s.dispose();
      }
    }, HEAVY_TIMEOUT_MS);

    it('[TS-decode-discard] a session call between two tokens discards the steps ahead; the generation then goes on as plain generation does', async () => {
      const plain = await session('plain');
      const s = await session();
      const a = plain.generate(PROMPT, { maxTokens: 8, stopTokens: NO_STOP });
      const b = s.generate(PROMPT, { maxTokens: 8, stopTokens: NO_STOP });
      for (let i = 0; i < 2; i++) {
        expect((await b.next()).value).toEqual((await a.next()).value);
      }
      // exportState, checkpoint + rollback, a lane: each sees exactly the committed state
      expect(await state(s)).toEqual(await state(plain));
      const cp = s.checkpoint();
      await s.rollback(cp);
      expect(s.tokens).toEqual([...PROMPT, ...GREEDY.slice(0, 2)]);
      const lane = s.forkLane();
      await lane.abandon();
      expect(await state(s)).toEqual(await state(plain));
      const rest: number[] = [];
      const want: number[] = [];
      for await (const t of b) rest.push(t.token);
      for await (const t of a) want.push(t.token);
      expect(rest).toEqual(want);
      expect(rest).toEqual(GREEDY.slice(2, 8));
      expect(await state(s)).toEqual(await state(plain));
      plain.dispose();
      s.dispose();
    });

    it('[TS-decode-failure][TS-txn-rollback] a failure injected in any phase mid-generation rolls back exactly what plain stepping does, steps ahead included', async () => {
      const made = 3;
      for (const phase of STEP_PHASES) {
        const plain = await session('plain');
        const s = await session();
        for (const x of [plain, s]) {
          const gen = x.generate(PROMPT, { maxTokens: GREEDY.length, stopTokens: NO_STOP });
          for (let i = 0; i < made; i++) expect((await gen.next()).value).toMatchObject({ token: GREEDY[i] });
          x.faults.failNextStepAt(phase);
          const err = (await expectCodeAsync(() => gen.next(), 'EIO', `${phase}-failed`)) as StepError;
          expect(err.phase).toBe(phase);
          expect(err.outcome).toBe('aborted');
        }
        expect(await state(s), phase).toEqual(await state(plain));
        expect(s.lastOutcome).toBe('aborted');
        // the session is not fenced: it goes on from the committed state
        expect(await collect(s.generate([...PROMPT, ...GREEDY.slice(0, made)], { maxTokens: 2, stopTokens: NO_STOP }))).toEqual(GREEDY.slice(made, made + 2));
        plain.dispose();
        s.dispose();
      }
    }, HEAVY_TIMEOUT_MS);

    it('[TS-decode-failure] an error the provider reports in a step ahead fails that step\'s transaction; the steps before it commit', async () => {
      const s = await session();
      const gen = s.generate(PROMPT, { maxTokens: GREEDY.length, stopTokens: NO_STOP });
      const made = 2;
      for (let i = 0; i < made; i++) await gen.next();
      // The next submission is the step the third transaction adds DEFAULT_STEPS_AHEAD tokens ahead.
      if (pc.kind === 'webgpu') runtime.faults.invalidateNextSubmission();
      else runtime.faults.failNextHostRun();
      const out: number[] = [];
      const err = (await catchTenonAsync(async () => {
        for (;;) {
          const r = await gen.next();
          if (r.done === true) return;
          out.push(r.value.token);
        }
      })) as StepError;
      expect(err.code).toBe(pc.kind === 'webgpu' ? 'EINVAL' : 'EIO');
      expect(err.outcome).toBe('aborted');
      expect(err.phase).toBe('execute');
      // the steps before the bad one were proven and committed; the bad one and nothing after it
      expect(out).toEqual(GREEDY.slice(made, made + DEFAULT_STEPS_AHEAD));
      const committed = made + DEFAULT_STEPS_AHEAD;
      const plain = await session('plain');
      await plain.prefill(PROMPT);
      for (const t of GREEDY.slice(0, committed)) await plain.decode(t);
      plain.faults.failNextStepAt('execute');
      await expectCodeAsync(() => plain.decode(GREEDY[committed]!), 'EIO', 'execute-failed');
      expect(await state(s)).toEqual(await state(plain));
      expect((await s.decode(GREEDY[committed]!, { logits: false })).argmax).toBe(GREEDY[committed + 1]);
      plain.dispose();
      s.dispose();
    });

    it.skipIf(pc.kind !== 'webgpu')('[TS-decode-lost-chain][TS-txn-indeterminate-fence] a device lost mid-chain: indeterminate, fenced, every unproven member retained, no root freed', async () => {
      const lossy = (await pc.make()) as WebGPUProvider;
      const rt = createRuntime(lossy);
      const empty = lossy.counters();
      const s = await TextSession.create({ runtime: rt, model, tokenizer, maxSeq: MAX_SEQ, maxBatch: MAX_BATCH });
      const sessionRoots = lossy.counters().liveRoots - empty.liveRoots;
      const gen = s.generate(PROMPT, { maxTokens: GREEDY.length, stopTokens: NO_STOP });
      const made = 2;
      for (let i = 0; i < made; i++) await gen.next();
      const before = { counters: lossy.counters(), stats: rt.stats() };
      rt.faults.loseDeviceAt('after-enqueue');
      const out: number[] = [];
      const err = (await expectCodeAsync(async () => {
        for (;;) {
          const r = await gen.next();
          if (r.done === true) return;
          out.push(r.value.token);
        }
      }, 'ENODEV')) as StepError;
      expect(err.outcome).toBe('indeterminate');
      expect(s.lastOutcome).toBe('indeterminate');
      // steps proven before the loss became visible may have committed; nothing else did
      expect(out).toEqual(GREEDY.slice(made, made + out.length));
      expect(s.tokens).toEqual([...PROMPT, ...GREEDY.slice(0, made + out.length)]);
      await expectCodeAsync(() => s.decode(GREEDY[0]!), 'ENODEV', 'state-lost');
      await expectCodeAsync(() => s.reset(), 'ENODEV', 'state-lost');
      await rt.idle();
      const stats = rt.stats();
      expect(stats.inFlight).toBe(0);
      // every member that could not be proven is kept for good; the one holding the state retained all of it
      expect(stats.unproven - before.stats.unproven).toBeGreaterThan(0);
      expect(stats.retainedRecords - before.stats.retainedRecords).toBe(stats.unproven - before.stats.unproven);
      s.dispose();
      const after = lossy.counters();
      expect(after.rootsRetainedForever - before.counters.rootsRetainedForever).toBe(sessionRoots);
      expect(after.rootsDestroyed).toBe(before.counters.rootsDestroyed);
      expect(after.liveRoots).toBe(before.counters.liveRoots);
    });

    it('[TS-decode-chained] bad decode options are refused before anything runs', async () => {
      const live = provider.counters().liveRoots;
      await expectCodeAsync(() => session('sideways' as 'plain'), 'EINVAL', 'bad-decode-mode');
      expect(provider.counters().liveRoots).toBe(live);
      const s = await session();
      for (const stepsAhead of [-1, STEPS_AHEAD_LIMIT + 1, 1.5]) {
        await expectCodeAsync(() => collect(s.generate(PROMPT, { stepsAhead })), 'EINVAL', 'bad-steps-ahead');
      }
      expect(s.epoch).toBe(0);
      s.dispose();
    });
  });
}
