// Plan: named-FIFO streams over SharedArrayBuffer rings (seed 004 §6.2, §7.3, §9, §10: S1-S12, C1, C3,
// C8, A1-A8, PF6, PF9). Both ends in the page unless a worker is the point. Backpressure, EOF, EPIPE,
// peer faults, spurious and lost wakeups are exercised on real rings; nothing is timed, a stall is
// caught by the deadlock guard only.
import { describe, expect, it } from 'vitest';
import { writeAll } from '../../src/index.js';
import type { Descriptor, Session } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { eventually, newPlane, pageSession, planeWithSession, spawnAgent, tagged } from './support/plane.js';
import { rawClient } from './support/raw.js';

async function pair(s: Session, path: string, capacity = 64, writerSession: Session = s): Promise<{ r: Descriptor; w: Descriptor }> {
  await s.ensureStream(path, { capacity });
  const [r, w] = await Promise.all([s.open(path), writerSession.open(path, { access: 'write' })]);
  return { r, w };
}

async function readAll(r: Descriptor, chunk = 64): Promise<Uint8Array> {
  const out: number[] = [];
  const buf = new Uint8Array(chunk);
  for (;;) {
    const n = await r.read(buf);
    if (n === 0) return Uint8Array.from(out);
    out.push(...buf.subarray(0, n));
  }
}

/** Settles to 'pending' if `p` has not settled after a full authority round trip and a macrotask. */
async function stillPending(p: Promise<unknown>, s: Session): Promise<boolean> {
  let settled = false;
  void p.then(
    () => (settled = true),
    () => (settled = true),
  );
  await s.stat('/').catch(() => undefined);
  await new Promise((r) => setTimeout(r, 15));
  return !settled;
}

