// Layer residency (seed 003 "Residency"; DESIGN.md "Residency"): which layer weights are on the provider
// while a forward runs. Chosen once, at LlamaForward construction, and never changed:
// - `resident` (the default): every weight is uploaded at construction and stays until dispose.
// - `bounded` ({ bytes }): the globals (token embedding, classifier, output norm) stay resident; the layer
//   weights stay in the model's range source (OPFS through a data-plane descriptor, a file, a Blob, or
//   bytes in memory) and are read by range, one tensor part (or one expert's matrix) at a time, each time
//   a slot is filled: the host keeps no copy, only one staging buffer (the largest part or expert matrix,
//   repacked there, then written into the slot) and the range being read. At most `bytes` of layer
//   weights are on the provider at once, in a
//   window of `slots` slots of `slotBytes` each (slots * slotBytes <= bytes). Layer l always lives in slot
//   l mod slots; a step runs the layers as ceil(layers / slots) submissions of `slots` layers each, and
//   before each one the layers it reads are written into their slots (skipped when a slot still holds
//   that layer: a window as large as the model uploads each layer once). That is the serial schedule.
//   The overlapped one (the default where it applies: two slots or more, fewer slots than layers, no
//   expert cache) runs submissions of floor(slots / 2) layers chained on the group and stages every later
//   window's layers while the window before computes: a window's slots were last read two windows back.
// Ownership. The window's slot allocations belong to the forward's state group (a submission binds one
// group), so a slot is written only while the forward holds that group, i.e. only after the submission
// that last read the slot returned the group with a proven outcome (G3): a slot is never reused before its
// reader is proven complete. A step that ends completion-unproven leaves the state group, slots included,
// retained by the runtime forever, and the forward is fenced (ENODEV). Releasing the forward releases the
// window with the rest of the group. Overlapped schedule: the group is held by the chain's newest member,
// and a slot is written through the runtime's staged write (runtime.stageWrite), which the runtime refuses
// (EBUSY slot-in-flight) while any in-flight member's graph declares the slot's allocation; the forward
// first waits until the members that read the slot (two windows back or earlier) are proven. Either way a
// slot is written only after every submission that read it was proven complete.
// What this module owns: the plan (validated before anything is allocated: a budget below the largest
// layer is EINVAL `budget-below-layer` with the numbers), the staging buffer, the slot bookkeeping (which
// layer each slot holds; a slot whose upload failed part-way holds nothing) and the counters. It performs
// no GPU work: LlamaForward writes the slots through the group and submits.
// Expert cache (bounded with `experts: N`, routed-experts models): the expert tensors stay out of the
// window, in the source (one expert's rows of each matrix are read by range on a miss); each routed layer has a cache of N slots of one expert each (gate, up, down), filled
// with the experts the router picked (read back to the host: 4 bytes per token and choice, and one more
// proven wait per routed layer) and evicted least recently used. A step that needs more distinct experts
// in a layer than N runs that layer's experts in rounds of N. The same pass strategy serves prefill and
// decode: every round serves all the tokens routed to its experts (a prefill batches tokens by expert).
// The budget covers the window and every layer's cache; counters: hits, misses, bytes fetched, rounds.
// A range read that fails while a slot is filled (the source's own error, e.g. an OPFS mapping or file
// read failing; sources carry a `faults.failReadAt` seam that fails their real read path) fails the step
// with EIO `layer-read-failed` and `ids.layer` (the source's error as the cause): the slot holds nothing
// and the session's transaction rolls the state back. The window's own `faults` seam fails the next fill
// of a layer after its first part was written, without asking the source (kept for the overlap suites).
// Thread: the forward's (the runtime's).
import { TenonError } from '../errors.js';
import type { LayerRole, LoadedModel, ModelTensor } from '../model/index.js';

