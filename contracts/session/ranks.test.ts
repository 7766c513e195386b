// Partitioned sessions, part 1 (issue 14): partitions checked before any rank exists, the communication
// manifest, pipeline and tensor partitions against one host rank, and the step transaction's agreement
// (commit epochs, a failing rank, checkpoint/rollback/reset on all ranks or none, stateless ranks,
// capture refused). Ranks are real worker_threads workers (node lane) running the Node build of
// workers/rank.worker.ts; activations cross over SAB rings. Model: stories260K.bin (dense F32, GQA 8/4).
import { afterEach, describe, expect, it } from 'vitest';
import {
  CLASSIFIER_CHUNK_ROWS,
  LlamaForward,
  PartitionedSession,
  checkPartition,
  communicationManifest,
  createHostProvider,
  createRuntime,
  defaultRankSpawner,
  evenTensorPartition,
  loadModel,
  partitionModelOf,
  readDenseWeights,
} from '../../src/index.js';
import type { ArchitecturePartition, DenseWeights, PartitionModel, RankSpawner } from '../../src/index.js';
import { SPIN_FLOOR_MICROS, nextSpinBound, pickGreedy } from '../../src/session/partition/protocol.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { readModelFixture } from '../support/models.js';

const stories = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');
const present = stories !== undefined && tok512 !== undefined;
const model = present ? await loadModel(stories!, { tokenizer: tok512! }) : undefined;
const weights: DenseWeights | undefined = model === undefined ? undefined : await readDenseWeights(model);
const PROMPT = [1, 403, 407, 261, 378];
const MAX_SEQ = 32;
const MAX_BATCH = 8;
const TIMEOUT = 60_000;

const PIPELINE: ArchitecturePartition = { kind: 'pipeline', ranks: [{ start: 0, end: 2 }, { start: 2, end: 5 }] };
/** Five layers on rank 0, a classifier-only (stateless) rank 1. */
const STATELESS_TAIL: ArchitecturePartition = { kind: 'pipeline', ranks: [{ start: 0, end: 5 }, { start: 5, end: 5 }] };

let open: PartitionedSession[] = [];
afterEach(() => {
  for (const s of open) s.dispose();
  open = [];
});

async function session(partition: ArchitecturePartition): Promise<PartitionedSession> {
  const s = await PartitionedSession.create(weights!, partition, { maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, identity: 'stories260K', spawn: defaultRankSpawner() });
  open.push(s);
  return s;
}

/** Greedy ids and per-step logits: the prompt as one step, then `decode` single-token steps. */
async function greedy(s: PartitionedSession, decode: number): Promise<{ ids: number[]; logits: Float32Array[] }> {
  const first = await s.step(PROMPT);
  const ids = [first.argmax];
  const logits = [first.logits];
  for (let i = 1; i < decode; i++) {
    const r = await s.step([ids[ids.length - 1]!]);
    ids.push(r.argmax);
    logits.push(r.logits);
  }
  return { ids, logits };
}

function sameBits(a: Float32Array, b: Float32Array): boolean {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

function maxRelative(a: Float32Array, b: Float32Array): number {
  let scale = 0;
  for (const v of b) scale = Math.max(scale, Math.abs(v));
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!) / scale);
  return worst;
}

