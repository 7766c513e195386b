// Plan: the namespace commit is durable and comes first (DP-commit-durable, with B7, B10, K7).
// Every IndexedDB write the authority makes runs with strict durability (counted on the real
// transactions); a publication whose commit fails (the store's seam aborts the real IndexedDB
// transaction) leaves the previous revision bound, readable, and its file in OPFS, and reclaims the
// staging; a restarted authority sees the previous revision too. Control: the same replacement without
// the seam publishes and frees the old file once no reader holds it.
import { describe, expect, it } from 'vitest';
import { connectSession, createDataPlane, readBlob } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { EVERYTHING, eventually, onCleanup, pageSession, planeName, planeWithSession, putBlob, tagged } from './support/plane.js';

describe('namespace commits', () => {
  it('[DP-commit-durable][K7] every namespace write (publications, stream nodes, operation ids) commits with strict durability', async () => {
    const { dp, s } = await planeWithSession();
    const before = await dp.stats();
    expect(before.commits).toBe(0);
    await putBlob(s, '/d/a', tagged(16, 1));
    await putBlob(s, '/d/a', tagged(16, 2));
    await s.ensureStream('/d/s', { opId: 'ensure-1' });
    expect(await s.replaceStream('/d/s')).toBe(2);
    const after = await dp.stats();
    expect(after.commits).toBe(4);
    expect(after.strictCommits).toBe(4);
  });

  it('[DP-commit-durable][B7][B10] a failed commit publishes nothing: the old revision stays bound, readable and on disk', async () => {
    const name = planeName('commit');
    const dp = await createDataPlane({ name });
    onCleanup(() => dp.close());
    const s = await pageSession(dp);
    expect(await putBlob(s, '/c/x', tagged(64, 1))).toBe(1);
    // No reader holds revision 1, so only the order "commit, then delete" keeps its file alive here.
    dp.faults.failNextCommit = true;
    await expectCodeAsync(() => putBlob(s, '/c/x', tagged(64, 2)), 'EIO', 'commit-failed');
    expect(dp.faults.failNextCommit).toBe(false);
    expect(await s.stat('/c/x')).toMatchObject({ revision: 1, length: 64 });
    expect(await readBlob(s, '/c/x')).toEqual(tagged(64, 1));
    // The revision-1 file is still there and still the bound one; the failed staging was deleted.
    let st = await dp.stats();
    expect(st).toMatchObject({ files: 1, boundFiles: 1, grants: 0 });
    expect(st.commits).toBe(st.strictCommits);
    // A reader of revision 1 across a second failed replacement keeps reading it.
    const reader = await s.open('/c/x');
    dp.faults.failNextCommit = true;
    await expectCodeAsync(() => putBlob(s, '/c/x', tagged(64, 2)), 'EIO', 'commit-failed');
    const got = new Uint8Array(64);
    expect(await reader.read(got)).toBe(64);
    expect(got).toEqual(tagged(64, 1));
    await reader.close();

    // A restarted authority recovers revision 1 from IndexedDB (nothing of the failed commit landed).
    await s.close();
    await dp.close();
    const dp2 = await createDataPlane({ name });
    onCleanup(() => dp2.close());
    const s2 = await connectSession(dp2.createSessionPort(EVERYTHING));
    onCleanup(() => s2.close());
    expect(await s2.stat('/c/x')).toMatchObject({ revision: 1 });
    expect(await readBlob(s2, '/c/x')).toEqual(tagged(64, 1));

    // Control: the same replacement without the seam commits, and then (no reader left) frees the old file.
    expect(await putBlob(s2, '/c/x', tagged(64, 3))).toBe(2);
    expect(await readBlob(s2, '/c/x')).toEqual(tagged(64, 3));
    await eventually(async () => (await dp2.stats()).grants === 0, 'readers released');
    st = await dp2.stats();
    expect(st).toMatchObject({ files: 1, boundFiles: 1 });
  });

  it('[DP-commit-durable][K5] a failed commit of an operation id records nothing: the retry with the same id publishes once', async () => {
    const { dp, s } = await planeWithSession();
    await putBlob(s, '/k/x', tagged(8, 1));
    const stage = async (seed: number): Promise<number | undefined> => {
      const d = await s.open('/k/x', { access: 'write', truncate: true, allocation: { length: 8 }, opId: 'replace-k' });
      await d.write(tagged(8, seed));
      await d.close();
      return d.info().revision;
    };
    dp.faults.failNextCommit = true;
    await expectCodeAsync(() => stage(2), 'EIO', 'commit-failed');
    expect(await s.stat('/k/x')).toMatchObject({ revision: 1 });
    expect(await stage(3)).toBe(2);
    expect(await stage(4)).toBe(2); // the recorded answer: no second change
    expect(await readBlob(s, '/k/x')).toEqual(tagged(8, 3));
  });
});
