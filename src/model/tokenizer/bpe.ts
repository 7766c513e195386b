// Byte-level BPE encoder (the `gpt2` vocabulary kind of GGUF files: Llama 3, Qwen2, SmolLM, GPT-2).
// Owned by one Tokenizer; single-threaded; reuses its scratch arrays and keeps a bounded per-piece cache.
//
// Algorithm: the pre-tokenizer splits the text into pieces; each piece's UTF-8 bytes start as one symbol
// each (the byte-level alphabet token of that byte); every adjacent pair listed in the merge table is a
// candidate; the candidate with the lowest merge rank (its position in `tokenizer.ggml.merges`) merges
// first, the leftmost on equal ranks; only the two pairs next to a merge are looked up again, so a piece
// of n bytes costs O(n log n). Pairs are keyed by the two token ids (a typed-array hash table), never by
// concatenated strings. With the Llama 3 rule (`ignoreMerges`), a piece that is itself a token is that
// token.
//
// Construction checks the merge table: each entry is "left right" where left, right and left+right are
// all tokens (EINVAL 'bad-merge' naming the entry); a pair listed twice keeps its first (lowest) rank.
import { TenonError } from '../../errors.js';
import { BYTE_TO_CHAR, Utf8Buffer } from './byte-level.js';
import { PairQueue, SymbolList } from './heap.js';
import { preTokenize } from './pretokenize.js';
import type { PreTokenizer } from './pretokenize.js';
import type { MutableCounters } from './vocab.js';

const NO_SYMBOL = -1;
/** Distinct pieces the cache remembers before it starts over. */
export const BPE_CACHE_ENTRIES = 1 << 15;
/** Longer pieces are merged every time rather than kept (the cache stays small in bytes too). */
const MAX_CACHED_PIECE_LENGTH = 256;
const BYTE_VALUES = 256;

export class ByteLevelBpeEngine {
  readonly #pre: PreTokenizer;
  readonly #idOf: ReadonlyMap<string, number>;
  /** Token of each byte's alphabet character (-1 when the vocabulary lacks it). */
  readonly #byteIds = new Int32Array(BYTE_VALUES).fill(-1);
  /** (left id, right id) -> merge rank. */
  readonly #rank: PairTable;
  /** Token each merge rank produces. */
  readonly #result: Int32Array;
  readonly #cache = new Map<string, readonly number[]>();
  readonly #utf8 = new Utf8Buffer();
  readonly #symbols = new SymbolList();
  readonly #queue = new PairQueue();
  readonly #pieces: string[] = [];

  /** `idOf` maps every token text to its id (the caller has refused duplicates). */
  constructor(idOf: ReadonlyMap<string, number>, merges: readonly string[], pre: PreTokenizer, op: string) {
    this.#pre = pre;
    this.#idOf = idOf;
    for (let b = 0; b < BYTE_VALUES; b++) this.#byteIds[b] = idOf.get(BYTE_TO_CHAR[b]!) ?? -1;
    this.#result = new Int32Array(merges.length);
    this.#rank = new PairTable(merges.length);
    for (let rank = 0; rank < merges.length; rank++) {
      const merge = merges[rank]!;
      // The separator is the first space after the first character (a part is never empty).
      const cut = typeof merge === 'string' ? merge.indexOf(' ', 1) : -1;
      const left = cut > 0 ? idOf.get(merge.slice(0, cut)) : undefined;
      const right = cut > 0 ? idOf.get(merge.slice(cut + 1)) : undefined;
      const joined = cut > 0 ? idOf.get(merge.slice(0, cut) + merge.slice(cut + 1)) : undefined;
      if (left === undefined || right === undefined || joined === undefined) {
        throw new TenonError('EINVAL', `merge ${rank} is not "left right" over tokens whose concatenation is a token`, {
          op,
          reason: 'bad-merge',
          ids: { merge: rank },
        });
      }
      this.#rank.addFirst(left, right, rank);
      this.#result[rank] = joined;
    }
  }

  get byteFallback(): boolean {
    return this.#byteIds.every((id) => id >= 0);
  }

  lookup(text: string): number | undefined {
    return this.#idOf.get(text);
  }