describe.skipIf(!present)('partitions and manifests', () => {
  const m = (): PartitionModel => partitionModelOf(model!);

  it('[TS-dist-partition-authority] partitions that do not cover the model exactly are refused with a reason, and no rank is built', async () => {
    const cases: [ArchitecturePartition, string][] = [
      [{ kind: 'pipeline', ranks: [{ start: 0, end: 2 }, { start: 3, end: 5 }] }, 'gap'],
      [{ kind: 'pipeline', ranks: [{ start: 0, end: 3 }, { start: 2, end: 5 }] }, 'overlap'],
      [{ kind: 'pipeline', ranks: [{ start: 0, end: 2 }, { start: 2, end: 4 }] }, 'incomplete'],
      [{ kind: 'pipeline', ranks: [{ start: 0, end: 0 }, { start: 0, end: 5 }] }, 'empty-range'],
      [{ kind: 'pipeline', ranks: [] }, 'rank-count'],
      [{ kind: 'tensor', ranks: [{ kvStart: 0, kvEnd: 2, ffnStart: 0, ffnEnd: 86, vocabStart: 0, vocabEnd: 256 }, { kvStart: 2, kvEnd: 4, ffnStart: 86, ffnEnd: 170, vocabStart: 256, vocabEnd: 512 }] }, 'incomplete'],
      [{ kind: 'tensor', ranks: [{ kvStart: 0, kvEnd: 3, ffnStart: 0, ffnEnd: 86, vocabStart: 0, vocabEnd: 256 }, { kvStart: 2, kvEnd: 4, ffnStart: 86, ffnEnd: 172, vocabStart: 256, vocabEnd: 512 }] }, 'overlap'],
      [{ kind: 'ring', ranks: [{ start: 0, end: 5 }] } as unknown as ArchitecturePartition, 'bad-kind'],
      [{ ...evenTensorPartition(m(), 2), attention: 'both' } as unknown as ArchitecturePartition, 'bad-attention'],
    ];
    let spawned = 0;
    const counting: RankSpawner = (rank, lock) => {
      spawned++;
      return defaultRankSpawner()(rank, lock);
    };
    for (const [partition, reason] of cases) {
      expectCode(() => checkPartition(m(), partition), 'EINVAL', reason);
      await expectCodeAsync(() => PartitionedSession.create(weights!, partition, { maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, identity: 'x', spawn: counting }), 'EINVAL', reason);
    }
    expectCode(() => checkPartition({ ...m(), dense: false }, PIPELINE), 'ENOTSUP', 'partition-unsupported');
    await expectCodeAsync(() => PartitionedSession.create(weights!, evenTensorPartition(m(), 2), { maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, identity: 'x', spawn: counting, devices: ['webgpu', 'host'] }), 'ENOTSUP', 'device-rank-tensor');
    await expectCodeAsync(() => PartitionedSession.create(weights!, PIPELINE, { maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, identity: 'x', spawn: counting, devices: ['host'] }), 'EINVAL', 'bad-devices');
    await expectCodeAsync(() => PartitionedSession.create(weights!, PIPELINE, { maxSeq: 1 << 20, maxBatch: MAX_BATCH, identity: 'x', spawn: counting }), 'EINVAL', 'bad-size');
    for (const spinMicros of [-1, Number.NaN, 1e9]) {
      await expectCodeAsync(() => PartitionedSession.create(weights!, PIPELINE, { maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, identity: 'x', spawn: counting, spinMicros }), 'EINVAL', 'bad-option');
    }
    for (const livenessMicros of [-1, Number.NaN, 1e9]) {
      await expectCodeAsync(() => PartitionedSession.create(weights!, PIPELINE, { maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, identity: 'x', spawn: counting, livenessMicros }), 'EINVAL', 'bad-option');
    }
    expect(spawned).toBe(0);
  });

  it('[TS-dist-manifest] the manifest names every transfer of a step: activation, shape, bytes and direction', () => {
    const dim = model!.config.dim;
    const pipe = communicationManifest(checkPartition(m(), PIPELINE), 3);
    expect(pipe.transfers).toEqual([{ activation: 'hidden', layer: 1, from: 0, to: 1, shape: [3, dim], bytes: 3 * dim * 4 }]);
    expect(pipe.links).toEqual([[0, 1]]);
    const tensor = communicationManifest(checkPartition(m(), evenTensorPartition(m(), 2)), 1);
    expect(tensor.links).toEqual([[0, 1], [1, 0]]);
    // Per layer: the attention and FFN partial sums, each in both directions.
    expect(tensor.transfers.length).toBe(model!.config.layers * 2 * 2);
    expect(tensor.transfers.slice(0, 2)).toEqual([
      { activation: 'attn-partial', layer: 0, from: 0, to: 1, shape: [1, dim], bytes: dim * 4 },
      { activation: 'attn-partial', layer: 0, from: 1, to: 0, shape: [1, dim], bytes: dim * 4 },
    ]);
    expect(tensor.bytesPerStep).toBe(model!.config.layers * 4 * dim * 4);
  });

  it('[TS-dist-replicated-attention] a replicated-attention tensor partition gives every rank every head and KV head, splits only FFN columns and classifier rows, and crosses only the FFN partial sums', () => {
    const c = m();
    const checked = checkPartition(c, evenTensorPartition(c, 2, 'replicated'));
    for (const p of checked.plans) expect([p.headStart, p.headEnd, p.kvStart, p.kvEnd]).toEqual([0, c.heads, 0, c.kvHeads]);
    expect(checked.plans.map((p) => [p.ffnStart, p.ffnEnd])).toEqual([[0, c.ffnDim >> 1], [c.ffnDim >> 1, c.ffnDim]]);
    expect(checked.topology).not.toBe(checkPartition(c, evenTensorPartition(c, 2)).topology);
    const manifest = communicationManifest(checked, 2);
    expect(manifest.transfers.length).toBe(c.layers * 2);
    expect(manifest.transfers.every((t) => t.activation === 'ffn-partial')).toBe(true);
    expect(manifest.bytesPerStep).toBe(c.layers * 2 * 2 * c.dim * 4);
  });

  it('[TS-dist-capture-local] capture callbacks are refused on partitioned sessions', async () => {
    await expectCodeAsync(() => PartitionedSession.create(weights!, PIPELINE, { maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, identity: 'x', spawn: defaultRankSpawner(), observe: () => undefined }), 'ENOTSUP', 'partitioned-capture');
    const s = await session(PIPELINE);
    expectCode(() => s.capture(() => undefined), 'ENOTSUP', 'partitioned-capture');
  }, TIMEOUT);
});

