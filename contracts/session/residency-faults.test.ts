// Faults of a bounded layer window, through named seams of production code (no mocks), on a TextSession
// over stories260K.bin (5 layers; a window of one slot: every step uploads every layer):
// - the fill of layer 2's slot failing after the layer's first tensor was written into it
//   (session.faults.failLayerRead, the window's own seam; a failing read of the source itself, OPFS or a
//   file, is residency-source.test.ts): the step fails EIO
//   `layer-read-failed` naming the layer, the session's transaction aborts it (KV state bit-identical,
//   length unchanged), the half-written slot is not trusted, and the next step computes the very logits a
//   resident session computes;
// - the device lost during a bounded step (runtime.faults.loseDeviceAt, WebGPU only): the step is
//   indeterminate, the session fenced (ENODEV state-lost), and the state group with the window's slots is
//   retained by the runtime forever (nothing released, not even by dispose).
// State exported under the bounded policy imports into a resident session and continues with the same
// logits (identity and state do not depend on residency). Also: a budget below the largest layer is refused by TextSession.create before anything is allocated, and
// the session's report names the policy.
import { describe, expect, it } from 'vitest';
import { TextSession, createRuntime, loadModel } from '../../src/index.js';
import type { StepError } from '../../src/index.js';
import { catchTenonAsync, expectCode, expectCodeAsync } from '../support/expect-error.js';
import { readModelFixture } from '../support/models.js';
import { providerCases } from '../support/providers.js';

const PROMPT = [1, 403, 407, 261, 378];
const MAX_SEQ = 16;
const FAILING_LAYER = 2;
/** stories260K's layer count (../shared/models/README.md). */
const model5Layers = 5;

const stories = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');
const present = stories !== undefined && tok512 !== undefined;

function bits(a: Float32Array): number[] {
  return Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));
}

