// Tokenizers from GGUF metadata (`tokenizer.ggml.*`, `tokenizer.chat_template`). Takes the metadata values,
// not the file (src/model/gguf.ts reads those); validates every field before building anything and keeps
// no reference to the caller's arrays beyond reading them while it builds.
//
// Checks, each a TenonError with a stable reason and the key or token it concerns:
// - `tokenizer.ggml.model` must be `llama` or `gpt2` (ENOTSUP 'unsupported-tokenizer' naming it); for
//   gpt2, `tokenizer.ggml.pre` must be a known pre-tokenizer (ENOTSUP 'unsupported-pre-tokenizer').
// - Each key holds the GGUF type it must (EINVAL 'bad-metadata' with key, expected and found types).
// - `tokens` is not empty ('empty-vocabulary'), no token is empty ('empty-token') or repeated
//   ('duplicate-token'); `scores` and `token_type` have one entry per token ('length-mismatch'), scores
//   are finite ('non-finite'), types are 0..6 ('bad-token-type'), byte-type tokens read `<0xXX>`
//   ('bad-byte-token').
// - Special ids (`bos`, `eos`, `eot`, `eom`, `unknown`, `padding`) are below the vocabulary size
//   ('bad-token-id'; 0xFFFFFFFF or -1 means "none", as converters write it); add_bos_token/add_eos_token
//   need those tokens ('no-bos-token', 'no-eos-token').
// - gpt2: every merge is "left right" over tokens whose concatenation is a token ('bad-merge').
// Defaults follow llama.cpp: `llama` vocabularies have unk 0, BOS 1, EOS 2, add BOS, a space prefix;
// `gpt2` ones add BOS only for the Llama 3 pre-tokenizer; the file's own keys override these.
import { TenonError } from '../../errors.js';
import { ByteLevelBpeEngine } from './bpe.js';
import { binaryString } from './byte-level.js';
import { preTokenizer } from './pretokenize.js';
import { SentencePieceEngine } from './spm.js';
import { MAX_TOKEN_TYPE, TokenType } from './types.js';
import type { SpecialTokens, Tokenizer } from './types.js';
import { VocabTokenizer, byteTokenValue } from './vocab.js';
import type { TextEngine } from './vocab.js';

const OP = 'model.tokenizerFromGguf';

/** One metadata value as src/model/gguf.ts gives it (`{ type, value }`; arrays as `{ itemType, items }`). */
export interface TokenizerMetadataValue {
  readonly type: string;
  readonly value: unknown;
}

/** What the tokenizer reads: values by key. GgufMetadata and a Map<string, GgufValue> both fit. */
export interface TokenizerMetadata {
  get(key: string): TokenizerMetadataValue | undefined;
}

export const GGUF_TOKENIZER_KEYS = {
  model: 'tokenizer.ggml.model',
  pre: 'tokenizer.ggml.pre',
  tokens: 'tokenizer.ggml.tokens',
  scores: 'tokenizer.ggml.scores',
  tokenType: 'tokenizer.ggml.token_type',
  merges: 'tokenizer.ggml.merges',
  bos: 'tokenizer.ggml.bos_token_id',
  eos: 'tokenizer.ggml.eos_token_id',
  eot: 'tokenizer.ggml.eot_token_id',
  eom: 'tokenizer.ggml.eom_token_id',
  unk: 'tokenizer.ggml.unknown_token_id',
  pad: 'tokenizer.ggml.padding_token_id',
  addBos: 'tokenizer.ggml.add_bos_token',
  addEos: 'tokenizer.ggml.add_eos_token',
  addSpacePrefix: 'tokenizer.ggml.add_space_prefix',
  chatTemplate: 'tokenizer.chat_template',
} as const;

