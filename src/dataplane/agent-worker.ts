// A data-plane session inside its own dedicated worker, in one call: starts tenon's agent worker
// (dist/dataplane.worker.js beside the bundle, or workers/dataplane.worker.ts from source), hands it a
// session port of `plane` with the given rights, and returns the comlink proxy. The worker owns its
// session and descriptors; terminate() ends the worker, and the plane observes the session's loss.
import { transfer } from 'comlink';
import type { Remote } from 'comlink';
import type { DataPlane } from './authority.js';
import type { DataPlaneAgent } from './agent-protocol.js';
import { wrapDataPlaneAgent } from './agent.js';
import type { SessionAccess } from './types.js';
import { startDataPlaneWorker } from './worker-entry.js';

export interface DataPlaneAgentWorker {
  readonly worker: Worker;
  readonly agent: Remote<DataPlaneAgent>;
  /** The run `/runs/self` resolves to in the worker's session. */
  readonly runId: string;
  terminate(): void;
}

export async function startDataPlaneAgent(plane: DataPlane, access: SessionAccess): Promise<DataPlaneAgentWorker> {
  const worker = startDataPlaneWorker();
  try {
    const agent = wrapDataPlaneAgent(worker);
    const port = plane.createSessionPort(access);
    const { runId } = await agent.connect(transfer(port, [port]));
    return { worker, agent, runId, terminate: () => worker.terminate() };
  } catch (err) {
    worker.terminate();
    throw err;
  }
}
