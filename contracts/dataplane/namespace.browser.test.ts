// Plan: the namespace authority seen through open (seed 004 §5.1, §5.2, §6, §11): path resolution and
// authorization, kinds, linearized rebinding, open correlation, cancellation, exclusive creation,
// transport start, and the capability rules (forged/foreign tokens, stale incarnations, operation ids,
// restart). Real Chromium: OPFS, IndexedDB, Web Locks, MessagePorts, SharedArrayBuffer.
import { describe, expect, it } from 'vitest';
import { createDataPlane, readBlob, writeBlob } from '../../src/index.js';
import type { Descriptor } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { EVERYTHING, eventually, newPlane, onCleanup, pageSession, planeName, planeWithSession, putBlob, tagged } from './support/plane.js';
import { rawClient } from './support/raw.js';

const bytesOf = async (d: Descriptor): Promise<Uint8Array> => {
  const out = new Uint8Array(d.info().length ?? 0);
  let at = 0;
  while (at < out.length) at += await d.read(out.subarray(at));
  return out;
};

describe('paths, kinds and bindings', () => {
  it('[N1][N5] a path has one kind: typed opens of the other kind fail with ENXIO and nothing changes', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/n1/blob', tagged(10, 1));
    await s.ensureStream('/n1/stream', { capacity: 64 });
    await expectCodeAsync(() => s.ensureStream('/n1/blob'), 'ENXIO', 'wrong-kind');
    await expectCodeAsync(() => s.replaceStream('/n1/blob'), 'ENXIO', 'wrong-kind');
    await expectCodeAsync(() => s.open('/n1/blob', { kind: 'stream' }), 'ENXIO', 'wrong-kind');
    await expectCodeAsync(() => s.open('/n1/stream', { kind: 'blob' }), 'ENXIO', 'wrong-kind');
    await expectCodeAsync(() => s.open('/n1/stream', { access: 'write', truncate: true, allocation: { length: 4 } }), 'EINVAL', 'allocation-misuse');
    expect(await s.stat('/n1/blob')).toMatchObject({ kind: 'blob', revision: 1, length: 10 });
    expect(await s.stat('/n1/stream')).toMatchObject({ kind: 'stream', incarnation: 1, capacity: 64 });
  });

  it('[N2] concurrent publications of one path are totally ordered: revisions 1..k, the last one wins', async () => {
    const { s } = await planeWithSession();
    const writers = await Promise.all([0, 1, 2, 3, 4].map(async (k) => {
      const w = await writeBlob(s, '/n2/x', 8);
      await w.write(tagged(8, 100 + k));
      return w;
    }));
    const revisions = await Promise.all(writers.map((w) => w.seal()));
    expect([...revisions].sort()).toEqual([1, 2, 3, 4, 5]);
    const last = revisions.indexOf(5);
    expect(await readBlob(s, '/n2/x')).toEqual(tagged(8, 100 + last));
    expect(await s.stat('/n2/x')).toMatchObject({ revision: 5 });
  });

  it('[N3][N4] an open descriptor keeps the revision it selected while the path is rebound twice', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/n3/x', tagged(300, 1));
    const old = await s.open('/n3/x');
    const first = new Uint8Array(100);
    expect(await old.read(first)).toBe(100);
    await putBlob(s, '/n3/x', tagged(50, 2));
    await putBlob(s, '/n3/x', tagged(70, 3));
    const rest = new Uint8Array(200);
    expect(await old.read(rest)).toBe(200);
    expect(new Uint8Array([...first, ...rest])).toEqual(tagged(300, 1));
    expect(old.info()).toMatchObject({ revision: 1, length: 300, offset: 300 });
    expect(await readBlob(s, '/n3/x')).toEqual(tagged(70, 3));
    await old.close();
  });

  it('[N6][N7] /runs/self is resolved once, before authorization; only the resolved path is authorized', async () => {
    const dp = await newPlane();
    const r1 = await pageSession(dp, { runId: 'r1', read: ['/runs/self', '/shared'], write: ['/runs/self'] });
    const r2 = await pageSession(dp, { runId: 'r2', read: ['/runs/r1'], write: ['/runs/self'] });
    const w = await r1.open('/runs/self/out', { access: 'write', create: true, allocation: { length: 3 } });
    expect(w.path).toBe('/runs/r1/out');
    await w.write(Uint8Array.of(1, 2, 3));
    await w.close();
    expect(await r1.stat('/runs/self/out')).toMatchObject({ path: '/runs/r1/out', revision: 1 });
    expect(await readBlob(r2, '/runs/r1/out')).toEqual(Uint8Array.of(1, 2, 3));
    // r2's /runs/self is /runs/r2: readable only through its own write prefix... which grants no read
    await expectCodeAsync(() => r2.open('/runs/self/out'), 'EACCES', 'not-authorized');
    await expectCodeAsync(() => r1.open('/runs/r2/out', { access: 'write', create: true, allocation: { length: 1 } }), 'EACCES', 'not-authorized');
    await expectCodeAsync(() => r1.open('/shared/x', { access: 'write', create: true, allocation: { length: 1 } }), 'EACCES', 'not-authorized');
    const p = await r2.open('/runs/self/p', { access: 'write', create: true, allocation: { length: 0 } });
    expect(p.path).toBe('/runs/r2/p');
    await p.abort();
  });

  it('[N8] descriptors are named by their resolved, human-readable path and expose no other identity', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/n8/data.bin', tagged(4, 1));
    const d = await s.open('/n8/data.bin');
    expect(d.path).toBe('/n8/data.bin');
    expect(Object.keys(d)).toEqual([]);
    expect(JSON.stringify(d)).toBe('{}');
    await d.close();
  });
});

