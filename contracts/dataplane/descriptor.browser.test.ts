// Plan: the descriptor surface shared by blobs and streams (seed 004 §5.3, §7.1, §12, §13, §14):
// terminal states and EBADF, dropped descriptors, session teardown, partial and zero-length I/O,
// exact offsets, canaries around every caller region, cancellation, error structure, and the typed
// wrappers' delegation to the core. Everything runs against the real authority, OPFS and rings.
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, TenonError, collectStream, hostRegion, readBlob, readExact, readStream, writeAll, writeBlob, writeStream } from '../../src/index.js';
import type { Descriptor, Session } from '../../src/index.js';
import { catchTenonAsync, expectCodeAsync } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';
import { canaried, eventually, newPlane, pageSession, planeWithSession, putBlob, tagged } from './support/plane.js';

async function streamPair(s: Session, path: string, capacity = 64): Promise<{ r: Descriptor; w: Descriptor }> {
  await s.ensureStream(path, { capacity });
  const [r, w] = await Promise.all([s.open(path), s.open(path, { access: 'write' })]);
  return { r, w };
}

describe('terminal states', () => {
  it('[D2][D3] after close every operation, and a second close, fails with EBADF', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/d2/b', tagged(8, 1));
    const b = await s.open('/d2/b');
    const st = await s.open('/d2/st', { access: 'read-write', create: true, allocation: { length: 4 } });
    const { r, w } = await streamPair(s, '/d2/s');
    for (const d of [b, st, r, w]) await d.close();
    for (const d of [b, st, r, w]) {
      await expectCodeAsync(() => d.read(new Uint8Array(1)), 'EBADF', 'closed');
      await expectCodeAsync(() => d.write(new Uint8Array(1)), 'EBADF', 'closed');
      await expectCodeAsync(() => d.read(new Uint8Array(0)), 'EBADF', 'closed');
      await expectCodeAsync(() => d.readInto(hostRegion(new Uint8Array(1))), 'EBADF', 'closed');
      await expectCodeAsync(() => d.map({ protection: 'read' }), 'EBADF', 'closed');
      await expectCodeAsync(() => d.flush(), 'EBADF', 'closed');
      await expectCodeAsync(() => d.close(), 'EBADF', 'closed');
      await expectCodeAsync(() => d.abort(), 'EBADF', 'closed');
      expect(d.info().state).toBe('closed');
    }
  });

  it('[D3][P7] wrappers may make their own close idempotent: leaving scope after seal or close is harmless', async () => {
    const { s } = await planeWithSession();
    {
      await using w = await writeBlob(s, '/d3/b', 2);
      await w.write(Uint8Array.of(1, 2));
      expect(await w.seal()).toBe(1);
    }
    const [rd, wr] = await Promise.all([readStream(s, '/d3/s'), writeStream(s, '/d3/s')]);
    await wr.close();
    await rd.close();
    await wr[Symbol.asyncDispose]();
    await rd[Symbol.asyncDispose]();
    expect(await s.stat('/d3/b')).toMatchObject({ revision: 1 });
  });

  it('[D4][C5] a writer dropped without close is an abort: nothing published, the stream peer sees a fault, not EOF', async () => {
    const dp = await newPlane();
    const keeper = await pageSession(dp);
    const doomed = await pageSession(dp);
    await putBlob(keeper, '/d4/b', tagged(4, 1));
    const staged = await doomed.open('/d4/b', { access: 'write', truncate: true, allocation: { length: 4 } });
    await staged.write(tagged(4, 2));
    await keeper.ensureStream('/d4/s', { capacity: 64 });
    const [r, w] = await Promise.all([keeper.open('/d4/s'), doomed.open('/d4/s', { access: 'write' })]);
    await w.write(tagged(3, 3));
    await doomed.close(); // the descriptors were never closed: session teardown is their only end
    const got = new Uint8Array(8);
    expect(await r.read(got)).toBe(3);
    await expectCodeAsync(() => r.read(got), 'ECONNRESET');
    expect(await readBlob(keeper, '/d4/b')).toEqual(tagged(4, 1));
    expect(await keeper.stat('/d4/b')).toMatchObject({ revision: 1 });
    await expectCodeAsync(() => staged.close(), 'EBADF', 'session-closed');
    await eventually(async () => {
      const st = await dp.stats();
      return st.files === st.boundFiles;
    }, 'staging reclaimed');
  });

  it('[D5] closing one descriptor leaves another descriptor of the same path untouched', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/d5/b', tagged(64, 5));
    const a = await s.open('/d5/b');
    const b = await s.open('/d5/b');
    await a.read(new Uint8Array(10));
    await a.close();
    const all = new Uint8Array(64);
    await readExact(b, all);
    expect(all).toEqual(tagged(64, 5));
    expect(b.info()).toMatchObject({ state: 'open', offset: 64 });
    await b.close();
  });

  it('[D6][C7] session teardown ends every descriptor it owns and releases each grant once', async () => {
    const dp = await newPlane();
    const other = await pageSession(dp);
    const s = await pageSession(dp);
    await putBlob(other, '/d6/b', tagged(16, 6));
    const base = await dp.stats();
    const rd = await s.open('/d6/b');
    const st = await s.open('/d6/new', { access: 'write', create: true, allocation: { length: 4 } });
    await other.ensureStream('/d6/s', { capacity: 64 });
    const [sr, sw] = await Promise.all([s.open('/d6/s'), other.open('/d6/s', { access: 'write' })]);
    await other.ensureStream('/d6/s2');
    const waiting = s.open('/d6/s2', { access: 'read' }).catch((e: unknown) => e);
    const m = await rd.map({ protection: 'read' });
    expect((await dp.stats()).grants).toBe(base.grants + 4);
    await s.close();
    expect(((await waiting) as TenonError).code).toBe('ECANCELED');
    for (const d of [rd, st, sr]) {
      await expectCodeAsync(() => d.read(new Uint8Array(1)), 'EBADF', 'session-closed');
      expect(d.info().state).toBe('torn-down');
    }
    await expectCodeAsync(() => m.export(), 'EBADF', 'descriptor-aborted');
    await expectCodeAsync(() => sw.write(Uint8Array.of(1)), 'ECONNRESET');
    await sw.close();
    await eventually(async () => {
      const now = await dp.stats();
      return now.grants === base.grants && now.waiters === 0 && now.rings === 0 && now.files === now.boundFiles;
    }, 'all grants released');
    await expectCodeAsync(() => other.stat('/d6/new'), 'ENOENT');
  });

  it('[D7][P8] descriptor metadata names no file, token, ring or worker', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/d7/b', tagged(8, 7));
    const b = await s.open('/d7/b');
    const { r, w } = await streamPair(s, '/d7/s');
    for (const d of [b, r, w]) {
      const text = JSON.stringify({ info: d.info(), keys: Object.keys(d), caps: [...d.capabilities], path: d.path });
      expect(text).not.toMatch(/b-[0-9a-f]{8}-|token|ring|worker|lock|[0-9a-f]{8}-[0-9a-f]{4}-/);
      expect(Object.getOwnPropertyNames(d)).toEqual([]);
    }
    for (const d of [b, r, w]) await d.close();
  });
});

