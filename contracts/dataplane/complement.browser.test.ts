// Plan: the forbidden-action complement (seed 004 §17.2). Each reachable state is built with legal
// public calls (the harness's actions); in it, every forbidden action of the required negative families
// is tried once and must fail with its exact code, while nothing observable changes: descriptor offsets
// and states, ring occupancy, EOF, mappings, the plane's grants/waiters/rings/files/bindings, namespace
// revisions, and the bytes around the caller's region. After each failure an unrelated legal operation
// must succeed, and at the end the state's own legal continuation must still work (unless the state is
// terminal by contract).
import { describe, expect, it } from 'vitest';
import { connectSession, createDataPlane, hostRegion, readBlob } from '../../src/index.js';
import type { Mapping, MappedBuffer, Session, TenonErrorCode } from '../../src/index.js';
import { catchTenonAsync } from '../support/expect-error.js';
import { act, newLedger, step } from './support/ledger.js';
import type { Ledger, World } from './support/ledger.js';
import { EVERYTHING, canaried, onCleanup, pageSession, planeName, putBlob, tagged } from './support/plane.js';

interface Ctx {
  readonly l: Ledger;
  readonly w: World;
  /** A separate session that only looks (the state's own session may be the thing under test). */
  readonly observer: Session;
  mapping?: Mapping;
  exported?: MappedBuffer;
}

interface Forbidden {
  readonly name: string;
  readonly code: TenonErrorCode;
  readonly reason?: string;
  /** Receives a canaried scratch window it may pass as the caller region. */
  run(ctx: Ctx, window: Uint8Array): Promise<unknown>;
}

interface State {
  readonly name: string;
  build(ctx: Ctx): Promise<void>;
  readonly forbidden: (ctx: Ctx) => Forbidden[];
  /** The state's own next legal step (omitted for terminal states). */
  continueLegally?(ctx: Ctx): Promise<void>;
}

const f = (name: string, code: TenonErrorCode, run: Forbidden['run'], reason?: string): Forbidden => ({ name, code, run, ...(reason === undefined ? {} : { reason }) });

async function snapshot(ctx: Ctx): Promise<unknown> {
  const { l, w } = ctx;
  const infos = [...l.readers.map((r) => r.d), ...l.writers.map((x) => x.d), ...l.pairs.flatMap((p) => [p.r, p.w])].map((d) => d.info());
  const stats = { ...(await w.dp.stats()), controlMessages: 0 };
  const names = await Promise.all([...l.published.keys()].map((p) => ctx.observer.stat(p)));
  return { infos, stats, names };
}

/** Namespace-level forbidden actions: valid in every state, touching nothing the state holds. */
function namespaceForbidden(ctx: Ctx): Forbidden[] {
  const s = ctx.w.s;
  const root = ctx.l.root;
  return [
    f('open relative path', 'EINVAL', () => s.open('rel/x'), 'relative'),
    f('open root', 'EINVAL', () => s.open('/'), 'root'),
    f('open dot segment', 'EINVAL', () => s.open(`${root}/../x`), 'dot-segment'),
    f('open empty segment', 'EINVAL', () => s.open(`${root}//x`), 'empty-segment'),
    f('open NUL', 'EINVAL', () => s.open(`${root}/a\u0000`), 'control-character'),
    f('open missing', 'ENOENT', () => s.open(`${root}/missing`), 'missing'),
    f('open nonblocking', 'ENOTSUP', () => s.open(`${root}/a`, { nonblocking: true }), 'nonblocking'),
    f('exclusive without create', 'EINVAL', () => s.open(`${root}/n`, { access: 'write', exclusive: true }), 'exclusive-without-create'),
    f('create read-only', 'EINVAL', () => s.open(`${root}/n`, { create: true }), 'create-read-only'),
    f('writable open without allocation', 'ENOTSUP', () => s.open(`${root}/n`, { access: 'write', create: true }), 'growth'),
    f('stat malformed', 'EINVAL', () => s.stat('x'), 'relative'),
    f('ensure stream malformed capacity', 'EINVAL', () => s.ensureStream(`${root}/q`, { capacity: 100 }), 'bad-capacity'),
    f('unauthorized open', 'EACCES', () => ctx.w.restricted!.open(`${root}/a`), 'not-authorized'),
  ];
}

