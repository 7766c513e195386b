// Partitioned sessions in Chromium (issue 14): the same ranks as the node lane, as real module Web Workers
// (workers/rank.worker.ts through Vite), activations over SAB rings in a cross-origin isolated page, and rank
// loss seen through the Web Lock each rank holds for its lifetime (the data plane's peer-loss mechanism).
// Host ranks killed at each phase are covered by ranks-faults.test.ts, which runs in this lane too; here a
// WebGPU rank outlives its lost host peer. Model: stories260K.bin. Small on purpose.
import { afterEach, describe, expect, it } from 'vitest';
import { LlamaForward, PartitionedSession, createHostProvider, createRuntime, defaultRankSpawner, evenTensorPartition, loadModel, memoryShardStore, partitionModelOf, readDenseWeights } from '../../src/index.js';
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
const PIPELINE: ArchitecturePartition = { kind: 'pipeline', ranks: [{ start: 0, end: 2 }, { start: 2, end: 5 }] };

let open: PartitionedSession[] = [];
afterEach(() => {
  for (const s of open) s.dispose();
  open = [];
});

async function session(partition: ArchitecturePartition): Promise<PartitionedSession> {
  const s = await PartitionedSession.create(weights!, partition, { maxSeq: 32, maxBatch: 8, identity: 'stories260K', spawn: defaultRankSpawner() });
  open.push(s);
  return s;
}

