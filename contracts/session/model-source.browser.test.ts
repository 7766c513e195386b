// Plan: model sources on real OPFS through the data plane (browser lane). A fake fetch serves bytes the
// test chose (with or without Content-Length, short, failing mid-body, HTTP errors) and counts calls.
// Oracles: the published blob holds exactly the source's bytes; a second call for the same source makes
// no request and returns the same path; every failed or aborted download publishes nothing (the path
// stays absent) and a later call downloads again; progress climbs to the total; picked files work the
// same way; readModelSource returns the bytes with progress; different sources get different paths.
import { describe, expect, it } from 'vitest';
import { cacheModelSource, findCachedModelSource, modelSourcePath, readBlob, readModelSource } from '../../src/index.js';
import type { ModelSourceProgress, Session } from '../../src/index.js';
import { expectCodeAsync } from '../support/expect-error.js';
import { planeWithSession } from '../dataplane/support/plane.js';

const URL_A = 'https://models.example/stories/a.bin';

function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 7 + (i >>> 9)) & 255;
  return b;
}

interface FakeOptions {
  status?: number;
  /** Announce this Content-Length (default: the real length); null: no header. */
  length?: number | null;
  encoding?: string;
  /** Fail the body after this many bytes. */
  failAfter?: number;
  chunk?: number;
}

/** A fetch that serves `body` in chunks and counts its calls. */
function fakeFetch(body: Uint8Array, o: FakeOptions = {}): typeof fetch & { calls: number } {
  const f = (async () => {
    f.calls++;
    const chunk = o.chunk ?? 4096;
    let at = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (o.failAfter !== undefined && at >= o.failAfter) {
          controller.error(new TypeError('network error'));
          return;
        }
        if (at >= body.length) {
          controller.close();
          return;
        }
        const end = Math.min(body.length, at + chunk, o.failAfter ?? Infinity);
        controller.enqueue(body.slice(at, end));
        at = end;
      },
    });
    const headers = new Headers();
    const length = o.length === undefined ? body.length : o.length;
    if (length !== null) headers.set('content-length', String(length));
    if (o.encoding !== undefined) headers.set('content-encoding', o.encoding);
    return new Response(o.status !== undefined && o.status >= 400 ? null : stream, { status: o.status ?? 200, headers });
  }) as unknown as typeof fetch & { calls: number };
  f.calls = 0;
  return f;
}

async function absent(store: Session, path: string): Promise<void> {
  await expectCodeAsync(() => store.stat(path), 'ENOENT');
}

