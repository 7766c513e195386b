// A data-plane session driven from another context over comlink (the worker side of
// workers/dataplane.worker.ts, and its page-side wrapper). The worker owns the session and its
// descriptors; callers get numeric handles local to that worker. pump/drain run whole producer or
// consumer loops inside the worker so bytes never cross postMessage (tests and benchmarks use them).
import { expose, transferHandlers, wrap } from 'comlink';
import type { Remote } from 'comlink';
import { TenonError } from '../errors.js';
import type { TenonErrorCode } from '../errors.js';
import type { AgentIoOptions, AgentOpenOptions, DataPlaneAgent, DrainOptions, DrainResult, PumpOptions } from './agent-protocol.js';
import type { Descriptor } from './descriptor.js';
import { dpError } from './errors.js';
import { connectSession } from './session.js';
import type { Session } from './session.js';
import { readBlob, writeAll, writeBlob } from './wrappers.js';

/** Byte `i` of pattern stream `seed`: position-dependent so loss, duplication or reordering shows. */
export function patternByte(seed: number, i: number): number {
  return (seed + i + (i >>> 8) * 31 + (i >>> 16) * 17) & 255;
}

export function fillPattern(dst: Uint8Array, seed: number, start: number): void {
  for (let k = 0; k < dst.length; k++) dst[k] = patternByte(seed, start + k);
}

interface WireError {
  readonly isError: true;
  readonly value: { readonly message: string; readonly name: string; readonly stack?: string; readonly code?: TenonErrorCode; readonly op?: string; readonly reason?: string; readonly path?: string };
}

let installed = false;
/** Keeps TenonError codes across comlink (both sides must call this; idempotent). */
export function installErrorTransfer(): void {
  if (installed) return;
  installed = true;
  const base = transferHandlers.get('throw')!;
  transferHandlers.set('throw', {
    canHandle: base.canHandle,
    serialize(v: unknown) {
      const [wire, transfer] = base.serialize(v) as [WireError, Transferable[]];
      const err = (v as { value: unknown }).value;
      if (err instanceof TenonError && wire.isError) {
        return [{ isError: true, value: { ...wire.value, code: err.code, op: err.op, reason: err.reason, path: err.path } }, transfer];
      }
      return [wire, transfer];
    },
    deserialize(w: unknown) {
      const wire = w as WireError;
      if (wire.isError && wire.value.code !== undefined) {
        throw new TenonError(wire.value.code, wire.value.message, {
          op: wire.value.op ?? 'agent',
          ...(wire.value.reason === undefined ? {} : { reason: wire.value.reason }),
          ...(wire.value.path === undefined ? {} : { path: wire.value.path }),
        });
      }
      return base.deserialize(w);
    },
  });
}

class Agent implements DataPlaneAgent {
  #session: Session | undefined;
  readonly #handles = new Map<number, Descriptor>();
  readonly #cancels = new Map<string, AbortController>();
  #next = 1;

  #s(): Session {
    if (this.#session === undefined) throw dpError('EBADF', 'agent', 'no session attached', { reason: 'no-session' });
    return this.#session;
  }

