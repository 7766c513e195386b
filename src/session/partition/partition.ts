// Architecture partitions and communication manifests (seed 003 "partitioned sessions"; DESIGN.md
// "Partitioned ranks"). Pure description and validation: nothing here allocates a tensor, starts a worker
// or touches a provider, so a partition is checked completely before any rank exists
// (TS-dist-partition-authority).
//
// Two kinds of partition of a dense llama-style model (F32 weights, no attention biases, no routed FFN, no
// per-frequency RoPE factors; anything else is refused with ENOTSUP `partition-unsupported`):
// - pipeline: rank r owns the contiguous layer range [start, end); the ranges tile [0, layers) in order.
//   Rank 0 also gathers the token embedding, the last rank applies the final norm and the classifier. A
//   middle rank with an empty range is allowed only as the last rank (a classifier-only rank): such a rank
//   owns no KV rows and is stateless (TS-dist-stateless-rank).
// - tensor: every rank runs every layer on its share: KV heads [kvStart, kvEnd) (with the query heads of
//   those groups), FFN columns [ffnStart, ffnEnd) and classifier rows [vocabStart, vocabEnd). Each range
//   list tiles its whole extent in rank order. The attention output and FFN down projections give partial
//   sums of the residual update that every rank adds in rank order (so all ranks hold the same bits). In a
//   session of more than one tensor rank the vocabulary ranges say whose classifier rows a rank computes
//   first; the ranks then help each other with the rest (protocol.ts RANK_WORD.CLAIMED).
//   With `attention: 'replicated'` every tensor rank computes every head (all KV rows, the whole output
//   projection) and only the FFN columns and classifier rows are split: one partial-sum exchange per layer
//   instead of two, for the attention's compute done on every rank (the KV ranges must still tile; they no
//   longer limit a rank's share). The attention update is then the single rank's bits; only the FFN sum's
//   order differs.
// The manifest lists every transfer of one step of T tokens: which activation, its shape, bytes and the
// direction (from rank, to rank). It is derived from the validated partition and the config only.
// Thread: any.
import { TenonError } from '../../errors.js';

/** What a partition needs of a model: its config and the few architecture facts that decide support. */
export interface PartitionModel {
  readonly dim: number;
  readonly layers: number;
  readonly ffnDim: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly vocabSize: number;
  /** False for routed FFNs, attention biases, RoPE factors or non-F32 weights (refused). */
  readonly dense: boolean;
}

export interface PipelineRankSpec {
  /** First layer owned (inclusive). */
  readonly start: number;
  /** One past the last layer owned. */
  readonly end: number;
}

export interface TensorRankSpec {
  readonly kvStart: number;
  readonly kvEnd: number;
  readonly ffnStart: number;
  readonly ffnEnd: number;
  readonly vocabStart: number;
  readonly vocabEnd: number;
}

export type ArchitecturePartition =
  | { readonly kind: 'pipeline'; readonly ranks: readonly PipelineRankSpec[] }
  | { readonly kind: 'tensor'; readonly ranks: readonly TensorRankSpec[]; readonly attention?: TensorAttention };

/** How a tensor partition runs attention: split by KV heads (default) or computed whole on every rank. */
export type TensorAttention = 'split' | 'replicated';

/** Largest number of ranks one partition may name (each rank is a worker thread). */
export const MAX_RANKS = 16;

/** One transfer of a step. `from`/`to` are rank indices; shape and bytes are per step of T tokens. */
export interface Transfer {
  /** 'hidden': the residual stream between pipeline stages; 'attn-partial'/'ffn-partial': partial sums. */
  readonly activation: 'hidden' | 'attn-partial' | 'ffn-partial';
  /** Layer after which (hidden) or inside which (partials) the transfer happens. */
  readonly layer: number;
  readonly from: number;
  readonly to: number;
  readonly shape: readonly number[];
  readonly bytes: number;
}

/** Everything that crosses between ranks in one step of `tokens` tokens. */
export interface CommunicationManifest {
  readonly kind: ArchitecturePartition['kind'];
  readonly ranks: number;
  readonly tokens: number;
  readonly transfers: readonly Transfer[];
  /** Sum of every transfer's bytes. */
  readonly bytesPerStep: number;
  /** Ordered (from, to) pairs that need a stream (one SAB ring each). */
  readonly links: readonly (readonly [from: number, to: number])[];
}

