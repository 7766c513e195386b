// Plan: the worker pool (G3 worker loss, G5 cross-thread handles) with real workers: Web Workers in the
// browser lane, worker_threads in the node lane. Host jobs run the kernels in the worker directly over the
// page's SharedArrayBuffer tensors; a worker terminated mid-job turns that job completion-unproven (its
// roots retained forever) while a job on another worker completes; capability ids are unguessable and
// refuse forged (EBADF) and used-up (ESTALE) ids. Workers are terminated mid-GPU-job only in the browser
// lane (TOOLCHAIN.md: terminating a Node worker during Dawn work can abort the whole process).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SubmitRejected, createAllocationGroup, createHostProvider, createWorkerPool, fromArray, zeros } from '../../src/index.js';
import type { AllocationGroup, DescriptorSlot, HostProvider, PoolGraphSpec, WorkerPool } from '../../src/index.js';
import { axpy } from '../support/kernels/axpy.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { inBrowser } from '../support/providers.js';

const kernelModule = inBrowser ? new URL('../support/kernels/index.ts', import.meta.url).href : new URL('../../dist/workers/test-kernels.js', import.meta.url).href;

/**
 * y <- alpha * x + y, `repeat` (even) times, over n elements, ping-ponging through w (a dispatch never
 * reads and writes one tensor); then a fresh z = x + y.
 */
function spec(n: number, repeat: number): PoolGraphSpec {
  return {
    name: `axpy x${repeat}`,
    inputs: {
      x: { slot: 0, dtype: 'f32', shape: [n] },
      y: { slot: 1, dtype: 'f32', shape: [n] },
      w: { slot: 2, dtype: 'f32', shape: [n] },
    },
    fresh: [{ name: 'z', dtype: 'f32', shape: [n] }],
    dispatches: [
      ...Array.from({ length: repeat }, (_, k) => ({
        kernel: 'test.axpy',
        bind: k % 2 === 0 ? ['x', 'y', 'w'] : ['x', 'w', 'y'],
        params: { n, alpha: { $step: 'alpha', default: 1 } },
      })),
      { kernel: 'test.axpy', bind: ['x', 'y', 'z'], params: { n, alpha: 1 } },
    ],
    outputs: ['y', 'z'],
  };
}

/** Ids sampled back to back for the unpredictability checks of G5-pool-handle-forged. */
const ID_SAMPLES = 8;
/** A capability id is 16 random bytes in hex. */
const ID_HEX_DIGITS = 32;
/** Bits set in each hex digit 0..f. */
const BITS_SET = [0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4];
/**
 * How many standard deviations the count of set bits may stray from half: random ids fail this about
 * once in 10^15 runs; ids that are mostly zero digits (a counter, a small clock) fail it every time.
 */
const BIT_BALANCE_SD = 8;

