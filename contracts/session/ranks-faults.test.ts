// Partitioned sessions, part 2 (issue 14): rank loss and sharded prompt caches. A rank's worker is
// terminated from outside while parked at each phase of a step (RankFaults.parkAt); the session learns of it
// the way it learns of any loss (the worker's exit event in the node lane; in the browser lane, where this
// file runs too, the Web Lock the rank's Web Worker held), fences, and every surviving rank restores its
// step checkpoint without hanging. Caches: one shard per stateful rank plus a manifest with the
// topology; save publishes all or nothing; load validates topology, identity and every shard on every rank
// before any rank changes. Ranks are worker_threads workers (node lane) or module Web Workers (browser lane);
// the model is stories260K.bin.
import { afterEach, describe, expect, it } from 'vitest';
import { PartitionedSession, RANK_PHASES, defaultRankSpawner, evenTensorPartition, loadModel, memoryShardStore, partitionModelOf, readDenseWeights } from '../../src/index.js';
import type { ArchitecturePartition, DenseWeights } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { readModelFixture } from '../support/models.js';

const stories = await readModelFixture('stories260K.bin');
const tok512 = await readModelFixture('tok512.bin');
const present = stories !== undefined && tok512 !== undefined;
const model = present ? await loadModel(stories!, { tokenizer: tok512! }) : undefined;
const weights: DenseWeights | undefined = model === undefined ? undefined : await readDenseWeights(model);
const PROMPT = [1, 403, 407, 261, 378];
const TIMEOUT = 60_000;
/** Longer than the coordinator's blocking wait per step (coordinator.ts BLOCKING_STEP_MS, 8 ms). */
const PAST_BLOCKING_SLICE_MS = 30;
const PIPELINE: ArchitecturePartition = { kind: 'pipeline', ranks: [{ start: 0, end: 2 }, { start: 2, end: 5 }] };
const STATELESS_TAIL: ArchitecturePartition = { kind: 'pipeline', ranks: [{ start: 0, end: 5 }, { start: 5, end: 5 }] };

let open: PartitionedSession[] = [];
afterEach(() => {
  for (const s of open) s.dispose();
  open = [];
});

async function session(partition: ArchitecturePartition, identity = 'stories260K', livenessMicros?: number): Promise<PartitionedSession> {
  const s = await PartitionedSession.create(weights!, partition, { maxSeq: 32, maxBatch: 8, identity, spawn: defaultRankSpawner(), ...(livenessMicros === undefined ? {} : { livenessMicros, spinMicros: 60 }) });
  open.push(s);
  return s;
}

describe.skipIf(!present)('rank loss', () => {
  // 'tensor-replicated': attention on every rank, one exchange per layer (TS-dist-replicated-attention).
  for (const kind of ['pipeline', 'tensor', 'tensor-replicated'] as const) {
    for (const phase of RANK_PHASES) {
      it(`[TS-dist-rank-loss] ${kind}: a rank killed at ${phase} ends the step ${phase === 'complete' ? 'indeterminate' : 'aborted'} on every rank, nothing is published, the session is fenced, no rank hangs`, async () => {
        const s = await session(kind === 'pipeline' ? PIPELINE : evenTensorPartition(partitionModelOf(model!), 2, kind === 'tensor' ? 'split' : 'replicated'));
        await s.step(PROMPT);
        const before = await s.inspect([0]);
        // Rank 0 is the one killed in a pipeline at execute (rank 1 then waits on its hidden state).
        const victim = kind === 'pipeline' && phase === 'execute' ? 0 : 1;
        const survivor = 1 - victim;
        await s.setRankFaults(victim, { parkAt: phase });
        const step = s.step([432]);
        const caught = step.catch((e: unknown) => e);
        expect(await s.parked(victim)).toBe(phase);
        s.killRank(victim);
        const err = (await caught) as { code: string; reason: string; ids: Record<string, unknown> };
        expect([err.code, err.reason]).toEqual(['ECONNRESET', 'rank-lost']);
        expect(err.ids).toMatchObject({ rank: victim, phase });
        expect(s.lastOutcome).toMatchObject({ state: phase === 'complete' ? 'indeterminate' : 'aborted', epoch: 2 });
        expect(s.fenced).toBe(true);
        expect(s.length).toBe(PROMPT.length);
        expect(s.tokens).toEqual(PROMPT);
        // The survivor answers (it is not stuck on the dead peer) and restored its step checkpoint.
        const after = await s.inspect([survivor]);
        expect(after[0]!.length).toBe(PROMPT.length);
        expect(after[0]!.epoch).toBe(1);
        if (survivor === 0) expect(after).toEqual(before);
        await expectCodeAsync(() => s.step([432]), 'EIO', 'fenced');
        await expectCodeAsync(() => s.checkpoint(), 'EIO', 'fenced');
        await expectCodeAsync(() => s.saveCache(memoryShardStore(), 'c'), 'EIO', 'fenced');
      }, TIMEOUT);
    }
  }
});

