// Storage hot paths against hand-written loops over the same memory (issue: ownership kernel, point 8).
//   contiguous: sum over prepared host access (asArray) vs a raw Float32Array loop;
//   strided:    sum over the prepared cursor of a transposed 1000x1000 view vs a nested index loop.
// Each tenon round includes preparing and releasing the access, so the ratio also shows that
// preparation costs nothing that grows with the data. Run: npm run bench:storage.
import { it } from 'vitest';
import { createHostProvider, fromArray } from '../src/index.js';
import { comparePair, printTable, writeResults } from './report.js';
import type { PairResult } from './report.js';

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
        run: () => {
          let s = 0;
          for (let i = 0; i < data.length; i++) s += data[i]!;
          return s;
        },
      },
      {
        name: 'prepareHost().asArray() loop',
        run: async () => {
          using p = await tensor.prepareHost();
          if (p.kind !== 'contiguous') throw new Error('expected contiguous');
          const a = p.asArray();
          let s = 0;
          for (let i = 0; i < a.length; i++) s += a[i]!;
          return s;
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
        run: () => {
          let s = 0;
          for (let i = 0; i < N; i++) for (let j = 0; j < N; j++) s += data[j * N + i]!;
          return s;
        },
      },
      {
        name: 'prepareHost().cursor() walk',
        run: async () => {
          using p = await transposed.prepareHost();
          if (p.kind !== 'strided') throw new Error('expected strided');
          let s = 0;
          for (const c = p.cursor(); !c.done; c.advance()) s += c.array[c.index]!;
          return s;
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
        run: () => {
          let s = 0;
          for (let i = 0; i < N; i++) for (let j = 0; j < N; j++) s += data[j * N + i]!;
          return s;
        },
      },
      {
        name: 'prepareHost().runs() walk',
        run: async () => {
          using p = await transposed.prepareHost();
          if (p.kind !== 'strided') throw new Error('expected strided');
          let s = 0;
          for (const r = p.runs(); r.next(); ) {
            const { array, length, stride } = r;
            for (let k = 0, i = r.start; k < length; k++, i += stride) s += array[i]!;
          }
          return s;
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
        run: () => {
          let s = 0;
          for (let i = data.length - 1; i >= 0; i--) s += data[i]!;
          return s;
        },
      },
      {
        name: 'prepareHost().cursor() walk',
        run: async () => {
          using p = await reversed.prepareHost();
          if (p.kind !== 'strided') throw new Error('expected strided');
          let s = 0;
          for (const c = p.cursor(); !c.done; c.advance()) s += c.array[c.index]!;
          return s;
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
