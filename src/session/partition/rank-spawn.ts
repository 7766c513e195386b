// Starting rank workers in this environment (where the worker script is: rank-entry.ts). Node: a
// worker_threads Worker running the Node build of workers/rank.worker.ts (dist/workers/rank.worker.js:
// Node cannot run TypeScript; scripts/lane.sh builds it before the node lane), whose death shows as its
// exit event. Browsers: a module Worker (workers/rank.worker.ts through the dev server, dist/rank.worker.js
// beside the library bundle), which holds a Web Lock for its lifetime; the coordinator
// waits for that lock, so a terminated or crashed worker is seen the way the data plane sees a lost peer.
// Thread: the coordinator's.
import type { RankReply } from './protocol.js';
import type { RankSpawner, RankWorkerHandle } from './coordinator.js';
import { nodeRankWorkerUrl, startRankWorker } from './rank-entry.js';

const inNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string' && typeof window === 'undefined';

export { nodeRankWorkerUrl };

async function spawnNode(url: URL): Promise<RankWorkerHandle> {
  const { Worker } = await import('node:worker_threads');
  const worker = new Worker(url);
  let ended = false;
  const lossHandlers: (() => void)[] = [];
  worker.on('exit', () => {
    if (ended) return;
    ended = true;
    for (const h of lossHandlers) h();
  });
  worker.on('error', () => undefined);
  return {
    post: (m, transfer) => worker.postMessage(m, (transfer ?? []) as never),
    onMessage: (handler) => {
      worker.removeAllListeners('message');
      worker.on('message', (m: RankReply) => handler(m));
    },
    watchLoss: (_lock, handler) => {
      if (ended) handler();
      else lossHandlers.push(handler);
    },
    terminate: () => void worker.terminate(),
  };
}

function spawnBrowser(): RankWorkerHandle {
  const worker = startRankWorker();
  let gone = false;
  return {
    post: (m, transfer) => worker.postMessage(m, transfer ?? []),
    onMessage: (handler) => {
      worker.onmessage = (e: MessageEvent<RankReply>) => handler(e.data);
    },
    watchLoss: (lock, handler) => {
      if (lock === undefined) {
        worker.addEventListener('error', () => {
          if (!gone) handler();
        });
        return;
      }
      // Granted only once the rank's worker released the lock: it ended (peer loss, as in the data plane).
      void navigator.locks.request(lock, () => {
        if (gone) return;
        gone = true;
        handler();
      });
    },
    terminate: () => worker.terminate(),
  };
}

/** The default spawner of this environment. */
export function defaultRankSpawner(url?: URL): RankSpawner {
  return async (_rank, lock) => {
    if (inNode) return { handle: await spawnNode(url ?? nodeRankWorkerUrl()), lock: undefined };
    return { handle: spawnBrowser(), lock };
  };
}