describe('byte I/O', () => {
  it('[IO1][IO2][P3] property: reads return at most the region length and write only its returned prefix', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/io1/b', tagged(500, 11));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 120 }), { minLength: 1, maxLength: 12 }), async (sizes) => {
        const d = await s.open('/io1/b');
        let at = 0;
        for (const n of sizes) {
          const c = canaried(n);
          const got = await d.read(c.window);
          expect(got).toBeLessThanOrEqual(n);
          expect(got).toBe(Math.min(n, 500 - at));
          expect(c.window.subarray(0, got)).toEqual(tagged(got, 11, at));
          expect(c.intact(got)).toBe(true);
          at += got;
        }
        await d.close();
      }),
      fcParams(25),
    );
  });

  it('[IO2][IO1] stream reads and writes touch only their prefix; writes never read past their source', async () => {
    const { s } = await planeWithSession();
    const { r, w } = await streamPair(s, '/io2/s', 32);
    const src = canaried(100);
    src.window.set(tagged(100, 12));
    const snapshot = src.all.slice();
    const n = await w.write(src.window);
    expect(n).toBeLessThanOrEqual(100);
    expect(src.all).toEqual(snapshot);
    const dst = canaried(50);
    const m = await r.read(dst.window);
    expect(m).toBeLessThanOrEqual(n);
    expect(dst.window.subarray(0, m)).toEqual(tagged(m, 12));
    expect(dst.intact(m)).toBe(true);
    await w.abort();
    await r.close();
  });

  it('[IO3] zero-length I/O returns 0 at once with no effect on offset, data, EOF or readiness', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/io3/b', tagged(10, 3));
    const b = await s.open('/io3/b');
    await b.read(new Uint8Array(4));
    expect(await b.read(new Uint8Array(0))).toBe(0);
    expect(b.info().offset).toBe(4);
    const st = await s.open('/io3/st', { access: 'write', create: true, allocation: { length: 2 } });
    await st.write(Uint8Array.of(1, 2));
    expect(await st.write(new Uint8Array(0))).toBe(0); // at the end of the allocation: no growth needed
    const { r, w } = await streamPair(s, '/io3/s', 16);
    while ((w.info().writableBytes ?? 0) > 0) await w.write(tagged(16, 3));
    expect(await w.write(new Uint8Array(0))).toBe(0); // full ring, still immediate
    const queued = r.info().queuedBytes;
    await w.close();
    expect(await r.read(new Uint8Array(0))).toBe(0);
    expect(r.info()).toMatchObject({ eof: false });
    expect(r.info().queuedBytes).toBeGreaterThanOrEqual(queued!);
    for (const d of [b, st, r]) await d.abort();
  });

  it('[IO4] read without read access and write without write access fail with EBADF', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/io4/b', tagged(4, 4));
    const rd = await s.open('/io4/b');
    const wr = await s.open('/io4/b', { access: 'write', truncate: true, allocation: { length: 4 } });
    const { r, w } = await streamPair(s, '/io4/s');
    for (const d of [rd, r]) {
      await expectCodeAsync(() => d.write(Uint8Array.of(1)), 'EBADF', 'not-writable');
      await expectCodeAsync(() => d.write(new Uint8Array(0)), 'EBADF', 'not-writable');
    }
    for (const d of [wr, w]) {
      await expectCodeAsync(() => d.read(new Uint8Array(1)), 'EBADF', 'not-readable');
      await expectCodeAsync(() => d.readInto(hostRegion(new Uint8Array(1))), 'EBADF', 'not-readable');
    }
    for (const d of [rd, wr, r, w]) await d.abort();
  });

  it('[IO5][R3] short counts are successes; readExact and writeAll loop over every legal split', async () => {
    const { s } = await planeWithSession();
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 400 }), async (reads, total) => {
        const path = `/io5/s${Math.random().toString(36).slice(2)}`;
        const { r, w } = await streamPair(s, path, 16);
        const done = writeAll(w, tagged(total, 5)).then(() => w.close());
        const got: number[] = [];
        for (let i = 0; ; i++) {
          const buf = new Uint8Array(reads[i % reads.length]!);
          const n = await r.read(buf);
          if (n === 0) break;
          expect(n).toBeGreaterThan(0);
          got.push(...buf.subarray(0, n));
        }
        await done;
        expect(Uint8Array.from(got)).toEqual(tagged(total, 5));
        await r.close();
      }),
      fcParams(20),
    );
    await putBlob(s, '/io5/b', tagged(30, 6));
    const b = await s.open('/io5/b');
    await expectCodeAsync(() => readExact(b, new Uint8Array(31)), 'EIO', 'unexpected-eof');
    await b.abort();
  });

  it('[IO6][IO11] bytes arrive once, in order, per description; independent descriptors never mix', async () => {
    const { s } = await planeWithSession();
    const a = await streamPair(s, '/io6/a', 32);
    const b = await streamPair(s, '/io6/b', 64);
    await putBlob(s, '/io6/x', tagged(300, 3));
    const x1 = await s.open('/io6/x');
    const x2 = await s.open('/io6/x');
    const pump = (w: Descriptor, seed: number) => writeAll(w, tagged(2000, seed)).then(() => w.close());
    const drain = async (r: Descriptor, chunk: number): Promise<Uint8Array> => {
      const out: number[] = [];
      const buf = new Uint8Array(chunk);
      for (;;) {
        const n = await r.read(buf);
        if (n === 0) return Uint8Array.from(out);
        out.push(...buf.subarray(0, n));
      }
    };
    const [, , ga, gb] = await Promise.all([pump(a.w, 21), pump(b.w, 22), drain(a.r, 7), drain(b.r, 13)]);
    expect(ga).toEqual(tagged(2000, 21));
    expect(gb).toEqual(tagged(2000, 22));
    const p1 = new Uint8Array(100);
    const p2 = new Uint8Array(300);
    await x1.read(p1);
    await x2.read(p2);
    await x1.read(p1);
    expect(p1).toEqual(tagged(100, 3, 100));
    expect(p2).toEqual(tagged(300, 3));
    for (const d of [a.r, b.r, x1, x2]) await d.close();
  });

  it('[IO7][B3] the offset moves by exactly the returned count, including a short read at the end', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/io7/b', tagged(130, 7));
    const d = await s.open('/io7/b');
    expect(await d.read(new Uint8Array(100))).toBe(100);
    expect(d.info().offset).toBe(100);
    expect(await d.read(new Uint8Array(100))).toBe(30);
    expect(d.info().offset).toBe(130);
    expect(await d.read(new Uint8Array(100))).toBe(0);
    expect(d.info().offset).toBe(130);
    const st = await s.open('/io7/w', { access: 'write', create: true, allocation: { length: 50 } });
    expect(await st.write(tagged(20, 1))).toBe(20);
    expect(st.info().offset).toBe(20);
    await st.abort();
    await d.close();
  });

  it('[IO8] bytes moved before a fault are reported; the fault comes next with the offset unchanged', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp, { runId: 'r1', read: ['/'], write: ['/'], faults: { quotaBytes: 60 } });
    const d = await s.open('/io8/b', { access: 'write', create: true, allocation: { length: 100 } });
    expect(await d.write(tagged(100, 8))).toBe(60);
    expect(d.info().offset).toBe(60);
    await expectCodeAsync(() => d.write(tagged(40, 8, 60)), 'ENOSPC', 'quota');
    expect(d.info().offset).toBe(60);
    await expectCodeAsync(() => d.write(tagged(50, 8)), 'ENOTSUP', 'growth'); // checked before any byte
    expect(d.info().offset).toBe(60);
    await d.abort();
    await expectCodeAsync(() => s.stat('/io8/b'), 'ENOENT');
  });

  it('[IO9][IO10][A7][P4] a cancelled blocked read completes as cancelled, never touches its buffer later, and loses no byte', async () => {
    const { s } = await planeWithSession();
    const { r, w } = await streamPair(s, '/io9/s');
    const ctl = new AbortController();
    const dst = canaried(8);
    const blocked = r.read(dst.window, { signal: ctl.signal });
    await new Promise((res) => setTimeout(res, 10));
    ctl.abort();
    await expectCodeAsync(() => blocked, 'ECANCELED', 'aborted');
    await w.write(tagged(8, 9));
    await new Promise((res) => setTimeout(res, 10));
    expect(dst.intact(0)).toBe(true);
    const next = new Uint8Array(8);
    expect(await r.read(next)).toBe(8);
    expect(next).toEqual(tagged(8, 9));
    await w.close();
    await r.close();
  });
});