describe.skipIf(!present)('partitioned sessions in Web Workers', () => {
  it('[TS-dist-same-numbers] a pipeline of two Web Worker ranks gives logits bit-identical to one host rank; a tensor partition within 1e-5, same greedy ids', async () => {
    const single = await LlamaForward.create(createRuntime(createHostProvider()), model!, { maxSeq: 32, maxBatch: 8, decode: 'plain' });
    const ref = [await single.run(PROMPT, 0)];
    ref.push(await single.run([ref[0]!.argmax], PROMPT.length));
    single.dispose();
    for (const partition of [PIPELINE, evenTensorPartition(partitionModelOf(model!), 2)]) {
      const s = await session(partition);
      const a = await s.step(PROMPT);
      const b = await s.step([a.argmax]);
      expect([a.argmax, b.argmax]).toEqual([ref[0]!.argmax, ref[1]!.argmax]);
      [a, b].forEach((r, i) => {
        const want = ref[i]!.logits;
        let worst = 0;
        let scale = 0;
        for (const v of want) scale = Math.max(scale, Math.abs(v));
        for (let j = 0; j < want.length; j++) worst = Math.max(worst, Math.abs(r.logits[j]! - want[j]!) / scale);
        if (partition.kind === 'pipeline') expect(new Uint32Array(r.logits.buffer)).toEqual(new Uint32Array(want.buffer.slice(want.byteOffset, want.byteOffset + want.byteLength)));
        else expect(worst).toBeLessThan(1e-5);
      });
    }
  }, TIMEOUT);

  it('[TS-dist-rank-loss] a WebGPU rank survives its host peer killed at complete: the step ends indeterminate, the WebGPU rank restores its KV rows, the session is fenced', async () => {
    const s = await PartitionedSession.create(weights!, PIPELINE, { maxSeq: 32, maxBatch: 8, identity: 'stories260K', spawn: defaultRankSpawner(), devices: ['webgpu', 'host'] });
    open.push(s);
    await s.step(PROMPT);
    const before = await s.inspect([0]);
    await s.setRankFaults(1, { parkAt: 'complete' });
    const caught = s.step([432]).catch((e: unknown) => e);
    expect(await s.parked(1)).toBe('complete');
    s.killRank(1);
    const err = (await caught) as { code: string; reason: string; ids: Record<string, unknown> };
    expect([err.code, err.reason]).toEqual(['ECONNRESET', 'rank-lost']);
    expect(err.ids).toMatchObject({ rank: 1, phase: 'complete' });
    expect(s.lastOutcome).toMatchObject({ state: 'indeterminate', epoch: 2 });
    expect(s.length).toBe(PROMPT.length);
    // The WebGPU rank had applied the commit decision (its KV rows of position 5 written): it restored them.
    expect(await s.inspect([0])).toEqual(before);
    await expectCodeAsync(() => s.step([432]), 'EIO', 'fenced');
  }, 240_000);

  it('[TS-txn-epoch-mismatch] Web Worker ranks refuse a commit decision naming another epoch; the step rolls back on both', async () => {
    const s = await session(PIPELINE);
    await s.step(PROMPT);
    const before = await s.inspect();
    s.faults.decisionEpochSkew = 3;
    await expectCodeAsync(() => s.step([432]), 'ESTALE', 'epoch-mismatch');
    expect(await s.inspect()).toEqual(before);
    expect((await s.step([432])).argmax).toBe(383);
  }, TIMEOUT);

  it('[TS-dist-cache-load] Web Worker ranks: a sharded cache round-trips, a corrupted shard or a rank refusing its shard changes no rank', async () => {
    const store = memoryShardStore();
    const s = await session(evenTensorPartition(partitionModelOf(model!), 2));
    const first = await s.step(PROMPT);
    const saved = await s.inspect();
    const manifest = await s.saveCache(store, 'story');
    await s.step([first.argmax]);
    const live = await s.inspect();
    const name = manifest.shards[0]!.name;
    const good = store.files.get(name)!;
    const bad = good.slice();
    bad[bad.length - 1]! ^= 1;
    store.files.set(name, bad);
    await expectCodeAsync(() => s.loadCache(store, 'story'), 'EIO', 'shard-corrupt');
    store.files.set(name, good);
    await s.setRankFaults(0, { failShardValidation: true });
    await expectCodeAsync(() => s.loadCache(store, 'story'), 'EINVAL', 'shard-refused');
    expect(await s.inspect()).toEqual(live);
    await s.loadCache(store, 'story');
    expect(await s.inspect()).toEqual(saved);
  }, TIMEOUT);

  it('[TS-dist-rollback] Web Worker ranks: a rollback one rank cannot prepare changes no rank; a prepared one restores both', async () => {
    const s = await session(PIPELINE);
    const first = await s.step(PROMPT);
    const cp = await s.checkpoint();
    const atCp = await s.inspect();
    await s.step([first.argmax]);
    const after = await s.inspect();
    await s.setRankFaults(1, { failPrepare: true });
    await expectCodeAsync(() => s.rollback(cp), 'EIO', 'prepare-failed');
    expect(await s.inspect()).toEqual(after);
    await s.rollback(cp);
    expect(await s.inspect()).toEqual(atCp);
  }, TIMEOUT);

  it('[TS-dist-device-pipeline] a WebGPU rank and a host rank in one pipeline (either order) give the greedy ids of one host rank', async () => {
    const single = await LlamaForward.create(createRuntime(createHostProvider()), model!, { maxSeq: 32, maxBatch: 8, decode: 'plain' });
    const want: number[] = [(await single.run(PROMPT, 0)).argmax];
    for (let i = 1; i < 3; i++) want.push((await single.run([want[i - 1]!], PROMPT.length + i - 1)).argmax);
    single.dispose();
    for (const devices of [['webgpu', 'host'], ['host', 'webgpu']] as const) {
      const s = await PartitionedSession.create(weights!, PIPELINE, { maxSeq: 32, maxBatch: 8, identity: 'stories260K', spawn: defaultRankSpawner(), devices });
      open.push(s);
      const ids = [(await s.step(PROMPT)).argmax];
      for (let i = 1; i < 3; i++) ids.push((await s.step([ids[i - 1]!])).argmax);
      expect(ids).toEqual(want);
      const states = await s.inspect();
      expect(states.map((x) => x.length)).toEqual([7, 7]);
      // The WebGPU rank really submitted to its queue (one submission per step at least); the host rank none.
      const counters = await s.counters();
      expect(counters.map((c) => c.gpuSubmits > 0)).toEqual(devices.map((d) => d === 'webgpu'));
      await expectCodeAsync(() => s.rankShard(devices.indexOf('webgpu')), 'ENOTSUP', 'device-rank-cache');
    }
  }, 240_000);
});