describe('open-file descriptions', () => {
  it('[O1] a successful open selects one object and exactly the requested access, reported with its capabilities', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/o1/b', tagged(4, 1));
    const r = await s.open('/o1/b');
    expect([r.kind, r.access, [...r.capabilities].sort()]).toEqual(['blob', 'read', ['MAP_HOST', 'READ']]);
    const rw = await s.open('/o1/b', { access: 'read-write', truncate: true, allocation: { length: 2 } });
    expect([rw.kind, rw.access, [...rw.capabilities].sort()]).toEqual(['blob', 'read-write', ['MAP_HOST', 'READ', 'WRITE']]);
    await s.ensureStream('/o1/s', { capacity: 64 });
    const [sr, sw] = await Promise.all([s.open('/o1/s'), s.open('/o1/s', { access: 'write' })]);
    expect([sr.kind, sr.access, sw.access]).toEqual(['stream', 'read', 'write']);
    for (const d of [r, rw, sr, sw]) await d.abort();
  });

  it('[O2][OP7] replies reach the request that sent them, even when a blocked stream open is older', async () => {
    const { s } = await planeWithSession();
    await s.ensureStream('/o2/s', { capacity: 64 });
    const paths = Array.from({ length: 8 }, (_, i) => `/o2/b${i}`);
    for (const [i, p] of paths.entries()) await putBlob(s, p, tagged(16 + i, i));
    const streamOpen = s.open('/o2/s'); // blocks: no writer yet
    const blobs = await Promise.all(paths.map((p) => s.open(p)));
    for (const [i, d] of blobs.entries()) {
      expect(d.kind).toBe('blob');
      expect(d.path).toBe(paths[i]);
      expect(await bytesOf(d)).toEqual(tagged(16 + i, i));
      await d.close();
    }
    const w = await s.open('/o2/s', { access: 'write' });
    const r = await streamOpen;
    expect([r.kind, r.path, r.access]).toEqual(['stream', '/o2/s', 'read']);
    await w.write(Uint8Array.of(7));
    const one = new Uint8Array(1);
    expect(await r.read(one)).toBe(1);
    await w.close();
    await r.close();
  }, 10_000); // deadlock guard only: a cross-wired grant leaves some open waiting forever

  it('[O4] offset-moving reads on one description run in call order and move the offset by their counts', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/o4/x', tagged(700, 4));
    const d = await s.open('/o4/x');
    const bufs = Array.from({ length: 8 }, () => new Uint8Array(100));
    const counts = await Promise.all(bufs.map((b) => d.read(b)));
    expect(counts).toEqual([100, 100, 100, 100, 100, 100, 100, 0]);
    expect(new Uint8Array(bufs.slice(0, 7).flatMap((b) => [...b]))).toEqual(tagged(700, 4));
    expect(d.info().offset).toBe(700);
    await d.close();
  });

  it('[O5] rights fixed at open never widen: no write, no writable mapping, no writable region route', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/o5/x', tagged(32, 5));
    const d = await s.open('/o5/x');
    await expectCodeAsync(() => d.write(Uint8Array.of(1)), 'EBADF', 'not-writable');
    await expectCodeAsync(() => d.writeFrom({ kind: 'host', bytes: new Uint8Array(4), readable: true, writable: true }), 'EBADF', 'not-writable');
    await expectCodeAsync(() => d.map({ protection: 'read-write' }), 'EACCES', 'protection');
    const m = await d.map({ protection: 'read' });
    await expectCodeAsync(() => m.export({ writable: true }), 'EACCES', 'read-only-mapping');
    await m.close();
    expect(d.access).toBe('read');
    await d.close();
  });

  it('[O6][C6] when close and abort race, exactly one wins and publication happens at most once', async () => {
    const { s } = await planeWithSession();
    for (const first of ['close', 'abort'] as const) {
      const path = `/o6/${first}`;
      const d = await s.open(path, { access: 'write', create: true, allocation: { length: 4 } });
      await d.write(tagged(4, 6));
      const [a, b] = await Promise.allSettled(first === 'close' ? [d.close(), d.abort()] : [d.abort(), d.close()]);
      expect(a.status).toBe('fulfilled');
      expect(b.status).toBe('rejected');
      expect((b as PromiseRejectedResult).reason.code).toBe('EBADF');
      if (first === 'close') expect(await s.stat(path)).toMatchObject({ revision: 1 });
      else await expectCodeAsync(() => s.stat(path), 'ENOENT');
    }
  });

  it('[O7] a terminal description stays terminal: every later call fails with EBADF, the state never changes back', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/o7/x', tagged(8, 7));
    const d = await s.open('/o7/x');
    await d.abort();
    for (let i = 0; i < 2; i++) {
      await expectCodeAsync(() => d.read(new Uint8Array(1)), 'EBADF', 'closed');
      await expectCodeAsync(() => d.close(), 'EBADF');
      await expectCodeAsync(() => d.abort(), 'EBADF');
      await expectCodeAsync(() => d.map({ protection: 'read' }), 'EBADF');
      expect(d.info().state).toBe('aborted');
    }
  });
});

