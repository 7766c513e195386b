// Shared by the tokenizer and chat suites: tokenizers made from the GGUF fixtures (parsed once per test
// file), the reference JSON files, and builders for synthetic GGUF tokenizer metadata (a Map of
// `{ type, value }` entries, the shape src/model/gguf.ts gives).
//
// The byte-level alphabet here is written independently of src/model/tokenizer/byte-level.ts (the
// published GPT-2 rule: printable Latin-1 bytes stand for themselves, the other 68 take U+0100 on in byte
// order), so synthetic vocabularies check the implementation rather than echo it.
import { parseGguf, tokenizerFromGguf } from '../../src/model/index.js';
import type { ChatInput, GgufValue, Tokenizer, TokenizerMetadata } from '../../src/model/index.js';
import { readGgufFixture, readGgufReference } from '../support/gguf-fixtures.js';
import type { GgufFixture, GgufReference } from '../support/gguf-fixtures.js';

export interface TokenizeCase {
  readonly text: string;
  readonly ids: readonly number[];
}

/** One reference rendering: apply_chat_template's variables plus the text they render to. */
export interface ChatCase extends ChatInput {
  readonly rendered: string;
}

const tokenizers = new Map<GgufFixture, Promise<Tokenizer | undefined>>();

/** The fixture's tokenizer, or undefined when the fixture is absent (the suites skip then). */
export function fixtureTokenizer(name: GgufFixture): Promise<Tokenizer | undefined> {
  let pending = tokenizers.get(name);
  if (pending === undefined) {
    pending = (async () => {
      const bytes = await readGgufFixture(name);
      return bytes === undefined ? undefined : tokenizerFromGguf((await parseGguf(bytes)).metadata);
    })();
    tokenizers.set(name, pending);
  }
  return pending;
}

export async function tokenizeReference(name: GgufReference): Promise<readonly TokenizeCase[] | undefined> {
  return (await readGgufReference(name)) as readonly TokenizeCase[] | undefined;
}

export async function chatReference(name: GgufReference): Promise<readonly ChatCase[] | undefined> {
  return (await readGgufReference(name)) as readonly ChatCase[] | undefined;
}

// ---------------------------------------------------------------------------------------------------
// Synthetic metadata

export const str = (value: string): GgufValue => ({ type: 'string', value });
export const u32 = (value: number): GgufValue => ({ type: 'u32', value });
export const bool = (value: boolean): GgufValue => ({ type: 'bool', value });
export const strings = (items: readonly string[]): GgufValue => ({ type: 'array', value: { itemType: 'string', items } });
export const f32s = (items: readonly number[]): GgufValue => ({ type: 'array', value: { itemType: 'f32', items: Float32Array.from(items) } });
export const i32s = (items: readonly number[]): GgufValue => ({ type: 'array', value: { itemType: 'i32', items: Int32Array.from(items) } });

export function metadata(entries: Record<string, GgufValue | undefined>): TokenizerMetadata & Map<string, GgufValue> {
  const map = new Map<string, GgufValue>();
  for (const [key, value] of Object.entries(entries)) if (value !== undefined) map.set(key, value);
  return map;
}

/** The byte-level alphabet: the character that stands for each byte. */
export const BYTE_CHARS: readonly string[] = (() => {
  const printable = (b: number): boolean => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const chars: string[] = [];
  let next = 0x100;
  for (let b = 0; b < 256; b++) chars.push(String.fromCharCode(printable(b) ? b : next++));
  return chars;
})();

/** A text's bytes in the byte-level alphabet (how gpt2 vocabularies spell it). */
export function byteLevel(text: string): string {
  return [...new TextEncoder().encode(text)].map((b) => BYTE_CHARS[b]).join('');
}

export interface BpeVocab {
  /** Extra tokens after the 256 byte tokens (plain text; spelled in the byte-level alphabet). */
  readonly words?: readonly string[];
  /** Merges as [left, right] in plain text (spelled in the byte-level alphabet), in rank order. */
  readonly merges?: readonly (readonly [string, string])[];
  /** Tokens appended after the words with their token type (e.g. control 3, user-defined 4). */
  readonly specials?: readonly { readonly text: string; readonly type: number }[];
  readonly pre?: string;
  readonly extra?: Record<string, GgufValue | undefined>;
}

/** GGUF metadata of a gpt2 vocabulary: 256 byte tokens, then `words`, then `specials`. */
export function bpeMetadata(vocab: BpeVocab): TokenizerMetadata & Map<string, GgufValue> {
  const tokens = [...BYTE_CHARS, ...(vocab.words ?? []).map(byteLevel), ...(vocab.specials ?? []).map((s) => s.text)];
  const types = [...BYTE_CHARS.map(() => 1), ...(vocab.words ?? []).map(() => 1), ...(vocab.specials ?? []).map((s) => s.type)];
  return metadata({
    'tokenizer.ggml.model': str('gpt2'),
    'tokenizer.ggml.pre': str(vocab.pre ?? 'gpt-2'),
    'tokenizer.ggml.tokens': strings(tokens),
    'tokenizer.ggml.token_type': i32s(types),
    'tokenizer.ggml.merges': strings((vocab.merges ?? []).map(([a, b]) => `${byteLevel(a)} ${byteLevel(b)}`)),
    ...vocab.extra,
  });
}

/** Id of a plain-text word in a bpeMetadata vocabulary. */
export function wordId(vocab: BpeVocab, word: string): number {
  const at = (vocab.words ?? []).indexOf(word);
  if (at < 0) throw new Error(`no word ${JSON.stringify(word)} in the test vocabulary`);
  return BYTE_CHARS.length + at;
}

/** Id of the byte token for byte `b` in a bpeMetadata vocabulary. */
export const byteId = (b: number): number => b;