function readerForbidden(ctx: Ctx): Forbidden[] {
  const d = ctx.l.readers[0]!.d;
  return [
    f('write on read-only', 'EBADF', () => d.write(Uint8Array.of(1)), 'not-writable'),
    f('writeFrom on read-only', 'EBADF', (_c, win) => d.writeFrom(hostRegion(win)), 'not-writable'),
    f('flush on read-only', 'EBADF', () => d.flush(), 'not-writable'),
    f('map read-write on read-only', 'EACCES', () => d.map({ protection: 'read-write' }), 'protection'),
    f('map past the end', 'EINVAL', () => d.map({ protection: 'read', offset: 10, length: 1000 }), 'map-range'),
    f('map empty', 'EINVAL', () => d.map({ protection: 'read', length: 0 }), 'map-range'),
    f('map private', 'ENOTSUP', () => d.map({ protection: 'read', sharing: 'private' }), 'sharing'),
    f('map to a device', 'ENOTSUP', () => d.map({ protection: 'read', target: { device: 'gpu' } }), 'target'),
    f('readInto read-only region', 'EACCES', (_c, win) => d.readInto(hostRegion(win, { writable: false })), 'region-not-writable'),
    f('readInto out of region', 'EINVAL', (_c, win) => d.readInto(hostRegion(win), { offset: 4, length: win.length }), 'region-range'),
    f('readSync outside a worker', 'ENOTSUP', (_c, win) => Promise.resolve().then(() => d.readSync(win)), 'not-in-worker'),
    f('read into non-bytes', 'EINVAL', () => d.read([1, 2] as never), 'not-bytes'),
  ];
}

function closedForbidden(name: string, get: (ctx: Ctx) => { read(b: Uint8Array): Promise<number>; write(b: Uint8Array): Promise<number>; close(): Promise<void>; abort(): Promise<void>; map(r: never): Promise<unknown> }): (ctx: Ctx) => Forbidden[] {
  return (ctx) => {
    const d = get(ctx);
    return [
      f(`${name}: read after close`, 'EBADF', (_c, win) => d.read(win), 'closed'),
      f(`${name}: write after close`, 'EBADF', () => d.write(Uint8Array.of(1)), 'closed'),
      f(`${name}: close again`, 'EBADF', () => d.close(), 'closed'),
      f(`${name}: abort after the end`, 'EBADF', () => d.abort(), 'closed'),
      f(`${name}: map after close`, 'EBADF', () => d.map({ protection: 'read' } as never), 'closed'),
    ];
  };
}

function writerForbidden(ctx: Ctx): Forbidden[] {
  const x = ctx.l.writers[0]!;
  return [
    f('read on write-only', 'EBADF', (_c, win) => x.d.read(win), 'not-readable'),
    f('write past the allocation', 'ENOTSUP', () => x.d.write(new Uint8Array(x.length - x.offset + 1)), 'growth'),
    f('map read on write-only', 'EACCES', () => x.d.map({ protection: 'read' }), 'protection'),
    f('map read-write past the end', 'EINVAL', () => x.d.map({ protection: 'read-write', offset: 1, length: x.length }), 'map-range'),
    f('writeFrom unreadable region', 'EACCES', (_c, win) => x.d.writeFrom(hostRegion(win, { readable: false })), 'region-not-readable'),
    f('writeSync outside a worker', 'ENOTSUP', () => Promise.resolve().then(() => x.d.writeSync(Uint8Array.of(1))), 'not-in-worker'),
  ];
}

function mappedWriterForbidden(ctx: Ctx): Forbidden[] {
  const x = ctx.l.writers[0]!;
  return [
    f('second writable mapping', 'EBUSY', () => x.d.map({ protection: 'read-write' }), 'writable-mapping-live'),
    f('unmap with a live export', 'EBUSY', () => ctx.mapping!.close(), 'exports-live'),
    f('read on write-only', 'EBADF', (_c, win) => x.d.read(win), 'not-readable'),
  ];
}

