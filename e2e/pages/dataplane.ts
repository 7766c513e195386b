// A page that uses the data plane only through the public API, for the e2e lane. It exposes a few
// steps on window.tenonE2E that specs call with page.evaluate; the page itself is the authority, and
// big publications run in a dedicated worker (workers/dataplane.worker.ts) with sync OPFS handles.
import { transfer } from 'comlink';
import { connectSession, createDataPlane, fillPattern, patternByte, readBlob, wrapDataPlaneAgent, writeBlob } from '../../src/index.js';
import type { DataPlane, Descriptor, Session } from '../../src/index.js';

let dp: DataPlane | undefined;
let s: Session | undefined;
let workerHandle: number | undefined;
let agent: ReturnType<typeof wrapDataPlaneAgent> | undefined;
const access = { runId: 'e2e', read: ['/'], write: ['/'] };
let pageSeal: Promise<unknown> | undefined;

const api = {
  async init(name: string): Promise<void> {
    dp = await createDataPlane({ name });
    s = await connectSession(dp.createSessionPort(access));
  },
  async put(path: string, seed: number, length: number): Promise<number | undefined> {
    const w = await writeBlob(s!, path, length);
    const b = new Uint8Array(length);
    fillPattern(b, seed, 0);
    await w.write(b);
    return w.seal();
  },
  /** Which pattern seed the whole blob carries, or -1 when it matches none of `seeds` in full. */
  async whichSeed(path: string, seeds: number[]): Promise<number> {
    const b = await readBlob(s!, path);
    for (const seed of seeds) {
      let ok = true;
      for (let i = 0; i < b.length && ok; i += 997) ok = b[i] === patternByte(seed, i);
      if (ok && b.length > 0 && b[b.length - 1] === patternByte(seed, b.length - 1)) return seed;
    }
    return -1;
  },
  stat: (path: string) => s!.stat(path),
  async stats() {
    return dp!.stats();
  },
  /** In a worker: stages a blob of `total` bytes and writes its first `upTo` (writeSync), leaving it open. */
  async startWorkerPublication(path: string, seed: number, total: number, upTo: number): Promise<void> {
    const worker = new Worker(new URL('../../workers/dataplane.worker.ts', import.meta.url), { type: 'module' });
    agent = wrapDataPlaneAgent(worker);
    const port = dp!.createSessionPort(access);
    await agent.connect(transfer(port, [port]));
    workerHandle = await agent.open(path, { access: 'write', truncate: true, create: true, allocation: { length: total } });
    await agent.pump(workerHandle, { total: upTo, chunk: 1 << 20, seed, sync: true, close: false });
  },
  async workerProgress(): Promise<number> {
    return (await agent!.info(workerHandle!)).offset ?? 0;
  },
  /** Stages `total` bytes on the page and starts the clean close (publication) without awaiting it. */
  async startPageSeal(path: string, seed: number, total: number): Promise<void> {
    const w = await writeBlob(s!, path, total);
    const b = new Uint8Array(total);
    fillPattern(b, seed, 0);
    await w.write(b);
    pageSeal = w.seal();
  },
  /** Opens a staged writer, writes to it and drops it without close (the FinalizationRegistry case). */
  async dropWriter(path: string): Promise<void> {
    let d: Descriptor | undefined = await s!.open(path, { access: 'write', create: true, allocation: { length: 8 } });
    await d.write(new Uint8Array(8).fill(1));
    d = undefined;
    void d;
  },
};

declare global {
  interface Window {
    tenonE2E: typeof api;
  }
}
window.tenonE2E = api;
void pageSeal;
document.getElementById('status')!.textContent = 'ready';
