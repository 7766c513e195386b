// fast-check settings shared by every property suite: runs are seeded so a failure reproduces, and
// fast-check's failure report prints the seed and the shrunk counterexample path. Override the seed
// with TENON_FC_SEED in the node lane (e.g. to explore); the browser lane always uses the default.
// In the mutant runner's lanes (vitest.config.ts provides `tenonFcEndOnFailure`) a failing property ends
// at its first counterexample without shrinking: the verdict needs the failure, not the smallest case.
// Normal lane runs shrink as usual.
import fc from 'fast-check';
import { inject } from 'vitest';

const DEFAULT_SEED = 20261129;

function envSeed(): number | undefined {
  const raw = typeof process !== 'undefined' ? process.env?.['TENON_FC_SEED'] : undefined;
  return raw === undefined || raw === '' ? undefined : Number(raw);
}

export const FC_SEED = envSeed() ?? DEFAULT_SEED;

/** Whether failing properties skip shrinking (only in the mutant runner's lanes). */
export function endOnFailure(): boolean {
  return inject('tenonFcEndOnFailure') === true;
}

/** Parameters for fc.assert: seeded, with the given number of runs. */
export function fcParams<T>(numRuns = 100): fc.Parameters<T> {
  return { seed: FC_SEED, numRuns, endOnFailure: endOnFailure() };
}

export { fc };
