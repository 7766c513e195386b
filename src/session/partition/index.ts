// Partitioned sessions (seed 003; DESIGN.md "Partitioned ranks"): the public face of src/session/partition.
export { MAX_RANKS, checkPartition, communicationManifest, evenTensorPartition } from './partition.js';
export type { ArchitecturePartition, CheckedPartition, CommunicationManifest, PartitionModel, PipelineRankSpec, RankPlan, TensorAttention, TensorRankSpec, Transfer } from './partition.js';
export { partitionModelOf, randomDenseWeights, rankWeights, readDenseWeights } from './weights.js';
export type { DenseConfig, DenseLayer, DenseWeights, RankWeights } from './weights.js';
export { RankForward } from './rank-forward.js';
export type { RankLinks } from './rank-forward.js';
export { PARTITION_CACHE_FORMAT, PartitionedSession, memoryShardStore } from './coordinator.js';
export type { PartitionCacheManifest, PartitionCheckpoint, PartitionDecode, PartitionFaults, PartitionOutcome, PartitionStats, PartitionStep, PartitionedSessionOptions, RankSpawner, RankWorkerHandle, ShardStore } from './coordinator.js';
export { CLASSIFIER_CHUNK_ROWS, RANK_PHASES } from './protocol.js';
export type { RankCounters, RankDevice, RankFaults, RankPhase, RankState, RankStepTrace } from './protocol.js';
export { DeviceRankForward } from './device-forward.js';
export { defaultRankSpawner, nodeRankWorkerUrl } from './rank-spawn.js';