for (const pc of providerCases()) {
  describe.skipIf(!present)(`bounded residency faults on ${pc.name}`, () => {
    const make = async (bytes: number | undefined) => {
      const model = await loadModel(stories!, { tokenizer: tok512! });
      const provider = await pc.make();
      const runtime = createRuntime(provider);
      const residency = bytes === undefined ? { kind: 'resident' as const } : { kind: 'bounded' as const, bytes };
      return { provider, runtime, session: await TextSession.create({ runtime, model, maxSeq: MAX_SEQ, maxBatch: 8, residency }) };
    };
    /** The slot size of stories260K's plan, from the refusal of a 1-byte budget (which allocates nothing). */
    const slotBytes = async (): Promise<number> => {
      const model = await loadModel(stories!, { tokenizer: tok512! });
      const provider = await pc.make();
      const before = provider.counters().liveBytes;
      const err = await expectCodeAsync(() => TextSession.create({ runtime: createRuntime(provider), model, maxSeq: MAX_SEQ, residency: { kind: 'bounded', bytes: 1 } }), 'EINVAL', 'budget-below-layer');
      expect(provider.counters().liveBytes).toBe(before);
      const ids = err.ids as { budget: number; largestLayer: number };
      expect(ids.budget).toBe(1);
      return ids.largestLayer;
    };

    it('[TS-residency-read-fault][TS-residency-identity][TS-residency-slot-proof] a layer read failing part-way aborts the step (state bit-identical, layer named) and the next step matches a resident session', async () => {
      const slot = await slotBytes();
      const ref = await make(undefined);
      expect(ref.session.report().layerResidency.policy).toBe('resident');
      expectCode(() => ref.session.faults.failLayerRead(0), 'EINVAL', 'not-bounded');
      const wantPrefill = await ref.session.prefill(PROMPT);
      const want = await ref.session.decode(432);
      const identity = await ref.session.identity();
      ref.session.dispose();

      const { session } = await make(slot);
      // [TS-residency-identity] the prompt-cache identity does not depend on the residency policy.
      expect(await session.identity()).toEqual(identity);
      const report = session.report().layerResidency;
      expect(report.policy).toBe('bounded');
      expect(report.slots).toBe(1);
      await session.prefill(PROMPT);
      const state = await session.exportState();
      const uploads = session.report().layerResidency.layerUploads;
      session.faults.failLayerRead(FAILING_LAYER);
      const err = (await catchTenonAsync(() => session.decode(432))) as StepError;
      expect(err.code).toBe('EIO');
      expect(err.outcome).toBe('aborted');
      const cause = err.cause as { code: string; reason: string; ids: { layer: number } };
      expect(cause.code).toBe('EIO');
      expect(cause.reason).toBe('layer-read-failed');
      expect(cause.ids.layer).toBe(FAILING_LAYER);
      expect(session.length).toBe(PROMPT.length);
      expect(session.lastOutcome).toBe('aborted');
      expect(await session.exportState()).toEqual(state);
      // Layers 0 and 1 ran and uploaded; layer 2's upload did not finish.
      expect(session.report().layerResidency.layerUploads).toBe(uploads + FAILING_LAYER);
      const got = await session.decode(432);
      expect(bits(got.logits)).toEqual(bits(want.logits));
      expect(got.argmax).toBe(want.argmax);
      // State made under the bounded policy continues under the resident one: the same next logits.
      const history = [...PROMPT, 432];
      const kv = await session.exportState();
      const next = await session.decode(got.argmax);
      const other = await make(undefined);
      await other.session.importState(history, kv);
      expect(bits((await other.session.decode(got.argmax)).logits)).toEqual(bits(next.logits));
      other.session.dispose();
      session.dispose();

      // A window holding every layer uploads each layer once, on the first step: a read failing there
      // leaves a half-written slot that must not count as holding its layer (the retry rewrites it).
      const whole = await make(slot * model5Layers);
      expect(whole.session.report().layerResidency.slots).toBe(model5Layers);
      whole.session.faults.failLayerRead(FAILING_LAYER);
      const first = (await catchTenonAsync(() => whole.session.prefill(PROMPT))) as StepError;
      expect(first.outcome).toBe('aborted');
      expect((first.cause as { reason: string }).reason).toBe('layer-read-failed');
      expect(whole.session.length).toBe(0);
      const retry = await whole.session.prefill(PROMPT);
      expect(bits(retry.logits)).toEqual(bits(wantPrefill.logits));
      expect(bits((await whole.session.decode(432)).logits)).toEqual(bits(want.logits));
      // Every layer was uploaded exactly once in the end (the failed one twice, partly the first time).
      expect(whole.session.report().layerResidency.layerUploads).toBe(model5Layers);
      whole.session.dispose();
    });

    it('[TS-residency-policy] malformed policies are refused at construction before anything is allocated', async () => {
      const model = await loadModel(stories!, { tokenizer: tok512! });
      const provider = await pc.make();
      const runtime = createRuntime(provider);
      const before = provider.counters().liveBytes;
      const create = (residency: unknown, extra: object = {}) => TextSession.create({ runtime, model, maxSeq: MAX_SEQ, residency: residency as never, ...extra });
      await expectCodeAsync(() => create({ kind: 'paged' }), 'EINVAL', 'bad-residency');
      await expectCodeAsync(() => create({ kind: 'bounded', bytes: 0 }), 'EINVAL', 'bad-residency');
      await expectCodeAsync(() => create({ kind: 'bounded', bytes: 1.5 }), 'EINVAL', 'bad-residency');
      await expectCodeAsync(() => create({ kind: 'bounded', bytes: 1 << 30 }, { kernels: 'fused' }), 'ENOTSUP', 'bounded-needs-unfused');
      await expectCodeAsync(() => create({ kind: 'bounded', bytes: 1 << 30, experts: 1 }), 'EINVAL', 'no-routed-experts');
      expect(provider.counters().liveBytes).toBe(before);
    });

    it.skipIf(pc.kind !== 'webgpu')('[TS-residency-loss-retains] a device lost during a bounded step fences the session and retains the window with the state', async () => {
      const slot = await slotBytes();
      const { provider, runtime, session } = await make(slot * 2);
      await session.prefill(PROMPT);
      const retainedBefore = provider.counters().rootsRetainedForever;
      runtime.faults.loseDeviceAt('after-enqueue');
      const err = (await expectCodeAsync(() => session.decode(432), 'ENODEV')) as StepError;
      expect(err.outcome).toBe('indeterminate');
      await expectCodeAsync(() => session.decode(432), 'ENODEV', 'state-lost');
      const live = provider.counters().liveBytes;
      const retained = provider.counters().rootsRetainedForever - retainedBefore;
      // Every root of the state group stays retained: the two slots among them.
      const report = session.report().layerResidency;
      expect(report.slots).toBe(2);
      // Two slots of five layers: the overlapped schedule (a chain per step) was the one lost.
      expect(report.overlap).toBe(true);
      expect(retained).toBeGreaterThanOrEqual(report.slots);
      session.dispose();
      expect(provider.counters().liveBytes).toBe(live);
    });
  });
}
