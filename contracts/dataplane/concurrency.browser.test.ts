// Plan: concurrency and faults with real dedicated workers (seed 004 §17.3, §17.4). Workers run their
// own sessions (sync access handles for blobs, Atomics.wait or waitAsync for rings); the page is the
// authority. Schedules: many concurrent opens, producer and consumer in different workers, close
// against blocked calls, cancellation against grants, replacement against opens, workers terminated
// mid-stream and mid-staging, the quota seam (ENOSPC) and an authority crash in the middle of a
// publication followed by recovery. Tagged bytes catch cross-wiring, loss and duplication; every
// fault test checks the terminal result, the peer's result, cleanup, and that unrelated work goes on.
import { describe, expect, it } from 'vitest';
import { connectSession, createDataPlane, readBlob } from '../../src/index.js';
import type { Descriptor } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { EVERYTHING, eventually, newPlane, onCleanup, pageSession, planeName, putBlob, spawnAgent, tagged } from './support/plane.js';

describe('concurrency across workers', () => {
  it('[O2][OP7][IO11] many simultaneous opens from three workers and the page, over repeated and distinct paths', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp);
    const paths = Array.from({ length: 5 }, (_, i) => `/cc/b${i}`);
    for (const [i, p] of paths.entries()) await putBlob(s, p, tagged(3000 + i * 77, i + 1));
    await s.ensureStream('/cc/s', { capacity: 1024 });
    const agents = await Promise.all([0, 1, 2].map(() => spawnAgent(dp)));
    const reads = agents.flatMap(({ agent }, a) => Array.from({ length: 12 }, (_, k) => ({ agent, path: paths[(a + k) % paths.length]! })));
    const streamEnds = Promise.all([agents[0]!.agent.open('/cc/s', { access: 'write' }), agents[1]!.agent.open('/cc/s')]);
    const results = await Promise.all([...reads.map((r) => r.agent.readBlob(r.path)), ...paths.map((p) => readBlob(s, p))]);
    for (const [i, got] of results.entries()) {
      const path = i < reads.length ? reads[i]!.path : paths[i - reads.length]!;
      const k = paths.indexOf(path);
      expect(got).toEqual(tagged(3000 + k * 77, k + 1));
    }
    const [hw, hr] = await streamEnds;
    const [sent, got] = await Promise.all([agents[0]!.agent.pump(hw, { total: 20_000, chunk: 333, seed: 9 }), agents[1]!.agent.drain(hr, { chunk: 100, seed: 9 })]);
    expect(got).toEqual({ bytes: sent, end: 'eof', mismatchAt: null });
    await agents[1]!.agent.close(hr);
    await eventually(async () => (await dp.stats()).grants === 0, 'every grant released');
  });

  it('[S8][S10][RING5][IO6] producer and consumer in different workers: blocking Atomics.wait and waitAsync, small and large rings', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp);
    const a = await spawnAgent(dp);
    const b = await spawnAgent(dp);
    for (const [i, c] of [
      { capacity: 64, chunk: 50, read: 37, total: 200_000, sync: true },
      { capacity: 4096, chunk: 5000, read: 999, total: 2_000_000, sync: true },
      { capacity: 256, chunk: 300, read: 77, total: 300_000, sync: false },
    ].entries()) {
      const path = `/pc/s${i}`;
      await s.ensureStream(path, { capacity: c.capacity });
      const [hw, hr] = await Promise.all([a.agent.open(path, { access: 'write' }), b.agent.open(path)]);
      const [sent, got] = await Promise.all([
        a.agent.pump(hw, { total: c.total, chunk: c.chunk, seed: 40 + i, sync: c.sync }),
        b.agent.drain(hr, { chunk: c.read, seed: 40 + i, sync: c.sync }),
      ]);
      expect(got).toEqual({ bytes: sent, end: 'eof', mismatchAt: null });
      await b.agent.close(hr);
    }
  });

  it('[C8][O6] close against a blocked read and a blocked write: the blocked call fails with EBADF, the peer sees EPIPE or EOF', async () => {
    const { s } = await planeWithPair();
    async function planeWithPair() {
      const dp = await newPlane();
      return { dp, s: await pageSession(dp) };
    }
    await s.ensureStream('/cv/r', { capacity: 64 });
    const [r, w] = await Promise.all([s.open('/cv/r'), s.open('/cv/r', { access: 'write' })]);
    const blocked = r.read(new Uint8Array(8)).catch((e: unknown) => e);
    await r.close();
    expect(await blocked).toMatchObject({ code: 'EBADF' });
    await expectCodeAsync(() => w.write(Uint8Array.of(1)), 'EPIPE');
    await w.close();
    await s.ensureStream('/cv/w', { capacity: 16 });
    const [r2, w2] = await Promise.all([s.open('/cv/w'), s.open('/cv/w', { access: 'write' })]);
    let accepted = 0;
    while ((w2.info().writableBytes ?? 0) > 0) accepted += await w2.write(tagged(16, 3, accepted));
    const blockedWrite = w2.write(tagged(8, 3, accepted)).catch((e: unknown) => e);
    await w2.close();
    expect(await blockedWrite).toMatchObject({ code: 'EBADF' });
    const got: number[] = [];
    const buf = new Uint8Array(16);
    for (let n = await r2.read(buf); n > 0; n = await r2.read(buf)) got.push(...buf.subarray(0, n));
    expect(Uint8Array.from(got)).toEqual(tagged(accepted, 3)); // exactly the accepted bytes, then EOF
    await r2.close();
  });

  it('[C4][OP6][IO9][C10] cancellation racing the grant: each open either completes or is cancelled, nothing leaks', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp);
    await putBlob(s, '/cg/b', tagged(10, 1));
    /** Opens that completed although their abort came before any macrotask (the grant cannot be back yet). */
    const openedDespiteEarlyAbort: number[] = [];
    for (let i = 0; i < 40; i++) {
      const ctl = new AbortController();
      const p = s.open(i % 2 ? '/cg/b' : `/cg/new${i}`, i % 2 ? { signal: ctl.signal } : { access: 'write', create: true, allocation: { length: 1 }, signal: ctl.signal });
      for (let k = 0; k < i % 7; k++) await Promise.resolve();
      if (i % 3 === 0) await new Promise((r) => setTimeout(r, 0));
      ctl.abort();
      try {
        const d: Descriptor = await p;
        if (i % 3 !== 0) openedDespiteEarlyAbort.push(i);
        await d.abort();
      } catch (err) {
        expect((err as { code: string }).code).toBe('ECANCELED');
      }
    }
    expect(openedDespiteEarlyAbort).toEqual([]);
    await eventually(async () => {
      const st = await dp.stats();
      return st.grants === 0 && st.files === st.boundFiles;
    }, 'no grant or staging left behind');
    expect(await s.stat('/cg/b')).toMatchObject({ revision: 1 });
  });

  it('[N2][N3][B10][O3] replacement racing opens: every reader sees one whole revision, never a mix', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp);
    const writer = await spawnAgent(dp);
    const reader = await spawnAgent(dp);
    await putBlob(s, '/rv/x', tagged(4096, 0));
    let published = false;
    const publishing = (async () => {
      for (let v = 1; v <= 15; v++) await writer.agent.putBlob('/rv/x', tagged(4096, v));
      published = true;
    })();
    const seen = new Set<number>();
    const readOnce = async (get: () => Promise<Uint8Array>): Promise<void> => {
      const bytes = await get();
      const seed = [...Array(16).keys()].find((v) => bytes[0] === tagged(1, v)[0] && bytes[4095] === tagged(4096, v)[4095]);
      expect(seed).not.toBeUndefined();
      expect(bytes).toEqual(tagged(4096, seed!));
      seen.add(seed!);
    };
    while (!published) await Promise.all([readOnce(() => readBlob(s, '/rv/x')), readOnce(() => reader.agent.readBlob('/rv/x'))]);
    await publishing;
    await readOnce(() => readBlob(s, '/rv/x'));
    expect(await s.stat('/rv/x')).toMatchObject({ revision: 16 });
    expect(seen.has(15)).toBe(true);
    await eventually(async () => {
      const st = await dp.stats();
      return st.grants === 0 && st.files === 1;
    }, 'replaced revisions reclaimed');
  });
});