/** What one rank owns, as checked: the layers it runs and, for tensor ranks, its shares. */
export interface RankPlan {
  readonly rank: number;
  readonly layerStart: number;
  readonly layerEnd: number;
  /** Heads / KV heads / FFN columns / classifier rows this rank computes. */
  readonly headStart: number;
  readonly headEnd: number;
  readonly kvStart: number;
  readonly kvEnd: number;
  readonly ffnStart: number;
  readonly ffnEnd: number;
  readonly vocabStart: number;
  readonly vocabEnd: number;
  readonly embeds: boolean;
  readonly classifies: boolean;
  /** Owns KV rows (a stateless rank owns none: TS-dist-stateless-rank). */
  readonly stateful: boolean;
}

/** A partition checked against a model: the only input from which rank runtimes are built. */
export interface CheckedPartition {
  readonly partition: ArchitecturePartition;
  readonly model: PartitionModel;
  readonly plans: readonly RankPlan[];
  /** Stable text naming the topology (kind and every range), stored with sharded caches. */
  readonly topology: string;
}

const OP = 'partition.check';
const F32_BYTES = 4;

function refuse(reason: string, message: string, ids?: Record<string, string | number>): never {
  throw new TenonError('EINVAL', message, { op: OP, reason, ...(ids === undefined ? {} : { ids }) });
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;

/** Checks that `ranges` tile [0, total) in order with non-empty pieces (empty allowed where `allowEmpty`). */
function checkTiling(what: string, ranges: readonly (readonly [number, number])[], total: number, allowEmpty: (rank: number) => boolean): void {
  let at = 0;
  ranges.forEach(([start, end], rank) => {
    if (!isCount(start) || !isCount(end)) refuse('bad-range', `${what} range of rank ${rank} is not a pair of integers`, { rank });
    if (start !== at) refuse(start < at ? 'overlap' : 'gap', `${what} range of rank ${rank} starts at ${start}, expected ${at}`, { rank, start, expected: at });
    if (end < start || (end === start && !allowEmpty(rank))) refuse('empty-range', `${what} range of rank ${rank} is empty`, { rank });
    at = end;
  });
  if (at !== total) refuse('incomplete', `${what} ranges cover [0, ${at}), the model has ${total}`, { covered: at, total });
}

/**
 * Checks `partition` against `model` (TS-dist-partition-authority): EINVAL with a reason (`rank-count`,
 * `bad-kind`, `bad-range`, `gap`, `overlap`, `empty-range`, `incomplete`) for any partition that does not
 * exactly cover the model, ENOTSUP `partition-unsupported` for a model the rank forward cannot split.
 * Returns the per-rank plans; throws before anything is built.
 */
export function checkPartition(model: PartitionModel, partition: ArchitecturePartition): CheckedPartition {
  if (!model.dense) {
    throw new TenonError('ENOTSUP', 'only dense F32 llama-style models can be partitioned', { op: OP, reason: 'partition-unsupported' });
  }
  const ranks = (partition as { ranks?: unknown }).ranks;
  if (!Array.isArray(ranks) || ranks.length < 1 || ranks.length > MAX_RANKS) refuse('rank-count', `a partition names 1..${MAX_RANKS} ranks`);
  const n = ranks.length;
  if (partition.kind === 'pipeline') {
    const specs = partition.ranks;
    // Only the last rank may own no layers (a classifier-only, stateless rank), and only behind another.
    checkTiling('layer', specs.map((s) => [s.start, s.end] as const), model.layers, (rank) => rank === n - 1 && n > 1);
    const plans = specs.map((s, rank): RankPlan => ({
      rank,
      layerStart: s.start,
      layerEnd: s.end,
      headStart: 0,
      headEnd: model.heads,
      kvStart: 0,
      kvEnd: model.kvHeads,
      ffnStart: 0,
      ffnEnd: model.ffnDim,
      vocabStart: 0,
      vocabEnd: rank === n - 1 ? model.vocabSize : 0,
      embeds: rank === 0,
      classifies: rank === n - 1,
      stateful: s.end > s.start,
    }));
    return { partition, model, plans, topology: `pipeline:${specs.map((s) => `${s.start}-${s.end}`).join(',')}` };
  }
  if (partition.kind !== 'tensor') refuse('bad-kind', `unknown partition kind ${String((partition as { kind?: unknown }).kind)}`);
  const specs = partition.ranks;
  const attention = (partition as { attention?: unknown }).attention ?? 'split';
  if (attention !== 'split' && attention !== 'replicated') refuse('bad-attention', `tensor attention is 'split' or 'replicated', got ${String(attention)}`);
  const replicated = attention === 'replicated';
  const group = model.heads / model.kvHeads;
  checkTiling('kv-head', specs.map((s) => [s.kvStart, s.kvEnd] as const), model.kvHeads, () => false);
  checkTiling('ffn', specs.map((s) => [s.ffnStart, s.ffnEnd] as const), model.ffnDim, () => false);
  checkTiling('vocab', specs.map((s) => [s.vocabStart, s.vocabEnd] as const), model.vocabSize, () => false);
  const plans = specs.map((s, rank): RankPlan => ({
    rank,
    layerStart: 0,
    layerEnd: model.layers,
    headStart: replicated ? 0 : s.kvStart * group,
    headEnd: replicated ? model.heads : s.kvEnd * group,
    kvStart: replicated ? 0 : s.kvStart,
    kvEnd: replicated ? model.kvHeads : s.kvEnd,
    ffnStart: s.ffnStart,
    ffnEnd: s.ffnEnd,
    vocabStart: s.vocabStart,
    vocabEnd: s.vocabEnd,
    embeds: true,
    classifies: true,
    stateful: true,
  }));
  const topology = `tensor:${specs.map((s) => `${s.kvStart}-${s.kvEnd}/${s.ffnStart}-${s.ffnEnd}/${s.vocabStart}-${s.vocabEnd}`).join(',')}${replicated ? ':attention-replicated' : ''}`;
  return { partition, model, plans, topology };
}

/**
 * An even split of a model into `ranks` tensor ranks (KV heads, FFN columns and vocabulary rows);
 * `attention` 'replicated' keeps every head on every rank (see the header).
 */
export function evenTensorPartition(model: PartitionModel, ranks: number, attention: TensorAttention = 'split'): ArchitecturePartition {
  const cut = (total: number, r: number): number => Math.floor((total * r) / ranks);
  return {
    kind: 'tensor',
    ...(attention === 'split' ? {} : { attention }),
    ranks: Array.from({ length: ranks }, (_, r) => ({
      kvStart: cut(model.kvHeads, r),
      kvEnd: cut(model.kvHeads, r + 1),
      ffnStart: cut(model.ffnDim, r),
      ffnEnd: cut(model.ffnDim, r + 1),
      vocabStart: cut(model.vocabSize, r),
      vocabEnd: cut(model.vocabSize, r + 1),
    })),
  };
}

/** The manifest of one step of `tokens` tokens through a checked partition. */
export function communicationManifest(checked: CheckedPartition, tokens: number): CommunicationManifest {
  if (!Number.isSafeInteger(tokens) || tokens < 1) refuse('bad-tokens', `a step has at least one token, got ${tokens}`);
  const { model, plans, partition } = checked;
  const n = plans.length;
  const shape = [tokens, model.dim];
  const bytes = tokens * model.dim * F32_BYTES;
  const transfers: Transfer[] = [];
  const links: (readonly [number, number])[] = [];
  if (partition.kind === 'pipeline') {
    for (let r = 0; r + 1 < n; r++) {
      transfers.push({ activation: 'hidden', layer: plans[r]!.layerEnd - 1, from: r, to: r + 1, shape, bytes });
      links.push([r, r + 1]);
    }
  } else {
    for (let from = 0; from < n; from++) for (let to = 0; to < n; to++) if (from !== to) links.push([from, to]);
    for (let layer = 0; layer < model.layers; layer++) {
      const activations = partition.attention === 'replicated' ? (['ffn-partial'] as const) : (['attn-partial', 'ffn-partial'] as const);
      for (const activation of activations) {
        for (const [from, to] of links) transfers.push({ activation, layer, from, to, shape, bytes });
      }
    }
  }
  return { kind: partition.kind, ranks: n, tokens, transfers, bytesPerStep: transfers.reduce((s, t) => s + t.bytes, 0), links };
}