/** The stored "no token" id: u32 -1. */
const NO_TOKEN_U32 = 0xffffffff;
const BYTE_VALUES = 256;
const SPM_DEFAULTS = { unk: 0, bos: 1, eos: 2 } as const;
/** End-of-turn token texts, most specific first (the first present is `special.eot` when the file names none). */
const END_OF_TURN_TEXTS = ['<|eot_id|>', '<|im_end|>', '<|end|>', '<end_of_turn>', '<|endoftext|>', '<|end_of_text|>', '<EOT>'] as const;
const END_OF_MESSAGE_TEXT = '<|eom_id|>';
const INTEGER_TYPES = new Set(['u8', 'i8', 'u16', 'i16', 'u32', 'i32', 'u64', 'i64']);
const FLOAT_ARRAY_TYPES = new Set(['f32', 'f64', 'i32']);
const INT_ARRAY_TYPES = new Set(['u8', 'i8', 'u16', 'i16', 'u32', 'i32']);

function invalid(reason: string, message: string, ids: Record<string, string | number>): never {
  throw new TenonError('EINVAL', message, { op: OP, reason, ids });
}

function describe(v: TokenizerMetadataValue): string {
  if (v.type !== 'array') return v.type;
  const items = (v.value as { itemType?: unknown } | null)?.itemType;
  return `array<${typeof items === 'string' ? items : '?'}>`;
}

function badType(key: string, expected: string, found: TokenizerMetadataValue | undefined): never {
  invalid('bad-metadata', found === undefined ? `required metadata key ${key} is missing` : `metadata key ${key} holds ${describe(found)}, expected ${expected}`, {
    key,
    expected,
    found: found === undefined ? 'missing' : describe(found),
  });
}

class Reader {
  readonly #meta: TokenizerMetadata;
  constructor(meta: TokenizerMetadata) {
    if (meta === null || typeof meta !== 'object' || typeof (meta as { get?: unknown }).get !== 'function') {
      throw new TenonError('EINVAL', 'expected GGUF metadata (an object with get(key))', { op: OP, reason: 'bad-argument' });
    }
    this.#meta = meta;
  }

  string(key: string, required: true): string;
  string(key: string, required: false): string | undefined;
  string(key: string, required: boolean): string | undefined {
    const v = this.#meta.get(key);
    if (v === undefined && !required) return undefined;
    if (v?.type !== 'string' || typeof v.value !== 'string') badType(key, 'string', v);
    return v.value;
  }

  bool(key: string): boolean | undefined {
    const v = this.#meta.get(key);
    if (v === undefined) return undefined;
    if (v.type !== 'bool' || typeof v.value !== 'boolean') badType(key, 'bool', v);
    return v.value;
  }

  integer(key: string): number | undefined {
    const v = this.#meta.get(key);
    if (v === undefined) return undefined;
    const n = INTEGER_TYPES.has(v.type) && (typeof v.value === 'number' || typeof v.value === 'bigint') ? Number(v.value) : NaN;
    if (!Number.isSafeInteger(n)) badType(key, 'integer', v);
    return n;
  }

  #array(key: string, required: boolean, expected: string, itemTypes: ReadonlySet<string>): ArrayLike<unknown> | undefined {
    const v = this.#meta.get(key);
    if (v === undefined && !required) return undefined;
    const arr = v?.type === 'array' ? (v.value as { itemType?: unknown; items?: unknown } | null) : undefined;
    const items = arr?.items as ArrayLike<unknown> | undefined;
    if (typeof arr?.itemType !== 'string' || !itemTypes.has(arr.itemType) || items === null || typeof items !== 'object' || typeof items.length !== 'number') badType(key, expected, v);
    return items;
  }

  strings(key: string, required: true): ArrayLike<unknown>;
  strings(key: string, required: false): ArrayLike<unknown> | undefined;
  strings(key: string, required: boolean): ArrayLike<unknown> | undefined {
    return this.#array(key, required, 'array<string>', STRING_ITEMS);
  }

  numbers(key: string, itemTypes: ReadonlySet<string>, expected: string): ArrayLike<unknown> | undefined {
    return this.#array(key, false, expected, itemTypes);
  }
}
const STRING_ITEMS = new Set(['string']);