describe('stream bytes', () => {
  it('[S1][S2] readers see one unframed byte sequence; any positive prefix may come back', async () => {
    const { s } = await planeWithSession();
    const { r, w } = await pair(s, '/s1/x', 128);
    const sizes = [1, 7, 30, 2, 50, 13];
    let at = 0;
    const sending = (async () => {
      for (const n of sizes) {
        await writeAll(w, tagged(n, 1, at));
        at += n;
      }
      await w.close();
    })();
    const got: number[] = [];
    const buf = new Uint8Array(9);
    for (;;) {
      const n = await r.read(buf);
      if (n === 0) break;
      expect(n).toBeGreaterThan(0);
      expect(n).toBeLessThanOrEqual(9);
      got.push(...buf.subarray(0, n));
    }
    await sending;
    expect(Uint8Array.from(got)).toEqual(tagged(103, 1));
    await r.close();
  });

  it('[S3][S4][S5][C1] clean close: EOF after every accepted byte, sticky, without waiting for the reader; the ring detaches', async () => {
    const { dp, s } = await planeWithSession();
    const { r, w } = await pair(s, '/s3/x', 64);
    await writeAll(w, tagged(40, 3));
    await w.close(); // returns though nothing was read yet
    expect(await readAll(r, 16)).toEqual(tagged(40, 3));
    for (let i = 0; i < 3; i++) expect(await r.read(new Uint8Array(4))).toBe(0);
    expect(r.info().eof).toBe(true);
    await r.close();
    await eventually(async () => (await dp.stats()).rings === 0, 'ring detached');
  });

  it('[S6] after the reader closes, writes fail with EPIPE; after our own close, with EBADF; neither reopens', async () => {
    const { s } = await planeWithSession();
    const { r, w } = await pair(s, '/s6/x');
    await w.write(Uint8Array.of(1));
    await r.close();
    await expectCodeAsync(() => w.write(Uint8Array.of(2)), 'EPIPE', 'peer-closed');
    await expectCodeAsync(() => w.write(Uint8Array.of(2)), 'EPIPE', 'peer-closed');
    await expectCodeAsync(() => w.flush(), 'EPIPE');
    await w.close();
    await expectCodeAsync(() => w.write(Uint8Array.of(3)), 'EBADF', 'closed');
  });

  it('[S7][C3][A8] an aborted writer gives the reader its bytes, then a terminal ECONNRESET, never EOF', async () => {
    const { s } = await planeWithSession();
    const { r, w } = await pair(s, '/s7/x');
    await w.write(tagged(10, 7));
    await w.abort();
    const buf = new Uint8Array(64);
    expect(await r.read(buf)).toBe(10);
    await expectCodeAsync(() => r.read(buf), 'ECONNRESET', 'peer-aborted');
    await expectCodeAsync(() => r.read(buf), 'ECONNRESET');
    expect(r.info().eof).toBe(false);
    await r.close();
  });

  it('[S7] peer loss after EOF was observed changes nothing: EOF stays', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp);
    const other = await pageSession(dp);
    const { r, w } = await pair(s, '/s7b/x', 64, other);
    await w.close();
    expect(await r.read(new Uint8Array(4))).toBe(0);
    await other.close();
    expect(await r.read(new Uint8Array(4))).toBe(0);
    await r.close();
  });

  it('[S8][S10] a full ring blocks the writer until the reader makes room; then it continues', async () => {
    const { s } = await planeWithSession();
    const { r, w } = await pair(s, '/s8/x', 32);
    let sent = 0;
    while ((w.info().writableBytes ?? 0) > 0) sent += await w.write(tagged(32, 8, sent));
    const blocked = w.write(tagged(8, 8, sent));
    expect(await stillPending(blocked, s)).toBe(true);
    const buf = new Uint8Array(64);
    const first = await r.read(buf);
    expect(buf.subarray(0, first)).toEqual(tagged(first, 8));
    const more = await blocked;
    expect(more).toBeGreaterThan(0);
    await w.close();
    const rest = await readAll(r);
    expect(new Uint8Array([...buf.subarray(0, first), ...rest])).toEqual(tagged(sent + more, 8));
    await r.close();
  });

  it('[S9] a write returns as soon as some bytes fit; the rest is the caller’s (or writeAll’s) business', async () => {
    const { s } = await planeWithSession();
    const { r, w } = await pair(s, '/s9/x', 64);
    const n = await w.write(tagged(1000, 9));
    expect(n).toBeGreaterThan(0);
    expect(n).toBeLessThan(1000);
    expect(w.info().writableBytes).toBe(0);
    await w.abort();
    await r.close();
  });

  it('[S10][A3] register-then-recheck: thousands of alternations of waiting-first and ready-first lose no wakeup', async () => {
    const { s } = await planeWithSession();
    const { r, w } = await pair(s, '/s10/x', 16);
    const one = new Uint8Array(1);
    for (let i = 0; i < 1500; i++) {
      if (i % 2 === 0) {
        const reading = r.read(one); // waits first
        await w.write(Uint8Array.of(i & 255));
        expect(await reading).toBe(1);
      } else {
        await w.write(Uint8Array.of(i & 255)); // ready first
        expect(await r.read(one)).toBe(1);
      }
      expect(one[0]).toBe(i & 255);
    }
    await w.close();
    await r.close();
  });

  it('[S12] one producer and one consumer: a second reader or writer is refused with EBUSY', async () => {
    const { dp, s } = await planeWithSession();
    const { r, w } = await pair(s, '/s12/x');
    await expectCodeAsync(() => s.open('/s12/x'), 'EBUSY', 'role-taken');
    await expectCodeAsync(() => s.open('/s12/x', { access: 'write' }), 'EBUSY', 'role-taken');
    await s.ensureStream('/s12/y');
    const waiting = s.open('/s12/y');
    await eventually(async () => (await dp.stats()).waiters === 1, 'reader waiting');
    await expectCodeAsync(() => s.open('/s12/y'), 'EBUSY', 'role-taken');
    const w2 = await s.open('/s12/y', { access: 'write' });
    const r2 = await waiting;
    for (const d of [r, w, r2, w2]) await d.close();
  });

  it('[PF6][RING3] a short read leaves the rest of its record pinned in the ring, with nothing copied aside', async () => {
    const { s } = await planeWithSession();
    const { r, w } = await pair(s, '/pf6/x', 64);
    await w.write(tagged(40, 6));
    const queued = r.info().queuedBytes;
    const two = new Uint8Array(2);
    expect(await r.read(two)).toBe(2);
    expect(r.info()).toMatchObject({ pinnedBytes: 38, queuedBytes: queued });
    const rest = new Uint8Array(38);
    expect(await r.read(rest)).toBe(38);
    expect(new Uint8Array([...two, ...rest])).toEqual(tagged(40, 6));
    expect(r.info()).toMatchObject({ pinnedBytes: 0, queuedBytes: 0 });
    await w.close();
    await r.close();
  });
});

