// Verdict logic of the mutant runner (scripts/mutants.mjs), kept free of processes and files so the
// runner's self-test can check it directly.
//
// Contract. A report here has the shape of vitest's JSON report (testResults[] with name, status,
// message and assertionResults[] with title, ancestorTitles, fullName, status): the warm lane server
// (scripts/mutants/lane-server.mjs) builds exactly that from vitest's reporter API, so a verdict means
// what it meant when every mutant paid a cold `vitest run` with the JSON reporter.
import { relative } from 'node:path';

/** Failing tests named on a `failed-elsewhere` line. */
const SHOWN_FAILURES = 3;

export const VERDICTS = ['killed', 'survived', 'failed-elsewhere', 'crashed', 'timeout', 'unguarded', 'stale'];

/** Guarantee IDs named by the leading bracket groups of a title: '[A][B, C] text' -> A, B, C. */
export function titleIds(title) {
  const found = [];
  let rest = title.trimStart();
  while (rest.startsWith('[')) {
    const close = rest.indexOf(']');
    if (close < 0) break;
    for (const part of rest.slice(1, close).split(',')) if (part.trim() !== '') found.push(part.trim());
    rest = rest.slice(close + 1).trimStart();
  }
  return found;
}

/**
 * A test-name pattern (a RegExp source, matched by vitest against "describe ... title") that selects every
 * test whose title or describe titles carry one of `ids` inside a bracket group. It may select more than
 * `titleIds` would (an ID in a later bracket group): the verdict only counts tests `titleIds` names, so a
 * wider selection costs time, never meaning.
 */
export function idPattern(ids) {
  const escaped = [...new Set(ids)].map((id) => id.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&'));
  return `\\[[^\\]]*(?<![^\\s\\[,])(?:${escaped.join('|')})(?![^\\s\\],])[^\\]]*\\]`;
}

/** Every test of a report, with its file relative to `root` and the IDs its title or describes name. */
export function testsOf(report, root) {
  return report.testResults.flatMap((file) =>
    file.assertionResults.map((a) => ({
      file: relative(root, file.name),
      name: a.fullName,
      title: a.title,
      status: a.status,
      duration: a.duration,
      ids: new Set([a.title, ...(a.ancestorTitles ?? [])].flatMap(titleIds)),
    })),
  );
}

/** The tests of `tests` that belong to mutant `m`: in one of its files, naming one of its guarantees. */
export const namedTests = (m, tests) => tests.filter((t) => m.tests.includes(t.file) && m.guarantees.some((id) => t.ids.has(id)));

/**
 * The verdict of one mutant run. `run` is { timedOut, status, report, limitMs, note }: `status` is the
 * run's exit status as the vitest CLI would have set it (0 only when every selected test passed and no
 * error escaped), `report` the JSON-shaped report or undefined when the run gave none.
 */
export function judge(m, run, root) {
  if (run.timedOut) return { verdict: 'timeout', detail: `stopped after ${run.limitMs / 1000}s` };
  if (run.report === undefined || !Array.isArray(run.report.testResults)) {
    return { verdict: 'crashed', detail: `no report (${run.note ?? `exit ${run.status}`})` };
  }
  // A failed named test is a kill whatever else happened: a run stopped at its first kill (the lane's
  // `stopOn`) may not have reached every file.
  const tests = testsOf(run.report, root);
  const named = namedTests(m, tests);
  const caught = named.filter((t) => t.status === 'failed');
  if (caught.length > 0) return { verdict: 'killed', detail: `${caught.length} of ${named.length} named tests failed` };
  const missing = m.tests.filter((f) => !run.report.testResults.some((r) => relative(root, r.name) === f));
  if (missing.length > 0) return { verdict: 'crashed', detail: `no results for ${missing.join(', ')} (exit ${run.status})` };
  const elsewhere = tests.filter((t) => t.status === 'failed').map((t) => `${t.file} > ${t.name}`);
  const broken = run.report.testResults
    .filter((r) => r.status === 'failed' && !r.assertionResults.some((a) => a.status === 'failed'))
    .map((r) => `${relative(root, r.name)} (${r.message ? `did not load: ${r.message.split('\n')[0]}` : 'hook or suite error'})`);
  if (run.status !== 0 || elsewhere.length > 0 || broken.length > 0) {
    const where = [...elsewhere, ...broken];
    const shown = where.length ? `${where.slice(0, SHOWN_FAILURES).join('; ')}${where.length > SHOWN_FAILURES ? `; +${where.length - SHOWN_FAILURES} more` : ''}` : `exit ${run.status} with every test passing (unhandled error?)`;
    return { verdict: 'failed-elsewhere', detail: `0 of ${named.length} named tests failed; failed instead: ${shown}` };
  }
  const skipped = named.filter((t) => t.status !== 'passed').length;
  return { verdict: 'survived', detail: `${named.length} named tests passed${skipped ? ` (${skipped} did not run)` : ''}` };
}

/** The line `mutants: N killed of M[ sampled (of T; ...)] (other verdicts, failures)`. */
export function summaryLine(counts, total, others, sample) {
  const of = sample ? `${total} sampled (of ${sample.of}; npm run mutants runs all)` : `${total}`;
  return `mutants: ${counts.killed} killed of ${of}${others.length ? ` (${others.join(', ')})` : ''}`;
}