export type ResidencyPolicy =
  | { readonly kind: 'resident' }
  | {
      readonly kind: 'bounded';
      readonly bytes: number;
      /**
       * Routed-experts models: slots of an expert cache per routed layer (1..experts). The layers' expert
       * tensors then stay out of the window; the experts the router picks are fetched into the cache
       * (LRU) on demand. The budget covers the window and every layer's cache.
       */
      readonly experts?: number;
      /**
       * Overlap the next window's uploads with the current window's compute (default true). Applies with
       * two slots or more, fewer slots than layers and no expert cache; `false` keeps the serial schedule.
       */
      readonly overlap?: boolean;
    };
/** The expert roles a cache serves (in slot order: gate, up, down). */
export const EXPERT_ROLES: readonly LayerRole[] = ['ffnGateExperts', 'ffnUpExperts', 'ffnDownExperts'];
export type ResidencyKind = ResidencyPolicy['kind'];

/** Bytes of one packed word (u32) or f32 element. */
const WORD_BYTES = 4;
/** Slot offsets of a layer's tensors are aligned to this (WebGPU's minStorageBufferOffsetAlignment default). */
export const SLOT_OFFSET_ALIGNMENT = 256;

/** What a forward reports about its residency (SessionReport.layerResidency). */
export interface ResidencyReport {
  readonly policy: ResidencyKind;
  /** The budget asked for (bounded) or every layer's bytes (resident). */
  readonly budgetBytes: number;
  /** Bytes of layer weights the provider holds: the window (bounded) or every layer (resident). */
  readonly windowBytes: number;
  /** Slots of the window and bytes of one slot (the largest layer, offsets aligned); 0 for resident. */
  readonly slots: number;
  readonly slotBytes: number;
  /** Packed bytes of the largest layer and of all layers. */
  readonly largestLayerBytes: number;
  readonly layerBytes: number;
  /**
   * Submissions per step (1 resident; ceil(layers / layersPerSubmission) bounded; at least 3 per layer
   * with an expert cache).
   */
  readonly submissionsPerStep: number;
  /** Whether the window runs the overlapped schedule (WindowPlan.overlap). */
  readonly overlap: boolean;
  /**
   * Layer uploads issued while an earlier submission of the same step was in flight (staged writes into
   * slots it does not read), and the host milliseconds they took (benchmarks only, never asserted).
   */
  readonly overlappedUploads: number;
  readonly overlappedUploadMilliseconds: number;
  /** Layer bytes written into slots so far, layer uploads so far, and tokens processed so far. */
  readonly bytesUploaded: number;
  readonly layerUploads: number;
  readonly tokens: number;
  /** bytesUploaded / tokens (0 before the first token). */
  readonly bytesUploadedPerToken: number;
  /** The expert cache (bounded with `experts`): slots per layer, bytes in all, and its counters. */
  readonly experts?: ExpertCacheReport;
  /**
   * Range reads of layer (and expert) weights from the model's source since construction, and their bytes
   * (nothing is read at construction; 0 for resident, whose weights were read when they were uploaded).
   */
  readonly sourceReads: number;
  readonly sourceBytesRead: number;
  /**
   * Host bytes the window keeps for layer weights: its staging buffer (the largest tensor part or expert
   * matrix, packed). Each fill also holds the one range it is reading (the part's stored bytes) until it
   * is repacked. 0 for resident.
   */
  readonly hostStagingBytes: number;
  /**
   * Host milliseconds spent issuing slot uploads (a measurement for benchmarks, never asserted). In the
   * serial schedule none of it is hidden: uploads run between submissions, after each proof.
   */
  readonly uploadMilliseconds: number;
}

