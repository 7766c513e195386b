// Dedicated worker hosting one data-plane session, driven over comlink (logic in src/dataplane/agent.ts).
// Start it with new Worker(new URL('./dataplane.worker.ts', import.meta.url), { type: 'module' }) and
// talk to it through wrapDataPlaneAgent(worker).
import { exposeDataPlaneAgent } from '../src/dataplane/agent.js';

exposeDataPlaneAgent();
