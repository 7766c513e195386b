#!/usr/bin/env node
// Self-test of scripts/contracts.mjs: builds throw-away trees under the OS temp folder, runs the checker
// on each with --root (as a child process, exactly as `npm run contracts` does) and asserts its exit code
// and its --json report. Plain Node 20, no dependencies; exits 1 if any case fails. Temp trees are removed.
//
// Usage: node scripts/contracts.selftest.mjs

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const CHECKER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'contracts.mjs');
const temps = [];

/** Writes `files` ({ relativePath: text | object }) into a fresh temp root; objects become JSON. */
function tree(files) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-selftest-'));
  temps.push(root);
  for (const [relative, content] of Object.entries(files)) {
    const file = path.join(root, relative);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  }
  return root;
}

function run(root, extra = ['--json']) {
  const result = spawnSync(process.execPath, [CHECKER, '--root', root, ...extra], { encoding: 'utf8' });
  let report;
  if (extra.includes('--json')) {
    try {
      report = JSON.parse(result.stdout);
    } catch {
      throw new Error(`checker printed no JSON (rc ${result.status}):\n${result.stdout}\n${result.stderr}`);
    }
  }
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, report };
}

function registry(layer, guarantees) {
  return { layer, source: 'self-test', guarantees };
}
const deferred = (id) => ({ id, statement: `deferred ${id}`, state: 'deferred', reason: 'later', evidence: [] });
const active = (id, ...evidence) => ({ id, statement: `active ${id}`, state: 'active', reason: '', evidence });

/** Asserts that some problem (or warning) matches every given field (strings must be contained). */
function has(list, match, label = 'problem') {
  const found = list.some((entry) =>
    Object.entries(match).every(([key, want]) =>
      want instanceof RegExp ? want.test(String(entry[key])) : key === 'message' ? String(entry[key]).includes(want) : entry[key] === want,
    ),
  );
  assert.ok(found, `expected a ${label} matching ${JSON.stringify(match, (_, v) => (v instanceof RegExp ? String(v) : v))}, got:\n${JSON.stringify(list, null, 2)}`);
}

const cases = [];
const test = (name, fn) => cases.push({ name, fn });

// ---------------------------------------------------------------------------------------------------

/** A tree with one active and one deferred guarantee, a source file and its test, plus `mutants` as the list. */
function mutantTree(mutants) {
  return tree({
    'contracts/registry/storage.json': registry('storage', [active('G1-no-clone', 'contracts/storage/owner.test.ts'), deferred('G2-split')]),
    'contracts/storage/owner.test.ts': `import { it } from 'vitest';\nit('[G1-no-clone] owners have no clone', () => {});\n`,
    'src/owner.ts': 'export const twice = (x) => x * 2;\nexport const thrice = (x) => x * 3;\n',
    'contracts/mutants/storage.json': { note: 'self-test', mutants },
  });
}
const mutant = (fields) => ({ id: 'm-ok', guarantees: ['G1-no-clone'], file: 'src/owner.ts', find: 'x * 2', replace: 'x * 4', tests: ['contracts/storage/owner.test.ts'], ...fields });

test('mutant lists: a well-formed list passes and is counted', () => {
  const { status, report } = run(mutantTree([mutant({}), mutant({ id: 'm-focus', find: 'x * 3', replace: 'x', lane: 'browser', focus: 'owners' })]));
  assert.equal(status, 0, JSON.stringify(report.problems));
  assert.equal(report.counts.mutants, 2);
});

test('mutant lists: stale or ambiguous find text, unknown or deferred ids, missing files, duplicate ids and bad keys fail', () => {
  const { status, report } = run(
    mutantTree([
      mutant({ id: 'm-stale', find: 'x * 5' }),
      mutant({ id: 'm-twice', find: 'export const' }),
      mutant({ id: 'm-unknown', guarantees: ['G9-nobody'] }),
      mutant({ id: 'm-deferred', guarantees: ['G2-split'] }),
      mutant({ id: 'm-no-test', tests: ['contracts/storage/gone.test.ts'] }),
      mutant({ id: 'm-no-file', file: 'src/gone.ts' }),
      mutant({ id: 'm-same', replace: 'x * 2' }),
      mutant({ id: 'm-lane', lane: 'gpu' }),
      mutant({ id: 'm-key', tset: [] }),
      mutant({ id: 'm-stale' }),
    ]),
  );
  assert.equal(status, 1);
  const file = 'contracts/mutants/storage.json';
  has(report.problems, { file, message: 'mutant m-stale: its find text is not in src/owner.ts (stale)' });
  has(report.problems, { file, message: 'mutant m-twice: its find text occurs more than once in src/owner.ts' });
  has(report.problems, { file, message: 'mutant m-unknown: names unknown id G9-nobody' });
  has(report.problems, { file, message: 'mutant m-deferred: names deferred id G2-split' });
  has(report.problems, { file, message: 'mutant m-no-test: test file contracts/storage/gone.test.ts does not exist' });
  has(report.problems, { file, message: 'mutant m-no-file: file src/gone.ts does not exist' });
  has(report.problems, { file, message: 'mutant m-same: find and replace are the same text' });
  has(report.problems, { file, message: 'mutant m-lane: lane must be node or browser' });
  has(report.problems, { file, message: 'mutant m-key: unknown key(s) tset' });
  has(report.problems, { file, message: `mutant m-stale: id also used in ${file}` });
  assert.equal(report.problems.length, 10);
});

