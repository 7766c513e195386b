// The legal-sequence harness's only memory: facts the test itself caused or observed (seed 004 §17.1).
// Paths it used, descriptors the plane returned, seeds of the bytes it wrote, counts the plane
// reported, and which handles the test already ended. No internal state of the plane is modelled:
// every expectation below is derived from these facts and the normative guarantees.
import { expect } from 'vitest';
import { TenonError, patternByte, writeBlob } from '../../../src/index.js';
import type { DataPlane, Descriptor, Session } from '../../../src/index.js';
import { canaried, tagged } from './plane.js';

export interface Published {
  readonly seed: number;
  readonly length: number;
  /** Bytes [0, written) carry the seed's pattern; the rest reads as zeros. */
  readonly written: number;
  readonly revision: number;
}

export interface ReaderFact {
  readonly d: Descriptor;
  readonly path: string;
  readonly content: Published;
  got: number;
  closed: boolean;
}

export interface WriterFact {
  readonly d: Descriptor;
  readonly path: string;
  readonly seed: number;
  readonly length: number;
  /** The descriptor offset: sum of counts returned by write. */
  offset: number;
  /** Bytes [0, written) hold the seed's pattern (through writes or a writable mapping). */
  written: number;
  ended: boolean;
}

export interface PairFact {
  readonly path: string;
  readonly r: Descriptor;
  readonly w: Descriptor;
  readonly capacity: number;
  readonly seed: number;
  sent: number;
  received: number;
  writer: 'open' | 'closed' | 'aborted';
  readerClosed: boolean;
  stale: boolean;
  eofSeen: boolean;
  faultSeen: boolean;
}

export interface Ledger {
  /** Every path this ledger uses lives under this root (sequences sharing a plane never meet). */
  readonly root: string;
  readonly published: Map<string, Published>;
  readonly readers: ReaderFact[];
  readonly writers: WriterFact[];
  readonly pairs: PairFact[];
  nextSeed: number;
  ops: number;
}

export interface World {
  readonly dp: DataPlane;
  readonly s: Session;
  readonly coverage: Map<string, number>;
  /** Probe authority-level invariants after every action (deep runs thin this out). */
  probeEvery: number;
  /** A session of the same plane without rights to the ledger's paths (negative tests). */
  readonly restricted?: Session;
}

const BLOB_NAMES = ['a', 'b'] as const;
const STREAM_NAMES = ['s0', 's1'] as const;
const blobPath = (l: Ledger, i: number): string => `${l.root}/${BLOB_NAMES[i % BLOB_NAMES.length]}`;
const streamPath = (l: Ledger, i: number): string => `${l.root}/${STREAM_NAMES[i % STREAM_NAMES.length]}`;

export function newLedger(root = '/h'): Ledger {
  return { root, published: new Map(), readers: [], writers: [], pairs: [], nextSeed: 1, ops: 0 };
}

export const contentByte = (c: Published, i: number): number => (i < c.written ? patternByte(c.seed, i) : 0);

const pick = <T>(xs: readonly T[], i: number): T | undefined => (xs.length === 0 ? undefined : xs[i % xs.length]);

function cover(w: World, key: string): void {
  w.coverage.set(key, (w.coverage.get(key) ?? 0) + 1);
}

// ---------------------------------------------------------------------------------------------------
// state names used for transition coverage (derived from ledger facts only)

export function readerState(r: ReaderFact): string {
  return r.got === 0 ? 'fresh' : r.got < r.content.length ? 'mid' : 'eof';
}

export function writerState(w: WriterFact): string {
  return w.written === 0 ? 'empty' : w.written < w.length ? 'partial' : 'full';
}

export function pairState(p: PairFact): string {
  if (p.stale) return 'stale';
  if (p.readerClosed) return 'reader-closed';
  if (p.writer !== 'open') return `${p.sent === p.received ? 'drained' : 'closing'}-${p.writer}`;
  if (p.sent === p.received) return 'empty';
  return (p.w.info().writableBytes ?? 0) === 0 ? 'full' : 'has-data';
}

// ---------------------------------------------------------------------------------------------------
// actions: `pre` reads the ledger only; `run` calls the plane and checks the outcome against the facts

export interface Action {
  readonly name: string;
  pre(l: Ledger): boolean;
  run(l: Ledger, w: World): Promise<void>;
}

const liveReaders = (l: Ledger) => l.readers.filter((r) => !r.closed);
const liveWriters = (l: Ledger) => l.writers.filter((w) => !w.ended);
const livePairs = (l: Ledger) => l.pairs.filter((p) => !p.readerClosed || p.writer === 'open');

