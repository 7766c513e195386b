// Plan: path spelling, /runs/self resolution and prefix authorization as pure functions (N6, N7, N8).
// Validation: every malformed family fails with EINVAL and a stable reason; resolution: only a leading
// /runs/self segment pair is rewritten; authorization: prefixes match on segment boundaries only.
import { describe, expect, it } from 'vitest';
import { authorized, isUnder, resolvePath, resolvePrefix, validatePath, validateRunId } from '../../src/dataplane/path.js';
import { expectCode } from '../support/expect-error.js';
import { fc, fcParams } from '../support/fc.js';

describe('path validation and resolution', () => {
  it('[N8] well-formed absolute paths are accepted unchanged and stay human-readable', () => {
    for (const p of ['/a', '/a/b', '/runs/self', '/runs/self/x.bin', '/data/ünïcode/名前', '/a/.hidden', '/a/b..c']) expect(validatePath(p)).toBe(p);
  });

  it('[N8] malformed spellings fail with EINVAL and a stable reason', () => {
    const cases: Array<[unknown, string]> = [
      ['', 'empty'],
      ['a/b', 'relative'],
      ['/', 'root'],
      ['/a//b', 'empty-segment'],
      ['/a/', 'empty-segment'],
      ['/a/./b', 'dot-segment'],
      ['/a/..', 'dot-segment'],
      ['/a\u0000b', 'control-character'],
      ['/a\nb', 'control-character'],
      [42, 'not-a-string'],
      [`/${'x'.repeat(1024)}`, 'too-long'],
    ];
    for (const [p, reason] of cases) expectCode(() => validatePath(p), 'EINVAL', reason);
  });

  it('[N6] only a leading /runs/self is expanded, exactly once', () => {
    expect(resolvePath('/runs/self', 'r1')).toBe('/runs/r1');
    expect(resolvePath('/runs/self/out/x', 'r1')).toBe('/runs/r1/out/x');
    expect(resolvePath('/runs/selfish/x', 'r1')).toBe('/runs/selfish/x');
    expect(resolvePath('/a/runs/self/x', 'r1')).toBe('/a/runs/self/x');
    // a run id that itself spells "self" is refused, so expansion can never be applied twice
    expectCode(() => validateRunId('self'), 'EINVAL', 'bad-run-id');
    expectCode(() => validateRunId('a/b'), 'EINVAL', 'bad-run-id');
    expect(resolvePath(resolvePath('/runs/self/x', 'r9'), 'r1')).toBe('/runs/r9/x');
  });

  it('[N7] authorization looks at the resolved path and at segment boundaries', () => {
    const access = { runId: 'r1', read: [resolvePrefix('/runs/self', 'r1'), '/shared'], write: [resolvePrefix('/runs/self/out', 'r1')] };
    expect(access.read[0]).toBe('/runs/r1');
    expect(authorized(access, resolvePath('/runs/self/x', 'r1'), true, false)).toBe(true);
    expect(authorized(access, '/runs/self/x', true, false)).toBe(false); // the unresolved spelling is not a grant
    expect(authorized(access, '/runs/r2/x', true, false)).toBe(false);
    expect(authorized(access, '/sharedx', true, false)).toBe(false);
    expect(authorized(access, '/shared/y', true, false)).toBe(true);
    expect(authorized(access, '/runs/r1/out/z', true, true)).toBe(true);
    expect(authorized(access, '/runs/r1/z', true, true)).toBe(false);
    expect(isUnder('/anything', '/')).toBe(true);
  });

  it('[N7] property: a path is under a prefix iff it equals it or continues it with a slash', () => {
    const seg = fc.stringMatching(/^[a-c]{1,3}$/);
    const path = fc.array(seg, { minLength: 1, maxLength: 4 }).map((s) => `/${s.join('/')}`);
    fc.assert(
      fc.property(path, path, (p, q) => {
        expect(isUnder(p, q)).toBe(p === q || p.startsWith(`${q}/`));
        expect(p.split('/').length >= q.split('/').length || !isUnder(p, q)).toBe(true);
      }),
      fcParams(300),
    );
  });
});