describe.skipIf(!present)('rank loss in a decode run', () => {
  for (const phase of RANK_PHASES) {
    it(`[TS-dist-decode-run] tensor: a rank killed at ${phase} of a decode run's third step ends the run, the steps committed before it stay published, the session is fenced, no rank hangs`, async () => {
      const s = await session(evenTensorPartition(partitionModelOf(model!), 2));
      const first = await s.step(PROMPT);
      await s.setRankFaults(1, { parkAt: phase, afterSteps: 2 });
      let settled = false;
      const caught = s.decode(first.argmax, 5).catch((e: unknown) => e);
      void caught.finally(() => (settled = true));
      expect(await s.parked(1)).toBe(phase);
      // Past the coordinator's blocking slice (coordinator.ts BLOCKING_STEP_MS), so it waits from its event
      // loop: the run has not ended while a rank is stuck, whatever decisions came before.
      await new Promise((r) => setTimeout(r, PAST_BLOCKING_SLICE_MS));
      expect(settled).toBe(false);
      s.killRank(1);
      const err = (await caught) as { code: string; reason: string; ids: Record<string, unknown> };
      expect([err.code, err.reason]).toEqual(['ECONNRESET', 'rank-lost']);
      expect(s.fenced).toBe(true);
      const survivor = (await s.inspect([0]))[0]!;
      if (phase === 'checkpoint') {
        // Killed between steps: the second step's 'complete' was the last decision, and a rank that had not
        // read it before the fence rolls it back, so that step is the indeterminate one.
        expect(s.lastOutcome).toEqual({ state: 'indeterminate', epoch: 3, phase: 'complete' });
        expect(s.tokens).toEqual([...PROMPT, 432]);
        expect([6, 7]).toContain(survivor.length);
      } else {
        expect(s.lastOutcome).toEqual({ state: phase === 'complete' ? 'indeterminate' : 'aborted', epoch: 4, phase });
        expect(s.tokens).toEqual([...PROMPT, 432, 383]);
        expect([survivor.length, survivor.epoch]).toEqual([7, 3]);
      }
      await expectCodeAsync(() => s.decode(286, 1), 'EIO', 'fenced');
    }, TIMEOUT);
  }
});

describe.skipIf(!present)('waiting on a silent peer', () => {
  it('[TS-dist-spin-adapt] tensor: a rank waiting on a parked peer (its progress word still) stops polling and sleeps, then sees the fence when the peer is killed', async () => {
    // The liveness rule is off by default (protocol.ts LIVENESS_MICROS), as is polling (DEFAULT_SPIN_MICROS):
    // both turned on here (spin 60 µs, liveness 200 µs), as a session may.
    const s = await session(evenTensorPartition(partitionModelOf(model!), 2), 'stories260K', 200);
    await s.step(PROMPT);
    await s.setRankFaults(1, { parkAt: 'execute' });
    const before = s.rankSleeps(0);
    const caught = s.step([432]).catch((e: unknown) => e);
    expect(await s.parked(1)).toBe('execute');
    // Rank 0 runs its first segment, then waits on rank 1's partial sum. Rank 1 bumps no progress while
    // parked, so rank 0 polls one liveness window at most and then sleeps in fence-checked slices (a
    // rank that kept polling would never sleep here). Polled from the event loop; no timing is asserted.
    for (let i = 0; i < 2000 && s.rankSleeps(0) === before; i++) await new Promise((r) => setTimeout(r, 5));
    expect(s.rankSleeps(0)).toBeGreaterThan(before);
    s.killRank(1);
    const err = (await caught) as { code: string; reason: string };
    expect([err.code, err.reason]).toEqual(['ECONNRESET', 'rank-lost']);
    expect(s.fenced).toBe(true);
    const survivor = (await s.inspect([0]))[0]!;
    expect([survivor.length, survivor.epoch]).toEqual([PROMPT.length, 1]);
  }, TIMEOUT);
});