export const act = {
  put: (pathIdx: number, length: number): Action => ({
    name: `put(${pathIdx},${length})`,
    pre: () => true,
    async run(l, w) {
      const path = blobPath(l, pathIdx);
      const seed = l.nextSeed++;
      const prev = l.published.get(path)?.revision ?? 0;
      const bw = await writeBlob(w.s, path, length);
      await bw.write(tagged(length, seed));
      const revision = await bw.seal();
      expect(revision).toBe(prev + 1);
      l.published.set(path, { seed, length, written: length, revision: revision! });
      cover(w, 'namespace:put');
    },
  }),

  openReader: (pathIdx: number): Action => ({
    name: `openReader(${pathIdx})`,
    pre: (l) => l.published.has(blobPath(l, pathIdx)),
    async run(l, w) {
      const path = blobPath(l, pathIdx);
      const content = l.published.get(path)!;
      const d = await w.s.open(path);
      expect(d.info()).toMatchObject({ kind: 'blob', length: content.length, revision: content.revision, offset: 0 });
      l.readers.push({ d, path, content, got: 0, closed: false });
      cover(w, 'blob-reader:none:open');
    },
  }),

  read: (i: number, size: number): Action => ({
    name: `read(${i},${size})`,
    pre: (l) => liveReaders(l).length > 0,
    async run(l, w) {
      const r = pick(liveReaders(l), i)!;
      cover(w, `blob-reader:${readerState(r)}:read`);
      const c = canaried(size);
      const n = await r.d.read(c.window);
      expect(n).toBe(Math.min(size, r.content.length - r.got));
      for (let k = 0; k < n; k++) if (c.window[k] !== contentByte(r.content, r.got + k)) expect.fail(`byte ${r.got + k} of ${r.path} differs`);
      expect(c.intact(n)).toBe(true);
      r.got += n;
    },
  }),

  mapReader: (i: number, at: number, len: number): Action => ({
    name: `mapReader(${i},${at},${len})`,
    pre: (l) => liveReaders(l).some((r) => r.content.length > 0),
    async run(l, w) {
      const r = pick(liveReaders(l).filter((x) => x.content.length > 0), i)!;
      cover(w, `blob-reader:${readerState(r)}:map`);
      const offset = at % r.content.length;
      const length = 1 + (len % (r.content.length - offset));
      const m = await r.d.map({ protection: 'read', offset, length });
      {
        using e = await m.export();
        for (let k = 0; k < length; k++) if (e.bytes[k] !== contentByte(r.content, offset + k)) expect.fail(`mapped byte ${offset + k} differs`);
      }
      await m.close();
      expect(r.d.info().offset).toBe(r.got);
    },
  }),

  closeReader: (i: number): Action => ({
    name: `closeReader(${i})`,
    pre: (l) => liveReaders(l).length > 0,
    async run(l, w) {
      const r = pick(liveReaders(l), i)!;
      cover(w, `blob-reader:${readerState(r)}:close`);
      await r.d.close();
      r.closed = true;
    },
  }),

  openWriter: (pathIdx: number, length: number): Action => ({
    name: `openWriter(${pathIdx},${length})`,
    pre: () => true,
    async run(l, w) {
      const path = blobPath(l, pathIdx);
      const d = await w.s.open(path, { access: 'write', create: true, truncate: true, allocation: { length } });
      l.writers.push({ d, path, seed: l.nextSeed++, length, offset: 0, written: 0, ended: false });
      cover(w, 'blob-writer:none:open');
    },
  }),

  write: (i: number, size: number): Action => ({
    name: `write(${i},${size})`,
    pre: (l) => liveWriters(l).some((x) => x.offset < x.length),
    async run(l, w) {
      const x = pick(liveWriters(l).filter((y) => y.offset < y.length), i)!;
      cover(w, `blob-writer:${writerState(x)}:write`);
      const n = Math.min(size, x.length - x.offset);
      expect(await x.d.write(tagged(n, x.seed, x.offset))).toBe(n);
      x.offset += n;
      x.written = Math.max(x.written, x.offset);
      expect(x.d.info().offset).toBe(x.offset);
    },
  }),

  mapWriter: (i: number): Action => ({
    name: `mapWriter(${i})`,
    pre: (l) => liveWriters(l).some((x) => x.offset < x.length),
    async run(l, w) {
      const x = pick(liveWriters(l).filter((y) => y.offset < y.length), i)!;
      cover(w, `blob-writer:${writerState(x)}:map`);
      const m = await x.d.map({ protection: 'read-write', offset: x.offset, length: x.length - x.offset });
      {
        using e = await m.export({ writable: true });
        e.bytes.set(tagged(x.length - x.offset, x.seed, x.offset));
      }
      await m.close();
      x.written = x.length;
      expect(x.d.info().offset).toBe(x.offset); // a mapping never moves the offset
    },
  }),

  seal: (i: number): Action => ({
    name: `seal(${i})`,
    pre: (l) => liveWriters(l).length > 0,
    async run(l, w) {
      const x = pick(liveWriters(l), i)!;
      cover(w, `blob-writer:${writerState(x)}:close`);
      const prev = l.published.get(x.path)?.revision ?? 0;
      await x.d.close();
      x.ended = true;
      expect(x.d.info().revision).toBe(prev + 1);
      l.published.set(x.path, { seed: x.seed, length: x.length, written: x.written, revision: prev + 1 });
    },
  }),

  abortWriter: (i: number): Action => ({
    name: `abortWriter(${i})`,
    pre: (l) => liveWriters(l).length > 0,
    async run(l, w) {
      const x = pick(liveWriters(l), i)!;
      cover(w, `blob-writer:${writerState(x)}:abort`);
      await x.d.abort();
      x.ended = true;
    },
  }),

  openPair: (pathIdx: number, capacityLog: number): Action => ({
    name: `openPair(${pathIdx},${capacityLog})`,
    pre: (l) => !livePairs(l).some((p) => p.path === streamPath(l, pathIdx) && !p.stale),
    async run(l, w) {
      const path = streamPath(l, pathIdx);
      const capacity = 16 << (capacityLog % 3);
      await w.s.ensureStream(path, { capacity });
      const [r, wr] = await Promise.all([w.s.open(path, { kind: 'stream' }), w.s.open(path, { access: 'write', kind: 'stream' })]);
      const cap = (await w.s.stat(path)) as { capacity: number };
      l.pairs.push({ path, r, w: wr, capacity: cap.capacity, seed: l.nextSeed++, sent: 0, received: 0, writer: 'open', readerClosed: false, stale: false, eofSeen: false, faultSeen: false });
      cover(w, 'stream:none:open');
    },
  }),

  swrite: (k: number, size: number): Action => ({
    name: `swrite(${k},${size})`,
    pre: (l) => l.pairs.some((p) => p.writer === 'open'),
    async run(l, w) {
      const p = pick(l.pairs.filter((x) => x.writer === 'open'), k)!;
      const state = pairState(p);
      cover(w, `stream:${state}:write`);
      const src = tagged(size, p.seed, p.sent);
      if (p.stale) {
        await expectError(p.w.write(src), 'ESTALE');
        return;
      }
      if (p.readerClosed) {
        await expectError(p.w.write(src), 'EPIPE');
        return;
      }
      if ((p.w.info().writableBytes ?? 0) > 0) {
        const n = await p.w.write(src);
        expect(n).toBeGreaterThanOrEqual(1);
        expect(n).toBeLessThanOrEqual(size);
        p.sent += n;
        return;
      }
      // full ring: the write must block, then complete once the reader makes room (S8)
      const pending = p.w.write(src);
      let done: number | undefined;
      void pending.then((n) => (done = n));
      while (done === undefined) {
        await drainSome(p, 1 + (size % 40));
        await new Promise((r) => setTimeout(r, 0));
      }
      expect(done).toBeGreaterThanOrEqual(1);
      p.sent += done;
    },
  }),

  sread: (k: number, size: number): Action => ({
    name: `sread(${k},${size})`,
    pre: (l) => l.pairs.some((p) => !p.readerClosed),
    async run(l, w) {
      const p = pick(l.pairs.filter((x) => !x.readerClosed), k)!;
      cover(w, `stream:${pairState(p)}:read`);
      if (p.stale) {
        await expectError(p.r.read(new Uint8Array(size)), 'ESTALE');
        return;
      }
      if (p.sent > p.received) {
        await drainSome(p, size);
        return;
      }
      if (p.writer === 'closed') {
        expect(await p.r.read(new Uint8Array(size))).toBe(0);
        p.eofSeen = true;
        return;
      }
      if (p.writer === 'aborted') {
        await expectError(p.r.read(new Uint8Array(size)), 'ECONNRESET');
        p.faultSeen = true;
        return;
      }
      // empty ring, writer open: the read waits, then returns what the writer sends next (S10)
      const c = canaried(size);
      const pending = p.r.read(c.window);
      const n = await p.w.write(tagged(size, p.seed, p.sent));
      p.sent += n;
      const got = await pending;
      expect(got).toBeGreaterThanOrEqual(1);
      checkStream(p, c.window, got);
      expect(c.intact(got)).toBe(true);
      p.received += got;
    },
  }),

  closeWriter: (k: number): Action => ({
    name: `closeWriter(${k})`,
    pre: (l) => l.pairs.some((p) => p.writer === 'open'),
    async run(l, w) {
      const p = pick(l.pairs.filter((x) => x.writer === 'open'), k)!;
      cover(w, `stream:${pairState(p)}:close-writer`);
      await p.w.close();
      p.writer = 'closed';
    },
  }),

  abortStreamWriter: (k: number): Action => ({
    name: `abortStreamWriter(${k})`,
    pre: (l) => l.pairs.some((p) => p.writer === 'open'),
    async run(l, w) {
      const p = pick(l.pairs.filter((x) => x.writer === 'open'), k)!;
      cover(w, `stream:${pairState(p)}:abort-writer`);
      await p.w.abort();
      p.writer = 'aborted';
    },
  }),

  closeStreamReader: (k: number): Action => ({
    name: `closeStreamReader(${k})`,
    pre: (l) => l.pairs.some((p) => !p.readerClosed),
    async run(l, w) {
      const p = pick(l.pairs.filter((x) => !x.readerClosed), k)!;
      cover(w, `stream:${pairState(p)}:close-reader`);
      await p.r.close();
      p.readerClosed = true;
    },
  }),

  replace: (pathIdx: number): Action => ({
    name: `replace(${pathIdx})`,
    pre: (l) => l.pairs.some((p) => p.path === streamPath(l, pathIdx) && !p.stale),
    async run(l, w) {
      const path = streamPath(l, pathIdx);
      for (const p of l.pairs) if (p.path === path && !p.stale) cover(w, `stream:${pairState(p)}:replace`);
      await w.s.replaceStream(path);
      for (const p of l.pairs) if (p.path === path) p.stale = true;
    },
  }),
};

