// The forward pass of one rank of a partitioned model, on the host (seed 003 "rank-local runtime"). It is
// composed from the op library's dispatches, run by a HostExecutor of the rank's own host provider (the
// WebAssembly SIMD kernels where the engine has them, else the ops' scalar twins; `kernels` picks as a
// runtime's `hostKernels` does), in exactly the order of LlamaForward's op-by-op ('unfused')
// dispatch list for a dense F32 layer: rmsnorm, Q, K, V (matmul_nt), 2 rope, 2 kv_write, attention, O,
// add, rmsnorm, gate, up, silu_mul, down, add; then rmsnorm and the classifier on the last row. So a
// pipeline rank computes every element with the arithmetic one host rank would use, and the logits of a
// pipeline partition are bit-identical to a single rank's. A tensor rank runs the same list on its heads
// and FFN columns; its O and down projections yield partial sums that `links.allReduce` adds in rank order
// (every rank gets the same bits; the single-rank result differs only by summation order). A rank that holds
// every head (a tensor partition with replicated attention) adds its own whole O projection instead, so only
// the down projection's partial sums cross.
// Memory: with the WebAssembly kernels every array of the rank (weights, KV rows, activations, ids) is one
// block of the provider's linear memory, allocated once at construction after the kernels' scratch was
// reserved (so no later growth detaches a view); the kernels read them in place, as LlamaForward's do.
// State: this rank's KV rows (only the layers and KV heads it owns) live in its own arrays, [maxSeq, kvDim
// of the rank] per layer; rows at and past the committed length are kept zero by the caller (rank.ts).
// Thread: the rank's worker; `run` is synchronous and blocks only inside `links`.
import { createHostProvider } from '../../storage/index.js';
import { HostExecutor, addInplace, attention, gather, kvWrite, matmulNT, rmsnorm, rope, siluMul } from '../../submit/index.js';
import type { AnyOpDef, HostDispatch, HostKernelChoice, HostKernelStats } from '../../submit/index.js';
import type { RankWeights } from './weights.js';

/** How a rank exchanges activations during `run` (SAB rings between workers: rank.ts). */
export interface RankLinks {
  /** Pipeline: fills `x` ([T, dim]) with the previous rank's hidden state. */
  receiveHidden(x: Float32Array): void;
  /** Pipeline: sends `x` ([T, dim]) to the next rank. */
  sendHidden(x: Float32Array): void;
  /** Tensor: `out` = the sum of every rank's `partial`, added in rank order. */
  allReduce(partial: Float32Array, out: Float32Array): void;
  /**
   * Tensor partitions of more than one rank: the ranks share the classifier (each holds every row) and
   * compute it in chunks claimed through claimClassifierRows. False: the rank computes exactly its own rows
   * [vocabStart, vocabEnd).
   */
  readonly sharedClassifier: boolean;
  /** Shared classifier: the next chunk [start, end) of rows (vocabulary indices) to compute, or undefined when all are claimed. */
  claimClassifierRows(): readonly [number, number] | undefined;
  /** Called before every dispatch: the rank shows its peers that it is computing (protocol.ts RANK_WORD.PROGRESS). */
  progress(): void;
}

const BLOCK = 64;
const F32_BYTES = 4;

