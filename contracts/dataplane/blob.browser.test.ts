// Plan: blobs on OPFS and their host mappings (seed 004 §6.1, §7.2, §8, §9: B1-B10, M1-M12, C2, C3).
// Staged fixed-length writes publish exactly once at clean close (the IndexedDB binding flip), abort and
// failed digests publish nothing, readers and mappings keep their revision across replacement, and the
// backing file outlives the descriptor while a mapping can reach it. Device regions are real GPUBuffers.
import { describe, expect, it } from 'vitest';
import { hostRegion, readBlob, sha256Hex, writeBlob } from '../../src/index.js';
import { expectCode, expectCodeAsync } from '../support/expect-error.js';
import { gpuRegion } from './support/gpu-region.js';
import { canaried, planeWithSession, putBlob, tagged } from './support/plane.js';

describe('blob bytes', () => {
  it('[B1][B2] reads come from the selected revision at the offset; at EOF they return 0 and stay there', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/b1/x', tagged(64, 1));
    const d = await s.open('/b1/x');
    const a = new Uint8Array(20);
    await d.read(a);
    const b = new Uint8Array(50);
    expect(await d.read(b)).toBe(44);
    expect(b.subarray(0, 44)).toEqual(tagged(44, 1, 20));
    for (let i = 0; i < 3; i++) {
      expect(await d.read(new Uint8Array(8))).toBe(0);
      expect(d.info().offset).toBe(64);
    }
    await d.close();
  });

  it('[B4][E4] a write past the allocation fails with ENOTSUP before any byte, leaving offset and staged bytes alone', async () => {
    const { s } = await planeWithSession();
    const d = await s.open('/b4/x', { access: 'write', create: true, allocation: { length: 10 } });
    expect(await d.write(tagged(6, 4))).toBe(6);
    await expectCodeAsync(() => d.write(tagged(5, 9)), 'ENOTSUP', 'growth');
    expect(d.info().offset).toBe(6);
    expect(await d.write(tagged(4, 4, 6))).toBe(4);
    await expectCodeAsync(() => d.write(Uint8Array.of(1)), 'ENOTSUP', 'growth');
    await d.close();
    expect(await readBlob(s, '/b4/x')).toEqual(tagged(10, 4));
  });

  it('[B5] a read-write staged description reads back what was written through it (descriptor and mapping)', async () => {
    const { s } = await planeWithSession();
    const d = await s.open('/b5/x', { access: 'read-write', create: true, allocation: { length: 20 } });
    await d.write(tagged(10, 5));
    const seen = await d.map({ protection: 'read', offset: 0, length: 10 });
    {
      using e = await seen.export();
      expect(e.bytes).toEqual(tagged(10, 5));
    }
    await seen.close();
    const m = await d.map({ protection: 'read-write', offset: 10, length: 10 });
    {
      using e = await m.export({ writable: true });
      e.bytes.set(tagged(10, 55));
    }
    await m.sync();
    const back = new Uint8Array(10);
    expect(await d.read(back)).toBe(10);
    expect(back).toEqual(tagged(10, 55));
    await m.close();
    await d.close();
    expect(await readBlob(s, '/b5/x')).toEqual(new Uint8Array([...tagged(10, 5), ...tagged(10, 55)]));
  });

  it('[B6][C2] a live writable mapping defers publication past close until it is synchronized and unmapped', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/b6/x', tagged(8, 1));
    const w = await writeBlob(s, '/b6/x', 8);
    const m = await w.map({ protection: 'read-write' });
    const e = await m.export({ writable: true });
    e.bytes.set(tagged(8, 66));
    expect(await w.seal()).toBeUndefined(); // clean-close intent recorded, publication pending
    expect(w.descriptor.info().state).toBe('closed');
    expect(await s.stat('/b6/x')).toMatchObject({ revision: 1 });
    expect(await readBlob(s, '/b6/x')).toEqual(tagged(8, 1));
    await expectCodeAsync(() => m.close(), 'EBUSY', 'exports-live');
    e.release();
    await m.close(); // sync + unmap: the deferred publication happens now, once
    expect(await s.stat('/b6/x')).toMatchObject({ revision: 2 });
    expect(await readBlob(s, '/b6/x')).toEqual(tagged(8, 66));
  });

  it('[B7][C3] abort publishes nothing; a clean close publishes exactly once', async () => {
    const { dp, s } = await planeWithSession();
    const a = await s.open('/b7/x', { access: 'write', create: true, allocation: { length: 4 } });
    await a.write(tagged(4, 1));
    await a.abort();
    await expectCodeAsync(() => s.stat('/b7/x'), 'ENOENT');
    const c = await s.open('/b7/x', { access: 'write', create: true, allocation: { length: 4 } });
    await c.write(tagged(4, 2));
    await c.close();
    await expectCodeAsync(() => c.close(), 'EBADF');
    await expectCodeAsync(() => c.abort(), 'EBADF');
    expect(await s.stat('/b7/x')).toMatchObject({ revision: 1 });
    const st = await dp.stats();
    expect([st.files, st.boundFiles, st.grants]).toEqual([1, 1, 0]);
  });

  it('[B8] a published revision has exactly the declared length and digest; unwritten bytes read as zeros', async () => {
    const { s } = await planeWithSession();
    const content = tagged(1000, 8);
    const digest = await sha256Hex(content);
    const w = await writeBlob(s, '/b8/x', 1000, { digest });
    await w.write(content);
    expect(await w.seal()).toBe(1);
    expect(await s.stat('/b8/x')).toEqual({ path: '/b8/x', kind: 'blob', revision: 1, length: 1000, digest });
    expect(await sha256Hex(await readBlob(s, '/b8/x'))).toBe(digest);
    const z = await s.open('/b8/z', { access: 'write', create: true, allocation: { length: 16 } });
    await z.write(Uint8Array.of(9, 9));
    await z.close();
    expect(await readBlob(s, '/b8/z')).toEqual(Uint8Array.of(9, 9, ...new Uint8Array(14)));
  });

  it('[B9][B7] a digest mismatch publishes nothing and exposes no staged byte', async () => {
    const { dp, s } = await planeWithSession();
    await putBlob(s, '/b9/x', tagged(32, 1));
    const w = await writeBlob(s, '/b9/x', 32, { digest: await sha256Hex(tagged(32, 2)) });
    await w.write(tagged(32, 3));
    await expectCodeAsync(() => w.seal(), 'EIO', 'digest-mismatch');
    expect(await s.stat('/b9/x')).toMatchObject({ revision: 1 });
    expect(await readBlob(s, '/b9/x')).toEqual(tagged(32, 1));
    const st = await dp.stats();
    expect([st.files, st.boundFiles, st.grants]).toEqual([1, 1, 0]);
  });

  it('[B10][N3] descriptors and mappings opened before a replacement keep reading the original revision', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/b10/x', tagged(40, 1));
    const d = await s.open('/b10/x');
    const m = await d.map({ protection: 'read', offset: 8, length: 16 });
    await putBlob(s, '/b10/x', tagged(40, 2));
    {
      using e = await m.export();
      expect(e.bytes).toEqual(tagged(16, 1, 8));
    }
    const all = new Uint8Array(40);
    await d.read(all);
    expect(all).toEqual(tagged(40, 1));
    await m.close();
    await d.close();
    expect(await readBlob(s, '/b10/x')).toEqual(tagged(40, 2));
  });
});

