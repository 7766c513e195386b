// Benchmark worker for bench/dataplane.browser-bench.ts. Runs whole producer/consumer/read loops
// inside the worker so nothing but the measured transport moves the bytes:
//   tenon*    descriptors of a data-plane session (writeSync / readSync: Atomics.wait, sync OPFS handles)
//   ringbuf*  ringbuf.js 0.4.0 over a SharedArrayBuffer, with the same futex-style waiting as tenon
//   slots*    plain SharedArrayBuffer memcpy: 16 slots of one chunk, a write and a read counter
//   raw*      a FileSystemSyncAccessHandle on an OPFS file, no data plane in between
import { expose, transferHandlers } from 'comlink';
import { RingBuffer } from 'ringbuf.js';
import { connectSession } from '../src/index.js';
import type { Descriptor, Session } from '../src/index.js';

void transferHandlers;
let session: Session | undefined;
const handles = new Map<number, Descriptor>();
let next = 1;

interface SyncHandle {
  read(b: Uint8Array, o?: { at: number }): number;
  write(b: Uint8Array, o?: { at: number }): number;
  truncate(n: number): void;
  flush(): void;
  close(): void;
}

async function rawHandle(name: string, mode: 'read-only' | 'readwrite'): Promise<SyncHandle> {
  const root = await navigator.storage.getDirectory();
  const fh = await root.getFileHandle(name, { create: true });
  return (fh as unknown as { createSyncAccessHandle(o: { mode: string }): Promise<SyncHandle> }).createSyncAccessHandle({ mode });
}

/** Futex words for the peers that have no waiting of their own (ringbuf.js, slots). */
const DATA = 0;
const SPACE = 1;
const bump = (f: Int32Array, i: number): void => {
  Atomics.add(f, i, 1);
  Atomics.notify(f, i);
};

const api = {
  async connect(port: MessagePort): Promise<void> {
    session = await connectSession(port);
  },
  async open(path: string, access: 'read' | 'write', allocation?: number): Promise<number> {
    const d = await session!.open(path, { access, ...(allocation === undefined ? {} : { create: true, truncate: true, allocation: { length: allocation } }) });
    handles.set(next, d);
    return next++;
  },
  async close(h: number): Promise<void> {
    await handles.get(h)!.close();
    handles.delete(h);
  },
  tenonProduce(h: number, total: number, chunk: number): number {
    const d = handles.get(h)!;
    const src = new Uint8Array(chunk).fill(7);
    let sent = 0;
    while (sent < total) {
      const part = sent % chunk === 0 ? src : src.subarray(sent % chunk);
      sent += d.writeSync(part);
    }
    return sent;
  },
  tenonConsume(h: number, chunk: number): number {
    const d = handles.get(h)!;
    const dst = new Uint8Array(chunk);
    let got = 0;
    let sum = 0;
    for (let n = d.readSync(dst); n > 0; n = d.readSync(dst)) {
      got += n;
      sum = (sum + dst[0]! + dst[n - 1]!) | 0;
    }
    return got + (sum & 0);
  },
  /** Fills a staged blob with writeSync (used once to create the 64 MiB blob). */
  tenonFill(h: number, chunk: number): number {
    const d = handles.get(h)!;
    const src = new Uint8Array(chunk).fill(9);
    let put = 0;
    for (const total = d.info().length!; put < total; ) put += d.writeSync(put + chunk <= total ? src : src.subarray(0, total - put));
    return put;
  },
  async tenonReadBlob(path: string, chunk: number): Promise<number> {
    const d = await session!.open(path);
    const dst = new Uint8Array(chunk);
    let got = 0;
    for (let n = d.readSync(dst); n > 0; n = d.readSync(dst)) got += n;
    await d.close();
    return got;
  },
  async rawWrite(name: string, total: number, chunk: number): Promise<number> {
    const h = await rawHandle(name, 'readwrite');
    const src = new Uint8Array(chunk).fill(9);
    h.truncate(total);
    const at = { at: 0 };
    for (; at.at < total; at.at += chunk) h.write(src, at);
    h.flush();
    h.close();
    return total;
  },
  async rawRead(name: string, chunk: number): Promise<number> {
    const h = await rawHandle(name, 'read-only');
    const dst = new Uint8Array(chunk);
    const at = { at: 0 };
    for (let n = h.read(dst, at); n > 0; n = h.read(dst, at)) at.at += n;
    h.close();
    return at.at;
  },
  ringbufProduce(sab: SharedArrayBuffer, futex: SharedArrayBuffer, total: number, chunk: number): number {
    const rb = new RingBuffer(sab, Uint8Array);
    const f = new Int32Array(futex);
    const src = new Uint8Array(chunk).fill(7);
    let sent = 0;
    while (sent < total) {
      const seq = Atomics.load(f, SPACE);
      const off = sent % chunk;
      const n = rb.push(src, chunk - off, off);
      if (n === 0) {
        Atomics.wait(f, SPACE, seq);
        continue;
      }
      sent += n;
      bump(f, DATA);
    }
    return sent;
  },
  ringbufConsume(sab: SharedArrayBuffer, futex: SharedArrayBuffer, total: number, chunk: number): number {
    const rb = new RingBuffer(sab, Uint8Array);
    const f = new Int32Array(futex);
    const dst = new Uint8Array(chunk);
    let got = 0;
    let sum = 0;
    while (got < total) {
      const seq = Atomics.load(f, DATA);
      const n = rb.pop(dst);
      if (n === 0) {
        Atomics.wait(f, DATA, seq);
        continue;
      }
      got += n;
      sum = (sum + dst[0]! + dst[n - 1]!) | 0;
      bump(f, SPACE);
    }
    return got + (sum & 0);
  },
  slotsProduce(sab: SharedArrayBuffer, total: number, chunk: number, slots: number): number {
    const ctl = new Int32Array(sab, 0, 4);
    const data = new Uint8Array(sab, 16);
    const src = new Uint8Array(chunk).fill(7);
    let w = 0;
    for (let sent = 0; sent < total; sent += chunk) {
      for (;;) {
        const seq = Atomics.load(ctl, 3);
        if (w - Atomics.load(ctl, 1) < slots) break;
        Atomics.wait(ctl, 3, seq);
      }
      data.set(src, (w % slots) * chunk);
      Atomics.store(ctl, 0, ++w);
      bump(ctl, 2);
    }
    return total;
  },
  slotsConsume(sab: SharedArrayBuffer, total: number, chunk: number, slots: number): number {
    const ctl = new Int32Array(sab, 0, 4);
    const data = new Uint8Array(sab, 16);
    const dst = new Uint8Array(chunk);
    let r = 0;
    let sum = 0;
    for (let got = 0; got < total; got += chunk) {
      for (;;) {
        const seq = Atomics.load(ctl, 2);
        if (Atomics.load(ctl, 0) - r > 0) break;
        Atomics.wait(ctl, 2, seq);
      }
      const at = (r % slots) * chunk;
      dst.set(data.subarray(at, at + chunk));
      sum = (sum + dst[0]! + dst[chunk - 1]!) | 0;
      Atomics.store(ctl, 1, ++r);
      bump(ctl, 3);
    }
    return total + (sum & 0);
  },
};

export type BenchWorker = typeof api;
expose(api);