test('a clean tree passes and counts active, deferred and evidence titles', () => {
  const root = tree({
    'contracts/registry/storage.json': registry('storage', [active('G1-no-clone', 'contracts/storage/owner.test.ts'), deferred('G2-split')]),
    'contracts/registry/dataplane.json': registry('dataplane', [deferred('IO8')]),
    'contracts/storage/owner.test.ts': `import { it } from 'vitest';\nit('[G1-no-clone] owners have no clone', () => {});\n`,
  });
  const { status, report } = run(root);
  assert.equal(status, 0);
  assert.equal(report.ok, true);
  assert.deepEqual(report.problems, []);
  assert.deepEqual(report.counts, { active: 1, deferred: 2, evidenceTitles: 1, titlesWithIds: 1, testFiles: 1, mutants: 0 });
  assert.equal(report.layers.storage.active, 1);
  assert.equal(report.layers.storage.deferred, 1);
  assert.equal(report.layers.dataplane.deferred, 1);
  const text = run(root, []);
  assert.equal(text.status, 0);
  assert.match(text.stdout.trimEnd().split('\n').at(-1), /^contracts: 1 active, 2 deferred, 1 evidence titles — OK$/);
});

test('a registry file that is not JSON fails', () => {
  const root = tree({ 'contracts/registry/broken.json': '{ "layer": "x", ' });
  const { status, report, stdout } = run(root);
  assert.equal(status, 1);
  has(report.problems, { file: 'contracts/registry/broken.json', message: 'not valid JSON' });
  const text = run(root, []);
  assert.equal(text.status, 1);
  assert.match(text.stdout.trimEnd().split('\n').at(-1), /^contracts: FAILED \(1 problem\)$/);
  assert.ok(stdout.length > 0);
});

test('a missing or empty registry folder fails', () => {
  assert.equal(run(tree({ 'src/a.ts': '' })).status, 1);
  const root = tree({ 'contracts/registry/README.md': 'no json here' });
  const { status, report } = run(root);
  assert.equal(status, 1);
  has(report.problems, { message: 'no *.json' });
});