  #d(h: number): Descriptor {
    const d = this.#handles.get(h);
    if (d === undefined) throw dpError('EBADF', 'agent', 'unknown handle', { reason: 'unknown-handle' });
    return d;
  }

  #signal(key: string | undefined): AbortSignal | undefined {
    if (key === undefined) return undefined;
    const c = new AbortController();
    this.#cancels.set(key, c);
    return c.signal;
  }

  async connect(port: MessagePort): Promise<{ runId: string }> {
    this.#session = await connectSession(port);
    return { runId: this.#session.runId };
  }

  async open(path: string, options: AgentOpenOptions = {}): Promise<number> {
    const { cancelKey, ...rest } = options;
    const signal = this.#signal(cancelKey);
    const d = await this.#s().open(path, { ...rest, ...(signal === undefined ? {} : { signal }) });
    const h = this.#next++;
    this.#handles.set(h, d);
    return h;
  }

  cancel(key: string): void {
    this.#cancels.get(key)?.abort();
    this.#cancels.delete(key);
  }

  async read(h: number, max: number, o: AgentIoOptions = {}): Promise<Uint8Array> {
    const d = this.#d(h);
    const buf = new Uint8Array(max);
    const signal = this.#signal(o.cancelKey);
    const n = o.sync ? d.readSync(buf) : await d.read(buf, signal === undefined ? undefined : { signal });
    return buf.slice(0, n);
  }

  async write(h: number, bytes: Uint8Array, o: AgentIoOptions = {}): Promise<number> {
    const d = this.#d(h);
    const signal = this.#signal(o.cancelKey);
    return o.sync ? d.writeSync(bytes) : d.write(bytes, signal === undefined ? undefined : { signal });
  }

  writeAll(h: number, bytes: Uint8Array): Promise<number> {
    return writeAll(this.#d(h), bytes);
  }

  flush(h: number): Promise<void> {
    return this.#d(h).flush();
  }

  async close(h: number): Promise<void> {
    await this.#d(h).close();
  }

  async abort(h: number): Promise<void> {
    await this.#d(h).abort();
  }

  info(h: number) {
    return this.#d(h).info();
  }

  ensureStream(path: string, capacity?: number): Promise<boolean> {
    return this.#s().ensureStream(path, capacity === undefined ? {} : { capacity });
  }

  replaceStream(path: string): Promise<number> {
    return this.#s().replaceStream(path);
  }

  stat(path: string) {
    return this.#s().stat(path);
  }

  async putBlob(path: string, bytes: Uint8Array): Promise<number | undefined> {
    await using w = await writeBlob(this.#s(), path, bytes.length);
    await w.write(bytes);
    return w.seal();
  }

  readBlob(path: string): Promise<Uint8Array> {
    return readBlob(this.#s(), path);
  }

  async pump(h: number, o: PumpOptions): Promise<number> {
    const d = this.#d(h);
    const chunk = new Uint8Array(o.chunk);
    let sent = 0;
    while (sent < o.total) {
      const want = Math.min(o.chunk, o.total - sent);
      const src = want === chunk.length ? chunk : chunk.subarray(0, want);
      fillPattern(src, o.seed, sent);
      for (let done = 0; done < want; ) {
        const part = done === 0 ? src : src.subarray(done);
        done += o.sync ? d.writeSync(part) : await d.write(part);
      }
      sent += want;
    }
    if (o.close !== false) await d.close();
    return sent;
  }

  async drain(h: number, o: DrainOptions): Promise<DrainResult> {
    const d = this.#d(h);
    const buf = new Uint8Array(o.chunk);
    const limit = o.limit ?? Number.POSITIVE_INFINITY;
    let bytes = 0;
    let mismatchAt: number | null = null;
    let end = 'eof';
    try {
      while (bytes < limit) {
        const dst = limit - bytes < buf.length ? buf.subarray(0, limit - bytes) : buf;
        const n = o.sync ? d.readSync(dst) : await d.read(dst);
        if (n === 0) break;
        if (mismatchAt === null) {
          for (let k = 0; k < n; k++) {
            if (dst[k] !== patternByte(o.seed, bytes + k)) {
              mismatchAt = bytes + k;
              break;
            }
          }
        }
        bytes += n;
      }
      if (bytes >= limit) end = 'limit';
    } catch (err) {
      end = err instanceof TenonError ? err.code : 'unknown';
    }
    return { bytes, end, mismatchAt };
  }

  async closeSession(): Promise<void> {
    await this.#session?.close();
  }
}

/** Worker side: expose one agent on the worker's global scope. */
export function exposeDataPlaneAgent(): void {
  installErrorTransfer();
  expose(new Agent());
}

/** Page side: a typed proxy for a worker that called exposeDataPlaneAgent. */
export function wrapDataPlaneAgent(worker: Worker): Remote<DataPlaneAgent> {
  installErrorTransfer();
  return wrap<DataPlaneAgent>(worker);
}