describe('host mappings', () => {
  it('[M1][M7] mappings are bounds-checked against the blob, and malformed requests fail before any byte is exposed', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/m1/x', tagged(100, 1));
    const d = await s.open('/m1/x');
    for (const [req, reason] of [
      [{ protection: 'read', offset: 90, length: 11 }, 'map-range'],
      [{ protection: 'read', offset: -1 }, 'map-range'],
      [{ protection: 'read', offset: 100 }, 'map-range'],
      [{ protection: 'read', length: 0 }, 'map-range'],
      [{ protection: 'read', offset: 1.5, length: 2 }, 'map-range'],
      [{ protection: 'rwx' }, 'bad-protection'],
    ] as const) await expectCodeAsync(() => d.map(req as never), 'EINVAL', reason);
    await expectCodeAsync(() => d.map({ protection: 'read', sharing: 'private' }), 'ENOTSUP', 'sharing');
    await expectCodeAsync(() => d.map({ protection: 'read', target: { device: 'gpu0' } }), 'ENOTSUP', 'target');
    expect(d.info().mappings).toBe(0);
    const m = await d.map({ protection: 'read', offset: 90, length: 10 });
    using e = await m.export();
    expect(e.bytes).toEqual(tagged(10, 1, 90));
    expect(m.route).toBe('staged');
    e.release();
    await m.close();
    await d.abort();
    await expectCodeAsync(() => d.map({ protection: 'read' }), 'EBADF');
  });

  it('[M2][M3][P5] protection never exceeds rights; a read-only mapping refuses writable exports', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/m2/x', tagged(16, 2));
    const ro = await s.open('/m2/x');
    await expectCodeAsync(() => ro.map({ protection: 'read-write' }), 'EACCES', 'protection');
    const wo = await s.open('/m2/y', { access: 'write', create: true, allocation: { length: 16 } });
    await expectCodeAsync(() => wo.map({ protection: 'read' }), 'EACCES', 'protection');
    const w = await writeBlob(s, '/m2/z', 16, { readBack: true });
    const m = await w.map({ protection: 'read' });
    await expectCodeAsync(() => m.export({ writable: true }), 'EACCES', 'read-only-mapping');
    using e = await m.export();
    expect(e.bytes.length).toBe(16);
    e.release();
    await m.close();
    for (const d of [ro, wo]) await d.abort();
    await w.abort();
  });

  it('[M4] at most one writable mapping per staged description', async () => {
    const { s } = await planeWithSession();
    const d = await s.open('/m4/x', { access: 'read-write', create: true, allocation: { length: 8 } });
    const a = await d.map({ protection: 'read-write' });
    await expectCodeAsync(() => d.map({ protection: 'read-write', offset: 4, length: 4 }), 'EBUSY', 'writable-mapping-live');
    const r = await d.map({ protection: 'read' }); // read-only mappings are still fine
    await a.close();
    const b = await d.map({ protection: 'read-write' });
    await b.close();
    await r.close();
    await d.abort();
  });

  it('[M5][M8][O3] a mapping keeps its revision file alive after its descriptor closed and the path was replaced', async () => {
    const { dp, s } = await planeWithSession();
    await putBlob(s, '/m5/x', tagged(64, 5));
    const d = await s.open('/m5/x');
    const m = await d.map({ protection: 'read', offset: 0, length: 64 });
    await d.close();
    await putBlob(s, '/m5/x', tagged(64, 6));
    await dp.reclaim();
    const st = await dp.stats();
    expect(st.files).toBe(2); // the new revision plus the one the mapping still reaches
    expect(st.boundFiles).toBe(1);
    {
      using e = await m.export();
      expect(e.bytes).toEqual(tagged(64, 5));
    }
    await m.close();
    const after = await dp.stats();
    expect([after.files, after.grants]).toEqual([1, 0]);
  });

  it('[M6] the last unmap releases the lease exactly once; a second unmap fails', async () => {
    const { dp, s } = await planeWithSession();
    await putBlob(s, '/m6/x', tagged(32, 6));
    const d = await s.open('/m6/x');
    const a = await d.map({ protection: 'read' });
    const b = await d.map({ protection: 'read', offset: 16, length: 16 });
    await d.close();
    expect((await dp.stats()).grants).toBe(1);
    await a.close();
    expect((await dp.stats()).grants).toBe(1);
    await b.close();
    expect((await dp.stats()).grants).toBe(0);
    await expectCodeAsync(() => b.close(), 'EBADF', 'closed');
    await expectCodeAsync(() => a.export(), 'EBADF', 'closed');
  });

  it('[M7][C3] mappings of an aborted description are dead; streams cannot be mapped', async () => {
    const { s } = await planeWithSession();
    const d = await s.open('/m7/x', { access: 'read-write', create: true, allocation: { length: 8 } });
    const m = await d.map({ protection: 'read-write' });
    await d.abort();
    await expectCodeAsync(() => m.export({ writable: true }), 'EBADF', 'descriptor-aborted');
    await expectCodeAsync(() => m.sync(), 'EBADF', 'descriptor-aborted');
    await expectCodeAsync(() => s.stat('/m7/x'), 'ENOENT');
    await s.ensureStream('/m7/s', { capacity: 64 });
    const [r, w] = await Promise.all([s.open('/m7/s'), s.open('/m7/s', { access: 'write' })]);
    await expectCodeAsync(() => r.map({ protection: 'read' }), 'ENODEV', 'not-mappable');
    await expectCodeAsync(() => w.map({ protection: 'read-write' }), 'ENODEV', 'not-mappable');
    await w.close();
    await r.close();
  });

  it('[M12][P6] exports keep their mapping alive: unmapping is refused until every export is released', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/m12/x', tagged(8, 12));
    const d = await s.open('/m12/x');
    const m = await d.map({ protection: 'read' });
    const e1 = await m.export();
    const e2 = await m.export();
    expect(e1.bytes).toBe(e2.bytes); // one mapping, one set of bytes
    e1.release();
    await expectCodeAsync(() => m.close(), 'EBUSY', 'exports-live');
    expectCode(() => e1.release(), 'EBADF', 'released');
    e2.release();
    await m.close();
    await d.close();
  });
});

