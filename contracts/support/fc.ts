// fast-check settings shared by every property suite: runs are seeded so a failure reproduces, and
// fast-check's failure report prints the seed and the shrunk counterexample path. Override the seed
// with TENON_FC_SEED in the node lane (e.g. to explore); the browser lane always uses the default.
import fc from 'fast-check';

const DEFAULT_SEED = 20261129;

function envSeed(): number | undefined {
  const raw = typeof process !== 'undefined' ? process.env?.['TENON_FC_SEED'] : undefined;
  return raw === undefined || raw === '' ? undefined : Number(raw);
}

export const FC_SEED = envSeed() ?? DEFAULT_SEED;

/** Parameters for fc.assert: seeded, with the given number of runs. */
export function fcParams<T>(numRuns = 100): fc.Parameters<T> {
  return { seed: FC_SEED, numRuns, endOnFailure: false };
}

export { fc };
