// Storage hot paths against hand-written loops over the same memory (issue: ownership kernel, point 8).
//   contiguous: sum over prepared host access (asArray) vs a raw Float32Array loop;
//   strided:    sum over the prepared cursor of a transposed 1000x1000 view vs a nested index loop.
// Each tenon round includes preparing and releasing the access, so the ratio also shows that
// preparation costs nothing that grows with the data. Run: npm run bench:storage.
import { it } from 'vitest';
import { createHostProvider, fromArray } from '../src/index.js';
import { comparePair, printTable, writeResults } from './report.js';
import type { PairResult } from './report.js';
import type { PreparedHostRead } from '../src/index.js';

// The element loops live in plain synchronous functions on both sides, as they would in an app: the
// async wrapper that prepares and releases the access stays outside the hot loop.
function sumArray(a: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]!;
  return s;
}

function sumCursor(p: PreparedHostRead<'f32'>): number {
  if (p.kind !== 'strided') throw new Error('expected strided');
  let s = 0;
  for (const c = p.cursor(); !c.done; c.advance()) s += c.array[c.index]!;
  return s;
}

function sumRuns(p: PreparedHostRead<'f32'>): number {
  if (p.kind !== 'strided') throw new Error('expected strided');
  let s = 0;
  for (const r = p.runs(); r.next(); ) {
    const { array, length, stride } = r;
    for (let k = 0, i = r.start; k < length; k++, i += stride) s += array[i]!;
  }
  return s;
}

function sumTransposed(data: Float32Array, n: number): number {
  let s = 0;
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) s += data[j * n + i]!;
  return s;
}

function sumReversed(data: Float32Array): number {
  let s = 0;
  for (let i = data.length - 1; i >= 0; i--) s += data[i]!;
  return s;
}

const N = 1000;
const ROUNDS = 30;

it('storage prepared access vs raw loops', async () => {
  const host = createHostProvider();
  const data = Float32Array.from({ length: N * N }, (_, i) => (i % 251) - 125);
  const tensor = await fromArray(host, 'f32', data, [N, N]);
  const results: PairResult[] = [];

  results.push(
    await comparePair(
      'contiguous read, 1e6 f32',
      {
        name: 'raw Float32Array loop',
        run: () => sumArray(data),
      },
      {
        name: 'prepareHost().asArray() loop',
        run: async () => {
          using p = await tensor.prepareHost();
          if (p.kind !== 'contiguous') throw new Error('expected contiguous');
          return sumArray(p.asArray());
        },
      },
      ROUNDS,
    ),
  );

  // The same tensor seen transposed: element [i, j] of the view is data[j * N + i].
  const transposed = tensor.intoLayout({ shape: [N, N], strides: [1, N] });
  results.push(
    await comparePair(
      'strided read, 1000x1000 transposed',
      {
        name: 'hand-written index loop',
        run: () => sumTransposed(data, N),
      },
      {
        name: 'prepareHost().cursor() walk',
        run: async () => {
          using p = await transposed.prepareHost();
          return sumCursor(p);
        },
      },
      ROUNDS,
    ),
  );
  results.push(
    await comparePair(
      'strided runs, 1000x1000 transposed',
      {
        name: 'hand-written index loop',
        run: () => sumTransposed(data, N),
      },
      {
        name: 'prepareHost().runs() walk',
        run: async () => {
          using p = await transposed.prepareHost();
          return sumRuns(p);
        },
      },
      ROUNDS,
    ),
  );

  const reversed = transposed.intoLayout({ shape: [N * N], strides: [-1], byteOffset: (N * N - 1) * 4 });
  results.push(
    await comparePair(
      'strided read, 1e6 reversed',
      {
        name: 'hand-written reverse loop',
        run: () => sumReversed(data),
      },
      {
        name: 'prepareHost().cursor() walk',
        run: async () => {
          using p = await reversed.prepareHost();
          return sumCursor(p);
        },
      },
      ROUNDS,
    ),
  );
  reversed.dispose();

  printTable('bench:storage (host provider, Node)', results);
  const file = writeResults('storage', results, { elements: N * N, rounds: ROUNDS });
  console.log(`written ${file}`);
});