function streamReaderForbidden(ctx: Ctx): Forbidden[] {
  const p = ctx.l.pairs[0]!;
  return [
    f('write on stream reader', 'EBADF', () => p.r.write(Uint8Array.of(1)), 'not-writable'),
    f('map a stream', 'ENODEV', () => p.r.map({ protection: 'read' }), 'not-mappable'),
    f('second reader', 'EBUSY', () => ctx.w.s.open(p.path), 'role-taken'),
    f('read-write stream open', 'ENOTSUP', () => ctx.w.s.open(p.path, { access: 'read-write' }), 'stream-read-write'),
    f('allocation on a stream', 'EINVAL', () => ctx.w.s.open(p.path, { access: 'write', truncate: true, allocation: { length: 1 } }), 'allocation-misuse'),
    f('blob-typed open of a stream', 'ENXIO', () => ctx.w.s.open(p.path, { kind: 'blob' }), 'wrong-kind'),
    f('readSync outside a worker', 'ENOTSUP', (_c, win) => Promise.resolve().then(() => p.r.readSync(win)), 'not-in-worker'),
  ];
}

function streamWriterForbidden(ctx: Ctx): Forbidden[] {
  const p = ctx.l.pairs[0]!;
  return [
    f('read on stream writer', 'EBADF', (_c, win) => p.w.read(win), 'not-readable'),
    f('map a stream writer', 'ENODEV', () => p.w.map({ protection: 'read-write' }), 'not-mappable'),
    f('second writer', 'EBUSY', () => ctx.w.s.open(p.path, { access: 'write' }), 'role-taken'),
    f('ensure a blob as stream', 'ENXIO', () => ctx.w.s.ensureStream('/unrelated/b'), 'wrong-kind'),
  ];
}