  encodeFragment(text: string, _prefixSpace: boolean, out: number[], counters: MutableCounters): void {
    const pieces = this.#pieces;
    pieces.length = 0;
    preTokenize(this.#pre, text, pieces);
    for (const piece of pieces) this.#encodePiece(piece, out, counters);
    pieces.length = 0;
  }

  #encodePiece(piece: string, out: number[], counters: MutableCounters): void {
    counters.pieces++;
    const cached = this.#cache.get(piece);
    if (cached !== undefined) {
      counters.cacheHits++;
      for (const id of cached) out.push(id);
      return;
    }
    const n = this.#utf8.encode(piece);
    const bytes = this.#utf8.buffer;
    const result = (this.#pre.ignoreMerges ? this.#wholeToken(bytes, n) : undefined) ?? this.#merge(bytes, n, counters);
    if (piece.length <= MAX_CACHED_PIECE_LENGTH) {
      if (this.#cache.size >= BPE_CACHE_ENTRIES) this.#cache.clear();
      this.#cache.set(piece, result);
    }
    for (const id of result) out.push(id);
  }

  /** The piece as one token, when the vocabulary has it. */
  #wholeToken(bytes: Uint8Array, n: number): number[] | undefined {
    let word = '';
    for (let i = 0; i < n; i++) word += BYTE_TO_CHAR[bytes[i]!]!;
    const id = this.#idOf.get(word);
    return id === undefined ? undefined : [id];
  }

  #merge(bytes: Uint8Array, n: number, counters: MutableCounters): number[] {
    const sym = this.#symbols;
    sym.reserve(n);
    for (let i = 0; i < n; i++) {
      const id = this.#byteIds[bytes[i]!]!;
      if (id < 0) {
        throw new TenonError('EINVAL', `byte 0x${bytes[i]!.toString(16)} has no token in this vocabulary`, { op: 'tokenizer.encode', reason: 'unencodable', ids: { byte: bytes[i]! } });
      }
      sym.id[i] = id;
      sym.len[i] = 1;
      sym.prev[i] = i - 1;
      sym.next[i] = i + 1 < n ? i + 1 : NO_SYMBOL;
    }
    counters.symbols += n;

    const queue = this.#queue;
    queue.clear();
    for (let i = 1; i < n; i++) this.#tryPair(i - 1, i, counters);
    while (queue.pop()) {
      const left = queue.topLeft;
      const right = queue.topRight;
      // Stale: one side was merged away or grew since this pair was queued.
      if (sym.len[left] === 0 || sym.len[right] === 0 || sym.len[left]! + sym.len[right]! !== queue.topSize) continue;
      // The queue orders by rank; the merged token comes from the pair itself.
      sym.id[left] = this.#result[this.#rank.get(sym.id[left]!, sym.id[right]!)]!;
      sym.len[left] = sym.len[left]! + sym.len[right]!;
      sym.len[right] = 0;
      const after = sym.next[right]!;
      sym.next[left] = after;
      if (after !== NO_SYMBOL) sym.prev[after] = left;
      counters.merges++;
      if (sym.prev[left] !== NO_SYMBOL) this.#tryPair(sym.prev[left]!, left, counters);
      if (after !== NO_SYMBOL) this.#tryPair(left, after, counters);
    }

    const ids: number[] = [];
    for (let i = n > 0 ? 0 : NO_SYMBOL; i !== NO_SYMBOL; i = sym.next[i]!) ids.push(sym.id[i]!);
    return ids;
  }

  #tryPair(left: number, right: number, counters: MutableCounters): void {
    counters.pairLookups++;
    const sym = this.#symbols;
    const rank = this.#rank.get(sym.id[left]!, sym.id[right]!);
    if (rank !== NOT_FOUND) this.#queue.push(rank, left, right, sym.len[left]! + sym.len[right]!);
  }
}

const NOT_FOUND = -1;
/** Slots per entry at most half full keeps probe chains short. */
const LOAD_FACTOR_INVERSE = 2;
const HASH_A = 0x9e3779b1;
const HASH_B = 0x85ebca77;

/**
 * Open-addressing hash table from a pair of token ids to a merge rank, in typed arrays: no per-entry
 * objects and no string keys, so building it for 280,000 merges and probing it while encoding is cheap.
 */
class PairTable {
  readonly #mask: number;
  readonly #shift: number;
  /** left, right of each slot (left -1: empty). */
  readonly #keys: Int32Array;
  readonly #ranks: Int32Array;

  constructor(entries: number) {
    let bits = 4;
    while (1 << bits < entries * LOAD_FACTOR_INVERSE) bits++;
    this.#mask = (1 << bits) - 1;
    this.#shift = 32 - bits;
    this.#keys = new Int32Array(2 << bits).fill(NOT_FOUND);
    this.#ranks = new Int32Array(1 << bits);
  }

  #slot(left: number, right: number): number {
    return (Math.imul(left, HASH_A) ^ Math.imul(right, HASH_B)) >>> this.#shift;
  }

  /** Adds the pair unless it is already there (the first, lowest rank wins). */
  addFirst(left: number, right: number, rank: number): void {
    for (let h = this.#slot(left, right); ; h = (h + 1) & this.#mask) {
      const k = this.#keys[2 * h]!;
      if (k === NOT_FOUND) {
        this.#keys[2 * h] = left;
        this.#keys[2 * h + 1] = right;
        this.#ranks[h] = rank;
        return;
      }
      if (k === left && this.#keys[2 * h + 1] === right) return;
    }
  }

  get(left: number, right: number): number {
    for (let h = this.#slot(left, right); ; h = (h + 1) & this.#mask) {
      const k = this.#keys[2 * h]!;
      if (k === NOT_FOUND) return NOT_FOUND;
      if (k === left && this.#keys[2 * h + 1] === right) return this.#ranks[h]!;
    }
  }
}
