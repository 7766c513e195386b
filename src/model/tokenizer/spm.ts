// SentencePiece-style encoder (the `llama` vocabulary kind: llama2.c tokenizer files and GGUF `llama`
// vocabularies). Owned by one Tokenizer; single-threaded; reuses its scratch arrays between calls.
//
// Algorithm (llama.cpp's SPM tokenizer and llama2.c's encoder agree on it): the text, with a space in
// front when asked, is split into UTF-8 characters; every adjacent pair whose concatenation is a token is a
// candidate; the candidate with the highest token score merges first (the leftmost on equal scores); only
// the two pairs next to a merge are looked up again. A priority queue keeps this O(n log n) where a rescan
// of all pairs after each merge would be O(n^2). Afterwards each symbol is its token, or, for a character
// the vocabulary lacks, one byte token per UTF-8 byte (or the unknown token where the vocabulary has no
// byte tokens and allows that; otherwise EINVAL 'unencodable').
//
// Vocabulary keys are the tokens' stored bytes as one-char-per-byte strings, so llama2.c files with
// arbitrary bytes compare exactly. GGUF vocabularies spell a space as U+2581 `▁`; with `escapeSpaces` the
// text's spaces are rewritten to it before matching.
import { TenonError } from '../../errors.js';
import { PairQueue, SymbolList } from './heap.js';
import { Utf8Buffer, binaryString, utf8SequenceLength } from './byte-level.js';
import type { MutableCounters } from './vocab.js';

/** UTF-8 bytes of U+2581, SentencePiece's visible space. */
const ESCAPED_SPACE = [0xe2, 0x96, 0x81] as const;
const SPACE = 0x20;
const NO_SYMBOL = -1;

export interface SentencePieceOptions {
  /** Stored bytes of every token, one char per byte. */
  readonly keys: readonly string[];
  /** Merge score of every token (higher merges first). */
  readonly scores: Float32Array;
  /** Token of each byte value for characters the vocabulary lacks (-1: none). */
  readonly byteIds: Int32Array;
  /** Token used for a character without byte tokens; undefined makes such text EINVAL 'unencodable'. */
  readonly unknownId: number | undefined;
  /** Rewrite spaces to `▁` before matching (GGUF vocabularies). */
  readonly escapeSpaces: boolean;
}

export class SentencePieceEngine {
  readonly #ids = new Map<string, number>();
  readonly #scores: Float32Array;
  readonly #byteIds: Int32Array;
  readonly #unknownId: number | undefined;
  readonly #escapeSpaces: boolean;
  readonly #utf8 = new Utf8Buffer();
  #escaped = new Uint8Array(256);
  readonly #symbols = new SymbolList();
  readonly #queue = new PairQueue();

  constructor(options: SentencePieceOptions) {
    for (let id = 0; id < options.keys.length; id++) {
      const key = options.keys[id]!;
      if (!this.#ids.has(key)) this.#ids.set(key, id);
    }
    this.#scores = options.scores;
    this.#byteIds = options.byteIds;
    this.#unknownId = options.unknownId;
    this.#escapeSpaces = options.escapeSpaces;
  }

  /** Lowest id whose stored bytes are `key` (one char per byte). */
  lookupKey(key: string): number | undefined {
    return this.#ids.get(key);
  }

  encodeFragment(text: string, prefixSpace: boolean, out: number[], counters: MutableCounters): void {
    counters.pieces++;
    const source = prefixSpace ? ` ${text}` : text;
    const n = this.#utf8.encode(source);
    const s = this.#binaryText(this.#utf8.buffer, n);

    // Symbols: one per UTF-8 character, chained both ways.
    const sym = this.#symbols;
    sym.reserve(s.length);
    let count = 0;
    for (let at = 0; at < s.length; count++) {
      const len = Math.min(utf8SequenceLength(s.charCodeAt(at)), s.length - at);
      sym.start[count] = at;
      sym.len[count] = len;
      sym.prev[count] = count - 1;
      at += len;
      sym.next[count] = at < s.length ? count + 1 : NO_SYMBOL;
    }
    counters.symbols += count;

    const queue = this.#queue;
    queue.clear();
    for (let i = 1; i < count; i++) this.#tryPair(s, i - 1, i, counters);
    while (queue.pop()) {
      const left = queue.topLeft;
      const right = queue.topRight;
      // Stale: one side was merged away or grew since this pair was queued.
      if (sym.len[left] === 0 || sym.len[right] === 0 || sym.len[left]! + sym.len[right]! !== queue.topSize) continue;
      sym.len[left] = sym.len[left]! + sym.len[right]!;
      sym.len[right] = 0;
      const after = sym.next[right]!;
      sym.next[left] = after;
      if (after !== NO_SYMBOL) sym.prev[after] = left;
      counters.merges++;
      if (sym.prev[left] !== NO_SYMBOL) this.#tryPair(s, sym.prev[left]!, left, counters);
      if (after !== NO_SYMBOL) this.#tryPair(s, left, after, counters);
    }

    for (let i = count > 0 ? 0 : NO_SYMBOL; i !== NO_SYMBOL; i = sym.next[i]!) {
      const start = sym.start[i]!;
      const key = s.substring(start, start + sym.len[i]!);
      const id = this.#ids.get(key);
      if (id !== undefined) out.push(id);
      else this.#fallback(key, out);
    }
  }

  #tryPair(s: string, left: number, right: number, counters: MutableCounters): void {
    counters.pairLookups++;
    const sym = this.#symbols;
    const start = sym.start[left]!;
    const size = sym.len[left]! + sym.len[right]!;
    const id = this.#ids.get(s.substring(start, start + size));
    if (id === undefined) return;
    // The queue pops its smallest priority: negate so the highest score comes first.
    this.#queue.push(-this.#scores[id]!, left, right, size);
  }

  /** A character with no token: one byte token per byte, else the unknown token, else EINVAL. */
  #fallback(key: string, out: number[]): void {
    let complete = true;
    for (let i = 0; i < key.length && complete; i++) complete = this.#byteIds[key.charCodeAt(i)]! >= 0;
    if (complete) {
      for (let i = 0; i < key.length; i++) out.push(this.#byteIds[key.charCodeAt(i)]!);
      return;
    }
    if (this.#unknownId !== undefined) {
      out.push(this.#unknownId);
      return;
    }
    throw new TenonError('EINVAL', 'a character is not in the vocabulary and the tokenizer has no byte tokens for it', {
      op: 'tokenizer.encode',
      reason: 'unencodable',
      ids: { bytes: key.length },
    });
  }

  /** The text as one char per byte, spaces rewritten to `▁` when the vocabulary spells them so. */
  #binaryText(bytes: Uint8Array, n: number): string {
    if (!this.#escapeSpaces) return binaryString(bytes, 0, n);
    if (this.#escaped.length < n * ESCAPED_SPACE.length) this.#escaped = new Uint8Array(n * ESCAPED_SPACE.length);
    const out = this.#escaped;
    let m = 0;
    for (let i = 0; i < n; i++) {
      const b = bytes[i]!;
      if (b === SPACE) {
        out[m++] = ESCAPED_SPACE[0];
        out[m++] = ESCAPED_SPACE[1];
        out[m++] = ESCAPED_SPACE[2];
      } else out[m++] = b;
    }
    return binaryString(out, 0, m);
  }
}