describe('model sources on OPFS', () => {
  it('[SHIP-model-source-cache] the first call publishes the bytes; the second makes no request and returns the same blob', async () => {
    const { s } = await planeWithSession();
    const body = bytes(100_003, 1);
    const f = fakeFetch(body);
    const progress: ModelSourceProgress[] = [];
    const first = await cacheModelSource(s, URL_A, { fetch: f, onProgress: (p) => progress.push(p) });
    expect(first).toMatchObject({ fromCache: false, length: body.length, source: URL_A });
    expect(first.path).toBe(await modelSourcePath(URL_A));
    expect(first.path.startsWith('/models/')).toBe(true);
    expect(Array.from(await readBlob(s, first.path))).toEqual(Array.from(body));
    expect(progress[0]).toEqual({ phase: 'download', loaded: 0, total: body.length });
    expect(progress.at(-1)).toEqual({ phase: 'download', loaded: body.length, total: body.length });
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.loaded).toBeGreaterThan(progress[i - 1]!.loaded);
    const second = await cacheModelSource(s, URL_A, { fetch: f });
    expect(second).toEqual({ ...first, fromCache: true });
    expect(f.calls).toBe(1);
    expect(await findCachedModelSource(s, URL_A)).toEqual(second);
    // refresh downloads again and publishes a new revision with the new bytes
    const newer = bytes(5000, 2);
    const again = await cacheModelSource(s, URL_A, { fetch: fakeFetch(newer), refresh: true });
    expect(again).toMatchObject({ fromCache: false, length: 5000, path: first.path });
    expect(Array.from(await readBlob(s, first.path))).toEqual(Array.from(newer));
    // another source, another path
    expect(await modelSourcePath('https://models.example/stories/b.bin')).not.toBe(first.path);
  });

  it('[SHIP-model-source-atomic] HTTP errors, short or failing bodies and aborts publish nothing; a later call downloads again', async () => {
    const { s } = await planeWithSession();
    const body = bytes(50_000, 3);
    const path = await modelSourcePath(URL_A);
    await expectCodeAsync(() => cacheModelSource(s, URL_A, { fetch: fakeFetch(body, { status: 404 }) }), 'ENOENT', 'http-404');
    await expectCodeAsync(() => cacheModelSource(s, URL_A, { fetch: fakeFetch(body, { status: 503 }) }), 'EIO', 'http-503');
    await absent(s, path);
    await expectCodeAsync(() => cacheModelSource(s, URL_A, { fetch: fakeFetch(body, { length: body.length + 10 }) }), 'EIO', 'short-body');
    await absent(s, path);
    await expectCodeAsync(() => cacheModelSource(s, URL_A, { fetch: fakeFetch(body, { length: body.length - 10 }) }), 'EIO', 'long-body');
    await absent(s, path);
    await expectCodeAsync(() => cacheModelSource(s, URL_A, { fetch: fakeFetch(body, { failAfter: 20_000 }) }), 'EIO', 'read-failed');
    await absent(s, path);
    const abort = new AbortController();
    await expectCodeAsync(
      () =>
        cacheModelSource(s, URL_A, {
          fetch: fakeFetch(body),
          signal: abort.signal,
          onProgress: (p) => {
            if (p.loaded >= 16_384) abort.abort();
          },
        }),
      'ECANCELED',
    );
    await absent(s, path);
    expect(await findCachedModelSource(s, URL_A)).toBeUndefined();
    const f = fakeFetch(body);
    expect(await cacheModelSource(s, URL_A, { fetch: f })).toMatchObject({ fromCache: false, length: body.length });
    expect(f.calls).toBe(1);
    expect(Array.from(await readBlob(s, path))).toEqual(Array.from(body));
  });

  it('[SHIP-model-source-cache] without a usable length (none, or a compressed body) the bytes are gathered and published exactly', async () => {
    const { s } = await planeWithSession();
    const body = bytes(30_001, 4);
    const progress: ModelSourceProgress[] = [];
    const a = await cacheModelSource(s, URL_A, { fetch: fakeFetch(body, { length: null }), onProgress: (p) => progress.push(p) });
    expect(a.length).toBe(body.length);
    expect(progress.every((p) => p.total === undefined)).toBe(true);
    expect(Array.from(await readBlob(s, a.path))).toEqual(Array.from(body));
    const other = 'https://models.example/stories/gz.bin';
    const b = await cacheModelSource(s, other, { fetch: fakeFetch(body, { length: 1234, encoding: 'gzip' }) });
    expect(b.length).toBe(body.length);
  });

  it('[SHIP-model-source-cache] a picked file is cached by name, size and time, and read back whole with progress', async () => {
    const { s } = await planeWithSession();
    const body = bytes(9 << 20, 5);
    const file = new File([body as Uint8Array<ArrayBuffer>], 'my model.bin', { lastModified: 1_700_000_000_000 });
    const first = await cacheModelSource(s, file);
    expect(first).toMatchObject({ fromCache: false, length: body.length, source: 'file:my model.bin' });
    expect(first.path.endsWith('-my_model.bin')).toBe(true);
    expect((await cacheModelSource(s, file)).fromCache).toBe(true);
    const touched = new File([body as Uint8Array<ArrayBuffer>], 'my model.bin', { lastModified: 1_700_000_000_001 });
    expect((await cacheModelSource(s, touched)).path).not.toBe(first.path);
    const progress: ModelSourceProgress[] = [];
    const back = await readModelSource(s, first.path, { onProgress: (p) => progress.push(p) });
    expect(back.length).toBe(body.length);
    expect(back.every((v, i) => v === body[i])).toBe(true);
    expect(progress.length).toBeGreaterThan(2);
    expect(progress.at(-1)).toEqual({ phase: 'read', loaded: body.length, total: body.length });
    await expectCodeAsync(() => readModelSource(s, '/models/none'), 'ENOENT');
  });
});