test('every registry shape error is reported', () => {
  const root = tree({
    'contracts/registry/a.json': {
      layer: 'a',
      source: 'self-test',
      extra: true,
      guarantees: [
        { id: 'A1', statement: 'fine', state: 'deferred', evidence: [] }, // no reason
        { id: 'A2', statement: 'two\nlines', state: 'deferred', reason: 'later', evidence: [] },
        { id: 'A3', statement: '   ', state: 'deferred', reason: 'later', evidence: [] },
        { id: 'A4', statement: 'bad state', state: 'done', reason: 'later', evidence: [] },
        { id: 'a 5', statement: 'bad id', state: 'deferred', reason: 'later', evidence: [] },
        { id: 'A6-', statement: 'bad id', state: 'deferred', reason: 'later', evidence: [] },
        { id: 'A7', statement: 'active, no evidence', state: 'active', evidence: [] },
        { id: 'A8', statement: 'active, missing file', state: 'active', evidence: ['contracts/a/missing.test.ts'] },
        { id: 'A9', statement: 'active, not a test file', state: 'active', evidence: ['README.md'] },
        { id: 'A10', statement: 'evidence not a list', state: 'deferred', reason: 'later', evidence: 'x' },
        { id: 'A11', statement: 'unknown key', state: 'deferred', reason: 'later', evidence: [], owner: 'me' },
        { id: 'A12', statement: 'escapes root', state: 'active', evidence: ['../outside.test.ts'] },
        { id: 'A13', statement: 'deferred, empty reason', state: 'deferred', reason: ' ', evidence: [] },
        'not an object',
      ],
    },
    'contracts/registry/b.json': { layer: '', source: 'self-test', guarantees: {} },
    'contracts/registry/c.json': [],
    'README.md': 'readme',
  });
  const { status, report } = run(root);
  assert.equal(status, 1);
  const p = report.problems;
  has(p, { file: 'contracts/registry/a.json', message: 'unknown top-level key "extra"' });
  has(p, { id: 'A1', message: 'non-empty "reason"' });
  has(p, { id: 'A2', message: 'one line' });
  has(p, { id: 'A3', message: '"statement" must be a non-empty string' });
  has(p, { id: 'A4', message: '"state" must be "active" or "deferred"' });
  has(p, { id: 'a 5', message: 'does not match' });
  has(p, { id: 'A6-', message: 'does not match' });
  has(p, { id: 'A7', message: 'at least one evidence file' });
  has(p, { id: 'A8', message: 'does not exist' });
  has(p, { id: 'A9', message: 'is not a test file the checker scans' });
  has(p, { id: 'A10', message: '"evidence" must be an array' });
  has(p, { id: 'A11', message: 'unknown key "owner"' });
  has(p, { id: 'A12', message: 'outside the repository' });
  has(p, { id: 'A13', message: 'non-empty "reason"' });
  has(p, { file: 'contracts/registry/a.json', message: 'guarantees[13] must be an object' });
  has(p, { file: 'contracts/registry/b.json', message: '"layer" must be a non-empty string' });
  has(p, { file: 'contracts/registry/b.json', message: '"guarantees" must be an array' });
  has(p, { file: 'contracts/registry/c.json', message: 'top level must be an object' });
});

test('duplicate ids fail within a file and across files', () => {
  const root = tree({
    'contracts/registry/a.json': registry('a', [deferred('X1'), deferred('X1')]),
    'contracts/registry/b.json': registry('b', [deferred('X2')]),
    'contracts/registry/c.json': registry('c', [deferred('X2')]),
  });
  const { status, report } = run(root);
  assert.equal(status, 1);
  has(report.problems, { file: 'contracts/registry/a.json', id: 'X1', message: 'duplicate id X1 (first defined in contracts/registry/a.json guarantees[0])' });
  has(report.problems, { file: 'contracts/registry/c.json', id: 'X2', message: 'duplicate id X2 (first defined in contracts/registry/b.json' });
  assert.equal(report.problems.length, 2);
});

test('a title naming an unknown id fails with file:line and the id', () => {
  const root = tree({
    'contracts/registry/a.json': registry('a', [deferred('IO8')]),
    'src/dataplane/x.test.ts': `import { it } from 'vitest';\n\n\nit("[IO9] nope", () => {});\n`,
  });
  const { status, report } = run(root);
  assert.equal(status, 1);
  has(report.problems, { file: 'src/dataplane/x.test.ts', line: 4, id: 'IO9', message: 'src/dataplane/x.test.ts:4: names unknown id IO9' });
});

test('a runnable title naming a deferred id fails; a todo naming it only warns', () => {
  const root = tree({
    'contracts/registry/a.json': registry('a', [deferred('IO8'), deferred('B7')]),
    'contracts/dataplane/io.test.ts': [
      `import { describe, it } from 'vitest';`,
      `describe('io', () => {`,
      `  it('[IO8] keeps the offset', () => {});`,
      `  it.todo('[B7] abort never publishes');`,
      `});`,
    ].join('\n'),
  });
  const { status, report } = run(root);
  assert.equal(status, 1);
  has(report.problems, { line: 3, id: 'IO8', message: 'names deferred id IO8' });
  assert.ok(!report.problems.some((p) => p.id === 'B7'), 'a todo title must not fail for a deferred id');
  has(report.warnings, { line: 4, id: 'B7', message: 'it.todo names deferred id B7' }, 'warning');
  has(report.pending, { line: 4, kind: 'todo', call: 'it.todo' }, 'pending title');
});