/** Greedy prefill + 3 decodes of the whole model on one host runtime: the reference ids and logits. */
async function singleRankReference(runtime: ReturnType<typeof createRuntime>): Promise<{ refIds: number[]; refLogits: Float32Array[] }> {
  const single = await LlamaForward.create(runtime, model!, { maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, decode: 'plain' });
  const refIds: number[] = [];
  const refLogits: Float32Array[] = [];
  let r = await single.run(PROMPT, 0);
  refIds.push(r.argmax);
  refLogits.push(r.logits);
  for (let i = 1; i < 4; i++) {
    r = await single.run([refIds[i - 1]!], PROMPT.length + i - 1);
    refIds.push(r.argmax);
    refLogits.push(r.logits);
  }
  single.dispose();
  return { refIds, refLogits };
}

describe.skipIf(!present)('partitioned forward on host ranks (worker_threads)', () => {
  it('[TS-dist-same-numbers] a pipeline partition gives logits bit-identical to one host rank; a tensor partition within 1e-5 relative, same greedy ids', async () => {
    const runtime = createRuntime(createHostProvider());
    const { refIds, refLogits } = await singleRankReference(runtime);
    expect(refIds.slice(0, 4)).toEqual([432, 383, 286, 261]);
    const pipeSession = await session(PIPELINE);
    const pipe = await greedy(pipeSession, 4);
    expect(pipe.ids).toEqual(refIds);
    // Both sides ran the same kernels: WebAssembly where the engine has them (as the runtime chose).
    const kind = runtime.hostKernels()!.kind;
    for (const c of await pipeSession.counters()) expect(kind === 'wasm-simd' ? c.wasmDispatches > 0 : c.wasmDispatches === 0).toBe(true);
    pipe.logits.forEach((l, i) => expect(sameBits(l, refLogits[i]!)).toBe(true));
    const tensor = await greedy(await session(evenTensorPartition(partitionModelOf(model!), 2)), 4);
    expect(tensor.ids).toEqual(refIds);
    tensor.logits.forEach((l, i) => expect(maxRelative(l, refLogits[i]!)).toBeLessThan(1e-5));
  }, TIMEOUT);

  it('[TS-dist-replicated-attention] [TS-dist-same-numbers] a tensor partition with replicated attention gives logits within 1e-5 relative of one host rank and the same greedy ids, with one exchange per layer', async () => {
    const runtime = createRuntime(createHostProvider());
    const { refIds, refLogits } = await singleRankReference(runtime);
    const s = await session(evenTensorPartition(partitionModelOf(model!), 2, 'replicated'));
    const tensor = await greedy(s, 4);
    expect(tensor.ids).toEqual(refIds);
    tensor.logits.forEach((l, i) => expect(maxRelative(l, refLogits[i]!)).toBeLessThan(1e-5));
    // One all-reduce per layer (the FFN's), on every rank, for each of the 4 steps.
    for (const c of await s.counters()) expect(c.exchanges).toBe(4 * model!.config.layers);
  }, TIMEOUT);
});

