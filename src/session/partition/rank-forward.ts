// The forward pass of one rank of a partitioned model, on the host (seed 003 "rank-local runtime"). It is
// composed from the op library's host kernels in exactly the order of LlamaForward's op-by-op ('unfused')
// dispatch list for a dense F32 layer: rmsnorm, Q, K, V (matmul_nt), 2 rope, 2 kv_write, attention, O,
// add, rmsnorm, gate, up, silu_mul, down, add; then rmsnorm and the classifier on the last row. So a
// pipeline rank computes every element with the arithmetic one host rank would use, and the logits of a
// pipeline partition are bit-identical to a single rank's. A tensor rank runs the same list on its heads
// and FFN columns; its O and down projections yield partial sums that `links.allReduce` adds in rank order
// (every rank gets the same bits; the single-rank result differs only by summation order).
// State: this rank's KV rows (only the layers and KV heads it owns) live in its own arrays, [maxSeq, kvDim
// of the rank] per layer; rows at and past the committed length are kept zero by the caller (rank.ts).
// Thread: the rank's worker; `run` is synchronous and blocks only inside `links`.
import { addInplace, attention, gather, kvWrite, matmulNT, rmsnorm, rope, siluMul } from '../../submit/index.js';
import type { RankWeights } from './weights.js';

/** How a rank exchanges activations during `run` (SAB rings between workers: rank.ts). */
export interface RankLinks {
  /** Pipeline: fills `x` ([T, dim]) with the previous rank's hidden state. */
  receiveHidden(x: Float32Array): void;
  /** Pipeline: sends `x` ([T, dim]) to the next rank. */
  sendHidden(x: Float32Array): void;
  /** Tensor: `out` = the sum of every rank's `partial`, added in rank order. */
  allReduce(partial: Float32Array, out: Float32Array): void;
}

export class RankForward {
  readonly kCache: Float32Array[];
  readonly vCache: Float32Array[];
  readonly kvWidth: number;
  readonly #w: RankWeights;
  readonly maxSeq: number;
  readonly maxBatch: number;
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

  constructor(weights: RankWeights, maxSeq: number, maxBatch: number) {
    this.#w = weights;
    this.maxSeq = maxSeq;
    this.maxBatch = maxBatch;
    const c = weights.config;
    const p = weights.plan;
    const hd = c.headDim;
    this.kvWidth = (p.kvEnd - p.kvStart) * hd;
    const layers = p.layerEnd - p.layerStart;
    this.kCache = Array.from({ length: layers }, () => new Float32Array(maxSeq * this.kvWidth));
    this.vCache = Array.from({ length: layers }, () => new Float32Array(maxSeq * this.kvWidth));
    const B = maxBatch;
    this.#x = new Float32Array(B * c.dim);
    this.#xb = new Float32Array(B * c.dim);
    this.#xb2 = new Float32Array(B * c.dim);
    this.#sum = new Float32Array(B * c.dim);
    this.#q = new Float32Array(B * (p.headEnd - p.headStart) * hd);
    this.#k = new Float32Array(B * this.kvWidth);
    this.#v = new Float32Array(B * this.kvWidth);
    this.#att = new Float32Array(B * (p.headEnd - p.headStart) * hd);
    const f = p.ffnEnd - p.ffnStart;
    this.#hb = new Float32Array(B * f);
    this.#hb2 = new Float32Array(B * f);
    this.#hb3 = new Float32Array(B * f);
    this.#ids = new Uint32Array(B);
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
    const tensor = ffn !== c.ffnDim || heads !== c.heads;
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
    if (p.embeds) {
      const ids = this.#ids.subarray(0, T);
      for (let i = 0; i < T; i++) ids[i] = tokens[i]!;
      gather.host({ count: T, vocab: c.vocabSize, dim }, [ids, w.embedding, x]);
    } else {
      links.receiveHidden(x);
    }
    const residual = (update: Float32Array): void => {
      if (tensor) {
        links.allReduce(update, sum);
        addInplace.host({ n: T * dim }, [x, sum]);
      } else addInplace.host({ n: T * dim }, [x, update]);
    };
    w.layers.forEach((L, l) => {
      const kc = this.kCache[l]!;
      const vc = this.vCache[l]!;
      rmsnorm.host({ rows: T, cols: dim, eps }, [x, L.attnNorm, xb]);
      matmulNT.host({ m: T, n: qw, k: dim }, [xb, L.wq, q]);
      matmulNT.host({ m: T, n: kvw, k: dim }, [xb, L.wk, k]);
      matmulNT.host({ m: T, n: kvw, k: dim }, [xb, L.wv, v]);
      rope.host({ count: T, heads, headDim: hd, pos0, theta: c.ropeTheta, style: c.ropeStyle }, [q]);
      rope.host({ count: T, heads: kvHeads, headDim: hd, pos0, theta: c.ropeTheta, style: c.ropeStyle }, [k]);
      kvWrite.host({ count: T, width: kvw, maxSeq: this.maxSeq, pos0 }, [k, kc]);
      kvWrite.host({ count: T, width: kvw, maxSeq: this.maxSeq, pos0 }, [v, vc]);
      attention.host({ count: T, heads, kvHeads, headDim: hd, maxSeq: this.maxSeq, pos0 }, [q, kc, vc, att]);
      matmulNT.host({ m: T, n: dim, k: qw }, [att, L.wo, xb2]);
      residual(xb2);
      rmsnorm.host({ rows: T, cols: dim, eps }, [x, L.ffnNorm, xb]);
      matmulNT.host({ m: T, n: ffn, k: dim }, [xb, L.gate, hb]);
      matmulNT.host({ m: T, n: ffn, k: dim }, [xb, L.up, hb2]);
      siluMul.host({ n: T * ffn }, [hb, hb2, hb3]);
      matmulNT.host({ m: T, n: dim, k: ffn }, [hb3, L.down, xb2]);
      residual(xb2);
    });
    if (!p.classifies) {
      links.sendHidden(x);
      return;
    }
    rmsnorm.host({ rows: T, cols: dim, eps }, [x, w.outputNorm, xb]);
    const last = xb.subarray((T - 1) * dim, T * dim);
    const rowsOut = p.vocabEnd - p.vocabStart;
    matmulNT.host({ m: 1, n: rowsOut, k: dim }, [last, w.classifier, logits.subarray(p.vocabStart, p.vocabEnd)]);
  }

  /** Zeroes KV rows [from, maxSeq) of every layer (rollback of an append-only cache). */
  clearFrom(from: number): void {
    const a = from * this.kvWidth;
    for (const cache of this.kCache) cache.fill(0, a);
    for (const cache of this.vCache) cache.fill(0, a);
  }
}