/** One tensor part of a layer: where it lives in a slot and its packed host copy. */
export interface SlotEntry {
  readonly role: LayerRole;
  readonly part: number;
  readonly firstRow: number;
  readonly rows: number;
  /** Packed row words (u32) or elements (f32) per row. */
  readonly rowWords: number;
  readonly dtype: 'f32' | 'u32';
  /** The part's shape as materializeWeights allocates it ([words] for a vector, else [rows, words]). */
  readonly shape: readonly number[];
  /** Rows of one matrix (an expert's rows for 3-D tensors). */
  readonly matrixRows: number;
  /** Byte offset in the slot (aligned). */
  readonly offset: number;
  readonly byteLength: number;
}

export interface LayerPlan {
  readonly entries: readonly SlotEntry[];
  /** Bytes the layer takes in a slot (aligned offsets). */
  readonly slotBytes: number;
  readonly packedBytes: number;
}

export interface ExpertCacheReport {
  readonly slotsPerLayer: number;
  readonly cacheBytes: number;
  readonly hits: number;
  readonly misses: number;
  readonly bytesFetched: number;
  /** Rounds of expert submissions (more than one per routed layer when a step needs more experts than slots). */
  readonly rounds: number;
  /** Routed ids read back to the host (4 bytes per token and choice, per routed layer). */
  readonly bytesReadBack: number;
}

/** One expert's matrix in a cache slot. */
export interface ExpertEntry {
  readonly role: LayerRole;
  /** Rows of one expert and packed words per row. */
  readonly rows: number;
  readonly rowWords: number;
  readonly dtype: 'f32' | 'u32';
  readonly offset: number;
  readonly byteLength: number;
}

export interface ExpertPlan {
  readonly slotsPerLayer: number;
  /** Bytes of one expert slot (gate, up, down at aligned offsets; the largest over layers). */
  readonly slotBytes: number;
  /** [layer] -> the three entries. */
  readonly layers: readonly (readonly ExpertEntry[])[];
  readonly cacheBytes: number;
}

export interface WindowPlan {
  readonly experts?: ExpertPlan;
  readonly budget: number;
  readonly slots: number;
  readonly slotBytes: number;
  readonly layers: readonly LayerPlan[];
  /**
   * Overlapped schedule: submissions of floor(slots / 2) layers chained on the group, the next window's
   * layers staged into slots no in-flight submission reads while the current one computes.
   */
  readonly overlap: boolean;
  /** Layers per submission: slots (serial) or floor(slots / 2) (overlapped). */
  readonly layersPerSubmission: number;
}

type PartsOf = ReadonlyMap<string, readonly { readonly firstRow: number; readonly rows: number; readonly byteLength: number }[]>;

function alignUp(n: number, to: number): number {
  return Math.ceil(n / to) * to;
}

/** Checks a policy's shape (EINVAL `bad-residency`); returns it with the default filled in. */
export function checkPolicy(policy: ResidencyPolicy | undefined, op: string): ResidencyPolicy {
  if (policy === undefined) return { kind: 'resident' };
  if (policy.kind === 'resident') return policy;
  if (policy.kind === 'bounded') {
    if (!Number.isSafeInteger(policy.bytes) || policy.bytes < 1) throw new TenonError('EINVAL', 'residency.bytes must be a positive integer', { op, reason: 'bad-residency' });
    if (policy.overlap !== undefined && typeof policy.overlap !== 'boolean') throw new TenonError('EINVAL', 'residency.overlap must be a boolean', { op, reason: 'bad-residency' });
    return policy;
  }
  throw new TenonError('EINVAL', "residency.kind must be 'resident' or 'bounded'", { op, reason: 'bad-residency' });
}

/**
 * Plans the bounded window from the weight layout (planWeights' parts): every layer's slot layout, the
 * slot size (the largest layer) and the slot count (as many whole slots as the budget holds, at most one
 * per layer). EINVAL `budget-below-layer` with ids { budget, largestLayer } when one slot does not fit.
 */