describe('open', () => {
  it('[OP1][OP3][OP4][OP5] failed opens hand out nothing and leave no grant, waiter, file or binding behind', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp, { runId: 'r1', read: ['/ok'], write: ['/ok/w'] });
    await putBlob(await pageSession(dp), '/ok/b', tagged(4, 1));
    const before = await dp.stats();
    const attempts: Array<[() => Promise<unknown>, string, string]> = [
      [() => s.open('/ok/missing'), 'ENOENT', 'missing'],
      [() => s.open('/denied/x'), 'EACCES', 'not-authorized'],
      [() => s.open('/ok/b', { access: 'write', truncate: true, allocation: { length: 1 } }), 'EACCES', 'not-authorized'],
      [() => s.open('ok/rel'), 'EINVAL', 'relative'],
      [() => s.open('/ok/b', { nonblocking: true }), 'ENOTSUP', 'nonblocking'],
      [() => s.open('/ok/w/x', { access: 'write', create: true }), 'ENOTSUP', 'growth'],
      [() => s.open('/ok/w/x', { access: 'write', exclusive: true, allocation: { length: 1 } }), 'EINVAL', 'exclusive-without-create'],
      [() => s.open('/ok/b', { allocation: { length: 1 }, create: true }), 'EINVAL', 'allocation-misuse'],
      [() => s.open('/ok/w/x', { access: 'write', create: true, allocation: { length: -1 } }), 'EINVAL', 'bad-length'],
      [() => s.open('/ok/w/x', { access: 'write', create: true, allocation: { length: 1, digest: 'zz' } }), 'EINVAL', 'bad-digest'],
      [() => s.open('/ok/b', { access: 'bogus' as never }), 'EINVAL', 'bad-access'],
    ];
    for (let round = 0; round < 2; round++) {
      // the same attempt fails the same way every time (OP5: deterministic, never downgraded)
      for (const [attempt, code, reason] of attempts) await expectCodeAsync(attempt, code as never, reason);
    }
    const after = await dp.stats();
    expect({ ...after, controlMessages: 0 }).toEqual({ ...before, controlMessages: 0 });
    await expectCodeAsync(() => s.stat('/ok/w/x'), 'ENOENT');
  });

  it('[OP2] exclusive creation is atomic: of racing creators exactly one wins, the rest get EEXIST', async () => {
    const { s } = await planeWithSession();
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, () => s.open('/op2/x', { access: 'write', create: true, exclusive: true, allocation: { length: 2 } })),
    );
    const won = results.filter((r) => r.status === 'fulfilled') as PromiseFulfilledResult<Descriptor>[];
    expect(won.length).toBe(1);
    for (const r of results) if (r.status === 'rejected') expect(r.reason.code).toBe('EEXIST');
    await won[0]!.value.write(Uint8Array.of(1, 2));
    await won[0]!.value.close();
    await expectCodeAsync(() => s.open('/op2/x', { access: 'write', create: true, exclusive: true, allocation: { length: 2 } }), 'EEXIST', 'exists');
  });

  it('[OP6][C4][C10] a blocked open is cancellable; the waiter is gone and the path pairs normally afterwards', async () => {
    const dp = await newPlane();
    const a = await pageSession(dp);
    const b = await pageSession(dp);
    await a.ensureStream('/op6/s', { capacity: 64 });
    const ctl = new AbortController();
    const blocked = a.open('/op6/s', { signal: ctl.signal });
    await eventually(async () => (await dp.stats()).waiters === 1, 'waiter registered');
    ctl.abort();
    await expectCodeAsync(() => blocked, 'ECANCELED');
    expect((await dp.stats()).waiters).toBe(0);
    const [w, r] = await Promise.all([b.open('/op6/s', { access: 'write' }), a.open('/op6/s')]);
    await w.write(Uint8Array.of(42));
    const one = new Uint8Array(1);
    expect(await r.read(one)).toBe(1);
    expect(one[0]).toBe(42);
    await w.close();
    await r.close();
    await expectCodeAsync(() => a.open('/op6/s', { signal: AbortSignal.abort() }), 'ECANCELED', 'aborted');
  });

  it('[OP6][C4] a grant that arrives after its open was cancelled is refused and reclaimed', async () => {
    const { dp, s } = await planeWithSession();
    await putBlob(s, '/op6/b', tagged(4, 1));
    const base = (await dp.stats()).grants;
    dp.faults.holdGrants = true;
    const ctl = new AbortController();
    const late = s.open('/op6/b', { signal: ctl.signal });
    const staged = s.open('/op6/new', { access: 'write', create: true, allocation: { length: 4 }, signal: ctl.signal });
    await eventually(async () => (await dp.stats()).grants === base + 2, 'grants issued and held');
    ctl.abort();
    await expectCodeAsync(() => late, 'ECANCELED');
    await expectCodeAsync(() => staged, 'ECANCELED');
    dp.faults.releaseHeldGrants();
    await eventually(async () => (await dp.stats()).grants === base, 'late grants reclaimed');
    const st = await dp.stats();
    expect(st.files).toBe(st.boundFiles);
    await expectCodeAsync(() => s.stat('/op6/new'), 'ENOENT');
  });

  it('[OP8][C7] a closed session refuses new opens and namespace control', async () => {
    const { dp } = await planeWithSession();
    const s = await pageSession(dp);
    await s.close();
    expect(s.state).toBe('closed');
    await expectCodeAsync(() => s.open('/x'), 'EBADF', 'session-closed');
    await expectCodeAsync(() => s.ensureStream('/x'), 'EBADF', 'session-closed');
    await expectCodeAsync(() => s.stat('/x'), 'EBADF', 'session-closed');
    await s.close(); // idempotent
  });

  it('[OP9] a stream open resolves only when both ends are attached, and the transport works at once', async () => {
    const { s } = await planeWithSession();
    await s.ensureStream('/op9/s', { capacity: 64 });
    let resolved = false;
    const reader = s.open('/op9/s').then((d) => ((resolved = true), d));
    await s.stat('/op9/s'); // a full round trip through the authority
    await new Promise((r) => setTimeout(r, 20));
    expect(resolved).toBe(false);
    const w = await s.open('/op9/s', { access: 'write' });
    const r = await reader;
    expect(await w.write(tagged(10, 9))).toBe(10);
    const dst = new Uint8Array(10);
    expect(await r.read(dst)).toBe(10);
    expect(dst).toEqual(tagged(10, 9));
    await w.close();
    await r.close();
  });

  it('[OP10] a transport that fails to start fails both matched opens and leaves no live incarnation', async () => {
    const { dp, s } = await planeWithSession();
    await s.ensureStream('/op10/s', { capacity: 64 });
    dp.faults.failTransportStarts = 1;
    const [r1, w1] = await Promise.allSettled([s.open('/op10/s'), s.open('/op10/s', { access: 'write' })]);
    expect([r1.status, w1.status]).toEqual(['rejected', 'rejected']);
    expect((r1 as PromiseRejectedResult).reason.code).toBe('EIO');
    expect((w1 as PromiseRejectedResult).reason.code).toBe('EIO');
    dp.faults.corruptNextRing = true;
    const [r2, w2] = await Promise.allSettled([s.open('/op10/s'), s.open('/op10/s', { access: 'write' })]);
    expect([r2.status, w2.status]).toEqual(['rejected', 'rejected']);
    // each end validates the ring itself (EIO); an end whose peer refused first sees ECONNRESET
    const codes = [(r2 as PromiseRejectedResult).reason.code, (w2 as PromiseRejectedResult).reason.code];
    expect(codes).toContain('EIO');
    for (const c of codes) expect(['EIO', 'ECONNRESET']).toContain(c);
    await eventually(async () => {
      const st = await dp.stats();
      return st.rings === 0 && st.grants === 0 && st.waiters === 0;
    }, 'no live incarnation');
    const [r, w] = await Promise.all([s.open('/op10/s'), s.open('/op10/s', { access: 'write' })]);
    await w.close();
    expect(await r.read(new Uint8Array(4))).toBe(0);
    await r.close();
  });
});