describe('faults', () => {
  it('[C8][S7][D6] a writer worker terminated mid-stream: the reader drains what was sent, then ECONNRESET, no hang', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp);
    const w = await spawnAgent(dp);
    await s.ensureStream('/wt/s', { capacity: 1024 });
    const [hw, r] = await Promise.all([w.agent.open('/wt/s', { access: 'write' }), s.open('/wt/s')]);
    void w.agent.pump(hw, { total: 1 << 30, chunk: 700, seed: 5 }).catch(() => undefined);
    const buf = new Uint8Array(512);
    let got = 0;
    while (got < 50_000) {
      const n = await r.read(buf);
      for (let k = 0; k < n; k++) if (buf[k] !== tagged(1, 5, got + k)[0]) expect.fail(`byte ${got + k} differs`);
      got += n;
    }
    w.terminate();
    let end = '';
    try {
      for (;;) {
        const n = await r.read(buf);
        if (n === 0) break;
        got += n;
      }
    } catch (err) {
      end = (err as { code: string }).code;
    }
    expect(end).toBe('ECONNRESET');
    expect(r.info().eof).toBe(false);
    await r.close();
    await eventually(async () => {
      const st = await dp.stats();
      return st.grants === 0 && st.sessions === 1;
    }, 'dead session torn down');
  });

  it('[C8][A6][PF9] a reader worker blocked in Atomics.wait wakes with ECONNRESET when the writer worker dies; the page stays free', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp);
    const w = await spawnAgent(dp);
    const r = await spawnAgent(dp);
    await s.ensureStream('/wt/b', { capacity: 256 });
    const [hw, hr] = await Promise.all([w.agent.open('/wt/b', { access: 'write' }), r.agent.open('/wt/b')]);
    await w.agent.write(hw, tagged(100, 6));
    const draining = r.agent.drain(hr, { chunk: 64, seed: 6, sync: true });
    expect(await s.stat('/wt/b')).toMatchObject({ kind: 'stream' }); // the authority is not blocked meanwhile
    w.terminate();
    expect(await draining).toEqual({ bytes: 100, end: 'ECONNRESET', mismatchAt: null });
  });

  it('[C8][S6] a reader worker terminated: the writer gets ECONNRESET instead of blocking forever', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp);
    const r = await spawnAgent(dp);
    await s.ensureStream('/wt/r', { capacity: 64 });
    const [w, hr] = await Promise.all([s.open('/wt/r', { access: 'write' }), r.agent.open('/wt/r')]);
    while ((w.info().writableBytes ?? 0) > 0) await w.write(tagged(64, 1));
    const blocked = w.write(tagged(8, 1));
    r.terminate();
    await expectCodeAsync(() => blocked, 'ECONNRESET', 'peer-lost');
    await w.close();
  });

  it('[D4][C5][B7] a worker terminated while staging a blob publishes nothing and its staging file is reclaimed', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp);
    await putBlob(s, '/st/x', tagged(64, 1));
    const a = await spawnAgent(dp);
    const h = await a.agent.open('/st/x', { access: 'write', truncate: true, allocation: { length: 64 } });
    await a.agent.writeAll(h, tagged(64, 2));
    expect((await dp.stats()).files).toBe(2);
    a.terminate();
    await eventually(async () => {
      await dp.reclaim();
      const st = await dp.stats();
      return st.grants === 0 && st.files === 1 && st.sessions === 1;
    }, 'staging reclaimed after the worker died');
    expect(await readBlob(s, '/st/x')).toEqual(tagged(64, 1));
    expect(await s.stat('/st/x')).toMatchObject({ revision: 1 });
  });

  it('[IO8][E5][B7] the quota seam: OPFS writes in a worker fail with ENOSPC after the budget, nothing is published', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp);
    const a = await spawnAgent(dp, { ...EVERYTHING, faults: { quotaBytes: 1000 } });
    await expectCodeAsync(() => a.agent.putBlob('/q/big', tagged(5000, 1)), 'ENOSPC', 'quota');
    await expectCodeAsync(() => s.stat('/q/big'), 'ENOENT');
    const h = await a.agent.open('/q/x', { access: 'write', create: true, allocation: { length: 10 } });
    await expectCodeAsync(() => a.agent.write(h, tagged(10, 1)), 'ENOSPC', 'quota');
    expect(await a.agent.info(h)).toMatchObject({ offset: 0 });
    await a.agent.abort(h);
    await eventually(async () => {
      const st = await dp.stats();
      return st.grants === 0 && st.files === 0;
    }, 'stagings reclaimed');
    expect(await a.agent.putBlob('/q/tiny', new Uint8Array(0))).toBe(1); // unrelated work still goes on
  });

  it('[K6][K7][B7][C7] the authority dies in the middle of a publication: nothing half-published, orphans reclaimed on recovery', async () => {
    const name = planeName('crash');
    for (const when of ['before-commit', 'after-commit'] as const) {
      const dp1 = await createDataPlane({ name });
      onCleanup(() => dp1.close());
      const s1 = await connectSession(dp1.createSessionPort(EVERYTHING));
      await putBlob(s1, '/cr/x', tagged(128, when === 'before-commit' ? 1 : 3));
      const a = await spawnAgent(dp1);
      dp1.faults.crashAtPublish = when;
      await expectCodeAsync(() => a.agent.putBlob('/cr/x', tagged(128, 2)), 'EIO', 'authority-gone');
      await eventually(() => s1.state === 'closed', 'the page session notices the authority is gone'); // C8
      await expectCodeAsync(() => s1.stat('/cr/x'), 'EBADF', 'session-closed');
      a.terminate();
      const dp2 = await createDataPlane({ name });
      onCleanup(() => dp2.close());
      const s2 = await pageSession(dp2);
      const expected = when === 'before-commit' ? { revision: 1, bytes: tagged(128, 1) } : { revision: 3, bytes: tagged(128, 2) };
      expect(await s2.stat('/cr/x')).toMatchObject({ revision: expected.revision });
      expect(await readBlob(s2, '/cr/x')).toEqual(expected.bytes);
      const st = await dp2.stats();
      expect(st.files).toBe(st.boundFiles);
      await dp2.close();
    }
  });
});