/** Carves typed arrays out of one block of linear memory (or plain arrays without one). */
class Arena {
  readonly #buffer: ArrayBuffer | undefined;
  #at: number;
  constructor(buffer: ArrayBuffer | undefined, base: number) {
    this.#buffer = buffer;
    this.#at = base;
  }
  f32(n: number): Float32Array {
    if (this.#buffer === undefined) return new Float32Array(n);
    const a = new Float32Array(this.#buffer, this.#at, n);
    this.#at += Math.ceil((n * F32_BYTES) / BLOCK) * BLOCK;
    return a;
  }
  u32(n: number): Uint32Array {
    if (this.#buffer === undefined) return new Uint32Array(n);
    const a = new Uint32Array(this.#buffer, this.#at, n);
    this.#at += Math.ceil((n * F32_BYTES) / BLOCK) * BLOCK;
    return a;
  }
  copy(src: Float32Array): Float32Array {
    const a = this.f32(src.length);
    a.set(src);
    return a;
  }
}

const blockFloats = (n: number): number => Math.ceil((n * F32_BYTES) / BLOCK) * (BLOCK / F32_BYTES);

export class RankForward {
  readonly kCache: Float32Array[];
  readonly vCache: Float32Array[];
  readonly kvWidth: number;
  readonly #w: RankWeights;
  readonly maxSeq: number;
  readonly maxBatch: number;
  readonly #exec: HostExecutor;
  // Weights (in the kernels' memory when they are WebAssembly).
  readonly #embedding: Float32Array;
  readonly #outputNorm: Float32Array;
  readonly #classifier: Float32Array;
  readonly #layers: RankWeights['layers'];
  // Scratch, sized for maxBatch rows once.
  readonly #x: Float32Array;
  readonly #xb: Float32Array;
  readonly #xb2: Float32Array;
  readonly #sum: Float32Array;
  readonly #q: Float32Array;
  readonly #k: Float32Array;
  readonly #v: Float32Array;
  readonly #att: Float32Array;
  readonly #hb: Float32Array;
  readonly #hb2: Float32Array;
  readonly #hb3: Float32Array;
  readonly #ids: Uint32Array;
  readonly #logits: Float32Array;

  constructor(weights: RankWeights, maxSeq: number, maxBatch: number, kernels: HostKernelChoice = 'auto') {
    this.#w = weights;
    this.maxSeq = maxSeq;
    this.maxBatch = maxBatch;
    const c = weights.config;
    const p = weights.plan;
    const hd = c.headDim;
    this.kvWidth = (p.kvEnd - p.kvStart) * hd;
    const provider = createHostProvider();
    this.#exec = new HostExecutor(provider, kernels);
    const layerCount = p.layerEnd - p.layerStart;
    const B = maxBatch;
    const qw = (p.headEnd - p.headStart) * hd;
    const f = p.ffnEnd - p.ffnStart;
    // Logits rows: the classifier's (its own rows, or every row when the ranks share the classifier).
    const vocabRows = weights.classifier.length / c.dim;
    const sizes = [
      weights.embedding.length,
      weights.outputNorm.length,
      weights.classifier.length,
      ...weights.layers.flatMap((L) => Object.values(L).map((a: Float32Array) => a.length)),
      ...Array.from({ length: 2 * layerCount }, () => maxSeq * this.kvWidth),
      ...[c.dim, c.dim, c.dim, c.dim].map((d) => B * d),
      B * qw,
      B * this.kvWidth,
      B * this.kvWidth,
      B * qw,
      B * f,
      B * f,
      B * f,
      B,
      vocabRows,
    ];
    let arena = new Arena(undefined, 0);
    if (this.#exec.kind === 'wasm-simd') {
      // Scratch first (it may grow the memory), then one block for everything, then the views.
      const dispatches: HostDispatch[] = [];
      for (let T = 1; T <= B; T++) for (const d of this.#dispatchShapes(T)) dispatches.push(d);
      this.#exec.prepare(dispatches);
      const memory = provider.wasmMemory()!;
      const total = sizes.reduce((a, n) => a + blockFloats(n), 0) * F32_BYTES;
      const base = memory.allocate(total, 'partition.rank');
      arena = new Arena(memory.buffer as ArrayBuffer, base);
    }
    this.#embedding = arena.copy(weights.embedding);
    this.#outputNorm = arena.copy(weights.outputNorm);
    this.#classifier = arena.copy(weights.classifier);
    this.#layers = weights.layers.map((L) => ({
      attnNorm: arena.copy(L.attnNorm),
      wq: arena.copy(L.wq),
      wk: arena.copy(L.wk),
      wv: arena.copy(L.wv),
      wo: arena.copy(L.wo),
      ffnNorm: arena.copy(L.ffnNorm),
      gate: arena.copy(L.gate),
      up: arena.copy(L.up),
      down: arena.copy(L.down),
    }));
    this.kCache = [];
    this.vCache = [];
    for (let l = 0; l < layerCount; l++) {
      this.kCache.push(arena.f32(maxSeq * this.kvWidth));
      this.vCache.push(arena.f32(maxSeq * this.kvWidth));
    }
    this.#x = arena.f32(B * c.dim);
    this.#xb = arena.f32(B * c.dim);
    this.#xb2 = arena.f32(B * c.dim);
    this.#sum = arena.f32(B * c.dim);
    this.#q = arena.f32(B * qw);
    this.#k = arena.f32(B * this.kvWidth);
    this.#v = arena.f32(B * this.kvWidth);
    this.#att = arena.f32(B * qw);
    this.#hb = arena.f32(B * f);
    this.#hb2 = arena.f32(B * f);
    this.#hb3 = arena.f32(B * f);
    this.#ids = arena.u32(B);
    this.#logits = arena.f32(vocabRows);
  }

  /** Which kernels ran (WebAssembly or scalar twins), per op. */
  kernelStats(): HostKernelStats {
    return this.#exec.stats();
  }

  /** The dispatches of a T-token step with their parameters (for the scratch reservation). */
  #dispatchShapes(T: number): HostDispatch[] {
    const c = this.#w.config;
    const p = this.#w.plan;
    const hd = c.headDim;
    const heads = p.headEnd - p.headStart;
    const kvHeads = p.kvEnd - p.kvStart;
    const qw = heads * hd;
    const ffn = p.ffnEnd - p.ffnStart;
    const d = (kernel: unknown, params: unknown): HostDispatch => ({ kernel: kernel as AnyOpDef, params: params as never });
    return [
      d(gather, { count: T, vocab: c.vocabSize, dim: c.dim }),
      d(rmsnorm, { rows: T, cols: c.dim, eps: c.rmsEps }),
      d(matmulNT, { m: T, n: qw, k: c.dim }),
      d(matmulNT, { m: T, n: this.kvWidth, k: c.dim }),
      d(rope, { count: T, heads, headDim: hd, pos0: 0, theta: c.ropeTheta, style: c.ropeStyle }),
      d(rope, { count: T, heads: kvHeads, headDim: hd, pos0: 0, theta: c.ropeTheta, style: c.ropeStyle }),
      d(kvWrite, { count: T, width: this.kvWidth, maxSeq: this.maxSeq, pos0: 0 }),
      d(attention, { count: T, heads, kvHeads, headDim: hd, maxSeq: this.maxSeq, pos0: this.maxSeq - T }),
      d(matmulNT, { m: T, n: c.dim, k: qw }),
      d(addInplace, { n: T * c.dim }),
      d(matmulNT, { m: T, n: ffn, k: c.dim }),
      d(siluMul, { n: T * ffn }),
      d(matmulNT, { m: T, n: c.dim, k: ffn }),
      d(matmulNT, { m: 1, n: this.#w.classifier.length / c.dim, k: c.dim }),
    ];
  }

  #run(kernel: unknown, params: unknown, arrays: readonly (Float32Array | Uint32Array)[]): void {
    this.#exec.run(kernel as AnyOpDef, params as never, arrays);
  }

  /**
   * Runs `tokens` (at most maxBatch, positions pos0..) through this rank's layers; a classifying rank
   * writes its logits of the last row into `logits` at [vocabStart, vocabEnd). The caller checked the
   * sizes and positions.
   */
  run(tokens: ArrayLike<number>, pos0: number, links: RankLinks, logits: Float32Array): void {
    const w = this.#w;
    const c = w.config;
    const p = w.plan;
    const T = tokens.length;
    const { dim } = c;
    const hd = c.headDim;
    const heads = p.headEnd - p.headStart;
    const kvHeads = p.kvEnd - p.kvStart;
    const qw = heads * hd;
    const kvw = this.kvWidth;
    const ffn = p.ffnEnd - p.ffnStart;
    // A tensor rank sums the partial updates of what it splits (a replicated attention's update is whole).
    const splitAttention = heads !== c.heads;
    const splitFfn = ffn !== c.ffnDim;
    const x = this.#x.subarray(0, T * dim);
    const xb = this.#xb.subarray(0, T * dim);
    const xb2 = this.#xb2.subarray(0, T * dim);
    const sum = this.#sum.subarray(0, T * dim);
    const q = this.#q.subarray(0, T * qw);
    const k = this.#k.subarray(0, T * kvw);
    const v = this.#v.subarray(0, T * kvw);
    const att = this.#att.subarray(0, T * qw);
    const hb = this.#hb.subarray(0, T * ffn);
    const hb2 = this.#hb2.subarray(0, T * ffn);
    const hb3 = this.#hb3.subarray(0, T * ffn);
    const eps = c.rmsEps;
    const run = (kernel: unknown, params: unknown, arrays: readonly (Float32Array | Uint32Array)[]): void => {
      links.progress();
      this.#run(kernel, params, arrays);
    };
    if (p.embeds) {
      const ids = this.#ids.subarray(0, T);
      for (let i = 0; i < T; i++) ids[i] = tokens[i]!;
      run(gather, { count: T, vocab: c.vocabSize, dim }, [ids, this.#embedding, x]);
    } else {
      links.receiveHidden(x);
    }
    const residual = (update: Float32Array, split: boolean): void => {
      if (split) {
        links.allReduce(update, sum);
        run(addInplace, { n: T * dim }, [x, sum]);
      } else run(addInplace, { n: T * dim }, [x, update]);
    };
    this.#layers.forEach((L, l) => {
      const kc = this.kCache[l]!;
      const vc = this.vCache[l]!;
      run(rmsnorm, { rows: T, cols: dim, eps }, [x, L.attnNorm, xb]);
      run(matmulNT, { m: T, n: qw, k: dim }, [xb, L.wq, q]);
      run(matmulNT, { m: T, n: kvw, k: dim }, [xb, L.wk, k]);
      run(matmulNT, { m: T, n: kvw, k: dim }, [xb, L.wv, v]);
      run(rope, { count: T, heads, headDim: hd, pos0, theta: c.ropeTheta, style: c.ropeStyle }, [q]);
      run(rope, { count: T, heads: kvHeads, headDim: hd, pos0, theta: c.ropeTheta, style: c.ropeStyle }, [k]);
      run(kvWrite, { count: T, width: kvw, maxSeq: this.maxSeq, pos0 }, [k, kc]);
      run(kvWrite, { count: T, width: kvw, maxSeq: this.maxSeq, pos0 }, [v, vc]);
      run(attention, { count: T, heads, kvHeads, headDim: hd, maxSeq: this.maxSeq, pos0 }, [q, kc, vc, att]);
      run(matmulNT, { m: T, n: dim, k: qw }, [att, L.wo, xb2]);
      residual(xb2, splitAttention);
      run(rmsnorm, { rows: T, cols: dim, eps }, [x, L.ffnNorm, xb]);
      run(matmulNT, { m: T, n: ffn, k: dim }, [xb, L.gate, hb]);
      run(matmulNT, { m: T, n: ffn, k: dim }, [xb, L.up, hb2]);
      run(siluMul, { n: T * ffn }, [hb, hb2, hb3]);
      run(matmulNT, { m: T, n: dim, k: ffn }, [hb3, L.down, xb2]);
      residual(xb2, splitFfn);
    });
    if (!p.classifies) {
      links.sendHidden(x);
      return;
    }
    run(rmsnorm, { rows: T, cols: dim, eps }, [x, this.#outputNorm, xb]);
    const last = xb.subarray((T - 1) * dim, T * dim);
    if (!links.sharedClassifier) {
      run(matmulNT, { m: 1, n: p.vocabEnd - p.vocabStart, k: dim }, [last, this.#classifier, this.#logits]);
      logits.set(this.#logits, p.vocabStart);
      return;
    }
    // Shared classifier (every row held here): chunks as claimed, each row's dot product as in one matmul
    // over all rows (the kernel's arithmetic per row does not depend on the row count).
    for (let rows = links.claimClassifierRows(); rows !== undefined; rows = links.claimClassifierRows()) {
      const [a, b] = rows;
      const out = this.#logits.subarray(a, b);
      run(matmulNT, { m: 1, n: b - a, k: dim }, [last, this.#classifier.subarray(a * dim, b * dim), out]);
      logits.set(out, a);
    }
  }

  /** Zeroes KV rows [from, maxSeq) of every layer (rollback of an append-only cache). */
  clearFrom(from: number): void {
    const a = from * this.kvWidth;
    for (const cache of this.kCache) cache.fill(0, a);
    for (const cache of this.vCache) cache.fill(0, a);
  }
}