export function planWindow(model: LoadedModel, partsOf: PartsOf, budget: number, op: string, expertSlots?: number, overlap = true): WindowPlan {
  let experts: ExpertPlan | undefined;
  if (expertSlots !== undefined) {
    const n = model.config.experts;
    if (model.architecture.ffn !== 'routed') throw new TenonError('EINVAL', 'an expert cache needs a routed-experts model', { op, reason: 'no-routed-experts' });
    if (!Number.isSafeInteger(expertSlots) || expertSlots < 1 || expertSlots > n) throw new TenonError('EINVAL', `residency.experts must be in 1..${n}`, { op, reason: 'bad-residency' });
    const layers = model.layers.map((tensors) => {
      let offset = 0;
      return EXPERT_ROLES.map((role): ExpertEntry => {
        const t = tensors[role]!;
        const g = t.geometry;
        const rows = g.shape[g.shape.length - 2]!;
        const e: ExpertEntry = { role, rows, rowWords: g.packedRowWords, dtype: t.kind.name === 'F32' ? 'f32' : 'u32', offset, byteLength: rows * g.packedRowWords * WORD_BYTES };
        offset = alignUp(offset + e.byteLength, SLOT_OFFSET_ALIGNMENT);
        return e;
      });
    });
    const slotBytes = Math.max(...layers.map((l) => { const last = l[l.length - 1]!; return alignUp(last.offset + last.byteLength, SLOT_OFFSET_ALIGNMENT); }));
    experts = { slotsPerLayer: expertSlots, slotBytes, layers, cacheBytes: model.layers.length * expertSlots * slotBytes };
  }
  const cached = new Set<LayerRole>(experts === undefined ? [] : EXPERT_ROLES);
  const layers: LayerPlan[] = model.layers.map((tensors) => {
    const entries: SlotEntry[] = [];
    let offset = 0;
    let packedBytes = 0;
    for (const [role, t] of Object.entries(tensors) as [LayerRole, ModelTensor][]) {
      if (cached.has(role)) continue;
      const dtype = t.kind.name === 'F32' ? 'f32' : 'u32';
      const g = t.geometry;
      const matrixRows = g.shape.length >= 2 ? g.shape[g.shape.length - 2]! : 1;
      partsOf.get(t.name)!.forEach((p, part) => {
        const shape = g.shape.length === 1 ? [g.packedRowWords] : [p.rows, g.packedRowWords];
        entries.push({ role, part, firstRow: p.firstRow, rows: p.rows, rowWords: g.packedRowWords, dtype, shape, matrixRows, offset, byteLength: p.byteLength });
        offset = alignUp(offset + p.byteLength, SLOT_OFFSET_ALIGNMENT);
        packedBytes += p.byteLength;
      });
    }
    return { entries, slotBytes: offset, packedBytes };
  });
  const slotBytes = Math.max(...layers.map((l) => l.slotBytes));
  const cacheBytes = experts?.cacheBytes ?? 0;
  if (budget < slotBytes + cacheBytes) {
    throw new TenonError('EINVAL', `a budget of ${budget} bytes is below the largest layer (${slotBytes} bytes in a slot) plus the expert caches (${cacheBytes})`, {
      op,
      reason: 'budget-below-layer',
      ids: { budget, largestLayer: slotBytes, expertCache: cacheBytes },
    });
  }
  const slots = Math.min(layers.length, Math.floor((budget - cacheBytes) / slotBytes));
  // Overlap needs a slot the in-flight submission does not read (two or more), a window smaller than the
  // model (else nothing is uploaded after the first step) and no expert cache (its fetches depend on ids
  // the router computes in the submission before).
  const overlapped = overlap && experts === undefined && slots >= 2 && slots < layers.length;
  const layersPerSubmission = overlapped ? Math.floor(slots / 2) : slots;
  const plan = { budget, slots, slotBytes, layers, overlap: overlapped, layersPerSubmission };
  return experts === undefined ? plan : { ...plan, experts };
}

/** Named fault seam of a window (fires once). */
export interface WindowFaults {
  /** The next host read of `layer` fails after the layer's first tensor was written into its slot. */
  failLayerRead(layer: number): void;
}