const pairOf = (ctx: Ctx) => ctx.l.pairs[0]!;
const STATES: State[] = [
  {
    name: 'blob reader, fresh',
    build: async ({ l, w }) => {
      await step(l, w, act.put(0, 50));
      await step(l, w, act.openReader(0));
    },
    forbidden: (ctx) => [...readerForbidden(ctx), ...namespaceForbidden(ctx)],
    continueLegally: async ({ l, w }) => void (await step(l, w, act.read(0, 100))),
  },
  {
    name: 'blob reader, mid',
    build: async ({ l, w }) => {
      await step(l, w, act.put(0, 50));
      await step(l, w, act.openReader(0));
      await step(l, w, act.read(0, 20));
    },
    forbidden: (ctx) => [...readerForbidden(ctx), f('non-truncating write of a blob', 'ENOTSUP', () => ctx.w.s.open(ctx.l.readers[0]!.path, { access: 'write' }), 'non-truncating-write'), f('exclusive create of an existing blob', 'EEXIST', () => ctx.w.s.open(ctx.l.readers[0]!.path, { access: 'write', create: true, exclusive: true, allocation: { length: 1 } }), 'exists')],
    continueLegally: async ({ l, w }) => void (await step(l, w, act.read(0, 100))),
  },
  {
    name: 'blob reader, at EOF',
    build: async ({ l, w }) => {
      await step(l, w, act.put(0, 50));
      await step(l, w, act.openReader(0));
      await step(l, w, act.read(0, 100));
    },
    forbidden: readerForbidden,
    continueLegally: async ({ l, w }) => void (await step(l, w, act.read(0, 10))),
  },
  {
    name: 'blob reader, closed',
    build: async ({ l, w }) => {
      await step(l, w, act.put(0, 50));
      await step(l, w, act.openReader(0));
      await step(l, w, act.closeReader(0));
    },
    forbidden: closedForbidden('reader', (ctx) => ctx.l.readers[0]!.d),
  },
  ...(['empty', 'partial', 'full'] as const).map(
    (fill): State => ({
      name: `blob writer, ${fill}`,
      build: async ({ l, w }) => {
        await step(l, w, act.openWriter(0, 40));
        if (fill !== 'empty') await step(l, w, act.write(0, fill === 'partial' ? 10 : 40));
      },
      forbidden: (ctx) => [...writerForbidden(ctx), ...(fill === 'partial' ? namespaceForbidden(ctx) : [])],
      continueLegally: async ({ l, w }) => {
        await step(l, w, act.write(0, 40));
        await step(l, w, act.seal(0));
        expect(await readBlob(w.s, l.writers[0]!.path)).toEqual(tagged(40, l.writers[0]!.seed));
      },
    }),
  ),
  {
    name: 'blob writer with a live writable mapping and export',
    build: async (ctx) => {
      await step(ctx.l, ctx.w, act.openWriter(0, 40));
      ctx.mapping = await ctx.l.writers[0]!.d.map({ protection: 'read-write' });
      ctx.exported = await ctx.mapping.export({ writable: true });
    },
    forbidden: mappedWriterForbidden,
    continueLegally: async (ctx) => {
      ctx.exported!.release();
      await ctx.mapping!.close();
      await step(ctx.l, ctx.w, act.seal(0));
    },
  },
  {
    name: 'blob writer, published',
    build: async ({ l, w }) => {
      await step(l, w, act.openWriter(0, 8));
      await step(l, w, act.write(0, 8));
      await step(l, w, act.seal(0));
    },
    forbidden: closedForbidden('published writer', (ctx) => ctx.l.writers[0]!.d),
  },
  {
    name: 'blob writer, aborted',
    build: async ({ l, w }) => {
      await step(l, w, act.openWriter(0, 8));
      await step(l, w, act.write(0, 3));
      await step(l, w, act.abortWriter(0));
    },
    forbidden: (ctx) => [...closedForbidden('aborted writer', (c) => c.l.writers[0]!.d)(ctx), f('stat of the aborted path', 'ENOENT', () => ctx.w.s.stat(ctx.l.writers[0]!.path), 'missing')],
  },
  ...(['empty', 'has-data', 'full'] as const).map(
    (fill): State => ({
      name: `stream, ${fill}`,
      build: async ({ l, w }) => {
        await step(l, w, act.openPair(0, 2));
        if (fill === 'has-data') await step(l, w, act.swrite(0, 10));
        if (fill === 'full') await step(l, w, act.swrite(0, 90));
      },
      forbidden: (ctx) => [...streamReaderForbidden(ctx), ...streamWriterForbidden(ctx)],
      continueLegally: async ({ l, w }) => {
        await step(l, w, act.swrite(0, 5));
        await step(l, w, act.sread(0, 90));
      },
    }),
  ),
  {
    name: 'stream, reader closed',
    build: async ({ l, w }) => {
      await step(l, w, act.openPair(0, 2));
      await step(l, w, act.swrite(0, 10));
      await step(l, w, act.closeStreamReader(0));
    },
    forbidden: (ctx) => [
      f('write after the reader closed', 'EPIPE', () => pairOf(ctx).w.write(Uint8Array.of(1)), 'peer-closed'),
      f('flush after the reader closed', 'EPIPE', () => pairOf(ctx).w.flush(), 'peer-closed'),
      f('read on the closed reader', 'EBADF', (_c, win) => pairOf(ctx).r.read(win), 'closed'),
    ],
    continueLegally: async ({ l, w }) => void (await step(l, w, act.closeWriter(0))),
  },
  {
    name: 'stream, writer closed with data queued',
    build: async ({ l, w }) => {
      await step(l, w, act.openPair(0, 2));
      await step(l, w, act.swrite(0, 10));
      await step(l, w, act.closeWriter(0));
    },
    forbidden: (ctx) => [
      f('write after own close', 'EBADF', () => pairOf(ctx).w.write(Uint8Array.of(1)), 'closed'),
      f('close the writer again', 'EBADF', () => pairOf(ctx).w.close(), 'closed'),
      f('write on the reader', 'EBADF', () => pairOf(ctx).r.write(Uint8Array.of(1)), 'not-writable'),
    ],
    continueLegally: async ({ l, w }) => {
      await step(l, w, act.sread(0, 90));
      await step(l, w, act.sread(0, 90));
      expect(l.pairs[0]!.eofSeen).toBe(true);
    },
  },
  {
    name: 'stream, writer aborted and fault observed',
    build: async ({ l, w }) => {
      await step(l, w, act.openPair(0, 2));
      await step(l, w, act.swrite(0, 4));
      await step(l, w, act.abortStreamWriter(0));
      await step(l, w, act.sread(0, 90));
      await step(l, w, act.sread(0, 90));
    },
    forbidden: (ctx) => [f('read after the fault', 'ECONNRESET', (_c, win) => pairOf(ctx).r.read(win), 'peer-aborted'), f('abort the aborted writer', 'EBADF', () => pairOf(ctx).w.abort(), 'closed')],
    continueLegally: async ({ l, w }) => void (await step(l, w, act.closeStreamReader(0))),
  },
  {
    name: 'stream, replaced (stale incarnation)',
    build: async ({ l, w }) => {
      await step(l, w, act.openPair(0, 2));
      await step(l, w, act.swrite(0, 4));
      await step(l, w, act.replace(0));
    },
    forbidden: (ctx) => [
      f('read a stale incarnation', 'ESTALE', (_c, win) => pairOf(ctx).r.read(win), 'replaced'),
      f('write a stale incarnation', 'ESTALE', () => pairOf(ctx).w.write(Uint8Array.of(1)), 'replaced'),
    ],
    continueLegally: async ({ l, w }) => {
      await step(l, w, act.openPair(0, 2)); // the new incarnation pairs normally beside the stale ends
      await step(l, w, act.swrite(1, 3));
      await step(l, w, act.sread(1, 3));
    },
  },
  {
    name: 'session closed',
    build: async (ctx) => {
      await step(ctx.l, ctx.w, act.put(0, 4));
      await ctx.w.s.close();
    },
    forbidden: (ctx) => [
      f('open after session close', 'EBADF', () => ctx.w.s.open(`${ctx.l.root}/a`), 'session-closed'),
      f('ensure after session close', 'EBADF', () => ctx.w.s.ensureStream(`${ctx.l.root}/z`), 'session-closed'),
      f('replace after session close', 'EBADF', () => ctx.w.s.replaceStream(`${ctx.l.root}/z`), 'session-closed'),
    ],
  },
];