describe('polling for a peer', () => {
  it('[TS-dist-spin-adapt] after a sleep the poll bound grows on waits the full bound would have caught, halves on far longer ones, and climbs back from the floor', () => {
    const max = 400;
    // From the floor, waits the full bound covers (typical exchange waits) double it back to spinMicros.
    let bound = SPIN_FLOOR_MICROS;
    const seen = [bound];
    while (bound < max && seen.length < 20) seen.push((bound = nextSpinBound(bound, max, 150)));
    expect(seen).toEqual([8, 16, 32, 64, 128, 256, 400]);
    expect(nextSpinBound(max, max, max)).toBe(max);
    // A wait far past the bound (the peer was off its core), or a sleep slice that ran out: halve, not below the floor.
    expect(nextSpinBound(max, max, 2 * max + 1)).toBe(max / 2);
    expect(nextSpinBound(max, max, Infinity)).toBe(max / 2);
    expect(nextSpinBound(SPIN_FLOOR_MICROS, max, Infinity)).toBe(SPIN_FLOOR_MICROS);
    // Between the bound and twice it: unchanged.
    expect(nextSpinBound(100, max, 1.5 * max)).toBe(100);
  });
});

describe.skipIf(!present)('the shared classifier of a tensor partition', () => {
  it('[TS-dist-shared-classifier] the greedy id is the candidate with the largest logit, ties to the smallest index, whichever rank found it', () => {
    const logits = new Float32Array([1, 5, 3, 5, 2]);
    expect(pickGreedy([2, 3], logits)).toBe(3);
    expect(pickGreedy([3, 1, -1], logits)).toBe(1);
    expect(pickGreedy([-1, 4, 2], logits)).toBe(2);
    expect(pickGreedy([-1, -1], logits)).toBe(-1);
  });

  it('[TS-dist-shared-classifier] tensor ranks compute the classifier in claimed chunks: each chunk once per step, by whichever rank gets there first, with the same logits', async () => {
    const partition = evenTensorPartition(partitionModelOf(model!), 2);
    const a = await session(partition);
    const b = await session(partition);
    const ra = await a.step(PROMPT);
    // Every chunk of every rank's rows, once (which rank computed which depends on who got there first).
    const plans = checkPartition(partitionModelOf(model!), partition).plans;
    const chunks = plans.reduce((n, p) => n + Math.ceil((p.vocabEnd - p.vocabStart) / CLASSIFIER_CHUNK_ROWS), 0);
    expect(chunks).toBeGreaterThanOrEqual(2);
    expect((await a.counters()).reduce((x, c) => x + c.classifierChunks, 0)).toBe(chunks);
    // Rank 1 reaches its classifier only after rank 0 voted: rank 0 computed every chunk, its own and rank 1's.
    await b.setRankFaults(1, { classifierLast: true });
    const rb = await b.step(PROMPT);
    expect((await b.counters()).map((c) => c.classifierChunks)).toEqual([chunks, 0]);
    expect(sameBits(rb.logits, ra.logits)).toBe(true);
    expect(rb.argmax).toBe(ra.argmax);
    // Claims start over with every step: the next step computes every chunk once more.
    const [na, nb] = await Promise.all([a.step([ra.argmax]), b.step([rb.argmax])]);
    expect((await a.counters()).reduce((x, c) => x + c.classifierChunks, 0)).toBe(2 * chunks);
    expect((await b.counters()).reduce((x, c) => x + c.classifierChunks, 0)).toBe(2 * chunks);
    expect(sameBits(nb.logits, na.logits)).toBe(true);
    expect(nb.argmax).toBe(na.argmax);
  }, TIMEOUT);
});