/** Receives entry `index` of `layer` with its packed bytes (LlamaForward writes them into the slot through the group). */
export type SlotWriter = (layer: number, index: number, entry: SlotEntry, data: Uint32Array | Float32Array) => Promise<void>;

/**
 * The host side of a bounded window: which layer each slot holds, the staging buffer and the counters.
 * `acquire` makes a slot hold a layer (reading and writing it only when it does not already).
 */
export class LayerWindow {
  readonly plan: WindowPlan;
  /** The model's layer tensors, read by range when a slot is filled. */
  readonly #tensors: readonly LayerTensorsOf[];
  readonly #reader: RangeReader;
  /** The layer each slot holds, or -1 (empty, or an upload that did not finish). */
  readonly #holds: number[];
  #failRead: number | undefined;
  #bytesUploaded = 0;
  #uploads = 0;
  #tokens = 0;
  #uploadMs = 0;
  #overlapped = 0;
  #overlappedMs = 0;
  readonly faults: WindowFaults = {
    failLayerRead: (layer: number): void => {
      this.#failRead = layer;
    },
  };

  /** The expert cache (bounded with `experts`). */
  readonly experts: ExpertCache | undefined;

  private constructor(plan: WindowPlan, tensors: readonly LayerTensorsOf[], reader: RangeReader, experts: ExpertCache | undefined) {
    this.plan = plan;
    this.experts = experts;
    this.#tensors = tensors;
    this.#reader = reader;
    this.#holds = new Array<number>(plan.slots).fill(-1);
  }

  /** Reads nothing: layer weights are read by range from the model's source when a slot is filled. */
  static async create(model: LoadedModel, plan: WindowPlan): Promise<LayerWindow> {
    let words = 0;
    for (const l of plan.layers) for (const e of l.entries) words = Math.max(words, e.rows * e.rowWords);
    for (const l of plan.experts?.layers ?? []) for (const e of l) words = Math.max(words, e.rows * e.rowWords);
    const reader = new RangeReader(words);
    const experts = plan.experts === undefined ? undefined : new ExpertCache(plan.experts, model.layers, reader);
    return Promise.resolve(new LayerWindow(plan, model.layers, reader, experts));
  }

  /** The slot layer `l` lives in. */
  slotOf(layer: number): number {
    return layer % this.plan.slots;
  }

  /** Whether `slot` holds `layer` now. */
  holds(slot: number, layer: number): boolean {
    return this.#holds[slot] === layer;
  }

  /**
   * Makes layer `l`'s slot hold it: nothing when it does already, else every entry written through
   * `write`. The slot holds nothing while the upload runs, so a failure part-way leaves it empty (its
   * next acquire writes the whole layer again). Call only while the caller holds the group (no
   * submission reads the slot), or, with `overlapped`, through a staged write that the runtime refuses
   * unless no in-flight submission may read the slot (counted as an overlapped upload).
   */
  async acquire(layer: number, write: SlotWriter, overlapped = false): Promise<void> {
    const slot = this.slotOf(layer);
    if (this.holds(slot, layer)) return;
    this.#holds[slot] = -1;
    const plan = this.plan.layers[layer]!;
    const started = performance.now();
    try {
      for (const [i, e] of plan.entries.entries()) {
        if (i === 1 && this.#failRead === layer) {
          this.#failRead = undefined;
          throw new TenonError('EIO', `reading the weights of layer ${layer} failed`, { op: 'residency.acquire', reason: 'layer-read-failed', ids: { layer } });
        }
        const data = await this.#reader.read(this.#tensors[layer]![e.role]!, e.firstRow, e.rows, e.dtype, layer);
        await write(layer, i, e, data);
        this.#bytesUploaded += e.byteLength;
      }
    } finally {
      const ms = performance.now() - started;
      this.#uploadMs += ms;
      if (overlapped) this.#overlappedMs += ms;
    }
    this.#uploads++;
    if (overlapped) this.#overlapped++;
    this.#holds[slot] = layer;
  }