describe.skipIf(!present)('disposal', () => {
  it('[TS-dist-rank-loss] disposing a session mid-step ends the step (EINVAL disposed) instead of leaving it waiting on ranks that are gone', async () => {
    const s = await session(PIPELINE);
    await s.setRankFaults(1, { parkAt: 'execute' });
    const caught = s.step(PROMPT).catch((e: unknown) => e);
    expect(await s.parked(1)).toBe('execute');
    s.dispose();
    const err = (await caught) as { code: string; reason: string };
    expect([err.code, err.reason]).toEqual(['EINVAL', 'disposed']);
    await expectCodeAsync(() => s.step(PROMPT), 'EINVAL', 'disposed');
  }, TIMEOUT);
});

describe.skipIf(!present)('sharded prompt caches', () => {
  it('[TS-dist-cache-save] a save writes one shard per stateful rank and a manifest with the topology; a load restores every rank', async () => {
    const store = memoryShardStore();
    const s = await session(evenTensorPartition(partitionModelOf(model!), 2));
    const first = await s.step(PROMPT);
    const saved = await s.inspect();
    const manifest = await s.saveCache(store, 'story');
    expect(manifest.topology).toBe(s.checked.topology);
    expect(manifest.shards.map((x) => x.rank)).toEqual([0, 1]);
    expect([...store.files.keys()].sort()).toEqual([...manifest.shards.map((x) => x.name), 'story.manifest'].sort());
    const next = await s.step([first.argmax]);
    await s.step([next.argmax]);
    await s.loadCache(store, 'story');
    expect(await s.inspect()).toEqual(saved);
    expect(s.tokens).toEqual(PROMPT);
    expect((await s.step([first.argmax])).argmax).toBe(next.argmax);
    // A stateless rank has no shard.
    const t = await session(STATELESS_TAIL);
    await t.step(PROMPT);
    const m2 = await t.saveCache(store, 'tail');
    expect(m2.shards.map((x) => x.rank)).toEqual([0]);
  }, TIMEOUT);

  it('[TS-dist-cache-save] a staged shard that does not verify publishes nothing: no manifest, every staged shard removed', async () => {
    const store = memoryShardStore();
    const s = await session(evenTensorPartition(partitionModelOf(model!), 2));
    await s.step(PROMPT);
    s.faults.corruptStagedShard = 1;
    await expectCodeAsync(() => s.saveCache(store, 'story'), 'EIO', 'shard-corrupt');
    expect([...store.files.keys()]).toEqual([]);
    // An earlier published cache survives a failed save untouched.
    await s.saveCache(store, 'story');
    const published = new Map(store.files);
    s.faults.corruptStagedShard = 0;
    await expectCodeAsync(() => s.saveCache(store, 'story'), 'EIO', 'shard-corrupt');
    expect(store.files).toEqual(published);
  }, TIMEOUT);

  it('[TS-dist-cache-load] a corrupted shard, a topology or identity mismatch, or one rank refusing its shard change no rank', async () => {
    const store = memoryShardStore();
    const s = await session(evenTensorPartition(partitionModelOf(model!), 2));
    await s.step(PROMPT);
    const manifest = await s.saveCache(store, 'story');
    await s.reset();
    await s.step([1, 403]);
    const live = await s.inspect();
    // One shard's bytes corrupted in the store.
    const name = manifest.shards[1]!.name;
    const good = store.files.get(name)!;
    const bad = good.slice();
    bad[bad.length - 3]! ^= 0x40;
    store.files.set(name, bad);
    const err = await expectCodeAsync(() => s.loadCache(store, 'story'), 'EIO', 'shard-corrupt');
    expect(err.ids).toMatchObject({ rank: 1 });
    expect(await s.inspect()).toEqual(live);
    store.files.set(name, good);
    // Rank 1 refuses its (intact) shard: rank 0 must not install its own.
    await s.setRankFaults(1, { failShardValidation: true });
    await expectCodeAsync(() => s.loadCache(store, 'story'), 'EINVAL', 'shard-refused');
    expect(await s.inspect()).toEqual(live);
    // Another topology (a pipeline session) and another identity refuse before any rank is asked.
    const p = await session(PIPELINE);
    await p.step([1]);
    const pLive = await p.inspect();
    await expectCodeAsync(() => p.loadCache(store, 'story'), 'EINVAL', 'topology-mismatch');
    expect(await p.inspect()).toEqual(pLive);
    const other = await session(evenTensorPartition(partitionModelOf(model!), 2), 'another-model');
    await expectCodeAsync(() => other.loadCache(store, 'story'), 'EINVAL', 'identity-mismatch');
    // With everything intact the load succeeds.
    await s.loadCache(store, 'story');
    expect((await s.inspect()).map((x) => x.length)).toEqual([5, 5]);
  }, TIMEOUT);
});