test('an active id without a title in its evidence files fails', () => {
  const root = tree({
    'contracts/registry/a.json': registry('a', [active('G1-no-clone', 'contracts/storage/a.test.ts'), deferred('G2-split')]),
    'contracts/storage/a.test.ts': `it('owners have no clone (untagged)', () => {});\nit('[G1-no-clonex] typo', () => {});\n`,
  });
  const { status, report } = run(root);
  assert.equal(status, 1);
  has(report.problems, { id: 'G1-no-clone', message: 'no runnable test title names it in its evidence files (contracts/storage/a.test.ts)' });
  has(report.problems, { id: 'G1-no-clonex', line: 2, message: 'unknown id' });
});

test('todo-only and skip-only evidence does not count, and is reported', () => {
  const root = tree({
    'contracts/registry/a.json': registry('a', [
      active('T1', 'contracts/a/t.test.ts'),
      active('T2', 'contracts/a/t.test.ts'),
      active('T3', 'contracts/a/t.test.ts'),
      active('T4', 'contracts/a/t.test.ts'),
    ]),
    'contracts/a/t.test.ts': [
      `it.todo('[T1] later');`,
      `it.skip('[T2] later', () => {});`,
      `describe.skip('suite', () => {`,
      `  it('[T3] inside a skipped suite', () => {});`,
      `});`,
      `test.skip('[T4] skipped', () => {});`,
      `test.todo('[T4] todo');`,
    ].join('\n'),
  });
  const { status, report } = run(root);
  assert.equal(status, 1);
  has(report.problems, { id: 'T1', message: 'only todo/skip titles: contracts/a/t.test.ts:1 (it.todo)' });
  has(report.problems, { id: 'T2', message: 'contracts/a/t.test.ts:2 (it.skip)' });
  has(report.problems, { id: 'T3', message: 'contracts/a/t.test.ts:4 (it)' });
  has(report.problems, { id: 'T4', message: 'contracts/a/t.test.ts:6 (test.skip), contracts/a/t.test.ts:7 (test.todo)' });
  assert.equal(report.pending.length, 5);
  assert.equal(report.counts.evidenceTitles, 0);
  has(report.pending, { line: 4, kind: 'skip' }, 'pending title');
});

test('template literal titles, with or without ${...}, name ids', () => {
  const root = tree({
    'contracts/registry/a.json': registry('a', [active('IO1', 'contracts/a/t.test.ts'), active('IO2', 'contracts/a/t.test.ts')]),
    'contracts/a/t.test.ts': [
      'const n = 3;',
      'it(`[IO1] reads ${n} bytes and ${`nested ${n}`} more`, () => {});',
      'it(`[IO2]',
      'multi-line template`, () => {});',
      'for (const id of ["IO1"]) it(`[${id}] built at run time`, () => {});',
    ].join('\n'),
  });
  const { status, report } = run(root);
  assert.equal(status, 0, JSON.stringify(report.problems));
  assert.equal(report.counts.evidenceTitles, 2);
  has(report.warnings, { line: 5, message: 'built at run time' }, 'warning');
});

test('every call form is recognised: each, for, concurrent, only, fails, skipIf, describe, e2e specs', () => {
  const ids = ['C1', 'C2', 'C3', 'C4', 'C5', 'C6', 'C7', 'C8', 'C9', 'C10', 'C11', 'C12', 'C13'];
  const file = 'contracts/a/forms.test.ts';
  const root = tree({
    'contracts/registry/a.json': registry('a', [...ids.map((id) => active(id, file)), active('E1', 'e2e/app.spec.ts'), active('S1', 'src/x/unit.test.ts')]),
    [file]: [
      `it.each([[1, 2], [3, 4]])('[C1] adds %i and %i', (a, b) => {});`,
      'test.each`\n  a | b\n  ${1} | ${2}\n`(\'[C2] table\', () => {});',
      `it.concurrent('[C3] concurrent', async () => {});`,
      `test.only("[C4] only", () => {});`,
      `it.fails('[C5] fails', () => {});`,
      `it.skipIf(process.env.CI)('[C6] conditional', () => {});`,
      `describe('[C7] a suite', () => {});`,
      `describe.each([1])('[C8] suite %i', () => {});`,
      `test.for([1, 2])('[C9] for %i', () => {});`,
      `it.concurrent.each([1])('[C10] both', () => {});`,
      `it('[C11][C12] two groups', () => {});`,
      `test(  '[C13, C1]   comma list', () => {});`,
    ].join('\n'),
    'e2e/app.spec.ts': `import { test } from '@playwright/test';\ntest('[E1] the demo loads', async () => {});\n`,
    'src/x/unit.test.ts': `it('[S1] unit', () => {});\n`,
  });
  const { status, report } = run(root);
  assert.equal(status, 0, JSON.stringify(report.problems, null, 2));
  assert.equal(report.counts.evidenceTitles, 14);
  assert.equal(report.counts.testFiles, 3);
});