  /** Counts the tokens of a step that completed. */
  countTokens(n: number): void {
    this.#tokens += n;
  }

  report(): ResidencyReport {
    const layerBytes = this.plan.layers.reduce((n, l) => n + l.packedBytes, 0);
    return {
      policy: 'bounded',
      budgetBytes: this.plan.budget,
      windowBytes: this.plan.slots * this.plan.slotBytes + (this.plan.experts?.cacheBytes ?? 0),
      slots: this.plan.slots,
      slotBytes: this.plan.slotBytes,
      largestLayerBytes: Math.max(...this.plan.layers.map((l) => l.packedBytes)),
      layerBytes,
      // With an expert cache: three per routed layer (more when a step needs more rounds of experts).
      submissionsPerStep: this.experts === undefined ? Math.ceil(this.plan.layers.length / this.plan.layersPerSubmission) : 3 * this.plan.layers.length,
      overlap: this.plan.overlap,
      overlappedUploads: this.#overlapped,
      overlappedUploadMilliseconds: this.#overlappedMs,
      bytesUploaded: this.#bytesUploaded,
      layerUploads: this.#uploads,
      tokens: this.#tokens,
      bytesUploadedPerToken: this.#tokens === 0 ? 0 : this.#bytesUploaded / this.#tokens,
      uploadMilliseconds: this.#uploadMs,
      sourceReads: this.#reader.reads,
      sourceBytesRead: this.#reader.bytes,
      hostStagingBytes: this.#reader.stagingBytes,
      ...(this.experts === undefined ? {} : { experts: this.experts.report() }),
    };
  }
}

/** The report of a resident forward: every layer on the provider, nothing uploaded per token. */
export function residentReport(layerPackedBytes: readonly number[], tokens: number): ResidencyReport {
  const layerBytes = layerPackedBytes.reduce((a, b) => a + b, 0);
  return {
    policy: 'resident',
    budgetBytes: layerBytes,
    windowBytes: layerBytes,
    slots: 0,
    slotBytes: 0,
    largestLayerBytes: Math.max(0, ...layerPackedBytes),
    layerBytes,
    submissionsPerStep: 1,
    overlap: false,
    overlappedUploads: 0,
    overlappedUploadMilliseconds: 0,
    bytesUploaded: 0,
    layerUploads: 0,
    tokens,
    bytesUploadedPerToken: 0,
    uploadMilliseconds: 0,
    sourceReads: 0,
    sourceBytesRead: 0,
    hostStagingBytes: 0,
  };
}

type LayerTensorsOf = LoadedModel['layers'][number];

/**
 * Reads rows of a tensor by range from the model's source and repacks them into the one staging buffer
 * (reused by every fill: each write copies the data before the next read starts). A read that fails is
 * EIO `layer-read-failed` with `ids.layer`, the source's error as the cause.
 */
class RangeReader {
  readonly #staging: Uint32Array;
  reads = 0;
  bytes = 0;

  constructor(words: number) {
    this.#staging = new Uint32Array(words);
  }

  get stagingBytes(): number {
    return this.#staging.byteLength;
  }

  async read(t: ModelTensor, firstRow: number, rows: number, dtype: 'f32' | 'u32', layer: number): Promise<Uint32Array | Float32Array> {
    let stored: Uint8Array;
    try {
      stored = await t.readRows(firstRow, rows);
    } catch (cause) {
      throw new TenonError('EIO', `reading the weights of layer ${layer} (${t.name}) failed`, { op: 'residency.acquire', reason: 'layer-read-failed', ids: { layer, tensor: t.name }, cause });
    }
    this.reads++;
    this.bytes += stored.byteLength;
    const words = this.#staging.subarray(0, rows * t.geometry.packedRowWords);
    t.kind.repack(stored, t.geometry.rowElements, words);
    return dtype === 'f32' ? new Float32Array(words.buffer, words.byteOffset, words.length) : words;
  }
}

