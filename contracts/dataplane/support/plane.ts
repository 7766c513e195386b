// Helpers every data-plane suite uses: a fresh plane per test (unique OPFS folder, IndexedDB store and
// locks), a page-side session, worker agents, tagged bytes and canaries.
import { afterEach } from 'vitest';
import { connectSession, createDataPlane, fillPattern, wrapDataPlaneAgent } from '../../../src/index.js';
import type { DataPlane, DataPlaneAgent, Session, SessionAccess } from '../../../src/index.js';
import type { Remote } from 'comlink';

let counter = 0;
const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Registers teardown work for the current test (runs in reverse order after it). */
export function onCleanup(fn: () => Promise<void> | void): void {
  cleanups.push(fn);
}

export const EVERYTHING: SessionAccess = { runId: 'r1', read: ['/'], write: ['/'] };

export function planeName(tag = 'p'): string {
  return `t-${tag}-${Date.now().toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** A fresh plane (closed after the test). */
export async function newPlane(tag?: string): Promise<DataPlane> {
  const dp = await createDataPlane({ name: planeName(tag) });
  onCleanup(() => dp.close());
  return dp;
}

/** A page-side session of `dp` with the given rights (everything by default). */
export async function pageSession(dp: DataPlane, access: SessionAccess = EVERYTHING): Promise<Session> {
  const s = await connectSession(dp.createSessionPort(access));
  onCleanup(() => s.close());
  return s;
}

export async function planeWithSession(access: SessionAccess = EVERYTHING): Promise<{ dp: DataPlane; s: Session }> {
  const dp = await newPlane();
  return { dp, s: await pageSession(dp, access) };
}

export interface WorkerAgent {
  readonly worker: Worker;
  readonly agent: Remote<DataPlaneAgent>;
  terminate(): void;
}

/** Starts workers/dataplane.worker.ts and attaches a session of `dp` inside it. */
export async function spawnAgent(dp: DataPlane, access: SessionAccess = EVERYTHING): Promise<WorkerAgent> {
  const worker = new Worker(new URL('../../../workers/dataplane.worker.ts', import.meta.url), { type: 'module' });
  const agent = wrapDataPlaneAgent(worker);
  const port = dp.createSessionPort(access);
  const { transfer } = await import('comlink');
  await agent.connect(transfer(port, [port]));
  let alive = true;
  const terminate = (): void => {
    if (!alive) return;
    alive = false;
    worker.terminate();
  };
  onCleanup(terminate);
  return { worker, agent, terminate };
}

/** `n` pattern bytes of stream `seed` starting at position `start`. */
export function tagged(n: number, seed: number, start = 0): Uint8Array {
  const b = new Uint8Array(n);
  fillPattern(b, seed, start);
  return b;
}

/** A buffer of `before + n + after` bytes filled with canary value 0xA5; returns the middle window too. */
export function canaried(n: number, before = 16, after = 16): { all: Uint8Array; window: Uint8Array; intact(count: number): boolean } {
  const all = new Uint8Array(before + n + after).fill(0xa5);
  const window = all.subarray(before, before + n);
  return {
    all,
    window,
    /** True when nothing outside window[0, count) changed. */
    intact(count: number) {
      for (let i = 0; i < before; i++) if (all[i] !== 0xa5) return false;
      for (let i = before + count; i < all.length; i++) if (all[i] !== 0xa5) return false;
      return true;
    },
  };
}

/** Polls `check` on the event loop until it returns true (a deadlock guard, never a success oracle). */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, rounds = 1000): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`never happened: ${what}`);
}

export async function putBlob(s: Session, path: string, bytes: Uint8Array): Promise<number | undefined> {
  const { writeBlob } = await import('../../../src/index.js');
  const w = await writeBlob(s, path, bytes.length);
  await w.write(bytes);
  return w.seal();
}