describe('errors', () => {
  it('[E1][E3] every failure is a TenonError with a stable code, the operation and the resolved path as fields', async () => {
    const { s } = await planeWithSession({ runId: 'r7', read: ['/runs/self'], write: [] });
    const errors: TenonError[] = [];
    for (const attempt of [() => s.open('/runs/self/missing'), () => s.open('/elsewhere'), () => s.open('rel'), () => s.open('/runs/self/x', { nonblocking: true })]) {
      errors.push(await catchTenonAsync(attempt));
    }
    expect(errors.map((e) => e.code)).toEqual(['ENOENT', 'EACCES', 'EINVAL', 'ENOTSUP']);
    for (const e of errors) expect(ERROR_CODES).toContain(e.code);
    // errors relayed from the authority name the plane as their operation (the wire carries no op)
    expect(errors.map((e) => [e.op, e.reason])).toEqual([
      ['dataplane', 'missing'],
      ['dataplane', 'not-authorized'],
      ['dataplane', 'relative'],
      ['dataplane', 'nonblocking'],
    ]);
    expect(errors[0]!.path).toBe('/runs/r7/missing');
  });

  it('[E2] wrappers keep the code of what failed and never turn a failure or a cancellation into success', async () => {
    const { s } = await planeWithSession();
    await expectCodeAsync(() => readBlob(s, '/e2/missing'), 'ENOENT');
    await expectCodeAsync(() => readBlob(s, '/e2/x', { signal: AbortSignal.abort() }), 'ECANCELED');
    await s.ensureStream('/e2/s', { capacity: 64 });
    const ctl = new AbortController();
    const pending = readStream(s, '/e2/s', { signal: ctl.signal });
    ctl.abort();
    await expectCodeAsync(() => pending, 'ECANCELED');
    const w = s.open('/e2/s', { access: 'write' });
    const collected = collectStream(s, '/e2/s', () => undefined);
    const wd = await w;
    await wd.write(tagged(5, 2));
    await wd.abort();
    await expectCodeAsync(() => collected, 'ECONNRESET');
  });

  it('[E5] a platform failure underneath (revision file removed behind the plane) surfaces as a TenonError', async () => {
    const { dp, s } = await planeWithSession();
    await putBlob(s, '/e5/b', tagged(16, 5));
    const root = await navigator.storage.getDirectory();
    const folder = await (await root.getDirectoryHandle('tenon-dataplane')).getDirectoryHandle(dp.name);
    for await (const name of (folder as unknown as { keys(): AsyncIterable<string> }).keys()) await folder.removeEntry(name);
    const e = await expectCodeAsync(() => s.open('/e5/b'), 'ENOENT');
    expect(e).toBeInstanceOf(TenonError);
    expect((await dp.stats()).grants).toBe(0);
  });
});