test('comments, strings, regexes and member calls are not titles', () => {
  const root = tree({
    'contracts/registry/a.json': registry('a', [active('OK1', 'contracts/a/t.test.ts'), active('OK2', 'contracts/a/t.test.ts')]),
    'contracts/a/t.test.ts': [
      `const half = (1) / 2; it('[OK2] a title after a division on the same line', () => {});`,
      `// it('[NOPE1] in a line comment', () => {});`,
      `/* test("[NOPE2] in a block comment", () => {}); */`,
      `const s = "it('[NOPE3] in a string')";`,
      'const t = `test(\'[NOPE4] in a template\')`;',
      `const r = /it\\('\\[NOPE5\\]/;`,
      `const q = a / b; const o = { it: 1 }; obj.it('[NOPE6] a member call');`,
      `it('[OK1] the real one', () => {});`,
    ].join('\n'),
  });
  const { status, report } = run(root);
  assert.equal(status, 0, JSON.stringify(report.problems, null, 2));
  assert.equal(report.counts.titlesWithIds, 2);
});

test('an active id named outside its evidence files only warns', () => {
  const root = tree({
    'contracts/registry/a.json': registry('a', [active('W1', 'contracts/a/main.test.ts')]),
    'contracts/a/main.test.ts': `it('[W1] here', () => {});\n`,
    'contracts/b/other.test.ts': `\nit('[W1] also here', () => {});\n`,
  });
  const { status, report } = run(root);
  assert.equal(status, 0);
  has(report.warnings, { id: 'W1', message: 'contracts/b/other.test.ts:2' }, 'warning');
});

test('a leading bracket group that is not an id fails', () => {
  const root = tree({
    'contracts/registry/a.json': registry('a', [deferred('Z1')]),
    'contracts/a/t.test.ts': `it('[not an id!] x', () => {});\nit('[] empty', () => {});\nit('no brackets [Z1] later in the title', () => {});\n`,
  });
  const { status, report } = run(root);
  assert.equal(status, 1);
  has(report.problems, { line: 1, message: '"not an id!" is not a guarantee id' });
  has(report.problems, { line: 2, message: '"(empty)" is not a guarantee id' });
  assert.equal(report.problems.length, 2, 'a bracket group after the start of the title does not count');
});

test('node_modules and unlisted file kinds are not scanned', () => {
  const root = tree({
    'contracts/registry/a.json': registry('a', [deferred('Z1')]),
    'contracts/node_modules/pkg/x.test.ts': `it('[UNKNOWN] x', () => {});\n`,
    'src/a.spec.ts': `it('[UNKNOWN] spec outside e2e', () => {});\n`,
    'src/a.test.js': `it('[UNKNOWN] js', () => {});\n`,
    'demo/a.test.ts': `it('[UNKNOWN] outside the scanned folders', () => {});\n`,
  });
  const { status, report } = run(root);
  assert.equal(status, 0, JSON.stringify(report.problems));
  assert.equal(report.counts.testFiles, 0);
});

test('command line: --root=DIR works, unknown arguments exit 2', () => {
  const root = tree({ 'contracts/registry/a.json': registry('a', [deferred('Z1')]) });
  const eq = spawnSync(process.execPath, [CHECKER, `--root=${root}`, '--json'], { encoding: 'utf8' });
  assert.equal(eq.status, 0);
  assert.equal(JSON.parse(eq.stdout).counts.deferred, 1);
  const bad = spawnSync(process.execPath, [CHECKER, '--frobnicate'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /usage:/);
  const missing = spawnSync(process.execPath, [CHECKER, '--root', path.join(root, 'nope')], { encoding: 'utf8' });
  assert.equal(missing.status, 2);
});

// ---------------------------------------------------------------------------------------------------

let failed = 0;
for (const { name, fn } of cases) {
  try {
    fn();
    process.stdout.write(`ok   ${name}\n`);
  } catch (error) {
    failed++;
    process.stdout.write(`FAIL ${name}\n${String(error.stack ?? error).replace(/^/gm, '     ')}\n`);
  }
}
for (const dir of temps) fs.rmSync(dir, { recursive: true, force: true });
process.stdout.write(`contracts self-test: ${cases.length - failed}/${cases.length} passed${failed ? ' — FAILED' : ''}\n`);
process.exitCode = failed ? 1 : 0;