describe('blocking, wakeups and peer faults', () => {
  it('[C8] losing the peer wakes a blocked read, write, flush and open', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp);
    const peerA = await pageSession(dp);
    const a = await pair(s, '/c8/read', 32, peerA);
    const blockedRead = a.r.read(new Uint8Array(4));
    const peerB = await pageSession(dp);
    await s.ensureStream('/c8/write', { capacity: 16 });
    const [rb, wb] = await Promise.all([peerB.open('/c8/write'), s.open('/c8/write', { access: 'write' })]);
    while ((wb.info().writableBytes ?? 0) > 0) await wb.write(tagged(16, 1));
    const blockedWrite = wb.write(tagged(8, 1));
    const peerC = await pageSession(dp);
    const c = await pair(peerC, '/c8/flush', 64, s);
    await c.w.write(tagged(8, 2));
    const blockedFlush = c.w.flush();
    for (const p of [blockedRead, blockedWrite, blockedFlush]) expect(await stillPending(p, s)).toBe(true);
    await Promise.all([peerA.close(), peerB.close(), peerC.close()]);
    await expectCodeAsync(() => blockedRead, 'ECONNRESET');
    await expectCodeAsync(() => blockedWrite, 'ECONNRESET');
    await expectCodeAsync(() => blockedFlush, 'ECONNRESET');
    expect(rb.info().state).toBe('torn-down');
    // an open whose matched peer vanishes before the ring is ready fails too
    const peerD = await pageSession(dp);
    await s.ensureStream('/c8/open');
    const base = (await dp.stats()).grants;
    dp.faults.holdGrants = true;
    const mine = s.open('/c8/open');
    const theirs = peerD.open('/c8/open', { access: 'write' }).catch((e: unknown) => e);
    await eventually(async () => (await dp.stats()).grants === base + 2, 'pair granted');
    await peerD.close();
    dp.faults.releaseHeldGrants();
    await expectCodeAsync(() => mine, 'ECONNRESET', 'peer-lost');
    expect(((await theirs) as { code: string }).code).toBe('ECANCELED');
    await eventually(async () => (await dp.stats()).grants === base, 'nothing left of the failed pairing');
    for (const d of [a.r, wb, c.w]) await d.close();
  });

  it('[A1] the authority answers each request exactly once, even when it is cancelled and then paired', async () => {
    const dp = await newPlane();
    const raw = await rawClient(dp, { runId: 'r1', read: ['/'], write: ['/'] });
    const s = await pageSession(dp);
    await s.ensureStream('/a1/x');
    raw.send({ t: 'open', id: 1, path: '/a1/x', access: 'read', create: false, exclusive: false, truncate: false, nonblocking: false });
    await eventually(async () => (await dp.stats()).waiters === 1, 'raw reader waits');
    raw.send({ t: 'cancel', id: 1 });
    expect(await raw.reply(1)).toMatchObject({ t: 'cancelled', id: 1 });
    const w = s.open('/a1/x', { access: 'write' });
    raw.send({ t: 'stat', id: 2, path: '/a1/x' });
    await raw.reply(2);
    expect(raw.queued(1)).toEqual([]);
    expect(await stillPending(w, s)).toBe(true);
    const r = await s.open('/a1/x');
    await (await w).close();
    await r.close();
  });

  it('[A2][S11] a waiting open of a replaced incarnation is refused as stale, never attached to the new one', async () => {
    const { s } = await planeWithSession();
    await s.ensureStream('/a2/x');
    const old = s.open('/a2/x').catch((e: unknown) => e);
    await new Promise((res) => setTimeout(res, 5));
    expect(await s.replaceStream('/a2/x')).toBe(2);
    expect(await old).toMatchObject({ code: 'ESTALE', reason: 'replaced' });
    const { r, w } = await pair(s, '/a2/x');
    await w.write(Uint8Array.of(5));
    const one = new Uint8Array(1);
    expect(await r.read(one)).toBe(1);
    await w.close();
    await r.close();
  });

  it('[A4] spurious and repeated wakeups repeat no I/O and do no harm', async () => {
    const { dp, s } = await planeWithSession();
    const { r, w } = await pair(s, '/a4/x', 32);
    const dst = new Uint8Array(4);
    const reading = r.read(dst);
    for (let i = 0; i < 100; i++) dp.faults.wakeStream('/a4/x');
    expect(await stillPending(reading, s)).toBe(true);
    await w.write(tagged(3, 4));
    for (let i = 0; i < 10; i++) dp.faults.wakeStream('/a4/x');
    expect(await reading).toBe(3);
    expect(dst.subarray(0, 3)).toEqual(tagged(3, 4));
    const again = r.read(dst);
    for (let i = 0; i < 10; i++) dp.faults.wakeStream('/a4/x');
    expect(await stillPending(again, s)).toBe(true);
    await w.close();
    expect(await again).toBe(0);
    await r.close();
  });

  it('[A5][A6] a blocked open and a blocked read stall neither the authority nor other descriptors', async () => {
    const { s } = await planeWithSession();
    await s.ensureStream('/a5/wait');
    const blockedOpen = s.open('/a5/wait');
    const idle = await pair(s, '/a5/idle');
    const blockedRead = idle.r.read(new Uint8Array(4));
    const busy = await pair(s, '/a5/busy', 64);
    const sending = writeAll(busy.w, tagged(5000, 5)).then(() => busy.w.close());
    expect(await readAll(busy.r, 100)).toEqual(tagged(5000, 5));
    await sending;
    expect(await s.stat('/a5/busy')).toMatchObject({ kind: 'stream' });
    expect(await stillPending(blockedOpen, s)).toBe(true);
    expect(await stillPending(blockedRead, s)).toBe(true);
    const w = await s.open('/a5/wait', { access: 'write' });
    await w.close();
    await (await blockedOpen).close();
    await idle.w.close();
    expect(await blockedRead).toBe(0);
    await idle.r.close();
    await busy.r.close();
  });

  it('[PF9][A6] in a worker, an asynchronously blocked read leaves the worker free to serve other calls', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp);
    const { agent } = await spawnAgent(dp);
    await s.ensureStream('/pf9/x', { capacity: 64 });
    const [h, w] = await Promise.all([agent.open('/pf9/x'), s.open('/pf9/x', { access: 'write' })]);
    const reading = agent.read(h, 8);
    expect(await agent.stat('/pf9/x')).toMatchObject({ kind: 'stream' });
    expect(await agent.info(h)).toMatchObject({ state: 'open', queuedBytes: 0 });
    await w.write(tagged(8, 9));
    expect(await reading).toEqual(tagged(8, 9));
    await w.close();
  });
});
