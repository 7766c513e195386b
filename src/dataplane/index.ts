// The data plane's one public face (seed 004 first milestone; DESIGN.md "src/dataplane").
// Apps create one DataPlane (the namespace authority) per plane name, attach sessions to it from any
// context, and open descriptors; the typed wrappers are thin layers over the same descriptors.
export { createDataPlane, MAX_BLOB_LENGTH } from './authority.js';
export type { DataPlane, DataPlaneOptions } from './authority.js';
export { connectSession } from './session.js';
export type { Session } from './session.js';
export type { Descriptor, Mapping, MappedBuffer } from './descriptor.js';
export { STREAM_CHUNK } from './descriptor.js';
export { readExact, writeAll, readBlob, writeBlob, readStream, writeStream, writeStreamReplacing, collectStream, hostRegion } from './wrappers.js';
export type { BlobWriter, WriteBlobOptions, StreamReader, StreamWriter, StreamOpenOptions } from './wrappers.js';
export { validatePath, resolvePath, isUnder, RUNS_SELF, MAX_PATH_LENGTH } from './path.js';
export { sha256Hex } from './blobio.js';
export { RING_DEFAULT_CAPACITY, RING_MIN_CAPACITY, RING_MAX_CAPACITY } from './ring-layout.js';
export type * from './types.js';
export { exposeDataPlaneAgent, wrapDataPlaneAgent, patternByte, fillPattern } from './agent.js';
export type { DataPlaneAgent, AgentOpenOptions, AgentIoOptions, PumpOptions, DrainOptions, DrainResult } from './agent-protocol.js';
export { startDataPlaneWorker } from './worker-entry.js';
export { startDataPlaneAgent } from './agent-worker.js';
export type { DataPlaneAgentWorker } from './agent-worker.js';
// SAB rings for in-process peers that need no namespace (partitioned session ranks: src/session/partition).
export { createRing, RingReader, RingWriter, settleEndpoint, wakeRing, ENDPOINT } from './ring.js';
export { RING_WORD, RING_HEADER_BYTES } from './ring-layout.js';