describe('forbidden-action complement', () => {
  it('[E4][O7][IO4][IO8][B4][M2][M3][M4][M7][M12][S6][S7][S12][K4][OP4][OP5][N5] in every reachable state, each forbidden action fails with its exact code and changes nothing', async () => {
    const dp = await createDataPlane({ name: planeName('cmp') });
    onCleanup(() => dp.close());
    const restricted = await pageSession(dp, { runId: 'r1', read: ['/nothing-here'], write: [] });
    const helper = await pageSession(dp);
    await putBlob(helper, '/unrelated/b', tagged(64, 99));
    let tried = 0;
    for (const [i, state] of STATES.entries()) {
      const s = await connectSession(dp.createSessionPort(EVERYTHING));
      onCleanup(() => s.close());
      const ctx: Ctx = { observer: helper, l: newLedger(`/c${i}`), w: { dp, s, coverage: new Map(), probeEvery: Number.MAX_SAFE_INTEGER, restricted } };
      await state.build(ctx);
      for (const bad of state.forbidden(ctx)) {
        const before = await snapshot(ctx);
        const scratch = canaried(16);
        const snap = scratch.all.slice();
        const err = await catchTenonAsync(() => bad.run(ctx, scratch.window)).catch((e: Error) => {
          throw new Error(`${state.name}: ${bad.name}: ${e.message}`);
        });
        expect({ state: state.name, action: bad.name, code: err.code, reason: bad.reason === undefined ? undefined : err.reason }).toEqual({
          state: state.name,
          action: bad.name,
          code: bad.code,
          reason: bad.reason,
        });
        expect(scratch.all, `${state.name}: ${bad.name} touched the caller region`).toEqual(snap);
        expect(await snapshot(ctx), `${state.name}: ${bad.name} changed observable state`).toEqual(before);
        expect(await readBlob(helper, '/unrelated/b')).toEqual(tagged(64, 99)); // an unrelated legal operation
        tried++;
      }
      await state.continueLegally?.(ctx);
    }
    console.info(`complement: ${tried} forbidden actions across ${STATES.length} states`);
    expect(tried).toBeGreaterThan(120);
  });
});
