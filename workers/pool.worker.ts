// Pool worker entry point: wires this thread (a Web Worker, or a Node worker_threads worker) to the pool
// over comlink and hands the work to src/submit/pool-worker.ts. No logic lives here.
import * as Comlink from 'comlink';
import { createPoolWorker } from '../src/submit/pool-worker.js';
import type { PoolWorkerEnv } from '../src/submit/pool-worker.js';
import { builtinKernels } from '../src/submit/builtin-kernels.js';

const inNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string' && typeof self === 'undefined';

async function main(): Promise<void> {
  if (inNode) {
    const { parentPort } = await import('node:worker_threads');
    const { default: nodeEndpoint } = await import('comlink/dist/esm/node-adapter.mjs');
    const env: PoolWorkerEnv = {
      builtinKernels,
      // Closing our port empties the event loop: the thread then exits by itself, never mid-GPU-work.
      exitSoon: () => void setTimeout(() => parentPort!.close(), 0),
      async gpu() {
        const webgpu = await import('webgpu');
        Object.assign(globalThis, webgpu.globals);
        return webgpu.create([]);
      },
    };
    Comlink.expose(createPoolWorker(env), nodeEndpoint(parentPort as never));
    return;
  }
  const env: PoolWorkerEnv = {
    builtinKernels,
    exitSoon: () => void setTimeout(() => self.close(), 0),
    async gpu() {
      return (self.navigator as Navigator & { gpu?: GPU }).gpu;
    },
    holdLock(name: string) {
      // Held until the thread dies: the pool waits on the same lock to learn of our death.
      return new Promise<void>((held) => {
        void navigator.locks.request(name, () => {
          held();
          return new Promise<never>(() => {});
        });
      });
    },
  };
  Comlink.expose(createPoolWorker(env));
}

void main();
