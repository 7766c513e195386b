import { describe, expect, it } from 'vitest';
import { readBlob, readStream, writeStream } from '../../src/index.js';
import { planeWithSession, putBlob, spawnAgent, tagged } from './support/plane.js';

describe('smoke', () => {
  it('blob publish and read back (page)', async () => {
    const { dp, s } = await planeWithSession();
    const rev = await putBlob(s, '/a/b', tagged(1000, 1));
    expect(rev).toBe(1);
    expect(await readBlob(s, '/a/b')).toEqual(tagged(1000, 1));
    console.log(JSON.stringify(await dp.stats()));
  });
  it('stream page to page', async () => {
    const { s } = await planeWithSession();
    const [r, w] = await Promise.all([readStream(s, '/s'), writeStream(s, '/s', { capacity: 64 })]);
    const p = w.write(tagged(500, 2)).then(() => w.close());
    const got: number[] = [];
    for (;;) {
      const c = await r.read();
      if (c === null) break;
      got.push(...c);
    }
    await p;
    expect(new Uint8Array(got)).toEqual(tagged(500, 2));
  });
  it('worker to worker stream, blob in worker', async () => {
    const { dp, s } = await planeWithSession();
    const a = await spawnAgent(dp);
    const b = await spawnAgent(dp);
    await a.agent.ensureStream('/x', 1024);
    const [hw, hr] = await Promise.all([a.agent.open('/x', { access: 'write' }), b.agent.open('/x', { access: 'read' })]);
    const [sent, got] = await Promise.all([a.agent.pump(hw, { total: 100000, chunk: 700, seed: 3, sync: true }), b.agent.drain(hr, { chunk: 333, seed: 3, sync: true })]);
    expect(sent).toBe(100000);
    expect(got).toEqual({ bytes: 100000, end: 'eof', mismatchAt: null });
    expect(await a.agent.putBlob('/w/blob', tagged(5000, 4))).toBe(1);
    expect(await b.agent.readBlob('/w/blob')).toEqual(tagged(5000, 4));
    expect(await readBlob(s, '/w/blob')).toEqual(tagged(5000, 4));
    a.terminate();
  });
});