/** Receives entry `index` (gate, up, down) of the expert going into `slot` of `layer`'s cache. */
export type ExpertWriter = (layer: number, slot: number, index: number, data: Uint32Array | Float32Array) => Promise<void>;

/**
 * Per routed layer, `slotsPerLayer` slots of one expert each (gate, up and down), filled on demand and
 * evicted least recently used. `holder(layer)` says which expert each slot holds (-1: none); a slot is
 * marked as holding its expert only once all three matrices are written. Same ownership rule as the layer
 * window: LlamaForward writes a slot only while it holds the state group.
 */
export class ExpertCache {
  readonly plan: ExpertPlan;
  /** The model's layer tensors: an expert's rows are read by range on a miss. */
  readonly #tensors: readonly LayerTensorsOf[];
  readonly #reader: RangeReader;
  readonly #holds: number[][];
  readonly #lastUse: number[][];
  #clock = 0;
  #hits = 0;
  #misses = 0;
  #bytesFetched = 0;
  #rounds = 0;
  #bytesReadBack = 0;

  constructor(plan: ExpertPlan, tensors: readonly LayerTensorsOf[], reader: RangeReader) {
    this.plan = plan;
    this.#tensors = tensors;
    this.#reader = reader;
    this.#holds = plan.layers.map(() => new Array<number>(plan.slotsPerLayer).fill(-1));
    this.#lastUse = plan.layers.map(() => new Array<number>(plan.slotsPerLayer).fill(-1));
  }

  /** The expert each slot of `layer` holds (-1: none). */
  holder(layer: number): readonly number[] {
    return this.#holds[layer]!;
  }

  /** Splits the distinct experts a step picked (first-use order) into rounds of at most slotsPerLayer. */
  rounds(ids: Uint32Array): number[][] {
    this.#bytesReadBack += ids.byteLength;
    const distinct = [...new Set(ids)];
    const out: number[][] = [];
    for (let i = 0; i < distinct.length; i += this.plan.slotsPerLayer) out.push(distinct.slice(i, i + this.plan.slotsPerLayer));
    return out;
  }

  /**
   * Makes every expert of `round` present in `layer`'s cache: a hit refreshes its use, a miss takes the
   * least recently used slot holding none of the round and writes the expert's three matrices into it.
   */
  async ensure(layer: number, round: readonly number[], write: ExpertWriter): Promise<void> {
    this.#rounds++;
    const holds = this.#holds[layer]!;
    const lastUse = this.#lastUse[layer]!;
    for (const expert of round) {
      const at = holds.indexOf(expert);
      if (at >= 0) {
        this.#hits++;
        lastUse[at] = ++this.#clock;
        continue;
      }
      this.#misses++;
      let victim = -1;
      for (let s = 0; s < holds.length; s++) {
        if (round.includes(holds[s]!)) continue;
        if (victim < 0 || lastUse[s]! < lastUse[victim]!) victim = s;
      }
      holds[victim] = -1;
      const entries = this.plan.layers[layer]!;
      for (const [i, e] of entries.entries()) {
        const data = await this.#reader.read(this.#tensors[layer]![e.role]!, expert * e.rows, e.rows, e.dtype, layer);
        await write(layer, victim, i, data);
        this.#bytesFetched += e.byteLength;
      }
      holds[victim] = expert;
      lastUse[victim] = ++this.#clock;
    }
  }

  report(): ExpertCacheReport {
    return {
      slotsPerLayer: this.plan.slotsPerLayer,
      cacheBytes: this.plan.cacheBytes,
      hits: this.#hits,
      misses: this.#misses,
      bytesFetched: this.#bytesFetched,
      rounds: this.#rounds,
      bytesReadBack: this.#bytesReadBack,
    };
  }
}