describe('authority and capabilities', () => {
  it('[K1][D1] a guessed token or a made-up control message grants nothing', async () => {
    const dp = await newPlane();
    const raw = await rawClient(dp, EVERYTHING);
    raw.send({ t: 'release', id: 1, token: crypto.randomUUID(), how: 'close' });
    expect(await raw.reply(1)).toMatchObject({ t: 'error', code: 'EBADF', reason: 'not-owner' });
    raw.send({ t: 'publish', id: 2, token: 'not-a-token' });
    expect(await raw.reply(2)).toMatchObject({ t: 'error', code: 'EBADF' });
    expect((await dp.stats()).grants).toBe(0);
  });

  it('[K2][K3] a grant is bound to its session: another session cannot publish, release or attach it', async () => {
    const dp = await newPlane();
    const a = await rawClient(dp, EVERYTHING);
    const b = await rawClient(dp, EVERYTHING);
    a.send({ t: 'open', id: 1, path: '/k2/x', access: 'write', create: true, exclusive: false, truncate: false, nonblocking: false, allocation: { length: 0 } });
    const g = await a.grant(1);
    b.send({ t: 'publish', id: 5, token: g.token });
    expect(await b.reply(5)).toMatchObject({ t: 'error', code: 'EBADF', reason: 'not-owner' });
    b.send({ t: 'release', id: 6, token: g.token, how: 'abort' });
    expect(await b.reply(6)).toMatchObject({ t: 'error', code: 'EBADF', reason: 'not-owner' });
    a.send({ t: 'publish', id: 2, token: g.token });
    expect(await a.reply(2)).toMatchObject({ t: 'ok', value: { revision: 1 } });
    a.send({ t: 'publish', id: 3, token: g.token }); // a stale, repeated terminal message is harmless (C9)
    expect(await a.reply(3)).toMatchObject({ t: 'error', code: 'EBADF' });
  });

  it('[K4][S11][N4] replacing a stream makes the old incarnation stale for both ends before any byte crosses', async () => {
    const { s } = await planeWithSession();
    await s.ensureStream('/k4/s', { capacity: 64 });
    const [r, w] = await Promise.all([s.open('/k4/s'), s.open('/k4/s', { access: 'write' })]);
    await w.write(tagged(5, 1));
    expect(await s.replaceStream('/k4/s')).toBe(2);
    await expectCodeAsync(() => w.write(Uint8Array.of(1)), 'ESTALE', 'replaced');
    await expectCodeAsync(() => r.read(new Uint8Array(5)), 'ESTALE', 'replaced');
    const [r2, w2] = await Promise.all([s.open('/k4/s'), s.open('/k4/s', { access: 'write' })]);
    await w2.write(tagged(3, 2));
    const got = new Uint8Array(8);
    expect(await r2.read(got)).toBe(3); // nothing of the old incarnation leaks into the new one
    expect(got.subarray(0, 3)).toEqual(tagged(3, 2));
    for (const d of [r, w, r2, w2]) await d.close();
  });

  it('[K5] retrying an operation id changes the namespace at most once; reusing it for something else fails', async () => {
    const { s } = await planeWithSession();
    const put = async (path: string, seed: number): Promise<number | undefined> => {
      const w = await writeBlob(s, path, 4, { opId: 'op-k5' });
      await w.write(tagged(4, seed));
      return w.seal();
    };
    expect(await put('/k5/x', 1)).toBe(1);
    expect(await put('/k5/x', 2)).toBe(1);
    expect(await readBlob(s, '/k5/x')).toEqual(tagged(4, 1));
    expect(await s.stat('/k5/x')).toMatchObject({ revision: 1 });
    await expectCodeAsync(() => put('/k5/other', 3), 'EINVAL', 'op-id-reused');
    expect(await s.ensureStream('/k5/s', { opId: 'op-k5s' })).toBe(true);
    expect(await s.ensureStream('/k5/s', { opId: 'op-k5s' })).toBe(true); // replayed answer
    await expectCodeAsync(() => s.replaceStream('/k5/s', { opId: 'op-k5s' }), 'EINVAL', 'op-id-reused');
  });

  it('[K6][K7] after an authority restart, acknowledged changes survive, aborted stagings and old incarnations do not', async () => {
    const name = planeName('k6');
    const dp1 = await createDataPlane({ name });
    onCleanup(() => dp1.close());
    const s1 = await pageSession(dp1);
    const w = await writeBlob(s1, '/k6/b', 4, { opId: 'op-k6' });
    await w.write(tagged(4, 6));
    expect(await w.seal()).toBe(1);
    const aborted = await writeBlob(s1, '/k6/aborted', 4);
    await aborted.write(tagged(4, 7));
    await aborted.abort();
    const pending = await writeBlob(s1, '/k6/pending', 4); // never closed: the session dies with the plane
    await pending.write(tagged(4, 8));
    await s1.ensureStream('/k6/s', { capacity: 64 });
    await dp1.close();
    const dp2 = await createDataPlane({ name });
    onCleanup(() => dp2.close());
    const s2 = await pageSession(dp2);
    expect(await readBlob(s2, '/k6/b')).toEqual(tagged(4, 6));
    await expectCodeAsync(() => s2.stat('/k6/aborted'), 'ENOENT');
    await expectCodeAsync(() => s2.stat('/k6/pending'), 'ENOENT');
    expect(await s2.stat('/k6/s')).toMatchObject({ kind: 'stream', incarnation: 2 });
    const st = await dp2.stats();
    expect(st.files).toBe(st.boundFiles);
    const again = await writeBlob(s2, '/k6/b', 4, { opId: 'op-k6' });
    await again.write(tagged(4, 9));
    expect(await again.seal()).toBe(1);
    await expectCodeAsync(() => writeBlob(s2, '/k6/elsewhere', 4, { opId: 'op-k6' }), 'EINVAL', 'op-id-reused');
  });

  it('[K8][PF2][IO12] attached I/O sends no control message: thousands of reads and writes cost the authority nothing', async () => {
    const { dp, s } = await planeWithSession();
    await s.ensureStream('/k8/s', { capacity: 256 });
    await putBlob(s, '/k8/b', tagged(4096, 8));
    const [r, w] = await Promise.all([s.open('/k8/s'), s.open('/k8/s', { access: 'write' })]);
    const b = await s.open('/k8/b');
    const before = (await dp.stats()).controlMessages;
    const src = tagged(100, 1);
    const dst = new Uint8Array(100);
    for (let i = 0; i < 1000; i++) {
      await w.write(src);
      await r.read(dst);
      if (i < 40) await b.read(dst);
    }
    expect((await dp.stats()).controlMessages).toBe(before);
    for (const d of [r, w, b]) await d.close();
  });
});
