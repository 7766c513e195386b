// Rank worker entry point: wires this thread (a Web Worker, or a Node worker_threads worker) to
// src/session/partition/rank.ts. No logic lives here.
import { startRank } from '../src/session/partition/rank.js';
import type { RankMessage, RankReply } from '../src/session/partition/protocol.js';

const inNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string' && typeof self === 'undefined';

async function main(): Promise<void> {
  if (inNode) {
    const { parentPort } = await import('node:worker_threads');
    startRank({ post: (m: RankReply) => parentPort!.postMessage(m), onMessage: (h) => parentPort!.on('message', (m: RankMessage) => h(m)) });
    return;
  }
  startRank(
    { post: (m: RankReply) => self.postMessage(m), onMessage: (h) => (self.onmessage = (e: MessageEvent<RankMessage>) => h(e.data)) },
    // Held until this thread dies: the coordinator waits on the same lock to learn of our death.
    (name) =>
      new Promise<void>((held) => {
        void navigator.locks.request(name, () => {
          held();
          return new Promise<never>(() => {});
        });
      }),
  );
}

void main();