describe('wrappers', () => {
  it('[R1][PF1][PF7] a typed wrapper costs exactly the open and the terminal message, nothing more', async () => {
    const { dp, s } = await planeWithSession();
    await putBlob(s, '/r1/b', tagged(5000, 1));
    const before = (await dp.stats()).controlMessages;
    expect(await readBlob(s, '/r1/b')).toEqual(tagged(5000, 1));
    expect((await dp.stats()).controlMessages - before).toBe(2);
  });

  it('[R2] a kind mismatch fails with ENXIO and leaks nothing', async () => {
    const { dp, s } = await planeWithSession();
    await putBlob(s, '/r2/b', tagged(4, 2));
    await s.ensureStream('/r2/s');
    const base = await dp.stats();
    await expectCodeAsync(() => readStream(s, '/r2/b'), 'ENXIO', 'wrong-kind');
    await expectCodeAsync(() => writeStream(s, '/r2/b'), 'ENXIO', 'wrong-kind');
    await expectCodeAsync(() => readBlob(s, '/r2/s'), 'ENXIO', 'wrong-kind');
    await expectCodeAsync(() => writeBlob(s, '/r2/s', 4), 'ENXIO');
    const after = await dp.stats();
    expect([after.grants, after.waiters, after.files, after.bindings]).toEqual([base.grants, base.waiters, base.files, base.bindings]);
  });

  it('[R5] wrappers keep no state of their own: the descriptor underneath decides offsets and terminal state', async () => {
    const { s } = await planeWithSession();
    const w = await writeBlob(s, '/r5/b', 6);
    await w.write(Uint8Array.of(1, 2, 3));
    expect(w.descriptor.info().offset).toBe(3);
    await w.descriptor.abort();
    await expectCodeAsync(() => w.write(Uint8Array.of(4)), 'EBADF');
    await expectCodeAsync(() => w.seal(), 'EBADF');
    await expectCodeAsync(() => s.stat('/r5/b'), 'ENOENT');
  });

  it('[P1][P2] path-first wrappers: stream reads yield bytes, then null at clean EOF', async () => {
    const { s } = await planeWithSession();
    const [rd, wr] = await Promise.all([readStream(s, '/p2/s', { capacity: 64 }), writeStream(s, '/p2/s')]);
    const sending = wr.write(tagged(150, 2)).then(() => wr.close());
    const got: number[] = [];
    for (let c = await rd.read(40); c !== null; c = await rd.read(40)) got.push(...c);
    await sending;
    expect(Uint8Array.from(got)).toEqual(tagged(150, 2));
    expect(await rd.read()).toBeNull();
    await rd.close();
  });

  it('[P7] leaving a scoped blob writer by an exception aborts it: nothing is published', async () => {
    const { s } = await planeWithSession();
    const boom = new Error('boom');
    await expect(
      (async () => {
        await using w = await writeBlob(s, '/p7/b', 4);
        await w.write(Uint8Array.of(1, 2));
        throw boom;
      })(),
    ).rejects.toBe(boom);
    await expectCodeAsync(() => s.stat('/p7/b'), 'ENOENT');
  });

  it('[P1] WHATWG streams and async iteration go through the same descriptor', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/p1/b', tagged(200_000, 1));
    const d = await s.open('/p1/b');
    const chunks: Uint8Array[] = [];
    const reader = d.readable.getReader({ mode: 'byob' });
    for (;;) {
      const { value, done } = await reader.read(new Uint8Array(50_000));
      if (done) break;
      chunks.push(value);
    }
    expect(new Uint8Array(chunks.flatMap((c) => [...c]))).toEqual(tagged(200_000, 1));
    expect(d.info().state).toBe('closed');
    const st = await s.open('/p1/c', { access: 'write', create: true, allocation: { length: 70_000 } });
    const ws = st.writable.getWriter();
    await ws.write(tagged(30_000, 2));
    await ws.write(tagged(40_000, 2, 30_000));
    await ws.close();
    const again = await s.open('/p1/c');
    const seen: number[] = [];
    for await (const c of again) seen.push(...c);
    expect(Uint8Array.from(seen)).toEqual(tagged(70_000, 2));
    await again.close();
  });
});
