// Plan: legal state sequences (seed 004 §17.1). Real descriptors are driven by actions whose
// preconditions read only the test's own ledger (support/ledger.ts); after every action the harness
// probes public invariants (offsets equal the sum of returned counts, bytes are an exact tagged prefix,
// canaries intact, namespace revisions as published, one grant per live handle, EOF/fault sticky).
// Three dimensions: fast-check command sequences (seeded, shrinking), bounded exhaustive sequences of
// length <= 3 over reduced domains, and deep runs of >= 1,000 operations through a 64-byte ring
// (hundreds of wraparounds, the 32-bit cursor wrap) with repeated publication. Transition coverage is
// recorded throughout and checked against the lifecycle states every operation applies to.
import { afterAll, describe, expect, it } from 'vitest';
import { connectSession, createDataPlane } from '../../src/index.js';
import { fc, fcParams, FC_SEED } from '../support/fc.js';
import { act, newLedger, probe, settle, step } from './support/ledger.js';
import type { Action, Ledger, World } from './support/ledger.js';
import { EVERYTHING, onCleanup, planeName } from './support/plane.js';

const coverage = new Map<string, number>();

async function newWorld(probeEvery = 1): Promise<World> {
  const dp = await createDataPlane({ name: planeName('h') });
  onCleanup(() => dp.close());
  const s = await connectSession(dp.createSessionPort(EVERYTHING));
  return { dp, s, coverage, probeEvery };
}

async function endWorld(l: Ledger, w: World): Promise<void> {
  await settle(l, w);
  await w.s.close();
  await w.dp.close();
}

/** Runs a sequence from a fresh ledger; actions whose precondition fails are skipped. */
let sequenceRoot = 0;
async function runSequence(w: World, setup: readonly Action[], seq: readonly Action[]): Promise<Ledger> {
  const l = newLedger(`/x${sequenceRoot++}`);
  for (const a of [...setup, ...seq]) await step(l, w, a);
  await settle(l, w);
  return l;
}

class Command implements fc.AsyncCommand<Ledger, World> {
  constructor(readonly a: Action) {}
  check(m: Readonly<Ledger>): boolean {
    return this.a.pre(m as Ledger);
  }
  async run(m: Ledger, w: World): Promise<void> {
    await step(m, w, this.a);
  }
  toString(): string {
    return this.a.name;
  }
}

const size = fc.integer({ min: 0, max: 90 });
const idx = fc.nat(7);
const commands = [
  fc.tuple(idx, fc.integer({ min: 0, max: 200 })).map(([p, n]) => new Command(act.put(p, n))),
  idx.map((p) => new Command(act.openReader(p))),
  fc.tuple(idx, size).map(([i, n]) => new Command(act.read(i, n))),
  fc.tuple(idx, fc.nat(300), fc.nat(300)).map(([i, a, b]) => new Command(act.mapReader(i, a, b))),
  idx.map((i) => new Command(act.closeReader(i))),
  fc.tuple(idx, fc.integer({ min: 0, max: 120 })).map(([p, n]) => new Command(act.openWriter(p, n))),
  fc.tuple(idx, size).map(([i, n]) => new Command(act.write(i, n))),
  idx.map((i) => new Command(act.mapWriter(i))),
  idx.map((i) => new Command(act.seal(i))),
  idx.map((i) => new Command(act.abortWriter(i))),
  fc.tuple(idx, fc.nat(2)).map(([p, c]) => new Command(act.openPair(p, c))),
  fc.tuple(idx, fc.integer({ min: 1, max: 90 })).map(([k, n]) => new Command(act.swrite(k, n))),
  fc.tuple(idx, fc.integer({ min: 1, max: 90 })).map(([k, n]) => new Command(act.sread(k, n))),
  idx.map((k) => new Command(act.closeWriter(k))),
  idx.map((k) => new Command(act.abortStreamWriter(k))),
  idx.map((k) => new Command(act.closeStreamReader(k))),
  idx.map((p) => new Command(act.replace(p))),
];

/** Every (lifecycle state, operation) pair that applies; each must be exercised (§17.1 coverage). */
const REQUIRED = [
  ...['fresh', 'mid', 'eof'].flatMap((s) => ['read', 'map', 'close'].map((op) => `blob-reader:${s}:${op}`)),
  ...['empty', 'partial'].flatMap((s) => ['write', 'map'].map((op) => `blob-writer:${s}:${op}`)),
  ...['empty', 'partial', 'full'].flatMap((s) => ['close', 'abort'].map((op) => `blob-writer:${s}:${op}`)),
  ...['empty', 'has-data', 'full'].flatMap((s) => ['read', 'write', 'close-writer', 'abort-writer', 'close-reader', 'replace'].map((op) => `stream:${s}:${op}`)),
  ...['closing-closed', 'drained-closed', 'closing-aborted', 'drained-aborted'].flatMap((s) => ['read', 'close-reader'].map((op) => `stream:${s}:${op}`)),
  'stream:reader-closed:write',
  'stream:reader-closed:close-writer',
  'stream:stale:read',
  'stream:stale:write',
  'stream:stale:close-writer',
  'stream:stale:close-reader',
  'namespace:put',
  'blob-reader:none:open',
  'blob-writer:none:open',
  'stream:none:open',
];