/**
 * A tokenizer from GGUF metadata. Throws TenonError: ENOTSUP 'unsupported-tokenizer' |
 * 'unsupported-pre-tokenizer'; EINVAL 'bad-argument' | 'bad-metadata' | 'empty-vocabulary' | 'empty-token' |
 * 'duplicate-token' | 'length-mismatch' | 'non-finite' | 'bad-token-type' | 'bad-byte-token' | 'bad-token-id' |
 * 'no-bos-token' | 'no-eos-token' | 'bad-merge'.
 */
export function tokenizerFromGguf(metadata: TokenizerMetadata): Tokenizer {
  const K = GGUF_TOKENIZER_KEYS;
  const read = new Reader(metadata);
  const model = read.string(K.model, true);
  if (model !== 'llama' && model !== 'gpt2') {
    throw new TenonError('ENOTSUP', `tokenizer model ${JSON.stringify(model)} is not supported (llama and gpt2 are)`, { op: OP, reason: 'unsupported-tokenizer', ids: { model } });
  }
  const preName = model === 'gpt2' ? read.string(K.pre, false) : undefined;
  const pre = model === 'gpt2' ? preTokenizer(preName, OP) : undefined;

  // Tokens: non-empty strings, no repeats.
  const rawTokens = read.strings(K.tokens, true);
  const n = rawTokens.length;
  if (n === 0) invalid('empty-vocabulary', `${K.tokens} is empty`, { key: K.tokens });
  const texts = new Array<string>(n);
  const idOf = new Map<string, number>();
  for (let id = 0; id < n; id++) {
    const text = rawTokens[id];
    if (typeof text !== 'string') badType(K.tokens, 'array<string>', { type: 'array', value: { itemType: typeof text } });
    if (text.length === 0) invalid('empty-token', `token ${id} is empty`, { token: id });
    const first = idOf.get(text);
    if (first !== undefined) invalid('duplicate-token', `token ${id} repeats token ${first}`, { token: id, first });
    idOf.set(text, id);
    texts[id] = text;
  }

  const scores = new Float32Array(n);
  const rawScores = read.numbers(K.scores, FLOAT_ARRAY_TYPES, 'array<f32>');
  if (rawScores !== undefined) {
    if (rawScores.length !== n) invalid('length-mismatch', `${K.scores} has ${rawScores.length} entries for ${n} tokens`, { key: K.scores, expected: n, actual: rawScores.length });
    for (let id = 0; id < n; id++) {
      const score = Number(rawScores[id]);
      if (!Number.isFinite(score)) invalid('non-finite', `token ${id} has a non-finite score`, { key: K.scores, token: id });
      scores[id] = score;
    }
  }

  const types = new Uint8Array(n).fill(TokenType.Normal);
  const rawTypes = read.numbers(K.tokenType, INT_ARRAY_TYPES, 'array<i32>');
  if (rawTypes !== undefined) {
    if (rawTypes.length !== n) invalid('length-mismatch', `${K.tokenType} has ${rawTypes.length} entries for ${n} tokens`, { key: K.tokenType, expected: n, actual: rawTypes.length });
    for (let id = 0; id < n; id++) {
      const type = Number(rawTypes[id]);
      if (!Number.isInteger(type) || type < 0 || type > MAX_TOKEN_TYPE) invalid('bad-token-type', `token ${id} has type ${type}`, { token: id, value: String(type) });
      if (type === TokenType.Byte && byteTokenValue(texts[id]!) === undefined) invalid('bad-byte-token', `byte token ${id} is not spelled <0xXX>`, { token: id });
      types[id] = type;
    }
  }

  const tokenId = (key: string, fallback: number | undefined): number | undefined => {
    const value = read.integer(key);
    if (value === undefined) return fallback !== undefined && fallback < n ? fallback : undefined;
    if (value === NO_TOKEN_U32 || value === -1) return undefined;
    if (value < 0 || value >= n) invalid('bad-token-id', `${key} is ${value}, outside the ${n}-token vocabulary`, { key, value: String(value), vocabSize: n });
    return value;
  };
  const spm = model === 'llama';
  const byText = (text: string): number | undefined => {
    const id = idOf.get(text);
    return id !== undefined && types[id] !== TokenType.Normal ? id : undefined;
  };
  const special: SpecialTokens = {
    bos: tokenId(K.bos, spm ? SPM_DEFAULTS.bos : undefined),
    eos: tokenId(K.eos, spm ? SPM_DEFAULTS.eos : undefined),
    eot: tokenId(K.eot, undefined) ?? END_OF_TURN_TEXTS.map(byText).find((id) => id !== undefined),
    eom: tokenId(K.eom, undefined) ?? byText(END_OF_MESSAGE_TEXT),
    unk: tokenId(K.unk, spm ? SPM_DEFAULTS.unk : undefined),
    pad: tokenId(K.pad, undefined),
  };

  const addBos = read.bool(K.addBos) ?? (spm ? true : pre!.addBosDefault);
  const addEos = read.bool(K.addEos) ?? false;
  const addSpacePrefix = spm ? (read.bool(K.addSpacePrefix) ?? true) : false;
  if (addBos && special.bos === undefined) invalid('no-bos-token', `${K.addBos} holds but the vocabulary has no BOS token`, { key: K.addBos });
  if (addEos && special.eos === undefined) invalid('no-eos-token', `${K.addEos} holds but the vocabulary has no EOS token`, { key: K.addEos });
  const chatTemplate = read.string(K.chatTemplate, false);

  const ends = new Set<number>();
  for (const id of [special.eos, special.eot, special.eom]) if (id !== undefined) ends.add(id);
  for (const text of [...END_OF_TURN_TEXTS, END_OF_MESSAGE_TEXT]) {
    const id = byText(text);
    if (id !== undefined) ends.add(id);
  }
  const endOfGeneration = [...ends].sort((a, b) => a - b);

  let maxTokenLength = 0;
  for (const text of texts) maxTokenLength = Math.max(maxTokenLength, utf8Length(text));

  let merges: readonly string[] = [];
  let engine: TextEngine;
  let byteFallback: boolean;
  let lookup: (text: string) => number | undefined;
  if (spm) {
    const utf8 = new TextEncoder();
    const keys = texts.map((t) => binaryString(utf8.encode(t)));
    const byteIds = new Int32Array(BYTE_VALUES).fill(-1);
    for (let id = 0; id < n; id++) {
      if (types[id] !== TokenType.Byte) continue;
      const b = byteTokenValue(texts[id]!)!;
      if (byteIds[b]! < 0) byteIds[b] = id;
    }
    byteFallback = byteIds.every((id) => id >= 0);
    const spmEngine = new SentencePieceEngine({ keys, scores, byteIds, unknownId: special.unk, escapeSpaces: true });
    engine = spmEngine;
    lookup = (text) => spmEngine.lookupKey(binaryString(utf8.encode(text)));
  } else {
    const rawMerges = read.strings(K.merges, true);
    const list = new Array<string>(rawMerges.length);
    for (let i = 0; i < rawMerges.length; i++) {
      const merge = rawMerges[i];
      if (typeof merge !== 'string') invalid('bad-merge', `merge ${i} is not a string`, { merge: i });
      list[i] = merge;
    }
    merges = list;
    const bpe = new ByteLevelBpeEngine(idOf, list, pre!, OP);
    byteFallback = bpe.byteFallback;
    engine = bpe;
    lookup = (text) => bpe.lookup(text);
  }

  return new VocabTokenizer({
    model,
    pre: pre?.name,
    texts,
    pieces: undefined,
    scores,
    types,
    special,
    addBos,
    addEos,
    addSpacePrefix,
    escapedSpaces: spm,
    maxTokenLength,
    byteFallback,
    chatTemplate,
    endOfGeneration,
    engine,
    lookup,
    identity: () =>
      new TextEncoder().encode(
        JSON.stringify({
          format: 'tenon/gguf-tokenizer/1',
          model,
          pre: pre?.name ?? null,
          tokens: texts,
          scores: Array.from(scores),
          types: Array.from(types),
          merges,
          special,
          addBos,
          addEos,
          addSpacePrefix,
          chatTemplate: chatTemplate ?? null,
        }),
      ),
  });
}

/** UTF-8 byte length of a string without encoding it. */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}
