// Plan: the SPSC ring on its own (ring invariants of seed 004 §7.4), in one thread where every
// interleaving is explicit. Bytes are position-tagged so loss, duplication and reordering show; the
// cursors start 4 KiB before the 32-bit wrap point, so every test also crosses the counter wrap.
import { describe, expect, it } from 'vitest';
import { RingReader, RingWriter, createRing, markStale, readerFinish, settleEndpoint } from '../../src/dataplane/ring.js';
import { ENDPOINT, RECORD_HEADER_BYTES, RING_HEADER_BYTES, RING_INITIAL_CURSOR } from '../../src/dataplane/ring-layout.js';
import { patternByte } from '../../src/dataplane/agent.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';

function pair(capacity: number): { sab: SharedArrayBuffer; w: RingWriter; r: RingReader } {
  const sab = createRing(capacity, 1, 1);
  return { sab, w: new RingWriter(sab, 1, 1), r: new RingReader(sab, 1, 1) };
}

const pattern = (seed: number, start: number, n: number): Uint8Array => Uint8Array.from({ length: n }, (_, k) => patternByte(seed, start + k));

describe('SPSC ring', () => {
  it('[RING1] published bytes are visible to the reader only after tryWrite returned them', () => {
    const { w, r } = pair(64);
    const dst = new Uint8Array(64);
    expect(r.tryRead(dst, 0, 64)).toBe(0);
    expect(w.tryWrite(pattern(1, 0, 10), 0, 10)).toBe(10);
    expect(r.tryRead(dst, 0, 64)).toBe(10);
    expect(dst.subarray(0, 10)).toEqual(pattern(1, 0, 10));
  });

  it('[RING2] a full ring refuses more bytes instead of overwriting unread ones', () => {
    const { w, r } = pair(32);
    let sent = 0;
    for (;;) {
      const n = w.tryWrite(pattern(2, sent, 7), 0, 7);
      if (n === 0) break;
      sent += n;
    }
    expect(w.writableBytes()).toBe(0);
    expect(w.tryWrite(pattern(2, sent, 7), 0, 7)).toBe(0);
    const dst = new Uint8Array(sent);
    let got = 0;
    while (got < sent) got += r.tryRead(dst, got, sent - got);
    expect(dst).toEqual(pattern(2, 0, sent));
  });

  it('[RING3] a partly read record keeps its whole space pinned until its last byte is returned', () => {
    const { w, r } = pair(64);
    const n = w.tryWrite(pattern(3, 0, 52), 0, 52);
    expect(n).toBe(52);
    const free = w.writableBytes();
    const one = new Uint8Array(1);
    expect(r.tryRead(one, 0, 1)).toBe(1);
    expect(r.pinnedBytes).toBe(51);
    expect(w.writableBytes()).toBe(free); // nothing released yet
    expect(w.tryWrite(pattern(9, 0, 8), 0, 8)).toBe(0);
    const rest = new Uint8Array(51);
    expect(r.tryRead(rest, 0, 51)).toBe(51);
    expect(rest).toEqual(pattern(3, 1, 51));
    expect(w.writableBytes()).toBeGreaterThan(free);
  });

  it('[RING4] EOF and fault records come after every byte published before them', () => {
    const a = pair(64);
    a.w.tryWrite(pattern(4, 0, 20), 0, 20);
    a.w.finish('eof');
    const dst = new Uint8Array(64);
    expect(a.r.tryRead(dst, 0, 64)).toBe(20);
    expect(a.r.eof).toBe(false);
    expect(a.r.tryRead(dst, 0, 64)).toBe(0);
    expect(a.r.eof).toBe(true);
    const b = pair(64);
    b.w.tryWrite(pattern(5, 0, 20), 0, 20);
    b.w.finish('fault');
    expect(b.r.tryRead(dst, 0, 64)).toBe(20);
    expectCode(() => b.r.tryRead(dst, 0, 64), 'ECONNRESET', 'peer-aborted');
    expectCode(() => b.r.tryRead(dst, 0, 64), 'ECONNRESET', 'peer-aborted'); // sticky
  });

  it('[RING4] the terminal record always fits: close never waits even when data filled the ring', () => {
    const { w, r } = pair(16);
    while (w.tryWrite(pattern(6, 0, 16), 0, 16) > 0);
    expect(w.writableBytes()).toBe(0);
    w.finish('eof');
    const dst = new Uint8Array(16);
    let total = 0;
    for (let i = 0; i < 10 && !r.eof; i++) total += r.tryRead(dst, 0, 16);
    expect(r.eof).toBe(true);
    expect(total).toBeGreaterThan(0);
  });

  it('[RING5] wraparound of positions and of the 32-bit cursors is invisible to the byte sequence', () => {
    const sab = createRing(16, 1, 1);
    expect(new Int32Array(sab, 0, RING_HEADER_BYTES / 4)[16]).toBe(RING_INITIAL_CURSOR);
    const w = new RingWriter(sab, 1, 1);
    const r = new RingReader(sab, 1, 1);
    const dst = new Uint8Array(8);
    let sent = 0;
    let got = 0;
    const seen: number[] = [];
    // far more bytes than the distance to the 32-bit wrap (4096) and than the capacity
    while (got < 10_000) {
      sent += w.tryWrite(pattern(7, sent, 5), 0, 5);
      const n = r.tryRead(dst, 0, 3 + (got % 6));
      for (let k = 0; k < n; k++) seen.push(dst[k]!);
      got += n;
    }
    expect(Uint8Array.from(seen)).toEqual(pattern(7, 0, got));
  });

  it('[RING5][RING7] property: any schedule of write/read sizes delivers the exact byte sequence; a write takes min(len, free)', () => {
    const step = fc.record({ write: fc.integer({ min: 0, max: 70 }), read: fc.integer({ min: 0, max: 70 }) });
    fc.assert(
      fc.property(fc.constantFrom(16, 32, 64, 128), fc.array(step, { minLength: 1, maxLength: 200 }), (capacity, steps) => {
        const { w, r } = pair(capacity);
        const src = new Uint8Array(80);
        const dst = new Uint8Array(80);
        let sent = 0;
        let got = 0;
        for (const s of steps) {
          src.set(pattern(11, sent, s.write));
          const free = w.writableBytes();
          const n = w.tryWrite(src, 0, s.write);
          expect(n).toBe(Math.min(s.write, free));
          sent += n;
          expect(w.queuedBytes()).toBeLessThanOrEqual(capacity);
          const m = r.tryRead(dst, 0, s.read);
          expect(m).toBeLessThanOrEqual(s.read);
          expect(dst.subarray(0, m)).toEqual(pattern(11, got, m));
          got += m;
        }
        while (got < sent) {
          const m = r.tryRead(dst, 0, 80);
          expect(dst.subarray(0, m)).toEqual(pattern(11, got, m));
          got += m;
        }
        expect(got).toBe(sent);
      }),
      fcParams(200),
    );
  });

  it('[RING7] a short write leaves the rest of the source untouched and reserves room for the terminal record', () => {
    const { w } = pair(32);
    const src = pattern(12, 0, 100);
    const copy = src.slice();
    const n = w.tryWrite(src, 0, 100);
    expect(n).toBe(32 - 2 * RECORD_HEADER_BYTES);
    expect(src).toEqual(copy);
  });

  it('[S6] a reader close turns writes into EPIPE; an abort or loss into ECONNRESET', () => {
    const a = pair(32);
    readerFinish(a.sab, 'close');
    expectCode(() => a.w.tryWrite(new Uint8Array(1), 0, 1), 'EPIPE', 'peer-closed');
    const b = pair(32);
    readerFinish(b.sab, 'abort');
    expectCode(() => b.w.tryWrite(new Uint8Array(1), 0, 1), 'ECONNRESET', 'peer-aborted');
    const c = pair(32);
    settleEndpoint(c.sab, 'reader', ENDPOINT.LOST);
    expectCode(() => c.w.tryWrite(new Uint8Array(1), 0, 1), 'ECONNRESET', 'peer-lost');
  });

  it('[C9] a late loss report cannot override a clean close', () => {
    const { sab, w, r } = pair(32);
    w.finish('eof');
    expect(settleEndpoint(sab, 'writer', ENDPOINT.LOST)).toBe(false);
    expect(r.tryRead(new Uint8Array(4), 0, 4)).toBe(0);
    expect(r.eof).toBe(true);
  });

  it('[K4] a ring of another incarnation, a corrupt header or a replaced incarnation is refused', () => {
    const sab = createRing(32, 5, 9);
    expectCode(() => new RingReader(sab, 5, 10), 'ESTALE', 'ring-identity');
    expectCode(() => new RingWriter(sab, 4, 9), 'ESTALE', 'ring-identity');
    const bad = createRing(32, 1, 1);
    new Int32Array(bad, 0, 1)[0] = 0;
    expectCode(() => new RingReader(bad, 1, 1), 'EIO', 'ring-malformed');
    expectCode(() => createRing(24, 1, 1), 'EINVAL', 'bad-capacity');
    const { sab: s2, w, r } = pair(32);
    w.tryWrite(new Uint8Array(4), 0, 4);
    markStale(s2);
    expectCode(() => r.tryRead(new Uint8Array(4), 0, 4), 'ESTALE', 'replaced');
    expectCode(() => w.tryWrite(new Uint8Array(4), 0, 4), 'ESTALE', 'replaced');
  });
});