describe('worker pool', () => {
  let host: HostProvider;
  let pool: WorkerPool;
  beforeAll(async () => {
    host = createHostProvider({ shared: true });
    pool = await createWorkerPool({ provider: host, size: 2, kernels: [axpy as never], kernelModules: [kernelModule] });
  });
  afterAll(async () => {
    await pool.close();
  });

  async function inputs(n: number): Promise<{ group: AllocationGroup; x: DescriptorSlot; y: DescriptorSlot }> {
    const group = createAllocationGroup();
    const x = group.insert(await fromArray(host, 'f32', Float32Array.from({ length: n }, (_, i) => i % 5))).descriptor;
    const y = group.insert(await zeros(host, 'f32', [n])).descriptor;
    group.insert(await zeros(host, 'f32', [n]));
    return { group, x, y };
  }

  it('[G3-completed] a host job runs in a worker over the shared tensors in place and completes with its results', async () => {
    expect(pool.workers().map((w: { info: { kernels: readonly string[] } }) => w.info.kernels.includes('test.axpy'))).toEqual([true, true]);
    const { group } = await inputs(16);
    const mark = host.ledgerMark();
    const handle = await pool.submit(spec(16, 4), group, { step: { alpha: 2 } });
    expect(group.moved).toBe(true);
    const outcome = await handle.wait();
    expect(outcome.kind).toBe('completed');
    if (outcome.kind !== 'completed') return;
    {
      using y = outcome.bundle.output<'f32'>(0);
      expect(Array.from(await y.toArray())).toEqual(Array.from({ length: 16 }, (_, i) => 8 * (i % 5)));
      using z = outcome.bundle.output<'f32'>(1);
      expect(Array.from(await z.toArray())).toEqual(Array.from({ length: 16 }, (_, i) => 9 * (i % 5)));
    }
    // the only ledger event is the fresh output's allocation: no byte of the tensors was copied
    expect(host.ledgerSince(mark).map((e) => e.kind)).toEqual(['allocation']);
    outcome.bundle.dispose();
  });

  it('[G3-worker-loss] a worker terminated mid-job leaves that job completion-unproven; the other worker completes', async () => {
    const n = 1 << 20;
    const victim = await inputs(n);
    const bystander = await inputs(1024);
    const before = host.counters();
    const long = await pool.submit(spec(n, 200), victim.group, { worker: 0 });
    const other = await pool.submit(spec(1024, 2), bystander.group, { worker: 1 });
    expect(await pool.status(long.id)).toBe('running');
    pool.faults.terminateWorker(0);
    const lost = await long.wait();
    expect(lost.kind).toBe('completion-unproven');
    if (lost.kind === 'completion-unproven') {
      expect(lost.cause.code).toBe('ENODEV');
      expect(lost.diagnostics.reason).toBe('worker-died');
      expect(lost.diagnostics.rootsRetained).toBe(4);
      expect(Object.keys(lost)).toEqual(['kind', 'cause', 'diagnostics']);
    }
    const after = host.counters();
    expect(after.rootsRetainedForever - before.rootsRetainedForever).toBe(4);
    expect(after.rootsDestroyed).toBe(before.rootsDestroyed);
    // the peer's view: worker 1 carried on and its job completes normally
    const fine = await other.wait();
    expect(fine.kind).toBe('completed');
    if (fine.kind === 'completed') {
      {
        using z = fine.bundle.output<'f32'>(1);
        expect((await z.toArray())[3]).toBe(3 * 3);
      }
      fine.bundle.dispose();
    }
    expect(pool.stats()).toMatchObject({ alive: 1, unproven: 1 });
    // new work avoids the dead worker, or is refused if aimed at it
    const aimed = await inputs(8);
    await expectCodeAsync(() => pool.submit(spec(8, 1), aimed.group, { worker: 0 }), 'ENXIO', 'worker-dead');
    expect(aimed.group.moved).toBe(false);
    // the pool replaces the dead worker and the new one works
    await pool.replaceWorker(0);
    expect(pool.stats().alive).toBe(2);
    const again = await (await pool.submit(spec(8, 1), aimed.group, { worker: 0 })).wait();
    expect(again.kind).toBe('completed');
    if (again.kind === 'completed') again.bundle.dispose();
  });

  it.skipIf(!inBrowser)('[G3-pool-lock-watch] a worker whose death can no longer be watched (a refused Web Lock) is ended at once and reported; a replacement with a working watch runs jobs', async () => {
    const watched = await createWorkerPool({ provider: host, size: 1, kernels: [axpy as never], kernelModules: [kernelModule] });
    try {
      watched.faults.terminateWorker(0);
      await vi.waitFor(() => expect(watched.stats().alive).toBe(0));
      expect(watched.stats().lockWatchFailures).toBe(0);
      watched.faults.refuseNextLockWatch();
      await watched.replaceWorker(0);
      await vi.waitFor(() => expect(watched.stats().lockWatchFailures).toBe(1));
      expect(watched.workers()[0]!.alive).toBe(false);
      const aimed = await inputs(8);
      await expectCodeAsync(() => watched.submit(spec(8, 1), aimed.group, { worker: 0 }), 'ENXIO', 'worker-dead');
      expect(aimed.group.moved).toBe(false);
      // control: the next replacement watches its lock normally and stays alive to run a job
      await watched.replaceWorker(0);
      const done = await (await watched.submit(spec(8, 1), aimed.group, { worker: 0 })).wait();
      expect(done.kind).toBe('completed');
      if (done.kind === 'completed') done.bundle.dispose();
      expect(watched.stats()).toMatchObject({ alive: 1, lockWatchFailures: 1 });
    } finally {
      await watched.close();
    }
  });

  it('[G5-pool-handle-forged] job ids are unguessable and pool-bound: forged ids get EBADF, used-up ids ESTALE', async () => {
    const { group } = await inputs(4);
    const handle = await pool.submit(spec(4, 1), group);
    expect(handle.id).toMatch(/^[0-9a-f]{32}$/);
    expectCode(() => pool.attach('0'.repeat(32)), 'EBADF', 'unknown-id');
    expectCode(() => pool.attach(handle.id.replace(/.$/, (c: string) => (c === '0' ? '1' : '0'))), 'EBADF');
    // Unpredictable, not merely non-zero: ids issued one after another share no structure (no hex digit
    // position is the same in all of them: a counter or a clock keeps its high digits) and carry about half
    // of their bits set; a neighbour of an issued id (id - 1, id + 1: what a counter would hand out next)
    // is refused with EBADF while every sampled job is still unclaimed.
    const sampled = [];
    for (let i = 0; i < ID_SAMPLES; i++) sampled.push(await pool.submit(spec(4, 1), (await inputs(4)).group));
    const ids = [handle.id, ...sampled.map((h) => h.id)];
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
    const sharedPositions = Array.from({ length: ID_HEX_DIGITS }, (_, p) => p).filter((p) => ids.every((id) => id[p] === ids[0]![p]));
    expect(sharedPositions).toEqual([]);
    const ones = ids.join('').split('').reduce((n, digit) => n + BITS_SET[parseInt(digit, 16)]!, 0);
    const bits = ids.length * ID_HEX_DIGITS * 4;
    expect(Math.abs(ones - bits / 2)).toBeLessThan(BIT_BALANCE_SD * Math.sqrt(bits / 4));
    const idSpace = 1n << BigInt(ID_HEX_DIGITS * 4);
    for (const id of ids) {
      for (const step of [-1n, 1n]) {
        const neighbour = ((BigInt(`0x${id}`) + step + idSpace) % idSpace).toString(16).padStart(ID_HEX_DIGITS, '0');
        expectCode(() => pool.attach(neighbour), 'EBADF', 'unknown-id');
      }
    }
    for (const h of sampled) {
      const o = await h.wait();
      expect(o.kind).toBe('completed');
      if (o.kind === 'completed') o.bundle.dispose();
    }
    await expectCodeAsync(() => pool.status('not-an-id'), 'EBADF');
    // the id itself is the capability: another holder can take the outcome once
    const outcome = await pool.attach(handle.id).wait();
    expect(outcome.kind).toBe('completed');
    await expectCodeAsync(() => handle.wait(), 'ESTALE', 'stale-id');
    expectCode(() => pool.attach(handle.id), 'ESTALE');
    if (outcome.kind === 'completed') outcome.bundle.dispose();
    // ids of another pool mean nothing here
    const second = await createWorkerPool({ provider: host, size: 1, kernels: [axpy as never], kernelModules: [kernelModule] });
    const g2 = await inputs(4);
    const h2 = await second.submit(spec(4, 1), g2.group);
    expectCode(() => pool.attach(h2.id), 'EBADF');
    const o2 = await h2.wait();
    if (o2.kind === 'completed') o2.bundle.dispose();
    await second.close();
  });

  it('[G3-submit-rejected] pool jobs are checked on this thread first; a refusal leaves the inputs untouched', async () => {
    const { group } = await inputs(4);
    const stats = pool.stats();
    const unknown = { ...spec(4, 1), dispatches: [{ kernel: 'no.such.kernel', bind: ['x', 'y', 'y'], params: {} }] };
    const e = await expectCodeAsync(() => pool.submit(unknown, group), 'EINVAL', 'unknown-kernel');
    expect((e as SubmitRejected).inputs).toBe(group);
    await expectCodeAsync(() => pool.submit(spec(5, 1), group), 'EINVAL', 'input-mismatch');
    await expectCodeAsync(() => pool.submit(spec(4, 1), group, { provider: 'webgpu' }), 'ENOTSUP', 'no-device');
    // memory a worker cannot see is refused
    const plain = createHostProvider();
    const local = createAllocationGroup();
    local.insert(await zeros(plain, 'f32', [4]));
    local.insert(await zeros(plain, 'f32', [4]));
    local.insert(await zeros(plain, 'f32', [4]));
    await expectCodeAsync(() => pool.submit({ ...spec(4, 1), fresh: [] , outputs: ['y'] }, local), 'EINVAL', 'not-shared-memory');
    expect(pool.stats().admitted).toBe(stats.admitted);
    expect(group.moved).toBe(false);
    const ok = await (await pool.submit(spec(4, 1), group)).wait();
    expect(ok.kind).toBe('completed');
    if (ok.kind === 'completed') ok.bundle.dispose();
    local.dispose();
  });

  it('[G3-completed] a WebGPU job runs on the worker\'s own device and its results land in the shared tensors', async () => {
    const gpuPool = await createWorkerPool({ provider: host, size: 2, gpu: true, kernels: [axpy as never], kernelModules: [kernelModule] });
    expect(gpuPool.workers().map((w) => w.info.gpu !== null)).toEqual([true, true]);
    const { group } = await inputs(256);
    const outcome = await (await gpuPool.submit(spec(256, 2), group, { provider: 'webgpu', step: { alpha: 3 } })).wait();
    expect(outcome.kind === 'retired-failed' ? outcome.cause : outcome.kind).toBe('completed');
    if (outcome.kind === 'completed') {
      {
        using y = outcome.bundle.output<'f32'>(0);
        using z = outcome.bundle.output<'f32'>(1);
        const [yv, zv] = [await y.toArray(), await z.toArray()];
        expect(Array.from(yv.subarray(0, 6))).toEqual([0, 6, 12, 18, 24, 0]);
        expect(Array.from(zv.subarray(0, 6))).toEqual([0, 7, 14, 21, 28, 0]);
      }
      outcome.bundle.dispose();
    }
    if (inBrowser) {
      // a GPU job on a worker that is terminated mid-job is unproven; the other worker's GPU job completes
      // (browser only: terminating a Node worker mid-GPU-work can abort the process, TOOLCHAIN.md)
      const victim = await inputs(1 << 18);
      const bystander = await inputs(64);
      const before = host.counters();
      const long = await gpuPool.submit(spec(1 << 18, 400), victim.group, { provider: 'webgpu', worker: 0 });
      const other = await gpuPool.submit(spec(64, 2), bystander.group, { provider: 'webgpu', worker: 1 });
      gpuPool.faults.terminateWorker(0);
      const lost = await long.wait();
      expect(lost.kind).toBe('completion-unproven');
      expect(host.counters().rootsRetainedForever - before.rootsRetainedForever).toBe(4);
      const fine = await other.wait();
      expect(fine.kind).toBe('completed');
      if (fine.kind === 'completed') fine.bundle.dispose();
    }
    // cooperative shutdown: each worker drains, destroys its device and exits
    await gpuPool.close();
    expect(gpuPool.stats().alive).toBe(0);
  });
});
