// Plan: a Web Lock watch that fails is reported, never swallowed (DP-lock-watch-reported, guarding C8 and
// D6). Peer loss becomes ECONNRESET only because someone watches a lock; when Web Locks refuses a watch
// (the seams start it under a name the platform rejects), the party that lost its view must fail loudly:
//   - the authority's watch of a session: the session is torn down and every later call of it (and of its
//     descriptors) fails with EIO `lock-watch-failed`;
//   - the authority's watch of a stream endpoint: the ring is faulted, both ends (blocked or not) fail
//     with EIO `lock-watch-failed`, and closing them still releases everything;
//   - the session's watch of the authority: connecting fails with EIO `lock-watch-failed`, nothing stays.
// Every case has its control: the next watch (the seam fired once) works as before.
import { describe, expect, it } from 'vitest';
import { connectSession } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { EVERYTHING, eventually, newPlane, pageSession, planeWithSession, putBlob, tagged } from './support/plane.js';

describe('failed lock watches', () => {
  it('[DP-lock-watch-reported][D6] a refused session watch tears the session down; its calls and descriptors report EIO lock-watch-failed', async () => {
    const dp = await newPlane();
    dp.faults.failLockWatches = 1;
    const s = await connectSession(dp.createSessionPort(EVERYTHING));
    expect(dp.faults.failLockWatches).toBe(0);
    await expectCodeAsync(() => s.open('/w/x', { access: 'write', create: true, allocation: { length: 4 } }), 'EIO', 'lock-watch-failed');
    expect(s.state).toBe('closed');
    expect(s.fault).toMatchObject({ code: 'EIO', reason: 'lock-watch-failed' });
    await expectCodeAsync(() => s.stat('/w'), 'EIO', 'lock-watch-failed');
    const st = await dp.stats();
    expect(st).toMatchObject({ sessions: 0, grants: 0, lockWatchFailures: 1 });
    // Control: the next session is watched as usual and works.
    const ok = await pageSession(dp);
    expect(await putBlob(ok, '/w/x', tagged(4, 1))).toBe(1);
    expect(ok.fault).toBeUndefined();
    expect((await dp.stats()).lockWatchFailures).toBe(1);
  });

  it('[DP-lock-watch-reported][D6] descriptors open when the session watch fails report EIO lock-watch-failed, not EBADF', async () => {
    const dp = await newPlane();
    const s = await pageSession(dp);
    await putBlob(s, '/w/r', tagged(8, 1));
    // A second session whose watch the authority starts under the seam.
    dp.faults.failLockWatches = 1;
    const t = await connectSession(dp.createSessionPort(EVERYTHING));
    await eventually(() => t.state === 'closed', 'the failed watch ends the session');
    await expectCodeAsync(() => t.open('/w/r'), 'EIO', 'lock-watch-failed');
    // The page session (watched before the seam was armed) is unaffected.
    const r = await s.open('/w/r');
    const got = new Uint8Array(8);
    expect(await r.read(got)).toBe(8);
    expect(got).toEqual(tagged(8, 1));
    await r.close();
  });

  it('[DP-lock-watch-reported][C8] a refused endpoint watch faults the stream: both ends, blocked or not, fail with EIO lock-watch-failed', async () => {
    const { dp, s } = await planeWithSession();
    await s.ensureStream('/w/s', { capacity: 64 });
    dp.faults.failLockWatches = 1;
    const [r, w] = await Promise.all([s.open('/w/s'), s.open('/w/s', { access: 'write' })]);
    const blocked = r.read(new Uint8Array(8)); // nothing was written: this read waits until the fault wakes it
    await expectCodeAsync(() => blocked, 'EIO', 'lock-watch-failed');
    await expectCodeAsync(() => r.read(new Uint8Array(8)), 'EIO', 'lock-watch-failed'); // sticky
    await expectCodeAsync(() => w.write(tagged(8, 1)), 'EIO', 'lock-watch-failed');
    await expectCodeAsync(() => w.flush(), 'EIO', 'lock-watch-failed');
    expect((await dp.stats()).lockWatchFailures).toBe(1);
    await w.close();
    await r.close();
    await eventually(async () => {
      const st = await dp.stats();
      return st.grants === 0 && st.rings === 0;
    }, 'both ends released');
    // Control: a new pair on the same node is watched and carries bytes.
    const [r2, w2] = await Promise.all([s.open('/w/s'), s.open('/w/s', { access: 'write' })]);
    expect(await w2.write(tagged(8, 2))).toBe(8);
    const got = new Uint8Array(8);
    expect(await r2.read(got)).toBe(8);
    expect(got).toEqual(tagged(8, 2));
    await w2.close();
    await r2.close();
    expect((await dp.stats()).lockWatchFailures).toBe(1);
  });

  it('[DP-lock-watch-reported][C8] a refused watch of the authority fails connectSession with EIO lock-watch-failed and leaves no session', async () => {
    const dp = await newPlane();
    await expectCodeAsync(() => connectSession(dp.createSessionPort({ ...EVERYTHING, faults: { failAuthorityWatch: true } })), 'EIO', 'lock-watch-failed');
    await eventually(async () => (await dp.stats()).sessions === 0, 'the failed session detached');
    expect((await dp.stats()).grants).toBe(0);
    // Control: without the seam the same rights connect and the session runs.
    const s = await pageSession(dp);
    expect(s.state).toBe('running');
    expect(await putBlob(s, '/a/x', tagged(4, 1))).toBe(1);
  });
});