describe('region I/O', () => {
  it('[M9][PF8] a device-region read completes only after the device fence; its bytes are on the GPU', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/m9/x', tagged(256, 9));
    const region = await gpuRegion(256);
    const d = await s.open('/m9/x');
    expect(await d.readInto(region, { route: 'staged' })).toBe(256);
    expect(region.fenced).toBe(1);
    expect(await region.readBack()).toEqual(tagged(256, 9));
    expect(d.info().routes).toEqual({ direct: 0, staged: 1 });
    await d.close();
    const w = await s.open('/m9/y', { access: 'write', create: true, allocation: { length: 128 } });
    expect(await w.writeFrom(region, { offset: 64, length: 128 })).toBe(128);
    await w.close();
    expect(await readBlob(s, '/m9/y')).toEqual(tagged(128, 9, 64));
  });

  it('[M10][PF8] a direct transfer that has no direct route fails with ENOTSUP and moves nothing; routes are counted', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/m10/x', tagged(64, 10));
    const region = await gpuRegion(64);
    const d = await s.open('/m10/x');
    await expectCodeAsync(() => d.readInto(region, { route: 'direct' }), 'ENOTSUP', 'no-direct-route');
    expect(d.info()).toMatchObject({ offset: 0, routes: { direct: 0, staged: 0 } });
    expect(region.fenced).toBe(0);
    const host = canaried(32);
    expect(await d.readInto(hostRegion(host.window), { route: 'direct' })).toBe(32);
    expect(host.intact(32)).toBe(true);
    expect(await d.readInto(region, { offset: 0, length: 32 })).toBe(32);
    expect(d.info().routes).toEqual({ direct: 1, staged: 1 });
    await expectCodeAsync(() => d.readInto(hostRegion(new Uint8Array(4), { writable: false })), 'EACCES', 'region-not-writable');
    await expectCodeAsync(() => d.readInto(hostRegion(new Uint8Array(4)), { offset: 2, length: 3 }), 'EINVAL', 'region-range');
    await d.close();
  });

  it('[M11][IO8] a failed device transfer leaves the region free and the blob offset where it was', async () => {
    const { s } = await planeWithSession();
    await putBlob(s, '/m11/x', tagged(64, 11));
    const region = await gpuRegion(64);
    const d = await s.open('/m11/x');
    // the GPU refuses unaligned writes: the region's upload throws, the descriptor reports EIO device-upload
    await expectCodeAsync(() => d.readInto(region, { offset: 0, length: 6 }), 'EIO', 'device-upload');
    expect(d.info().offset).toBe(0);
    expect(await d.readInto(region, { offset: 0, length: 64 })).toBe(64);
    expect(await region.readBack()).toEqual(tagged(64, 11));
    await d.close();
  });
});