async function expectError(p: Promise<unknown>, code: string): Promise<void> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(TenonError);
    expect((err as TenonError).code).toBe(code);
    return;
  }
  expect.fail(`expected ${code}`);
}

function checkStream(p: PairFact, bytes: Uint8Array, n: number): void {
  for (let k = 0; k < n; k++) if (bytes[k] !== patternByte(p.seed, p.received + k)) expect.fail(`stream ${p.path} byte ${p.received + k} lost, duplicated or reordered`);
}

/** Reads up to `size` bytes that the ledger knows are queued (never blocks). */
async function drainSome(p: PairFact, size: number): Promise<void> {
  const c = canaried(Math.max(1, size));
  const n = await p.r.read(c.window);
  expect(n).toBeGreaterThanOrEqual(1);
  expect(n).toBeLessThanOrEqual(Math.min(size, p.sent - p.received));
  checkStream(p, c.window, n);
  expect(c.intact(n)).toBe(true);
  p.received += n;
}

/** Invariants every reachable state must satisfy, read through public observations only. */
export async function probe(l: Ledger, w: World, full: boolean): Promise<void> {
  for (const r of l.readers) if (!r.closed) expect(r.d.info()).toMatchObject({ state: 'open', offset: r.got, revision: r.content.revision });
  for (const x of l.writers) if (!x.ended) expect(x.d.info()).toMatchObject({ state: 'open', offset: x.offset });
  for (const p of l.pairs) {
    if (!p.readerClosed && !p.stale) {
      const i = p.r.info();
      // the ring holds at least the payload the ledger sent and the reader has not taken (plus framing)
      expect(i.queuedBytes).toBeGreaterThanOrEqual(p.sent - p.received);
      expect(i.queuedBytes).toBeLessThanOrEqual(p.capacity);
      expect(i.eof).toBe(p.eofSeen);
    }
    if (p.writer === 'open' && !p.readerClosed && !p.stale) expect(p.w.info().writableBytes).toBeLessThanOrEqual(p.capacity);
  }
  if (!full) return;
  for (const [path, c] of l.published) expect(await w.s.stat(path)).toMatchObject({ kind: 'blob', revision: c.revision, length: c.length });
  const liveEnds = l.pairs.reduce((n, p) => n + (p.readerClosed ? 0 : 1) + (p.writer === 'open' ? 1 : 0), 0);
  const st = await w.dp.stats();
  expect(st.grants).toBe(liveReaders(l).length + liveWriters(l).length + liveEnds);
  expect(st.waiters).toBe(0);
}

/** Ends every handle the ledger still owns, then checks that the plane holds nothing for them. */
export async function settle(l: Ledger, w: World): Promise<void> {
  for (const r of l.readers) if (!r.closed) await r.d.close();
  for (const x of l.writers) if (!x.ended) await x.d.abort();
  for (const p of l.pairs) {
    if (p.writer === 'open') await p.w.close();
    if (!p.readerClosed) await p.r.close();
  }
  const st = await w.dp.stats();
  expect([st.grants, st.waiters, st.rings]).toEqual([0, 0, 0]);
  expect(st.files).toBe(st.boundFiles);
}

/** Runs one action if its ledger precondition holds, then probes. Returns whether it ran. */
export async function step(l: Ledger, w: World, a: Action): Promise<boolean> {
  if (!a.pre(l)) return false;
  await a.run(l, w);
  l.ops++;
  await probe(l, w, l.ops % w.probeEvery === 0);
  return true;
}