describe('legal state sequences', () => {
  it('[IO6][IO7][IO1][IO2][B1][B7][S3][S4][N2][N3] property: random legal sequences keep every public invariant (fast-check, seeded, shrinking)', async () => {
    console.info(`fast-check seed ${FC_SEED}`);
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 30 }), async (cmds) => {
        const w = await newWorld();
        const l = newLedger();
        await fc.asyncModelRun(() => ({ model: l, real: w }), cmds);
        await endWorld(l, w);
      }),
      fcParams(40),
    );
  });

  it('[S8][S9][S10][S6][S7][S11][C1][C3] bounded exhaustive: every stream sequence of length <= 3 over a reduced domain', async () => {
    const domain = [act.swrite(0, 1), act.swrite(0, 60), act.sread(0, 1), act.sread(0, 64), act.closeWriter(0), act.abortStreamWriter(0), act.closeStreamReader(0), act.replace(0)];
    const w = await newWorld();
    let runs = 0;
    for (let len = 1; len <= 3; len++) {
      for (let code = 0; code < domain.length ** len; code++) {
        const seq: Action[] = [];
        for (let k = 0, c = code; k < len; k++, c = Math.floor(c / domain.length)) seq.push(domain[c % domain.length]!);
        await runSequence(w, [act.openPair(0, 2)], seq);
        runs++;
      }
    }
    expect(runs).toBe(8 + 64 + 512);
    await w.s.close();
  });

  it('[B4][B5][B6][B7][B10][M5][M6] bounded exhaustive: every blob writer and reader sequence of length <= 3', async () => {
    const w = await newWorld();
    const writerDomain = [act.write(0, 1), act.write(0, 100), act.mapWriter(0), act.seal(0), act.abortWriter(0)];
    const readerDomain = [act.read(0, 1), act.read(0, 100), act.mapReader(0, 5, 9), act.closeReader(0)];
    let runs = 0;
    for (const [setup, domain] of [
      [[act.openWriter(0, 50)], writerDomain],
      [[act.put(0, 30), act.openReader(0)], readerDomain],
    ] as const) {
      for (let len = 1; len <= 3; len++) {
        for (let code = 0; code < domain.length ** len; code++) {
          const seq: Action[] = [];
          for (let k = 0, c = code; k < len; k++, c = Math.floor(c / domain.length)) seq.push(domain[c % domain.length]!);
          await runSequence(w, setup, seq);
          runs++;
        }
      }
    }
    expect(runs).toBe(5 + 25 + 125 + 4 + 16 + 64);
    await w.s.close();
  });

  it('[RING5][IO6][B7][N2] deep run: 1,500 operations through a 64-byte ring with repeated publication and retained old revisions', async () => {
    const w = await newWorld(50);
    const l = newLedger();
    let rnd = FC_SEED >>> 0;
    const next = (n: number): number => {
      rnd = (Math.imul(rnd, 1664525) + 1013904223) >>> 0;
      return rnd % n;
    };
    await step(l, w, act.openPair(0, 2));
    const pair = l.pairs[0]!;
    expect(pair.capacity).toBe(64);
    let puts = 0;
    while (l.ops < 1500) {
      const roll = next(100);
      if (roll < 38) await step(l, w, act.swrite(0, 1 + next(90)));
      else if (roll < 80) await step(l, w, act.sread(0, 1 + next(90)));
      else if (roll < 88) {
        await step(l, w, act.put(next(2), next(300)));
        puts++;
      } else if (roll < 92 && l.readers.filter((r) => !r.closed).length < 12) await step(l, w, act.openReader(next(2)));
      else if (roll < 97) await step(l, w, act.read(next(12), 1 + next(120)));
      else await step(l, w, act.mapReader(next(12), next(300), next(300)));
    }
    // old revisions are still whole for readers that kept them
    for (const r of l.readers) while (!r.closed && r.got < r.content.length) await step(l, w, act.read(l.readers.filter((x) => !x.closed).indexOf(r), 200));
    expect(l.readers.filter((r) => !r.closed).length).toBeGreaterThan(0);
    await probe(l, w, true);
    expect(pair.received).toBeGreaterThan(4096 + 100 * 64); // past the 32-bit cursor wrap and ~100 laps of the ring
    expect(puts).toBeGreaterThan(100);
    expect(Math.max(...[...l.published.values()].map((p) => p.revision))).toBeGreaterThan(50);
    await endWorld(l, w);
  });

  afterAll(() => {
    console.info(`transition coverage: ${coverage.size} pairs, ${[...coverage.values()].reduce((a, b) => a + b, 0)} transitions`);
  });

  it('[IO6][B7][S4] transition coverage: every operation ran from every lifecycle state it applies to', () => {
    const missing = REQUIRED.filter((k) => !coverage.has(k));
    expect(missing).toEqual([]);
  });
});