describe.skipIf(!present)('the step transaction across ranks', () => {
  it('[TS-dist-decode-run] a decode run: the ranks run greedy steps back to back, each one agreed transaction, with the greedy ids and last logits of step-by-step decoding', async () => {
    for (const partition of [PIPELINE, evenTensorPartition(partitionModelOf(model!), 2)]) {
      const stepped = await session(partition);
      const ref = await greedy(stepped, 4);
      const s = await session(partition);
      const first = await s.step(PROMPT);
      const run = await s.decode(first.argmax, 3);
      expect([first.argmax, ...run.ids]).toEqual(ref.ids);
      expect(run.pos).toBe(PROMPT.length);
      expect(run.epoch).toBe(4);
      // The ranks fed each step the id of the one before: the same history as the step-by-step session.
      expect(s.tokens).toEqual([...PROMPT, ...ref.ids.slice(0, 3)]);
      expect(s.length).toBe(PROMPT.length + 3);
      expect(sameBits(run.logits, ref.logits[3]!)).toBe(true);
      expect((await s.inspect()).map((x) => [x.length, x.epoch, x.digest])).toEqual((await stepped.inspect()).map((x) => [x.length, x.epoch, x.digest]));
      // Three agreed rounds per step, as step() takes.
      expect(s.stats()).toMatchObject({ steps: 4, agreements: 12 });
    }
  }, TIMEOUT);

  it('[TS-dist-decode-run] a decode run refuses bad sizes and tokens, changing nothing; a step failing mid-run ends it: the steps before stay committed and published, that step rolls back on every rank', async () => {
    const s = await session(evenTensorPartition(partitionModelOf(model!), 2));
    const first = await s.step(PROMPT);
    const before = await s.inspect();
    await expectCodeAsync(() => s.decode(first.argmax, 0), 'EINVAL', 'bad-size');
    await expectCodeAsync(() => s.decode(first.argmax, MAX_SEQ - PROMPT.length + 1), 'EINVAL', 'bad-size');
    await expectCodeAsync(() => s.decode(weights!.config.vocabSize, 2), 'EINVAL', 'bad-token');
    expect(await s.inspect()).toEqual(before);
    expect(s.tokens).toEqual(PROMPT);
    // Rank 1 fails the execute phase of the run's third step (epoch 4, fed 286).
    await s.setRankFaults(1, { failAt: 'execute', afterSteps: 2 });
    const err = await expectCodeAsync(() => s.decode(first.argmax, 4), 'EIO', 'rank-failed');
    expect(err.ids).toMatchObject({ rank: 1, phase: 'execute', epoch: 4 });
    expect(s.lastOutcome).toEqual({ state: 'aborted', epoch: 4, phase: 'execute' });
    expect(s.tokens).toEqual([...PROMPT, 432, 383]);
    expect(s.epoch).toBe(3);
    expect((await s.inspect()).map((x) => [x.length, x.epoch])).toEqual([[7, 3], [7, 3]]);
    // The history is intact: the failed step's token now commits, with the greedy id step-by-step decoding gives.
    expect((await s.decode(286, 1)).ids).toEqual([261]);
  }, TIMEOUT);

  it('[TS-txn-epoch-mismatch] a commit decision naming another epoch is refused by every rank and the step rolls back; so is a vote naming another epoch', async () => {
    const s = await session(evenTensorPartition(partitionModelOf(model!), 2));
    await s.step(PROMPT);
    const before = await s.inspect();
    s.faults.decisionEpochSkew = 1;
    const err = await expectCodeAsync(() => s.step([432]), 'ESTALE', 'epoch-mismatch');
    expect(err.ids).toMatchObject({ phase: 'complete', epoch: 2 });
    expect(s.lastOutcome).toEqual({ state: 'aborted', epoch: 2, phase: 'complete' });
    expect(await s.inspect()).toEqual(before);
    expect(s.length).toBe(PROMPT.length);
    await s.setRankFaults(1, { voteEpochSkew: -1 });
    const err2 = await expectCodeAsync(() => s.step([432]), 'ESTALE', 'epoch-mismatch');
    expect(err2.ids).toMatchObject({ rank: 1, phase: 'checkpoint' });
    expect(await s.inspect()).toEqual(before);
    // The history is intact: the same step now commits epoch 2.
    const ok = await s.step([432]);
    expect(ok.epoch).toBe(2);
    expect(ok.argmax).toBe(383);
    expect((await s.inspect()).map((x) => [x.length, x.epoch])).toEqual([[6, 2], [6, 2]]);
  }, TIMEOUT);

  it('[TS-dist-rollback] a rank that fails a phase aborts the step on every rank: no rank commits without agreement', async () => {
    const s = await session(evenTensorPartition(partitionModelOf(model!), 2));
    await s.step(PROMPT);
    const before = await s.inspect();
    for (const phase of ['execute', 'complete'] as const) {
      await s.setRankFaults(1, { failAt: phase });
      const err = await expectCodeAsync(() => s.step([432]), 'EIO', 'rank-failed');
      expect(err.ids).toMatchObject({ rank: 1, phase });
      expect(await s.inspect()).toEqual(before);
      expect(s.tokens).toEqual(PROMPT);
    }
  }, TIMEOUT);

  it('[TS-dist-checkpoint-overlap] with overlapCheckpoint a rank starts its forward pass on its own OK checkpoint vote (by default it waits), but a checkpoint round a peer failed aborts the step on every rank with every KV row as it was, and the next step is unchanged', async () => {
    let spawned = 0;
    const counting: RankSpawner = (rank, lock) => {
      spawned++;
      return defaultRankSpawner()(rank, lock);
    };
    for (const overlapCheckpoint of [1, 'yes', 0] as unknown as boolean[]) {
      await expectCodeAsync(() => PartitionedSession.create(weights!, PIPELINE, { maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, identity: 'x', spawn: counting, overlapCheckpoint }), 'EINVAL', 'bad-option');
    }
    expect(spawned).toBe(0);
    const partition = evenTensorPartition(partitionModelOf(model!), 2);
    const run = async (overlapCheckpoint: boolean | undefined) => {
      const s = await PartitionedSession.create(weights!, partition, { maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, identity: 'x', spawn: defaultRankSpawner(), ...(overlapCheckpoint === undefined ? {} : { overlapCheckpoint }) });
      open.push(s);
      await s.step(PROMPT);
      const before = await s.inspect();
      const dispatches = async (): Promise<number> => {
        const c = (await s.counters())[0]!;
        return c.wasmDispatches + c.scalarDispatches;
      };
      const d0 = await dispatches();
      await s.setRankFaults(1, { failAt: 'checkpoint' });
      const err = await expectCodeAsync(() => s.step([432]), 'EIO', 'rank-failed');
      expect(err.ids).toMatchObject({ rank: 1, phase: 'checkpoint' });
      const ahead = (await dispatches()) - d0;
      // Rank 0's rows written ahead (layer 0 at position 5) are zero again: every digest as before.
      expect(await s.inspect()).toEqual(before);
      expect(s.tokens).toEqual(PROMPT);
      return { ahead, next: await s.step([432]) };
    };
    const on = await run(true);
    const off = await run(undefined);
    // With overlapCheckpoint true rank 0 ran its first segment (layer 0 up to its first all-reduce) before
    // it read the decision; by default (false) it ran nothing.
    expect(on.ahead).toBeGreaterThan(0);
    expect(off.ahead).toBe(0);
    expect([on.next.epoch, off.next.epoch]).toEqual([2, 2]);
    expect(on.next.argmax).toBe(383);
    expect(sameBits(on.next.logits, off.next.logits)).toBe(true);
  }, TIMEOUT);

  it('[TS-dist-exchange-trace] with traceSteps, every rank records its last steps: each exchange it made, in order, and no step aborted before the commit decision', async () => {
    for (const traceSteps of [-1, 1.5, 4097, Number.NaN]) {
      await expectCodeAsync(() => PartitionedSession.create(weights!, PIPELINE, { maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, identity: 'x', spawn: defaultRankSpawner(), traceSteps }), 'EINVAL', 'bad-option');
    }
    const plain = await session(PIPELINE);
    expectCode(() => plain.exchangeTrace(), 'EINVAL', 'trace-off');
    const layers = model!.config.layers;
    const traced = async (partition: ArchitecturePartition): Promise<PartitionedSession> => {
      const s = await PartitionedSession.create(weights!, partition, { maxSeq: MAX_SEQ, maxBatch: MAX_BATCH, identity: 'x', spawn: defaultRankSpawner(), traceSteps: 2 });
      open.push(s);
      return s;
    };
    const tensor = await traced(evenTensorPartition(partitionModelOf(model!), 2));
    await tensor.step(PROMPT);
    expect(tensor.exchangeTrace().map((r) => r.map((t) => [t.epoch, t.exchanges.length]))).toEqual([[[1, 2 * layers]], [[1, 2 * layers]]]);
    // A step aborted at execute leaves no record; the ring keeps the last two committed steps.
    await tensor.setRankFaults(1, { failAt: 'execute' });
    await expectCodeAsync(() => tensor.step([432]), 'EIO', 'rank-failed');
    expect(tensor.exchangeTrace().map((r) => r.map((t) => t.epoch))).toEqual([[1], [1]]);
    await tensor.step([432]);
    await tensor.step([383]);
    const trace = tensor.exchangeTrace();
    expect(trace.map((r) => r.map((t) => t.epoch))).toEqual([[2, 3], [2, 3]]);
    for (const t of trace.flat()) {
      // One clock, in order: command, start, each exchange's entry and exit, end, the commit decision.
      const times = [t.command, t.start, ...t.exchanges.flatMap((e) => [e.entry, e.exit]), t.end, t.decided];
      expect(times.length).toBe(4 + 2 * 2 * layers);
      expect(times.every((x, i) => i === 0 || x >= times[i - 1]!)).toBe(true);
    }
    // Pipeline: rank 0 sends its hidden state once per step, rank 1 receives it once.
    const pipe = await traced(PIPELINE);
    await pipe.step(PROMPT);
    expect(pipe.exchangeTrace().map((r) => r.map((t) => [t.epoch, t.exchanges.length]))).toEqual([[[1, 1]], [[1, 1]]]);
  }, TIMEOUT);

  it('[TS-dist-checkpoint] a checkpoint exists only when every rank captured its part', async () => {
    const s = await session(PIPELINE);
    await s.step(PROMPT);
    await s.setRankFaults(1, { failCheckpoint: true });
    await expectCodeAsync(() => s.checkpoint(), 'EIO', 'checkpoint-incomplete');
    expect((await s.inspect()).map((x) => x.checkpoints)).toEqual([[], []]);
    const cp = await s.checkpoint();
    expect(cp).toMatchObject({ length: 5, epoch: 1 });
    expect((await s.inspect()).map((x) => x.checkpoints)).toEqual([[cp.id], [cp.id]]);
  }, TIMEOUT);

  it('[TS-dist-rollback] rollback and reset change live state only once every rank prepared them', async () => {
    const s = await session(PIPELINE);
    const first = await s.step(PROMPT);
    const cp = await s.checkpoint();
    const atCp = await s.inspect();
    await s.step([first.argmax]);
    const after = await s.inspect();
    expect(after.map((x) => x.digest)).not.toEqual(atCp.map((x) => x.digest));
    await s.setRankFaults(0, { failPrepare: true });
    await expectCodeAsync(() => s.rollback(cp), 'EIO', 'prepare-failed');
    expect(await s.inspect()).toEqual(after);
    await s.setRankFaults(1, { failPrepare: true });
    await expectCodeAsync(() => s.reset(), 'EIO', 'prepare-failed');
    expect(await s.inspect()).toEqual(after);
    await s.rollback(cp);
    expect(await s.inspect()).toEqual(atCp);
    expect(s.length).toBe(5);
    const again = await s.step([first.argmax]);
    expect(again.epoch).toBe(2);
    expect((await s.inspect()).map((x) => x.digest)).toEqual(after.map((x) => x.digest));
    await s.reset();
    expect((await s.inspect()).map((x) => [x.length, x.epoch, x.checkpoints.length])).toEqual([[0, 0, 0], [0, 0, 0]]);
    await expectCodeAsync(() => s.rollback(cp), 'ESTALE', 'unknown-checkpoint');
  }, TIMEOUT);

  it('[TS-dist-stateless-rank] a rank that owns no layers holds no KV rows and no cache identity, and refuses cache-state operations', async () => {
    const s = await session(STATELESS_TAIL);
    expect(s.checked.plans.map((p) => p.stateful)).toEqual([true, false]);
    const first = await s.step(PROMPT);
    expect(first.argmax).toBe(432);
    const states = await s.inspect();
    expect(states.map((x) => [x.stateful, x.length, x.digest === ''])).toEqual([[true, 5, false], [false, 5, true]]);
    await expectCodeAsync(() => s.rankShard(1), 'EINVAL', 'stateless-rank');
    expect((await s.rankShard(0)).byteLength).toBeGreaterThan(0);
  }, TIMEOUT);
});
